package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/failoverkit/failover/evictionqueue"
)

func newTestStore(t *testing.T, maxInFlight, items int, cluster string) *evictionqueue.Store {
	t.Helper()
	st, err := evictionqueue.NewStore(evictionqueue.Config{Name: "test", MaxInFlight: maxInFlight})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range items {
		st.Add(evictionqueue.Item{Cluster: cluster, Key: fmt.Sprintf("ns/w%d", i)}, t0)
	}
	return st
}

// The line is first come, first served across both queues; a queue puts in
// line at most its workers, at most one per waiting item, and no more than
// MaxInFlight has slots for.
func TestWorkerLineJoinsAsQueueWorkersWould(t *testing.T) {
	l := workerLine{workers: 2}
	rb, crb := newTestStore(t, 0, 3, "a"), newTestStore(t, 0, 1, "b")
	l.join(qCRB, crb, 0)
	l.join(qRB, rb, 0)
	l.join(qRB, rb, 0) // nobody more may go: both workers wait
	if want := []int{qCRB, qRB, qRB}; !slices.Equal(l.order, want) {
		t.Errorf("line %v, want %v", l.order, want)
	}

	l = workerLine{workers: 5}
	l.join(qRB, newTestStore(t, 0, 2, "a"), 0)
	if len(l.order) != 2 {
		t.Errorf("2 items, 5 workers: %d in line, want 2", len(l.order))
	}
	l = workerLine{workers: 5}
	l.join(qRB, newTestStore(t, 3, 10, "a"), 3)
	if len(l.order) != 3 {
		t.Errorf("MaxInFlight 3: %d in line, want 3", len(l.order))
	}
}

// Cancelling a cluster's items takes the queue's newest workers out of line,
// keeping everyone else's place.
func TestWorkerLineWithdrawsWorkersOfCancelledItems(t *testing.T) {
	l := workerLine{workers: 3}
	rb, crb := newTestStore(t, 0, 1, "a"), newTestStore(t, 0, 1, "b")
	l.join(qRB, rb, 0)
	l.join(qCRB, crb, 0)
	rb.Add(evictionqueue.Item{Cluster: "c", Key: "ns/x"}, time.Now())
	rb.Add(evictionqueue.Item{Cluster: "c", Key: "ns/y"}, time.Now())
	l.join(qRB, rb, 0)
	if want := []int{qRB, qCRB, qRB, qRB}; !slices.Equal(l.order, want) {
		t.Fatalf("line %v, want %v", l.order, want)
	}
	if n := rb.CancelCluster("c"); n != 2 {
		t.Fatalf("cancelled %d, want 2", n)
	}
	l.withdraw(qRB, rb)
	if want := []int{qRB, qCRB}; !slices.Equal(l.order, want) || l.waiting != [2]int{1, 1} {
		t.Errorf("line %v (waiting %v), want %v", l.order, l.waiting, want)
	}
}

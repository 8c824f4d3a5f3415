package evictionqueue

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewStoreValidatesLikeNew(t *testing.T) {
	_, err := NewStore(Config{MaxInFlight: -1})
	if err == nil || !strings.Contains(err.Error(), "evictionqueue: Name") || !strings.Contains(err.Error(), "MaxInFlight") {
		t.Errorf("NewStore of a bad config = %v", err)
	}
}

// TestStoreSteppedThroughTime drives a Store the way a simulation does and
// checks the rules a Queue follows: MaxInFlight, in-flight TTL, Done only for
// a taken item, cancellation of a running item.
func TestStoreSteppedThroughTime(t *testing.T) {
	out := &outcomes{}
	m := newRecMetrics()
	st, err := NewStore(Config{Name: "sim", MaxInFlight: 1, InFlightTTL: time.Minute, Metrics: m, OnOutcome: out.add})
	if err != nil {
		t.Fatal(err)
	}
	a, b := item("down", "a"), item("down", "b")
	st.Add(a, t0)
	st.Add(b, t0)
	if st.Done(a, nil, t0) {
		t.Error("Done of an item not taken = true")
	}
	got, ok := st.Take(t0)
	if !ok || got != a {
		t.Fatalf("Take = %v, %v; want a", got, ok)
	}
	if _, ok := st.Take(t0); ok {
		t.Fatal("Take with the one MaxInFlight slot held by a handler call = true")
	}
	st.Done(a, ErrInProgress, t0)
	if _, ok := st.Take(t0); ok {
		t.Fatal("Take with the one slot held by a background eviction = true")
	}
	if due, ok := st.NextDue(); !ok || !due.Equal(t0.Add(time.Minute)) {
		t.Fatalf("NextDue = %v, %v; want the TTL at t0+1m", due, ok)
	}
	st.Advance(t0.Add(59 * time.Second))
	if st.InFlight() != 1 {
		t.Fatal("the TTL ended early")
	}
	st.Advance(t0.Add(time.Minute))
	if st.InFlight() != 0 || !slices.Equal(keys(st.Pending()), []string{"a", "b"}) {
		t.Fatalf("after the TTL: InFlight %d, Pending %v; want a pending again ahead of b", st.InFlight(), keys(st.Pending()))
	}
	got, _ = st.Take(t0.Add(time.Minute))
	st.CancelCluster("down") // b leaves; a is running, so it is marked
	if !st.Done(got, errBoom, t0.Add(time.Minute)) {
		t.Fatal("Done of the taken item = false")
	}
	if st.Len() != 0 || st.InFlight() != 0 {
		t.Errorf("Len %d, InFlight %d after everything left", st.Len(), st.InFlight())
	}
	if k := out.kinds("a"); !slices.Equal(k, []OutcomeKind{InProgress, Expired, Cancelled}) {
		t.Errorf("a's outcomes = %v", k)
	}
	if k := out.kinds("b"); !slices.Equal(k, []OutcomeKind{Cancelled}) {
		t.Errorf("b's outcomes = %v", k)
	}
	if o := out.last("a"); !errors.Is(o.Err, errBoom) || o.Attempts != 2 {
		t.Errorf("a's last outcome = %+v", o)
	}
	if s := m.snap(); s.cancelled != 2 || m.depth != 0 || s.latencies[1] != time.Minute {
		t.Errorf("metrics: %d cancelled, depth %d, latencies %v", s.cancelled, m.depth, s.latencies)
	}
}

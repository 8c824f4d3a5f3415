package evictionqueue

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestMetricsBalanceAndNothingIsLostUnderConcurrentUse drives a queue with
// concurrent Adds, cancels, completions, clock steps and handler results of
// every kind, and checks at many moments that the gauges built from Added and
// Removed equal what the queue holds, and at the end that every accepted item
// either left with a final outcome or is still held.
func TestMetricsBalanceAndNothingIsLostUnderConcurrentUse(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	m := newRecMetrics()
	var mu sync.Mutex
	final := 0
	cfg := Config{
		Name: "stress", Workers: 4, MaxInFlight: 6, MaxRetries: 2,
		InFlightTTL: 3 * time.Second, Clock: clk, Metrics: m,
		OnOutcome: func(o Outcome) {
			switch o.Kind {
			case Succeeded, Completed, Abandoned, Failed, Cancelled:
				mu.Lock()
				final++
				mu.Unlock()
			}
		},
	}
	// The result is a function of the item and attempt, so runs are varied
	// but every path is taken.
	h := func(_ context.Context, it Item) error {
		f := fnv.New32a()
		fmt.Fprint(f, it.Cluster, it.Key, clk.Now().UnixNano())
		switch f.Sum32() % 6 {
		case 0, 1:
			return nil
		case 2:
			return ErrInProgress
		case 3:
			return Abandon(errBoom)
		case 4:
			panic("boom")
		default:
			return errBoom
		}
	}
	q, err := New(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error)
	go func() { ran <- q.Run(ctx) }()

	accepted := 0
	var acceptedMu sync.Mutex
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for i := range 400 {
				cluster := fmt.Sprintf("c%d", (g+i)%7)
				it := Item{Cluster: cluster, Key: fmt.Sprintf("k%d", i%50), ResourceKind: fmt.Sprintf("kind%d", i%3), Priority: int32(i % 4)}
				if q.Add(it) {
					acceptedMu.Lock()
					accepted++
					acceptedMu.Unlock()
				}
				switch i % 17 {
				case 0:
					q.CancelCluster(cluster)
				case 5:
					q.Complete(Item{Cluster: cluster, Key: fmt.Sprintf("k%d", (i+3)%50)})
				}
			}
		})
	}
	for range 200 {
		clk.Step(500 * time.Millisecond)
		checkBalanced(t, q, m)
	}
	wg.Wait()
	// On a loaded machine the workers may not have run yet: keep time moving
	// until every result has been seen, so the checks below are not vacuous.
	waitUntil(t, "the workers have seen every result", func() bool {
		clk.Step(500 * time.Millisecond)
		checkBalanced(t, q, m)
		s := m.snap()
		return s.processed[ResultSuccess] > 0 && s.processed[ResultError] > 0 && s.processed[ResultAbandoned] > 0
	})
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	checkBalanced(t, q, m)

	q.mu.Lock()
	held := q.s.index.n
	listed, empty := 0, 0
	for _, ci := range q.s.index.clusters {
		listed += ci.keys.len()
		if ci.isEmpty {
			empty++
		}
	}
	if listed != held || empty != q.s.index.empty {
		t.Errorf("index: %d entries listed, %d counted; %d empty clusters, %d counted", listed, held, empty, q.s.index.empty)
	}
	if q.s.running != 0 || len(q.waits) != 0 {
		t.Errorf("after Run: %d running, %d waiting for permits", q.s.running, len(q.waits))
	}
	q.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if accepted != final+held {
		t.Errorf("%d items accepted, %d left with a final outcome, %d still held: %d lost", accepted, final, held, accepted-final-held)
	}
	s := m.snap()
	if s.processed[ResultSuccess] == 0 || s.processed[ResultError] == 0 || s.processed[ResultAbandoned] == 0 {
		t.Errorf("not every result was exercised: %v", s.processed)
	}
}

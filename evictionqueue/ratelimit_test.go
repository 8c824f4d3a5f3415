package evictionqueue_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/ratelimit"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestThroughputUnderARealLimiterIsItsRate shares one ratelimit.Limiter
// (0.5 permits/s: a healthy fleet) between queues on a fake clock and checks,
// second by second, that the queues together handle exactly the permits the
// rate allows (one at once, then one every 2s), whatever the number of
// queues and workers.
func TestThroughputUnderARealLimiterIsItsRate(t *testing.T) {
	tests := []struct{ queues, workers int }{
		{1, 1},
		{1, 4},
		{2, 4},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d queues of %d workers", tt.queues, tt.workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
				health := ratelimit.NewTracker()
				for i := range 20 {
					health.Set(fmt.Sprintf("member%d", i), false)
				}
				cfg := ratelimit.DefaultConfig()
				lim, err := ratelimit.NewLimiter(cfg, health, ratelimit.WithClock(clk))
				if err != nil {
					t.Fatal(err)
				}
				var handled atomic.Int64
				h := func(context.Context, evictionqueue.Item) error { handled.Add(1); return nil }

				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				defer func() {
					cancel()
					wg.Wait()
				}()
				for qi := range tt.queues {
					q, err := evictionqueue.New(evictionqueue.Config{
						Name: fmt.Sprintf("queue-%d", qi), Workers: tt.workers, Pacer: lim, Clock: clk,
					}, h)
					if err != nil {
						t.Fatal(err)
					}
					for i := range 100 {
						q.Add(evictionqueue.Item{Cluster: "member0", Key: fmt.Sprintf("ns/b-%d", i)})
					}
					wg.Go(func() {
						if err := q.Run(ctx); err != nil {
							t.Error(err)
						}
					})
				}

				// Every worker waits in the Limiter with a timer of the fake
				// clock once it has nothing else to do.
				parked := tt.queues * tt.workers
				settle := func() {
					t.Helper()
					synctest.Wait()
					if n := clk.Waiters(); n != parked {
						t.Fatalf("%d timers of the fake clock once the queues are idle, want one per worker: %d", n, parked)
					}
				}
				settle()
				if n := handled.Load(); n != 1 {
					t.Fatalf("at start: %d handled, want 1 (the bucket's one permit)", n)
				}
				for sec := 1; sec <= 60; sec++ {
					clk.Step(time.Second)
					settle()
					want := int64(1 + sec/2) // 0.5 per second
					if n := handled.Load(); n != want {
						t.Fatalf("after %ds: %d handled, want %d", sec, n, want)
					}
				}
				if r := lim.Rate(); r != cfg.ResourceEvictionRate {
					t.Errorf("rate in force %v, want %v", r, cfg.ResourceEvictionRate)
				}
			})
		})
	}
}

// TestACancelledItemsWorkerLeavesTheLimiterAndKeepsNothing: two queues
// share one Limiter. Queue A's only item is cancelled while A's worker waits
// for a permit. That worker must leave the Limiter at once, so that queue
// B's waiter gets the next permit, and A is left with no permit that would
// let a later item through while the Limiter is paused, nor after it
// resumes before the bucket has refilled.
func TestACancelledItemsWorkerLeavesTheLimiterAndKeepsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		health := ratelimit.NewTracker()
		for i := range 5 { // small fleet: more than 55% faulty pauses
			health.Set(fmt.Sprintf("member%d", i), false)
		}
		// The pause alone: 3 of 5 turning faulty at once is a failure
		// storm too, whose hold's end would be a timer of its own.
		cfg := ratelimit.DefaultConfig()
		cfg.StormThreshold = 0
		lim, err := ratelimit.NewLimiter(cfg, health, ratelimit.WithClock(clk)) // 0.5/s
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() {
			cancel()
			wg.Wait()
		}()
		if err := lim.Wait(ctx); err != nil { // the bucket's one permit: the next slot is 2s away
			t.Fatal(err)
		}
		var mu sync.Mutex
		handled := map[string]bool{}
		h := func(_ context.Context, it evictionqueue.Item) error {
			mu.Lock()
			defer mu.Unlock()
			handled[it.Key] = true
			return nil
		}
		wasHandled := func(key string) bool {
			mu.Lock()
			defer mu.Unlock()
			return handled[key]
		}
		newQueue := func(name string) *evictionqueue.Queue {
			q, err := evictionqueue.New(evictionqueue.Config{Name: name, Pacer: lim, Clock: clk}, h)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				if err := q.Run(ctx); err != nil {
					t.Error(err)
				}
			})
			return q
		}
		until := func(what string, cond func() bool) {
			t.Helper()
			synctest.Wait()
			if !cond() {
				t.Fatalf("once the queues are idle, it is not so that %s", what)
			}
		}
		a, b := newQueue("a"), newQueue("b")

		a.Add(evictionqueue.Item{Cluster: "member1", Key: "a1"})
		until("A's worker waits for the permit at 2s", func() bool { return clk.Waiters() == 1 })
		b.Add(evictionqueue.Item{Cluster: "member2", Key: "b1"})
		until("B's worker waits for it too", func() bool { return clk.Waiters() == 2 })

		a.CancelCluster("member1")
		until("A's worker has left the Limiter", func() bool { return clk.Waiters() == 1 })
		clk.Step(2 * time.Second)
		until("B's item is handled with the permit at 2s", func() bool { return wasHandled("b1") })

		// Pause (3 of 5 faulty). A new item of A must wait for the resume,
		// and then for the bucket to refill: it was empty when the pause
		// began.
		for i := range 3 {
			health.Set(fmt.Sprintf("member%d", i), true)
		}
		a.Add(evictionqueue.Item{Cluster: "member3", Key: "a2"})
		until("A's worker waits in the paused Limiter", func() bool { return lim.Rate() == 0 && clk.Waiters() == 0 })
		clk.Step(time.Minute)
		until("nothing is handled while paused", func() bool { return !wasHandled("a2") })
		for i := range 3 {
			health.Set(fmt.Sprintf("member%d", i), false)
		}
		until("A's worker waits for the bucket to refill", func() bool { return clk.Waiters() == 1 && !wasHandled("a2") })
		clk.Step(2*time.Second - 1)
		until("not before it has", func() bool { return !wasHandled("a2") })
		clk.Step(1)
		until("A's item is handled once the bucket holds a permit", func() bool { return wasHandled("a2") })
	})
}

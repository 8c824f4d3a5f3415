package evictionqueue_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
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
				deadline := time.Now().Add(10 * time.Second)
				for clk.Waiters() != parked {
					if time.Now().After(deadline) {
						t.Fatalf("timed out: %d of %d workers wait for a permit", clk.Waiters(), parked)
					}
					time.Sleep(50 * time.Microsecond)
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
	}
}

package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestLimiterUnderUnsettledConcurrency drives waiters that cancel at random,
// Tracker changes through pauses and speed-ups, Refresh and When calls, and
// fake-clock steps, all without waiting for the Limiter to settle, so that
// they interleave as they would in production. Once the fleet is healthy
// every waiter gets its permit: none sleeps through a change.
func TestLimiterUnderUnsettledConcurrency(t *testing.T) {
	for seed := range uint64(10) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 1))
				cfg := Config{ResourceEvictionRate: 20, SecondaryResourceEvictionRate: 5, UnhealthyClusterThreshold: 0.5, LargeClusterNumThreshold: 4}
				l, tr, clk := newTracked(t, cfg, 5, 0, WithRecoveryHold(time.Duration(rng.IntN(2))*time.Second))
				d := NewDynamicRateLimiter[int](l)
				var (
					wg                 sync.WaitGroup
					granted, cancelled atomic.Int64
					stop               = make(chan struct{})
				)
				for g := range 6 {
					wg.Go(func() {
						r := rand.New(rand.NewPCG(seed, uint64(g)+10))
						for {
							select {
							case <-stop:
								return
							default:
							}
							ctx, cancel := context.WithCancel(context.Background())
							if r.IntN(3) == 0 {
								spins := r.IntN(20)
								go func() {
									for range spins {
										runtime.Gosched()
									}
									cancel()
								}()
							}
							if err := l.Wait(ctx); err != nil {
								cancelled.Add(1)
							} else {
								granted.Add(1)
							}
							cancel()
						}
					})
				}
				for range 400 {
					switch op := rng.IntN(10); {
					case op < 5:
						clk.Step(time.Duration(rng.IntN(300)) * time.Millisecond)
					case op < 7:
						total := 4 + rng.IntN(2) // 4: small fleet, pauses when faulty
						fleet(tr, total, rng.IntN(total+1))
					case op < 8:
						l.Refresh()
					case op < 9:
						d.When(rng.IntN(10))
					default:
						runtime.Gosched()
					}
				}
				// Healthy from here on: every waiter must come through. Stop the
				// waiters from starting new waits, then step the clock until the
				// last one has returned.
				close(stop)
				fleet(tr, 5, 0)
				// One more waiter, started on the healthy fleet, must come
				// through too: the random phase may have left no waiter
				// blocked (a storm's hold, every wait cancelled), and then
				// the ones above prove nothing.
				var last atomic.Bool
				wg.Go(func() { last.Store(l.Wait(context.Background()) == nil) })
				done := make(chan struct{})
				go func() { wg.Wait(); close(done) }()
				// At 20/s, after a recovery hold of at most 1s, 6 waiters need
				// well under 1000 steps of 100ms.
				for steps := 0; ; steps++ {
					synctest.Wait() // the waiters have acted on the last step
					select {
					case <-done:
						if !last.Load() {
							t.Fatal("a waiter on the healthy fleet got no permit")
						}
						t.Logf("%d granted, %d cancelled", granted.Load(), cancelled.Load())
						return
					default:
					}
					if steps == 1000 {
						l.mu.Lock()
						s := fmt.Sprintf("rates %+v, fleet bucket %+v, total %+v, now %v, hold %v, srcErr %v",
							l.inForce, l.buckets.fleet, l.buckets.total, clk.Now().Sub(t0), l.decision.hold, l.src.err)
						l.mu.Unlock()
						t.Fatalf("waiters still blocked on a healthy fleet: %s", s)
					}
					clk.Step(100 * time.Millisecond)
				}
			})
		})
	}
}

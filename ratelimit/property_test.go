package ratelimit

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLimiterBoundUnderMixedLoad drives 8 waiters, When calls, cancelled
// waiters, rate changes and pauses together on a fake clock, and checks every
// permit against the guarantees: over any window the waiters get at most
// 1 + ∫ rate permits, none while paused, and no fewer than the rate allows.
func TestLimiterBoundUnderMixedLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 5 clusters (large above 4): healthy 2/s, 3 faulty 0.5/s; 4 clusters with
		// 3 faulty is small: paused.
		cfg := Config{ResourceEvictionRate: 2, SecondaryResourceEvictionRate: 0.5, UnhealthyClusterThreshold: 0.5, LargeClusterNumThreshold: 4}
		l, tr, clk := newTracked(t, cfg, 5, 0)
		d := NewDynamicRateLimiter[int](l)
		const workers = 8

		type permit struct {
			at      time.Time
			decided time.Time
			rate    float64 // in force when decided
			when    bool
		}
		var (
			mu      sync.Mutex
			permits []permit
			cancels = make([]context.CancelFunc, workers)
			wg      sync.WaitGroup
		)
		rateNow := 2.0
		stop, stopAll := context.WithCancel(context.Background())
		for i := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for stop.Err() == nil {
					ctx, cancel := context.WithCancel(stop)
					mu.Lock()
					cancels[i] = cancel
					mu.Unlock()
					for {
						err := l.Wait(ctx)
						if err != nil {
							cancel()
							break
						}
						now := clk.Now()
						mu.Lock()
						// A grant at a step belongs to the rate in force before
						// any change the driver makes after that step.
						permits = append(permits, permit{at: now, decided: now, rate: rateNow})
						mu.Unlock()
					}
				}
			}()
		}

		settleAll := func() {
			mu.Lock()
			r := rateNow
			mu.Unlock()
			timers := workers
			if r == 0 {
				timers = 0
			}
			settle(t, clk, timers)
		}
		var pauses [][2]time.Time // [start, end]
		type segment struct {
			start time.Time
			rate  float64
		}
		segments := []segment{{t0, 2}}
		schedule := []struct {
			total, faulty int
			rate          float64
		}{{5, 3, 0.5}, {4, 3, 0}, {5, 0, 2}, {4, 3, 0}, {5, 3, 0.5}, {5, 0, 2}}

		settleAll()
		for step := 1; step <= 600; step++ {
			clk.Step(100 * time.Millisecond)
			settleAll()
			now := clk.Now()
			if step%50 == 0 {
				next := schedule[(step/50)%len(schedule)]
				// Every grant of this step is recorded (settled): from here on
				// grants belong to the new rate.
				mu.Lock()
				switch {
				case rateNow > 0 && next.rate == 0:
					pauses = append(pauses, [2]time.Time{now, {}})
				case rateNow == 0 && next.rate > 0:
					pauses[len(pauses)-1][1] = now
				}
				rateNow = next.rate
				mu.Unlock()
				segments = append(segments, segment{now, next.rate})
				fleet(tr, next.total, next.faulty)
				require.Equal(t, next.rate, l.Rate())
				settleAll()
			}
			if step%7 == 0 {
				mu.Lock()
				cancel := cancels[(step/7)%workers]
				mu.Unlock()
				cancel()
				settleAll()
			}
			if step%20 == 0 {
				delay := d.When(step)
				mu.Lock()
				if rateNow > 0 {
					permits = append(permits, permit{at: now.Add(delay), decided: now, rate: rateNow, when: true})
				} else {
					require.Equal(t, DefaultRecheckDelay, delay)
				}
				mu.Unlock()
			}
		}
		stopAll()
		wg.Wait()

		// The bound: over any window, the waiters' permits are at most
		// 1 + ∫ rate. (Promised permits are the exception: a workqueue
		// releases them at their time even after a slowdown.)
		segments = append(segments, segment{start: clk.Now()})
		integral := func(a, b time.Time) float64 {
			sum := 0.0
			for i, seg := range segments[:len(segments)-1] {
				from, to := seg.start, segments[i+1].start
				if a.After(from) {
					from = a
				}
				if b.Before(to) {
					to = b
				}
				if to.After(from) {
					sum += seg.rate * to.Sub(from).Seconds()
				}
			}
			return sum
		}
		slices.SortStableFunc(permits, func(a, b permit) int { return a.at.Compare(b.at) })
		var waited []time.Time
		for _, p := range permits {
			if !p.when {
				require.Positive(t, p.rate, "a waiter got a permit at %v while paused", p.at.Sub(t0))
				waited = append(waited, p.at)
			}
		}
		for i := range waited {
			for j := i; j < len(waited); j++ {
				n, bound := j-i+1, 1+integral(waited[i], waited[j])
				require.LessOrEqual(t, float64(n), bound+1e-9, "%d permits in [%v, %v]", n, waited[i].Sub(t0), waited[j].Sub(t0))
			}
		}
		waits := len(waited)
		t.Logf("%d permits, %d to waiters, %d pauses", len(permits), waits, len(pauses))

		// The bucket never idles while someone waits: each segment of constant
		// rate gets its share, less at most the permit the bucket may lack
		// when it begins and one promised before it, which a pause does not
		// cancel.
		for i, seg := range segments[:len(segments)-1] {
			end := segments[i+1].start
			n := 0
			for _, p := range permits {
				if !p.at.Before(seg.start) && p.at.Before(end) {
					n++
				}
			}
			want := int(seg.rate*end.Sub(seg.start).Seconds()) - 2
			require.GreaterOrEqual(t, n, want, "segment from %v at %v/s", seg.start.Sub(t0), seg.rate)
		}
		require.Greater(t, waits, 30, "waiters made progress")
	})
}

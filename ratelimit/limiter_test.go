package ratelimit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/textlogger"
	testingclock "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fleet sets tr to total clusters of which the first faulty ones are faulty.
func fleet(tr *Tracker, total, faulty int) {
	for i := range total {
		tr.Set(fmt.Sprintf("c%03d", i), i < faulty)
	}
	for i := total; i < 1000; i++ {
		tr.Delete(fmt.Sprintf("c%03d", i))
	}
}

// fakeSource is a HealthSource that is not a Notifier: Limiters poll it.
type fakeSource struct {
	mu    sync.Mutex
	h     Health
	err   error
	reads int
}

func (f *fakeSource) Health() (Health, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.h, f.err
}

func (f *fakeSource) set(h Health, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.h, f.err = h, err
}

func (f *fakeSource) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

// recMetrics records every Metrics call.
type recMetrics struct {
	mu     sync.Mutex
	health []Health
	rates  []float64
}

func (m *recMetrics) FleetHealth(total, faulty int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.health = append(m.health, Health{Total: total, Unhealthy: faulty})
}

func (m *recMetrics) EvictionRate(r float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rates = append(m.rates, r)
}

func (m *recMetrics) calls() ([]Health, []float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.health), slices.Clone(m.rates)
}

// settle waits, inside a synctest bubble, until every goroutine of the
// bubble is blocked, and checks that timers timers are then set on clk.
// Blocked in a bubble means blocked on a channel or select (durably): a
// waiter only gets there after it has seen the Limiter's current state,
// since every change wakes it, and it sets a timer for when its bucket will
// hold a permit unless the Limiter is paused.
func settle(t *testing.T, clk *testingclock.FakeClock, timers int) {
	t.Helper()
	synctest.Wait()
	require.Equal(t, timers, clk.Waiters(), "timers set")
}

// waitForTimers is settle for a test that cannot run in a bubble (one with
// an informer's goroutines): it spins until timers timers are set on clk. A
// waiter sets its timer under the Limiter's lock, having seen the state and
// taken the channels that tell it of a change. The real-time guard only
// turns a hang into a failure.
func waitForTimers(t *testing.T, clk *testingclock.FakeClock, timers int) {
	t.Helper()
	guard := time.Now().Add(20 * time.Second)
	for clk.Waiters() != timers {
		if time.Now().After(guard) {
			t.Fatalf("timed out waiting for %d timers; %d set", timers, clk.Waiters())
		}
		runtime.Gosched()
	}
}

// waitAsync runs l.Wait(ctx) in a goroutine and returns its result channel.
func waitAsync(l *Limiter, ctx context.Context, wg *sync.WaitGroup) <-chan error {
	res := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		res <- l.Wait(ctx)
	}()
	return res
}

func pending(ch <-chan error) bool {
	select {
	case err := <-ch:
		panic(fmt.Sprintf("waiter returned early: %v", err))
	default:
		return true
	}
}

func newTracked(t *testing.T, cfg Config, total, faulty int, opts ...Option) (*Limiter, *Tracker, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	tr := NewTracker()
	fleet(tr, total, faulty)
	l, err := NewLimiter(cfg, tr, append([]Option{WithClock(clk)}, opts...)...)
	require.NoError(t, err)
	return l, tr, clk
}

func TestNewLimiterRejectsBadInput(t *testing.T) {
	bad := DefaultConfig()
	bad.ResourceEvictionRate = -1
	_, err := NewLimiter(bad, nil, WithPollInterval(0), WithRecoveryHold(-time.Second), WithClock(nil), WithRecheckDelay(0))
	require.Error(t, err)
	for _, want := range []string{
		"ratelimit: ResourceEvictionRate (--resource-eviction-rate) must not be negative, got -1",
		"ratelimit: NewLimiter: health source is nil",
		"ratelimit: WithPollInterval: interval must be positive, got 0s",
		"ratelimit: WithRecoveryHold: hold must not be negative, got -1s",
		"ratelimit: WithClock: clock is nil",
		"ratelimit: WithRecheckDelay: delay must be positive, got 0s",
	} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestZeroLimiterHandsOutNothing(t *testing.T) {
	var zero Limiter
	var nilL *Limiter
	for _, l := range []*Limiter{&zero, nilL} {
		assert.Error(t, l.Wait(context.Background()))
		assert.Zero(t, l.Rate())
		l.Refresh() // no panic
		_, ok := l.promise()
		assert.False(t, ok)
		ok, next := l.TakeAt(t0)
		assert.False(t, ok)
		assert.Zero(t, next)
	}
}

func TestLimiterThroughputEqualsRate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ResourceEvictionRate = 2 // one permit every 500ms
	for _, workers := range []int{1, 16} {
		t.Run(fmt.Sprintf("%d waiters", workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, _, clk := newTracked(t, cfg, 20, 0)
				ctx, cancel := context.WithCancel(context.Background())
				var (
					wg     sync.WaitGroup
					mu     sync.Mutex
					grants []time.Time
				)
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for l.Wait(ctx) == nil {
							mu.Lock()
							grants = append(grants, clk.Now())
							mu.Unlock()
						}
					}()
				}
				const step, total = 100 * time.Millisecond, 60 * time.Second
				settle(t, clk, workers)
				for elapsed := time.Duration(0); elapsed < total; elapsed += step {
					clk.Step(step)
					settle(t, clk, workers)
				}
				cancel()
				wg.Wait()

				// rate×t + 1 over the closed window [t0, t0+60s], and no fewer:
				// the bucket never idles while someone waits.
				assert.Len(t, grants, 2*60+1)
				slices.SortFunc(grants, time.Time.Compare)
				for i := 1; i < len(grants); i++ {
					require.Equal(t, 500*time.Millisecond, grants[i].Sub(grants[i-1]), "permit %d", i)
				}
			})
		})
	}
}

func TestLimiterPauseAndResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 10 clusters is a small fleet: 6 faulty (60% > 55%) pauses.
		l, tr, clk := newTracked(t, DefaultConfig(), 10, 0)
		ctx := context.Background()
		var wg sync.WaitGroup
		defer wg.Wait()

		require.NoError(t, l.Wait(ctx), "the first permit is immediate")
		fleet(tr, 10, 6)
		assert.Zero(t, l.Rate())

		first := waitAsync(l, ctx, &wg)
		second := waitAsync(l, ctx, &wg)
		// 6 at once is also a failure storm: its hold's end is each
		// waiter's one timer, so that the hold is seen to end though the
		// rule pauses anyway; then they block with no timer at all.
		settle(t, clk, 2)
		assert.True(t, l.StormHold())
		clk.Step(time.Hour)
		settle(t, clk, 0)
		assert.False(t, l.StormHold())
		assert.True(t, pending(first) && pending(second))

		fleet(tr, 10, 5) // 50%: healthy again
		// The bucket was empty when the pause began, and the hour paused
		// added nothing: a whole interval before the first permit, and
		// another before the second.
		settle(t, clk, 2)
		clk.Step(2*time.Second - time.Nanosecond)
		settle(t, clk, 2)
		assert.True(t, pending(first) && pending(second))
		clk.Step(time.Nanosecond)
		synctest.Wait()
		got := 0
		for _, ch := range []<-chan error{first, second} {
			select {
			case err := <-ch:
				assert.NoError(t, err)
				got++
			default:
			}
		}
		assert.Equal(t, 1, got, "one permit, two seconds after the resume")
		clk.Step(2 * time.Second)
		wg.Wait()
	})
}

// TestLimiterResumeLetsThroughAtOnceOnlyAPermitHeldBeforeThePause: a
// resume is not a permit. A bucket emptied just before a short pause is
// still empty after it; one that was full before the pause still is.
func TestLimiterResumeLetsThroughAtOnceOnlyAPermitHeldBeforeThePause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, tr, clk := newTracked(t, DefaultConfig(), 10, 0) // 0.5/s
		require.NoError(t, l.Wait(t.Context()))
		fleet(tr, 10, 6)
		require.Zero(t, l.Rate())
		clk.Step(500 * time.Millisecond)
		fleet(tr, 10, 0)
		ok, next := l.TakeAt(clk.Now())
		assert.False(t, ok, "emptied before the pause")
		assert.Equal(t, t0.Add(2500*time.Millisecond), next, "the 2s interval, less nothing for the pause")

		clk.Step(time.Hour) // full again
		fleet(tr, 10, 6)
		clk.Step(time.Hour)
		fleet(tr, 10, 0)
		ok, _ = l.TakeAt(clk.Now())
		assert.True(t, ok, "full before the pause: through at once")
	})
}

// TestFlappingHealthGivesNoFreePermits is the probe of flapping health:
// health flips between paused and running every 50ms for 10s while several
// waiters wait, at 0.5/s. Each resume used to let the first waiter through
// at once (about 100 permits); the bound allows 1 + ∫rate = 1 + 0.5×5s.
// The same holds under the region rule, and with a recovery hold (which
// keeps it paused).
func TestFlappingHealthGivesNoFreePermits(t *testing.T) {
	regionCfg := DefaultConfig()
	regionCfg.DisruptionDomain = DomainRegion
	tests := []struct {
		name string
		cfg  Config
		hold time.Duration
		// max is the bound: 1 + ∫rate over the 10s, the rate in force half
		// of the time; with the hold, never.
		max int
	}{
		{"fleet rule", DefaultConfig(), 0, 1 + 3},
		{"fleet rule with a recovery hold", DefaultConfig(), time.Second, 1},
		{"region rule", regionCfg, 0, 1 + 3},
		{"region rule with a recovery hold", regionCfg, time.Second, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clk := testingclock.NewFakeClock(t0)
				tr := NewTracker()
				for i := range 10 { // small fleet: 6 faulty pauses; region "r" partly down pauses too
					tr.SetInDomains(fmt.Sprintf("c%d", i), false, "r")
				}
				l, err := NewLimiter(tt.cfg, tr, WithClock(clk), WithRecoveryHold(tt.hold))
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(t.Context())
				var granted atomic.Int64
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						for {
							var err error
							if tt.cfg.DisruptionDomain.PerDomain() {
								_, _, err = l.WaitDomain(ctx, []string{"r"})
							} else {
								err = l.Wait(ctx)
							}
							if err != nil {
								return
							}
							granted.Add(1)
						}
					})
				}
				for step := range 200 {
					synctest.Wait()
					for i := range 6 {
						tr.SetInDomains(fmt.Sprintf("c%d", i), step%2 == 0, "r")
					}
					synctest.Wait()
					clk.Step(50 * time.Millisecond)
				}
				synctest.Wait()
				cancel()
				wg.Wait()
				t.Logf("%d permits in 10s of flapping", granted.Load())
				assert.LessOrEqual(t, int(granted.Load()), tt.max)
				assert.GreaterOrEqual(t, int(granted.Load()), 1, "the bucket's first permit")
			})
		})
	}
}

func TestLimiterPausedNeverGrantsWhilePolling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testingclock.NewFakeClock(t0)
		src := &fakeSource{h: Health{Total: 4, Unhealthy: 4}} // small and failing: paused
		l, err := NewLimiter(DefaultConfig(), src, WithClock(clk), WithPollInterval(time.Second))
		require.NoError(t, err)
		var wg sync.WaitGroup
		defer wg.Wait()

		res := waitAsync(l, context.Background(), &wg)
		for range 100 { // every poll re-reads, finds the fleet still failing, re-parks
			settle(t, clk, 1)
			clk.Step(time.Second)
		}
		settle(t, clk, 1)
		assert.True(t, pending(res))
		assert.GreaterOrEqual(t, src.readCount(), 100)

		src.set(Health{Total: 4}, nil)
		clk.Step(time.Second)
		assert.NoError(t, <-res, "the poll that sees recovery releases the waiter")
	})
}

func TestLimiterRetimesWaitersWhenRateChanges(t *testing.T) {
	// 4 clusters, large above 2: 3 faulty (75%) slows from 1/s to 0.1/s.
	cfg := Config{ResourceEvictionRate: 1, SecondaryResourceEvictionRate: 0.1, UnhealthyClusterThreshold: 0.5, LargeClusterNumThreshold: 2}

	t.Run("slower: pushed back", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, tr, clk := newTracked(t, cfg, 4, 0)
			var wg sync.WaitGroup
			defer wg.Wait()
			require.NoError(t, l.Wait(context.Background()))
			res := waitAsync(l, context.Background(), &wg)
			settle(t, clk, 1) // due at t0+1s

			fleet(tr, 4, 3)
			assert.Equal(t, 0.1, l.Rate())
			settle(t, clk, 1)
			clk.Step(time.Second)
			settle(t, clk, 1)
			assert.True(t, pending(res), "no longer due at t0+1s")
			clk.Step(9 * time.Second)
			assert.NoError(t, <-res, "due one slow interval after the last permit")
		})
	})

	t.Run("faster: brought forward", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, tr, clk := newTracked(t, cfg, 4, 3)
			var wg sync.WaitGroup
			defer wg.Wait()
			require.NoError(t, l.Wait(context.Background()))
			a := waitAsync(l, context.Background(), &wg)
			b := waitAsync(l, context.Background(), &wg)
			settle(t, clk, 2) // due at t0+10s
			clk.Step(500 * time.Millisecond)
			settle(t, clk, 2)

			// 1/s from now on: the 0.95 of a permit still missing comes in
			// 950ms, not in 9.5s.
			fleet(tr, 4, 0)
			assert.Equal(t, 1.0, l.Rate())
			settle(t, clk, 2)
			clk.Step(950 * time.Millisecond)
			synctest.Wait()
			first, second := a, b
			if len(a) == 0 {
				first, second = b, a
			}
			assert.NoError(t, <-first)
			settle(t, clk, 1)
			assert.True(t, pending(second))
			clk.Step(time.Second)
			assert.NoError(t, <-second)
		})
	})
}

func TestLimiterSourceErrorPausesUntilItAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testingclock.NewFakeClock(t0)
		src := &fakeSource{h: Health{Total: 3}}
		var logs bytes.Buffer
		logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs)))
		l, err := NewLimiter(DefaultConfig(), src, WithClock(clk), WithPollInterval(time.Second), WithLogger(logger))
		require.NoError(t, err)
		var wg sync.WaitGroup
		defer wg.Wait()

		require.NoError(t, l.Wait(context.Background()))
		src.set(Health{}, errors.New("informer cache gone"))
		res := waitAsync(l, context.Background(), &wg)
		settle(t, clk, 1) // due at t0+1s (next poll) or t0+2s (slot)
		clk.Step(time.Second)
		settle(t, clk, 1)
		assert.Zero(t, l.Rate())
		for range 5 { // still failing: stays paused, logs once
			clk.Step(time.Second)
			settle(t, clk, 1)
		}
		assert.True(t, pending(res))
		assert.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("informer cache gone")), "one log line per distinct error:\n%s", logs.String())

		// Paused at t0+1s, half way to the next permit: it comes one
		// second after the source answers.
		src.set(Health{Total: 3}, nil)
		clk.Step(time.Second)
		settle(t, clk, 1)
		assert.True(t, pending(res))
		assert.Equal(t, 0.5, l.Rate())
		clk.Step(time.Second)
		assert.NoError(t, <-res)
		assert.Contains(t, logs.String(), "health source answers again")
	})
}

func TestLimiterWaiterWhoseContextEndsTakesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _, clk := newTracked(t, DefaultConfig(), 3, 0) // 0.5/s: 2s apart
		var wg sync.WaitGroup
		defer wg.Wait()
		require.NoError(t, l.Wait(context.Background()))

		ctxB, cancelB := context.WithCancel(context.Background())
		b := waitAsync(l, ctxB, &wg)
		c := waitAsync(l, context.Background(), &wg)
		settle(t, clk, 2)
		cancelB()
		assert.ErrorIs(t, <-b, context.Canceled)
		settle(t, clk, 1)
		clk.Step(2 * time.Second)
		assert.NoError(t, <-c, "c gets the permit at t0+2s")

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, l.Wait(ctx), context.Canceled, "an ended context takes nothing")
		f := waitAsync(l, context.Background(), &wg)
		settle(t, clk, 1)
		clk.Step(2 * time.Second)
		assert.NoError(t, <-f, "f gets the permit at t0+4s")
	})
}

// TestGiveBackIsReservationCancel: a permit given back unused leaves the
// bucket as if it had never been taken, as x/time/rate's Reservation.Cancel
// does, but only while no permit was taken after it; and only once.
func TestGiveBackIsReservationCancel(t *testing.T) {
	l, _, clk := newTracked(t, DefaultConfig(), 3, 0) // 0.5/s
	ctx := context.Background()
	_, giveBack, err := l.WaitDomain(ctx, list("any"))
	require.NoError(t, err)
	giveBack()
	_, giveBack, err = l.WaitDomain(ctx, list("any"))
	require.NoError(t, err, "given back: the next caller takes it at once")
	giveBack()
	giveBack() // a second call gives nothing more
	_, _, ok, _ := l.TakeDomainAt(clk.Now(), []string{"any"})
	require.True(t, ok, "given back once")
	ok, next := l.TakeAt(clk.Now())
	assert.False(t, ok, "not twice")
	assert.Equal(t, t0.Add(2*time.Second), next)

	clk.Step(2 * time.Second)
	_, first, ok, _ := l.TakeDomainAt(clk.Now(), []string{"any"})
	require.True(t, ok)
	clk.Step(2 * time.Second)
	ok, _ = l.TakeAt(clk.Now())
	require.True(t, ok)
	first() // another was taken after it: nothing comes back
	ok, next = l.TakeAt(clk.Now())
	assert.False(t, ok)
	assert.Equal(t, t0.Add(6*time.Second), next)
}

func TestLimiterRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testingclock.NewFakeClock(t0)
		src := &fakeSource{h: Health{Total: 4, Unhealthy: 4}}
		l, err := NewLimiter(DefaultConfig(), src, WithClock(clk), WithPollInterval(time.Hour))
		require.NoError(t, err)
		var wg sync.WaitGroup
		defer wg.Wait()

		assert.Zero(t, l.Rate())
		res := waitAsync(l, context.Background(), &wg)
		settle(t, clk, 1) // only the hourly poll could wake it
		src.set(Health{Total: 4}, nil)
		assert.Zero(t, l.Rate(), "not re-read before the poll is due")
		l.Refresh()
		assert.Equal(t, 0.5, l.Rate())
		assert.NoError(t, <-res, "Refresh wakes the waiter without any clock step")
	})
}

func TestLimiterRecoveryHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{ResourceEvictionRate: 1, SecondaryResourceEvictionRate: 0.1, UnhealthyClusterThreshold: 0.5, LargeClusterNumThreshold: 2}
		l, tr, clk := newTracked(t, cfg, 4, 0, WithRecoveryHold(30*time.Second))
		assert.Equal(t, 1.0, l.Rate(), "the first answer applies at once")

		fleet(tr, 4, 3)
		assert.Equal(t, 0.1, l.Rate(), "getting worse applies at once")

		fleet(tr, 4, 0)
		assert.Equal(t, 0.1, l.Rate(), "improvement is held")
		clk.Step(20 * time.Second)
		fleet(tr, 4, 3) // flaps back before the hold ends
		assert.Equal(t, 0.1, l.Rate())
		fleet(tr, 4, 0) // the hold starts again from here
		assert.Equal(t, 0.1, l.Rate())
		clk.Step(29 * time.Second)
		assert.Equal(t, 0.1, l.Rate())

		// A waiter is released by the end of the hold itself, with no health change.
		var wg sync.WaitGroup
		defer wg.Wait()
		require.NoError(t, l.Wait(context.Background()))
		res := waitAsync(l, context.Background(), &wg)
		settle(t, clk, 1) // due in 10s at 0.1/s, or at the end of the hold in 1s
		clk.Step(time.Second)
		// The hold ends 30s after the last improvement. A tenth of a permit
		// came in that second at 0.1/s; the rest comes in 0.9s at 1/s.
		settle(t, clk, 1)
		assert.Equal(t, 1.0, l.Rate(), "the improvement lasted 30s")
		clk.Step(900 * time.Millisecond)
		assert.NoError(t, <-res)
	})
}

func TestLimiterMetricsReportChangesOnly(t *testing.T) {
	m := &recMetrics{}
	l, tr, _ := newTracked(t, DefaultConfig(), 10, 0, WithMetrics(m))
	for range 3 {
		_ = l.Rate()
	}
	_, _ = l.promise()
	fleet(tr, 10, 2) // health changes, rate does not
	_ = l.Rate()
	fleet(tr, 10, 6)     // paused
	tr.Set("c000", true) // same state: nothing
	_ = l.Rate()
	_ = l.Rate()
	health, rates := m.calls()
	assert.Equal(t, []Health{{Total: 10}, {Total: 10, Unhealthy: 2}, {Total: 10, Unhealthy: 6}}, health)
	assert.Equal(t, []float64{0.5, 0}, rates)
}

func TestLimiterRecoveryHoldStepwise(t *testing.T) {
	// 2 clusters is small (paused when failing); 4 is large (0.1/s when failing).
	cfg := Config{ResourceEvictionRate: 1, SecondaryResourceEvictionRate: 0.1, UnhealthyClusterThreshold: 0.5, LargeClusterNumThreshold: 2}
	l, tr, clk := newTracked(t, cfg, 2, 2, WithRecoveryHold(30*time.Second))
	assert.Zero(t, l.Rate())

	fleet(tr, 4, 4) // would be 0.1/s
	assert.Zero(t, l.Rate())
	clk.Step(10 * time.Second)
	fleet(tr, 4, 0) // would be 1/s
	assert.Zero(t, l.Rate())
	clk.Step(20 * time.Second)
	assert.Equal(t, 0.1, l.Rate(), "0.1/s has lasted 30s")
	clk.Step(10 * time.Second)
	assert.Equal(t, 1.0, l.Rate(), "1/s has lasted 30s, with no further health change")
}

// flakyTracker is a Tracker (so a Notifier) whose Health can be made to
// fail, counting the Limiter's reads.
type flakyTracker struct {
	*Tracker
	failing atomic.Bool
	reads   atomic.Int64
}

func (f *flakyTracker) Health() (Health, error) {
	f.reads.Add(1)
	if f.failing.Load() {
		return Health{}, errors.New("cache unavailable")
	}
	return f.Tracker.Health()
}

func TestLimiterNotifierErrorsArePolled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := NewTracker()
		fleet(tr, 3, 0)
		src := &flakyTracker{Tracker: tr}
		src.failing.Store(true)
		clk := testingclock.NewFakeClock(t0)
		l, err := NewLimiter(DefaultConfig(), src, WithClock(clk), WithPollInterval(time.Second))
		require.NoError(t, err)
		var wg sync.WaitGroup
		defer wg.Wait()

		res := waitAsync(l, context.Background(), &wg)
		settle(t, clk, 1) // paused, polling
		assert.Zero(t, l.Rate())

		// A change while the source errs wakes the waiter, which must read the
		// source (taking a fresh Changed channel) rather than spin on the closed one.
		before := src.reads.Load()
		tr.Set("late", false)
		synctest.Wait()
		require.Greater(t, src.reads.Load(), before, "a read after the change")
		settle(t, clk, 1)
		clk.Step(time.Second)
		settle(t, clk, 1)
		assert.True(t, pending(res))

		src.failing.Store(false)
		clk.Step(time.Second)
		require.NoError(t, <-res, "the first poll after the source answers releases the waiter")
		assert.Equal(t, 0.5, l.Rate())
	})
}

func TestIntervalFor(t *testing.T) {
	tests := []struct {
		name string
		rate float64
		want time.Duration
	}{
		{"exact", 0.5, 2 * time.Second},
		{"rounded up, so never faster than the rate", 3, 333333334},
		{"rates above 1e9/s are capped at one permit per nanosecond", 1e12, 1},
		{"tiny rates are capped at a decade", 1e-12, maxInterval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, intervalFor(tt.rate))
		})
	}
}

func TestLimiterString(t *testing.T) {
	l, _, _ := newTracked(t, DefaultConfig(), 3, 0)
	_ = l.Rate()
	assert.Equal(t, "ratelimit.Limiter(rate=0.5/s)", l.String())
	assert.Equal(t, "ratelimit.Limiter(unconfigured)", new(Limiter).String())
}

// TestLimiterTreatsImpossibleHealthAsAnError: a custom HealthSource that
// counts faulty clusters before its fleet list is loaded may answer more
// unhealthy clusters than clusters, or negative counts. The rule would read
// 5 faulty of 0 as a healthy fleet (failure rate 0: full rate); the Limiter
// pauses instead, as for a source error, and resumes once the answer is
// possible again.
func TestLimiterTreatsImpossibleHealthAsAnError(t *testing.T) {
	for _, h := range []Health{
		{Total: 0, Unhealthy: 5},
		{Total: 3, Unhealthy: 4},
		{Total: 3, Unhealthy: -1},
		{Total: -1, Unhealthy: 0},
	} {
		t.Run(fmt.Sprintf("%+v", h), func(t *testing.T) {
			clk := testingclock.NewFakeClock(t0)
			src := &fakeSource{h: h}
			var logs bytes.Buffer
			logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs)))
			l, err := NewLimiter(DefaultConfig(), src, WithClock(clk), WithLogger(logger))
			require.NoError(t, err)
			assert.Zero(t, l.Rate(), "rate for an impossible %+v", h)
			assert.Contains(t, logs.String(), "Unhealthy")
			src.set(Health{Total: 3}, nil)
			clk.Step(DefaultPollInterval)
			assert.Equal(t, 0.5, l.Rate(), "rate once the source answers a possible Health")
		})
	}
}

func TestNewLimiterRejectsATypedNilSource(t *testing.T) {
	var tr *Tracker
	_, err := NewLimiter(DefaultConfig(), tr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ratelimit: NewLimiter: health source is a nil *ratelimit.Tracker")
}

// slowSource blocks its first read until released, as a health source
// behind a slow API call does; later reads answer at once.
type slowSource struct {
	once    sync.Once
	entered chan struct{}
	release chan struct{}
	h       Health
}

func (s *slowSource) Health() (Health, error) {
	s.once.Do(func() {
		close(s.entered)
		<-s.release
	})
	return s.h, nil
}

func TestWaitTakesNoPermitWhenItsContextEndsDuringASlowRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &slowSource{entered: make(chan struct{}), release: make(chan struct{}), h: Health{Total: 10}}
		clk := testingclock.NewFakeClock(t0)
		l, err := NewLimiter(DefaultConfig(), src, WithClock(clk))
		require.NoError(t, err)

		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		first := waitAsync(l, ctx, &wg)
		<-src.entered // the first Wait is reading the source
		cancel()
		close(src.release)
		require.ErrorIs(t, <-first, context.Canceled)

		// The first Wait took no permit, so the next one is granted at once,
		// without the clock moving.
		require.NoError(t, l.Wait(context.Background()))
		wg.Wait()
	})
}

// TestTakeAtStepsTheLimiterWithoutAClock steps a Limiter through a slowdown,
// a pause and a held recovery with TakeAt alone: no goroutine, no clock.
// Each answer says when a permit may next be free, so a simulation knows
// where to jump.
func TestTakeAtStepsTheLimiterWithoutAClock(t *testing.T) {
	// 4 clusters, large above 2: 3 faulty is 0.1/s; 2 of 2 faulty is paused.
	cfg := Config{ResourceEvictionRate: 1, SecondaryResourceEvictionRate: 0.1, UnhealthyClusterThreshold: 0.5, LargeClusterNumThreshold: 2}
	tr := NewTracker()
	fleet(tr, 4, 0)
	l, err := NewLimiter(cfg, tr, WithRecoveryHold(30*time.Second))
	require.NoError(t, err)
	none := time.Time{}
	steps := []struct {
		name     string
		at       time.Duration
		health   func()
		wantOK   bool
		wantNext time.Time
	}{
		{"the first permit is at once", 0, nil, true, none},
		{"the next is one interval later", 500 * time.Millisecond, nil, false, at(time.Second)},
		{"taken at its slot", time.Second, nil, true, none},
		// Half a permit came at 1/s; the other half takes 5s at 0.1/s.
		{"a slowdown applies at once", 1500 * time.Millisecond, func() { fleet(tr, 4, 3) }, false, at(6500 * time.Millisecond)},
		{"paused: nothing is due until health changes", 2 * time.Second, func() { fleet(tr, 2, 2) }, false, none},
		{"a recovery is held for 30s", 5 * time.Second, func() { fleet(tr, 4, 0) }, false, at(35 * time.Second)},
		// 0.55 of a permit came before the pause; the pause added nothing.
		{"once it has lasted the hold, the rest comes at 1/s", 35 * time.Second, nil, false, at(35450 * time.Millisecond)},
		{"taken then", 35450 * time.Millisecond, nil, true, none},
		{"and the next one interval later", 35450 * time.Millisecond, nil, false, at(36450 * time.Millisecond)},
	}
	for _, s := range steps {
		if s.health != nil {
			s.health()
		}
		ok, next := l.TakeAt(at(s.at))
		assert.Equal(t, s.wantOK, ok, s.name)
		assert.Equal(t, s.wantNext, next, s.name)
	}
}

func TestTakeAtSharesTheBucketWithWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _, clk := newTracked(t, DefaultConfig(), 3, 0) // 0.5/s
		ok, _ := l.TakeAt(t0)
		require.True(t, ok)
		var wg sync.WaitGroup
		defer wg.Wait()
		res := waitAsync(l, context.Background(), &wg)
		settle(t, clk, 1) // for t0+2s

		ok, next := l.TakeAt(t0.Add(time.Second))
		assert.False(t, ok)
		assert.Equal(t, t0.Add(2*time.Second), next)
		clk.Step(2 * time.Second)
		require.NoError(t, <-res)
		ok, next = l.TakeAt(clk.Now())
		assert.False(t, ok, "the waiter took it")
		assert.Equal(t, t0.Add(4*time.Second), next)
	})
}

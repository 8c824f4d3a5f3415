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
// bubble is blocked, and checks that waiters callers are then in the
// Limiter's line with timers timers set on clk. Blocked in a bubble means
// blocked on a channel or select (durably): a waiter only gets there after it
// has seen the Limiter's current state, since every change wakes it.
func settle(t *testing.T, l *Limiter, clk *testingclock.FakeClock, waiters, timers int) {
	t.Helper()
	synctest.Wait()
	l.mu.Lock()
	n := l.bucket.n
	l.mu.Unlock()
	require.Equal(t, waiters, n, "waiters in line")
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
				settle(t, l, clk, workers, workers)
				for elapsed := time.Duration(0); elapsed < total; elapsed += step {
					clk.Step(step)
					settle(t, l, clk, workers, workers)
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
		settle(t, l, clk, 1, 0) // first in line
		second := waitAsync(l, ctx, &wg)
		settle(t, l, clk, 2, 0) // blocked with no timer at all: nothing can release them
		clk.Step(time.Hour)
		settle(t, l, clk, 2, 0)
		assert.True(t, pending(first) && pending(second))

		fleet(tr, 10, 5) // 50%: healthy again
		// The first waiter in line goes through at once: no clock step. The hour
		// spent paused left no debt, and no credit either: the next one waits a
		// whole interval.
		assert.NoError(t, <-first)
		settle(t, l, clk, 1, 1)
		clk.Step(2*time.Second - time.Nanosecond)
		settle(t, l, clk, 1, 1)
		assert.True(t, pending(second))
		clk.Step(time.Nanosecond)
		assert.NoError(t, <-second)
	})
}

// TestLimiterResumeForgetsThePermitBeforeAShortPause: a pause shorter than
// one interval still leaves no debt: the first caller after the resume goes
// through at once, not one interval after the permit before the pause.
func TestLimiterResumeForgetsThePermitBeforeAShortPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, tr, clk := newTracked(t, DefaultConfig(), 10, 0) // 0.5/s
		require.NoError(t, l.Wait(t.Context()))
		fleet(tr, 10, 6)
		require.Zero(t, l.Rate())
		clk.Step(500 * time.Millisecond)
		fleet(tr, 10, 0)
		// The bubble's time, not clk, bounds the wait: were the permit
		// delayed to t0+2s, Wait would end with the context's error.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		require.NoError(t, l.Wait(ctx), "the first permit after the resume is immediate")
	})
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
			settle(t, l, clk, 1, 1)
			clk.Step(time.Second)
		}
		settle(t, l, clk, 1, 1)
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
			settle(t, l, clk, 1, 1) // due at t0+1s

			fleet(tr, 4, 3)
			assert.Equal(t, 0.1, l.Rate())
			settle(t, l, clk, 1, 1)
			clk.Step(time.Second)
			settle(t, l, clk, 1, 1)
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
			settle(t, l, clk, 1, 1) // due at t0+10s
			b := waitAsync(l, context.Background(), &wg)
			settle(t, l, clk, 2, 2) // due at t0+20s
			clk.Step(500 * time.Millisecond)
			settle(t, l, clk, 2, 2)

			fleet(tr, 4, 0) // 1/s from now on: due at t0+1s and t0+2s
			assert.Equal(t, 1.0, l.Rate())
			settle(t, l, clk, 2, 2)
			clk.Step(500 * time.Millisecond)
			assert.NoError(t, <-a)
			settle(t, l, clk, 1, 1)
			assert.True(t, pending(b))
			clk.Step(time.Second)
			assert.NoError(t, <-b)
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
		settle(t, l, clk, 1, 1) // due at t0+1s (next poll) or t0+2s (slot)
		clk.Step(time.Second)
		settle(t, l, clk, 1, 1)
		assert.Zero(t, l.Rate())
		for range 5 { // still failing: stays paused, logs once
			clk.Step(time.Second)
			settle(t, l, clk, 1, 1)
		}
		assert.True(t, pending(res))
		assert.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("informer cache gone")), "one log line per distinct error:\n%s", logs.String())

		src.set(Health{Total: 3}, nil)
		clk.Step(time.Second)
		assert.NoError(t, <-res, "the first waiter goes through once the source answers")
		assert.Equal(t, 0.5, l.Rate())
		assert.Contains(t, logs.String(), "health source answers again")
	})
}

func TestLimiterCancelGivesReservationBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _, clk := newTracked(t, DefaultConfig(), 3, 0) // 0.5/s: 2s apart
		var wg sync.WaitGroup
		defer wg.Wait()
		require.NoError(t, l.Wait(context.Background()))

		ctxB, cancelB := context.WithCancel(context.Background())
		b := waitAsync(l, ctxB, &wg) // due t0+2s
		settle(t, l, clk, 1, 1)
		c := waitAsync(l, context.Background(), &wg) // due t0+4s
		settle(t, l, clk, 2, 2)

		cancelB()
		assert.ErrorIs(t, <-b, context.Canceled)
		settle(t, l, clk, 1, 1)
		clk.Step(2 * time.Second)
		assert.NoError(t, <-c, "c moved up into b's slot")

		// Cancelling the last waiter frees the tail: the next caller gets its slot.
		ctxD, cancelD := context.WithCancel(context.Background())
		d := waitAsync(l, ctxD, &wg) // due t0+4s
		settle(t, l, clk, 1, 1)
		cancelD()
		assert.ErrorIs(t, <-d, context.Canceled)
		e := waitAsync(l, context.Background(), &wg)
		settle(t, l, clk, 1, 1)
		clk.Step(2 * time.Second)
		assert.NoError(t, <-e, "e got t0+4s, not t0+6s")

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, l.Wait(ctx), context.Canceled, "an ended context takes nothing")
		f := waitAsync(l, context.Background(), &wg)
		settle(t, l, clk, 1, 1)
		clk.Step(2 * time.Second)
		assert.NoError(t, <-f)
	})
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
		settle(t, l, clk, 1, 1) // only the hourly poll could wake it
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
		settle(t, l, clk, 1, 1) // due in 10s at 0.1/s, or at the end of the hold in 1s
		clk.Step(time.Second)
		// The hold ends 30s after the last improvement; at 1/s the waiter is due
		// one second after the previous permit, which is now.
		assert.NoError(t, <-res)
		assert.Equal(t, 1.0, l.Rate(), "the improvement lasted 30s")
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
		settle(t, l, clk, 1, 1) // paused, polling
		assert.Zero(t, l.Rate())

		// A change while the source errs wakes the waiter, which must read the
		// source (taking a fresh Changed channel) rather than spin on the closed one.
		before := src.reads.Load()
		tr.Set("late", false)
		synctest.Wait()
		require.Greater(t, src.reads.Load(), before, "a read after the change")
		settle(t, l, clk, 1, 1)
		clk.Step(time.Second)
		settle(t, l, clk, 1, 1)
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
		{"tiny rates are capped at a century", 1e-12, maxInterval},
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
	assert.Equal(t, "ratelimit.Limiter(rate=0.5/s, waiters=0)", l.String())
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
		{"a slowdown applies at once", 1500 * time.Millisecond, func() { fleet(tr, 4, 3) }, false, at(11 * time.Second)},
		{"paused: nothing is due until health changes", 2 * time.Second, func() { fleet(tr, 2, 2) }, false, none},
		{"a recovery is held for 30s", 5 * time.Second, func() { fleet(tr, 4, 0) }, false, at(35 * time.Second)},
		{"once it has lasted the hold, the first permit is at once", 35 * time.Second, nil, true, none},
		{"and the next one interval later", 35 * time.Second, nil, false, at(36 * time.Second)},
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

func TestTakeAtQueuesBehindWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _, clk := newTracked(t, DefaultConfig(), 3, 0) // 0.5/s
		ok, _ := l.TakeAt(t0)
		require.True(t, ok)
		var wg sync.WaitGroup
		defer wg.Wait()
		res := waitAsync(l, context.Background(), &wg)
		settle(t, l, clk, 1, 1) // in line for t0+2s

		ok, next := l.TakeAt(t0.Add(time.Second))
		assert.False(t, ok)
		assert.Equal(t, t0.Add(4*time.Second), next, "the waiter's slot is taken: the next free one is behind it")
		clk.Step(2 * time.Second)
		require.NoError(t, <-res)
	})
}

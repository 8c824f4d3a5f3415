package ratelimit

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"
)

// stormFleet is a 20-cluster fleet under the default rule and storm hold:
// large, so the rule alone evicts at the secondary rate (0.1/s) above 55%.
func stormFleet(t *testing.T, opts ...Option) (*Limiter, *Tracker, *testingclock.FakeClock) {
	t.Helper()
	l, tr, clk := newTracked(t, DefaultConfig(), 20, 0, opts...)
	require.Equal(t, 0.5, l.Rate())
	return l, tr, clk
}

// turn sets clusters c[from, to) of a fleet faulty (or healthy).
func turn(tr *Tracker, from, to int, faulty bool) {
	for i := from; i < to; i++ {
		tr.Set(clusterName(i), faulty)
	}
}

func clusterName(i int) string { return fmt.Sprintf("c%03d", i) } // as fleet names them

func TestStormHoldsUntilTheConfirmationPasses(t *testing.T) {
	l, tr, clk := stormFleet(t)
	turn(tr, 0, 6, true) // 30%: no storm yet
	assert.Equal(t, 0.5, l.Rate())
	clk.Step(40 * time.Second)
	turn(tr, 6, 12, true) // 60% within a minute: a storm
	assert.Zero(t, l.Rate(), "held, although the rule alone gives 0.1/s")
	assert.True(t, l.StormHold())
	ok, next := l.TakeAt(clk.Now())
	assert.False(t, ok)
	assert.Equal(t, clk.Now().Add(5*time.Minute), next, "asked again when the hold ends")

	clk.Step(5*time.Minute - time.Nanosecond)
	assert.Zero(t, l.Rate())
	clk.Step(time.Nanosecond)
	assert.Equal(t, 0.1, l.Rate(), "then the rule's rate")
	assert.False(t, l.StormHold())
}

func TestStormSpreadOverLongerThanTheWindowDoesNotHold(t *testing.T) {
	l, tr, clk := stormFleet(t)
	turn(tr, 0, 6, true)
	assert.Equal(t, 0.5, l.Rate())
	clk.Step(61 * time.Second)
	turn(tr, 6, 12, true) // 60%, but over 61s: the rule's rate at once
	assert.Equal(t, 0.1, l.Rate())
	assert.False(t, l.StormHold())
}

func TestStormRecoveryEndsTheHold(t *testing.T) {
	l, tr, clk := stormFleet(t)
	turn(tr, 0, 12, true)
	assert.Zero(t, l.Rate())
	clk.Step(time.Minute)
	turn(tr, 1, 12, false) // 5%: recovered
	assert.Equal(t, 0.5, l.Rate())
	assert.False(t, l.StormHold())

	// The rise that started the ended hold never starts another: a new
	// storm must rise from here.
	turn(tr, 1, 12, true) // a rise of 11, 55%: not more than the threshold
	assert.Equal(t, 0.1, l.Rate())
	turn(tr, 12, 13, true)
	assert.Zero(t, l.Rate(), "a second storm holds again")
}

func TestStormConfirmedByTheOperator(t *testing.T) {
	m := &stormMetrics{}
	l, tr, clk := stormFleet(t, WithMetrics(m))
	assert.False(t, l.ConfirmStorm(), "no hold to end")
	turn(tr, 0, 12, true)
	assert.Zero(t, l.Rate())
	clk.Step(time.Second)
	assert.True(t, l.ConfirmStorm())
	assert.Equal(t, 0.1, l.Rate(), "the rule's rate at once")
	assert.False(t, l.ConfirmStorm())
	assert.Equal(t, []bool{true, false}, m.holds())
}

// healthyRegions is a Limiter of cfg over regions of the sizes given, every
// cluster healthy and read.
func healthyRegions(t *testing.T, cfg Config, sizes map[string]int) (*Limiter, *Tracker) {
	t.Helper()
	tr := NewTracker()
	for r, n := range sizes {
		regions(tr, r, n, 0)
	}
	l, err := NewLimiter(cfg, tr, WithClock(testingclock.NewFakeClock(t0)))
	require.NoError(t, err)
	require.Equal(t, 0.5, l.Rate())
	return l, tr
}

func TestStormOfOneDomainIsExempt(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DisruptionDomain = DomainRegion
	tests := []struct {
		name     string
		down     map[string]int // faulty clusters per region
		wantHold bool
	}{
		{"one region down evacuates at once", map[string]int{"big": 12}, false},
		{"one region down and another partly: the rest is too little", map[string]int{"big": 12, "b": 3}, false},
		{"two regions down hold", map[string]int{"big": 12, "b": 4}, true},
		{"the same share spread over regions holds", map[string]int{"big": 8, "b": 2, "c": 2}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, tr := healthyRegions(t, cfg, map[string]int{"big": 12, "b": 4, "c": 4})
			for r, n := range tt.down {
				regions(tr, r, n, 0)
				regions(tr, r, n, n)
			}
			assert.Equal(t, tt.wantHold, l.StormHold())
			if !tt.wantHold {
				assert.Equal(t, FullDisruption, l.DomainRates()["big"].State)
				assert.Equal(t, 0.5, l.DomainRates()["big"].Rate, "the lost region is evacuated at the primary rate")
			} else {
				for d, dr := range l.DomainRates() {
					assert.Zero(t, dr.Rate, d)
				}
			}
		})
	}
}

func TestStormHoldIsAPauseForTheRateBound(t *testing.T) {
	l, tr, clk := stormFleet(t)
	start := clk.Now()
	var grants []time.Time
	tick := func(d time.Duration) {
		for end := clk.Now().Add(d); clk.Now().Before(end); clk.Step(100 * time.Millisecond) {
			if ok, _ := l.TakeAt(clk.Now()); ok {
				grants = append(grants, clk.Now())
			}
		}
	}
	tick(30 * time.Second) // 0.5/s
	turn(tr, 0, 12, true)  // the storm: 0 for 5m
	tick(5 * time.Minute)
	tick(2 * time.Minute) // 0.1/s
	held := 0
	for _, g := range grants {
		if !g.Before(start.Add(30*time.Second)) && g.Before(start.Add(30*time.Second+5*time.Minute)) {
			held++
		}
	}
	assert.Zero(t, held, "nothing during the hold")
	// ∫ rate dt = 0.5×30 + 0 + 0.1×120 = 27.
	assert.LessOrEqual(t, len(grants), 28)
	assert.GreaterOrEqual(t, len(grants), 26)
	checkWindowBound(t, grants, 0.5)
}

func TestStormHoldOffWhenAnyValueIsZero(t *testing.T) {
	for _, off := range []func(*Config){
		func(c *Config) { c.StormThreshold = 0 },
		func(c *Config) { c.StormWindow = 0 },
		func(c *Config) { c.StormConfirm = 0 },
	} {
		cfg := DefaultConfig()
		off(&cfg)
		l, tr, _ := newTracked(t, cfg, 20, 0)
		turn(tr, 0, 12, true)
		assert.Equal(t, 0.1, l.Rate())
		assert.False(t, l.StormHold())
	}
}

func TestValidateNamesStormFields(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StormThreshold, cfg.StormWindow, cfg.StormConfirm = 1.5, -time.Second, -time.Minute
	err := cfg.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"ratelimit: StormThreshold (--storm-threshold) must be within [0, 1], got 1.5",
		"ratelimit: StormWindow (--storm-window) must be within [0, 87600h0m0s], got -1s",
		"ratelimit: StormConfirm (--storm-confirm) must be within [0, 87600h0m0s], got -1m0s",
	} {
		assert.Contains(t, err.Error(), want)
	}
}

// stormMetrics records StormHold calls.
type stormMetrics struct {
	recMetrics
	mu    sync.Mutex
	calls []bool
}

func (m *stormMetrics) StormHold(holding bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, holding)
}

func (m *stormMetrics) holds() []bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]bool(nil), m.calls...)
}

var _ StormMetrics = (*stormMetrics)(nil)

// Two regions lost at once hold; when one comes back, the other's outage
// alone is the domain rule's to evacuate: the hold ends.
func TestStormOfTwoDomainsEndsWhenOneIsLeft(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DisruptionDomain = DomainRegion
	clk := testingclock.NewFakeClock(t0)
	tr := NewTracker()
	regions(tr, "big", 12, 0)
	regions(tr, "b", 4, 0)
	regions(tr, "c", 4, 0)
	l, err := NewLimiter(cfg, tr, WithClock(clk))
	require.NoError(t, err)
	require.Equal(t, 0.5, l.Rate())
	regions(tr, "big", 12, 12)
	regions(tr, "b", 4, 4)
	require.True(t, l.StormHold())
	clk.Step(time.Minute)
	regions(tr, "b", 4, 0)
	assert.False(t, l.StormHold())
	assert.Equal(t, 0.5, l.DomainRates()["big"].Rate)
}

// Issue 37, defect 7: while the rule pauses anyway (a small fleet above the
// threshold), a hold that has lasted its confirmation period is reported
// ended as soon as anyone asks, though no read came since: before, it was
// never reported ended (the metric stayed 1), not even after ConfirmStorm.
func TestStormHoldEndsWhileTheRulePausesAnyway(t *testing.T) {
	m := &stormMetrics{}
	l, tr, clk := newTracked(t, DefaultConfig(), 5, 0, WithMetrics(m))
	require.Equal(t, 0.5, l.Rate())
	turn(tr, 0, 3, true) // 60% of a small fleet at once: a storm, and a pause
	require.True(t, l.StormHold())
	require.Zero(t, l.Rate())

	clk.Step(5 * time.Minute)
	assert.False(t, l.StormHold(), "the confirmation period has passed")
	assert.Zero(t, l.Rate(), "the rule pauses a small fleet above the threshold")
	assert.Equal(t, []bool{true, false}, m.holds())
	assert.False(t, l.ConfirmStorm(), "no hold left to confirm")
	assert.Equal(t, []bool{true, false}, m.holds())
}

// Issue 37, defect 7, through ConfirmStorm alone: the first call after
// the hold passed reports it ended.
func TestStormHoldPassedIsReportedByConfirmStorm(t *testing.T) {
	m := &stormMetrics{}
	l, tr, clk := newTracked(t, DefaultConfig(), 5, 0, WithMetrics(m))
	require.Equal(t, 0.5, l.Rate())
	turn(tr, 0, 3, true)
	require.True(t, l.StormHold())
	clk.Step(6 * time.Minute)
	assert.False(t, l.ConfirmStorm())
	assert.Equal(t, []bool{true, false}, m.holds())
}

// Issue 37, defect 6: healthy clusters joining during a hold do not end it
// as if clusters had recovered: the fleet that stormed is as faulty as
// it was.
func TestStormHoldOutlastsClustersJoining(t *testing.T) {
	l, tr, _ := stormFleet(t)
	turn(tr, 0, 12, true) // 60% of 20 at once
	require.True(t, l.StormHold())
	for i := 20; i < 60; i++ {
		tr.Set(clusterName(i), false) // 40 healthy clusters join: 12 of 60
	}
	assert.True(t, l.StormHold(), "none recovered")
	turn(tr, 1, 12, false)
	assert.False(t, l.StormHold(), "then they recover")
}

// Issue 37, defect 5: the clusters with no region form a domain too (named
// ""), and its outage alone is the domain rule's to evacuate, as any
// other's; two domains lost at once, one of them "", hold, whatever the
// order the domains are looked at in.
func TestStormOfTheDomainWithoutANameIsExempt(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DisruptionDomain = DomainRegion
	for _, tt := range []struct {
		name     string
		down     map[string]int
		wantHold bool
	}{
		{"the unnamed domain down evacuates at once", map[string]int{"": 12}, false},
		{"the unnamed domain and another down hold", map[string]int{"": 12, "b": 4}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for range 20 { // map order varies between runs
				l, tr := healthyRegions(t, cfg, map[string]int{"": 12, "b": 4, "c": 4})
				for r, n := range tt.down {
					regions(tr, r, n, n)
				}
				require.Equal(t, tt.wantHold, l.StormHold())
			}
		})
	}
}

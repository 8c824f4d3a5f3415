package ratelimit

import (
	"context"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover"
)

// domainCfg: primary 1/s, secondary 0.25/s, above 50% faulty is disrupted,
// a domain of more than 3 clusters is large.
var domainCfg = Config{ResourceEvictionRate: 1, SecondaryResourceEvictionRate: 0.25,
	UnhealthyClusterThreshold: 0.5, LargeClusterNumThreshold: 3, DisruptionDomain: DomainRegion}

func TestDomainRatesPerState(t *testing.T) {
	tests := []struct {
		name      string
		domains   map[string]Health
		want      map[string]DomainRate
		wantTotal float64
	}{
		{"normal at the threshold: the primary rate",
			map[string]Health{"a": {Total: 4, Unhealthy: 2}, "b": {Total: 1}},
			map[string]DomainRate{"a": {Normal, 1}, "b": {Normal, 1}}, 1},
		{"partial in a large domain: the secondary rate",
			map[string]Health{"a": {Total: 4, Unhealthy: 3}, "b": {Total: 1}},
			map[string]DomainRate{"a": {PartialDisruption, 0.25}, "b": {Normal, 1}}, 1},
		{"partial in a small domain (3 is not above 3): paused",
			map[string]Health{"a": {Total: 3, Unhealthy: 2}, "b": {Total: 1}},
			map[string]DomainRate{"a": {PartialDisruption, 0}, "b": {Normal, 1}}, 1},
		{"full disruption of one domain: the primary rate, its workloads leave",
			map[string]Health{"a": {Total: 5, Unhealthy: 5}, "b": {Total: 2, Unhealthy: 1}},
			map[string]DomainRate{"a": {FullDisruption, 1}, "b": {Normal, 1}}, 1},
		{"every domain fully disrupted: everything paused",
			map[string]Health{"a": {Total: 5, Unhealthy: 5}, "b": {Total: 2, Unhealthy: 2}},
			map[string]DomainRate{"a": {FullDisruption, 0}, "b": {FullDisruption, 0}}, 0},
		{"the only domain fully disrupted is every domain: paused",
			map[string]Health{"": {Total: 2, Unhealthy: 2}},
			map[string]DomainRate{"": {FullDisruption, 0}}, 0},
		{"no domain at all: nothing to pace, the total stays",
			map[string]Health{}, map[string]DomainRate{}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, total := domainCfg.DomainRates(tc.domains)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantTotal, total)
		})
	}
}

func TestDisruptionDomainFlag(t *testing.T) {
	var c Config
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	c.AddFlags(fs)
	assert.Equal(t, "fleet", fs.Lookup(FlagDisruptionDomain).DefValue)
	assert.Equal(t, Domain(""), c.DisruptionDomain, "the default is today's rule, unchanged")
	require.NoError(t, fs.Parse([]string{"--disruption-domain=region"}))
	assert.Equal(t, DomainRegion, c.DisruptionDomain)

	fs = pflag.NewFlagSet("x", pflag.ContinueOnError)
	c.AddFlags(fs)
	err := fs.Parse([]string{"--disruption-domain=continent"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "disruption-domain")
	assert.Contains(t, err.Error(), `"continent"`)
}

func TestValidateNamesAnUnknownDomain(t *testing.T) {
	c := DefaultConfig()
	c.DisruptionDomain = "continent"
	err := c.Validate()
	require.Error(t, err)
	for _, want := range []string{"DisruptionDomain", "--disruption-domain", `"continent"`, "fleet|region|zone|provider"} {
		assert.Contains(t, err.Error(), want)
	}
	for _, d := range append(Domains, "") {
		c.DisruptionDomain = d
		assert.NoError(t, c.Validate(), d)
	}
}

// fleetOnly is a HealthSource that knows no domains.
type fleetOnly struct{}

func (fleetOnly) Health() (Health, error) { return Health{Total: 1}, nil }

func TestNewLimiterRejectsWhatTheDomainRuleCannotUse(t *testing.T) {
	_, err := NewLimiter(domainCfg, fleetOnly{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--disruption-domain=region")
	assert.Contains(t, err.Error(), "ratelimit.fleetOnly")

	_, err = NewLimiter(DefaultConfig(), fleetOnly{})
	assert.NoError(t, err, "the fleet rule needs no domains")
	_, err = NewLimiter(domainCfg, NewTracker(), WithRecoveryHold(time.Minute))
	assert.NoError(t, err, "the recovery hold works under either rule")
}

// TestTheRegionRuleWithoutDomainsIsAnErrorNotAStall: a Tracker that cannot
// know domains would count every cluster in the domain "", and a queue
// asking for its clusters' regions would wait for ever. NewLimiter refuses
// it; one that learns it too late (fed with Set after NewLimiter) pauses
// with that error, logged, rather than stalling without a word.
func TestTheRegionRuleWithoutDomainsIsAnErrorNotAStall(t *testing.T) {
	fedWithSet := NewTracker()
	fedWithSet.Set("eu-1", false)
	_, err := NewLimiter(domainCfg, fedWithSet)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--disruption-domain=region")
	assert.Contains(t, err.Error(), "fed with Set, which records no domain: feed it with SetInDomains")

	inf := &captureInformer{}
	noDomains, err := NewInformerSource(inf, nodeFaulty)
	require.NoError(t, err)
	_, err = NewLimiter(domainCfg, noDomains)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NewInformerSource without WithDomains")
	_, err = NewLimiter(DefaultConfig(), noDomains)
	assert.NoError(t, err, "the fleet rule needs no domains")

	withDomains, err := NewInformerSource(&captureInformer{}, nodeFaulty, WithDomains(func(any) []string { return []string{"eu"} }))
	require.NoError(t, err)
	_, err = NewLimiter(domainCfg, withDomains)
	assert.NoError(t, err)

	late := NewTracker()
	l, err := NewLimiter(domainCfg, late, WithClock(testingclock.NewFakeClock(t0)))
	require.NoError(t, err)
	late.Set("eu-1", false)
	ok, _ := l.TakeAt(t0)
	assert.False(t, ok, "paused")
	_, err = late.DomainHealth()
	assert.ErrorContains(t, err, "feed it with SetInDomains")
}

func TestTrackerKeepsHealthPerDomain(t *testing.T) {
	tr := NewTracker()
	tr.SetInDomains("a1", false, "a")
	tr.SetInDomains("a2", true, "a")
	tr.SetInDomains("multi", true, "z2", "z1", "z1") // counts once in each of its zones
	tr.Set("plain", false)                           // no domain: ""
	h, _ := tr.Health()
	assert.Equal(t, Health{Total: 4, Unhealthy: 2}, h)
	d, _ := tr.DomainHealth()
	assert.Equal(t, map[string]Health{"a": {2, 1}, "z1": {1, 1}, "z2": {1, 1}, "": {1, 0}}, d)

	changed := tr.Changed()
	tr.Set("a2", false) // Set keeps the domains it knows
	<-changed
	tr.SetInDomains("multi", true, "z1") // moves out of z2, which leaves
	tr.Delete("plain")
	d, _ = tr.DomainHealth()
	assert.Equal(t, map[string]Health{"a": {2, 0}, "z1": {1, 1}}, d)

	changed = tr.Changed()
	tr.SetInDomains("multi", true, "z1") // no change: nobody woken
	select {
	case <-changed:
		t.Fatal("woken without a change")
	default:
	}
	un := NewUnsyncedTracker()
	_, err := un.DomainHealth()
	assert.ErrorIs(t, err, ErrNotSynced)
}

func TestDomainsOf(t *testing.T) {
	c := failover.Cluster{Region: "eu", Zone: "eu-1", Provider: "aws"}
	assert.Equal(t, []string{"eu"}, DomainsOf(c, DomainRegion))
	assert.Equal(t, []string{"eu-1"}, DomainsOf(c, DomainZone))
	assert.Equal(t, []string{"aws"}, DomainsOf(c, DomainProvider))
	assert.Nil(t, DomainsOf(c, DomainFleet))
	c.Zones = []string{"eu-2", "eu-3"} // Zones win over Zone
	assert.Equal(t, []string{"eu-2", "eu-3"}, DomainsOf(c, DomainZone))
	assert.Equal(t, []string{""}, DomainsOf(failover.Cluster{}, DomainRegion), "no region: the domain \"\"")
}

// regions sets n clusters in region name, faulty of them faulty.
func regions(tr *Tracker, name string, n, faulty int) {
	for i := range n {
		tr.SetInDomains(name+"-"+string(rune('a'+i)), i < faulty, name)
	}
}

func newDomainLimiter(t *testing.T, opts ...Option) (*Limiter, *Tracker) {
	t.Helper()
	tr := NewTracker()
	l, err := NewLimiter(domainCfg, tr, append([]Option{WithClock(testingclock.NewFakeClock(t0))}, opts...)...)
	require.NoError(t, err)
	return l, tr
}

// takes counts the permits TakeDomainAt gives domain d (and d alone) at
// each tick of step over span from at.
func takes(l *Limiter, at time.Time, span, step time.Duration, d string) (n int) {
	for t := at; t.Before(at.Add(span)); t = t.Add(step) {
		if _, _, ok, _ := l.TakeDomainAt(t, []string{d}); ok {
			n++
		}
	}
	return n
}

func TestLimiterDomainStatesAndTransitions(t *testing.T) {
	l, tr := newDomainLimiter(t)
	regions(tr, "down", 4, 4)    // full disruption: 1/s
	regions(tr, "partial", 5, 4) // large partial: 0.25/s
	regions(tr, "small", 2, 2)   // will be small partial: set below
	tr.SetInDomains("small-c", false, "small")
	regions(tr, "ok", 4, 0) // normal: 1/s
	at := t0
	assert.Equal(t, map[string]DomainRate{
		"down": {FullDisruption, 1}, "partial": {PartialDisruption, 0.25},
		"small": {PartialDisruption, 0}, "ok": {Normal, 1},
	}, l.DomainRates())

	// Each domain alone, over 20s, with 10ms steps: its rate × 20 (+1 at most).
	assert.Equal(t, 20, takes(l, at, 20*time.Second, 10*time.Millisecond, "down"))
	at = at.Add(30 * time.Second)
	assert.Equal(t, 5, takes(l, at, 20*time.Second, 10*time.Millisecond, "partial"))
	at = at.Add(30 * time.Second)
	assert.Zero(t, takes(l, at, 20*time.Second, 10*time.Millisecond, "small"))
	_, _, ok, next := l.TakeDomainAt(at, []string{"small"})
	assert.False(t, ok)
	assert.True(t, next.IsZero(), "a paused domain has no next slot")
	at = at.Add(30 * time.Second)

	// Transitions: the partial domain recovers to normal, the small one
	// becomes fully disrupted: both now at the primary rate.
	tr.SetInDomains("partial-a", false, "partial")
	tr.SetInDomains("partial-b", false, "partial")
	tr.SetInDomains("small-c", true, "small")
	assert.Equal(t, DomainRate{Normal, 1}, l.DomainRates()["partial"])
	assert.Equal(t, DomainRate{FullDisruption, 1}, l.DomainRates()["small"])
	assert.Equal(t, 10, takes(l, at, 10*time.Second, 10*time.Millisecond, "partial"))
	at = at.Add(30 * time.Second)
	assert.Equal(t, 10, takes(l, at, 10*time.Second, 10*time.Millisecond, "small"))
	at = at.Add(30 * time.Second)

	// A domain whose last cluster goes leaves the rule, and has no rate.
	for _, c := range []string{"small-a", "small-b", "small-c"} {
		tr.Delete(c)
	}
	_, _, ok, _ = l.TakeDomainAt(at, []string{"small"})
	assert.False(t, ok)
	assert.NotContains(t, l.DomainRates(), "small")
}

func TestLimiterEveryDomainFullyDisruptedPausesEverything(t *testing.T) {
	l, tr := newDomainLimiter(t)
	regions(tr, "a", 3, 3)
	regions(tr, "b", 2, 2)
	for _, d := range []string{"a", "b"} {
		assert.Equal(t, DomainRate{FullDisruption, 0}, l.DomainRates()[d])
	}
	assert.Zero(t, l.Rate(), "callers naming no domain are paused too")
	for at := t0; at.Before(t0.Add(time.Hour)); at = at.Add(time.Minute) {
		_, _, ok, next := l.TakeDomainAt(at, []string{"a", "b"})
		require.False(t, ok)
		require.True(t, next.IsZero(), "only a change of health can resume")
		ok, _ = l.TakeAt(at)
		require.False(t, ok)
	}
	// One cluster of b answers again: b is normal, a fully disrupted, and
	// both evict at the primary rate again. The buckets were full when the
	// pause began: the first goes through at once.
	tr.SetInDomains("b-a", false, "b")
	at := t0.Add(2 * time.Hour)
	d, _, ok, _ := l.TakeDomainAt(at, []string{"a", "b"})
	assert.True(t, ok)
	assert.Equal(t, "a", d, "the first listed domain with a permit free")
}

// TestLimiterOneDomainsRecoveryKeepsAnothersPacing: domain a evicts at the
// primary rate throughout; domain b pauses and recovers meanwhile, and a's
// slots do not move.
func TestLimiterOneDomainsRecoveryKeepsAnothersPacing(t *testing.T) {
	// a 1 faulty of 2 is normal: 1/s. b 2 of 3 is a small partial: paused.
	l, tr := newDomainLimiter(t)
	regions(tr, "a", 2, 1)
	regions(tr, "b", 3, 2)
	// Only a takes, except one permit for b once it recovers; the total is
	// 1/s, so b's permit takes a's slot at that second and no other.
	var aTimes []time.Duration
	for at := t0; at.Before(t0.Add(10 * time.Second)); at = at.Add(100 * time.Millisecond) {
		if at.Equal(t0.Add(4500 * time.Millisecond)) {
			tr.SetInDomains("b-a", false, "b") // b: 1 of 3, normal
		}
		if at.Equal(t0.Add(7 * time.Second)) {
			tr.SetInDomains("b-a", true, "b") // b paused again
		}
		if d, _, ok, _ := l.TakeDomainAt(at, []string{"a"}); ok {
			require.Equal(t, "a", d)
			aTimes = append(aTimes, at.Sub(t0))
		}
	}
	want := []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second,
		5 * time.Second, 6 * time.Second, 7 * time.Second, 8 * time.Second, 9 * time.Second}
	assert.Equal(t, want, aTimes, "a's slots are those of an undisturbed 1/s bucket")
}

// TestLimiterDomainTotalWithinPrimary: whatever the domains, states and the
// order callers ask in, over any window t the permits of all domains
// together (and of callers naming none) are at most primary×t + 1.
func TestLimiterDomainTotalWithinPrimary(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		l, tr := newDomainLimiter(t)
		names := []string{"a", "b", "c", "d"}
		for _, n := range names {
			regions(tr, n, 2+rng.IntN(5), 0)
		}
		var grants []time.Time
		at := t0
		for range 3000 {
			at = at.Add(time.Duration(rng.IntN(400)) * time.Millisecond)
			if rng.IntN(20) == 0 { // a cluster changes state
				n := names[rng.IntN(len(names))]
				tr.SetInDomains(n+"-a", rng.IntN(2) == 0, n)
				tr.SetInDomains(n+"-b", rng.IntN(2) == 0, n)
			}
			if rng.IntN(10) == 0 {
				if ok, _ := l.TakeAt(at); ok {
					grants = append(grants, at)
				}
				continue
			}
			ask := slices2(names, rng)
			if _, _, ok, _ := l.TakeDomainAt(at, ask); ok {
				grants = append(grants, at)
			}
		}
		require.NotEmpty(t, grants)
		checkWindowBound(t, grants, domainCfg.ResourceEvictionRate)
	}
}

func slices2(names []string, rng *rand.Rand) []string {
	out := append([]string(nil), names...)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out[:1+rng.IntN(len(out))]
}

// checkWindowBound checks that every window [grants[i], grants[j]] holds at
// most r×(its length)+1 grants.
func checkWindowBound(t *testing.T, grants []time.Time, r float64) {
	t.Helper()
	sort.Slice(grants, func(i, j int) bool { return grants[i].Before(grants[j]) })
	for i := range grants {
		for j := i; j < len(grants); j++ {
			w := grants[j].Sub(grants[i]).Seconds()
			if n := float64(j - i + 1); n > r*w+1+1e-9 {
				t.Fatalf("%v permits in a window of %vs at %v/s", n, w, r)
			}
		}
	}
}

func TestWaitDomainBlocksUntilItsDomainHasAPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testingclock.NewFakeClock(t0)
		tr := NewTracker()
		regions(tr, "a", 3, 2) // small partial: paused
		regions(tr, "b", 2, 0)
		l, err := NewLimiter(domainCfg, tr, WithClock(clk))
		require.NoError(t, err)
		ctx := context.Background()
		var wg sync.WaitGroup
		defer wg.Wait()

		d, _, err := l.WaitDomain(ctx, list("a", "b"))
		require.NoError(t, err)
		assert.Equal(t, "b", d, "a paused domain does not hold back another")

		res := make(chan string, 1)
		wg.Go(func() {
			d, _, err := l.WaitDomain(ctx, list("a"))
			assert.NoError(t, err)
			res <- d
		})
		synctest.Wait()
		assert.Zero(t, clk.Waiters(), "paused: no timer, only a change of health wakes it")
		tr.SetInDomains("a-a", false, "a") // a normal: its first permit waits for the total's next slot
		synctest.Wait()
		assert.Len(t, res, 0)
		clk.Step(time.Second)
		assert.Equal(t, "a", <-res)

		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, _, err = l.WaitDomain(cctx, list("a"))
		assert.ErrorIs(t, err, context.Canceled)
		_, _, err = l.WaitDomain(ctx, nil)
		assert.Error(t, err)
	})
}

func TestWaitDomainUnderTheFleetRuleIsWait(t *testing.T) {
	l, _, _ := newTracked(t, DefaultConfig(), 4, 0)
	d, _, err := l.WaitDomain(context.Background(), list("x", "y"))
	require.NoError(t, err)
	assert.Equal(t, "x", d)
	d, _, ok, _ := l.TakeDomainAt(t0, []string{"y"})
	assert.False(t, ok, "the fleet's bucket is shared: the next permit is two seconds on")
	assert.Empty(t, d)
}

// list is a WaitDomain argument listing names.
func list(names ...string) []string { return names }

// domMetrics records DomainMetrics calls.
type domMetrics struct {
	recMetrics
	log []string
}

func (m *domMetrics) DomainRate(d, s string, r float64) {
	m.log = append(m.log, d+"="+s+"@"+strconv.FormatFloat(r, 'g', -1, 64))
}
func (m *domMetrics) DomainRemoved(d string) { m.log = append(m.log, d+" removed") }

func TestLimiterReportsDomainMetricsOnChange(t *testing.T) {
	m := &domMetrics{}
	l, tr := newDomainLimiter(t, WithMetrics(m))
	regions(tr, "a", 2, 2)
	regions(tr, "b", 2, 0)
	l.DomainRates()
	sort.Strings(m.log)
	assert.Equal(t, []string{"a=FullDisruption@1", "b=Normal@1"}, m.log)
	_, rates := m.calls()
	assert.Equal(t, []float64{1}, rates, "eviction_rate: the most the domains may take together")
	m.log = nil
	tr.SetInDomains("b-a", true, "b") // every domain fully disrupted
	tr.SetInDomains("b-b", true, "b")
	l.DomainRates()
	sort.Strings(m.log)
	assert.Equal(t, []string{"a=FullDisruption@0", "b=FullDisruption@0"}, m.log)
	m.log = nil
	tr.Delete("b-a")
	tr.Delete("b-b")
	l.DomainRates()
	assert.Equal(t, []string{"b removed"}, m.log, "a alone is every domain: still paused")
}

// TestClustersWithoutARegionFormTheirOwnDomain: under DomainRegion, every
// cluster with no region counts in the domain "", judged apart from the
// named regions, as Config.DisruptionDomain's flag and DomainsOf say.
func TestClustersWithoutARegionFormTheirOwnDomain(t *testing.T) {
	l, tr := newDomainLimiter(t)
	fleet := []failover.Cluster{
		{Name: "eu-a", Region: "eu"}, {Name: "eu-b", Region: "eu"},
		{Name: "bare-a"}, {Name: "bare-b"},
	}
	for _, c := range fleet {
		tr.SetInDomains(c.Name, c.Region == "", DomainsOf(c, DomainRegion)...)
	}
	assert.Equal(t, map[string]DomainRate{"eu": {Normal, 1}, "": {FullDisruption, 1}}, l.DomainRates(),
		"the two clusters without a region are one domain, fully disrupted; eu is not")
	d, _, ok, _ := l.TakeDomainAt(t0, []string{""})
	assert.True(t, ok)
	assert.Equal(t, "", d)
}

// TestSharedDomainFlagRejectsAnUnknownDomain: a program that already
// defines --disruption-domain (as a string, say) keeps its flag, and a
// value the Config cannot take fails the parse naming flag and value.
func TestSharedDomainFlagRejectsAnUnknownDomain(t *testing.T) {
	fs := pflag.NewFlagSet("host", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	host := fs.String(FlagDisruptionDomain, "region", "the host's own flag")
	var c Config
	c.AddFlags(fs)
	assert.Equal(t, DomainRegion, c.DisruptionDomain, "follows the existing flag's value")

	err := fs.Parse([]string{"--disruption-domain=continent"})
	require.Error(t, err)
	for _, want := range []string{`--disruption-domain="continent"`, "is not a disruption domain (fleet|region|zone|provider)"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Equal(t, "continent", *host)
	assert.Equal(t, DomainRegion, c.DisruptionDomain, "the Config keeps what it could take")
	assert.NoError(t, c.Validate())
}

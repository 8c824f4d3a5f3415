package appfailover_test

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/gracefulevict"
)

// seeds is how many random histories TestModelRandomHistories plays; more
// for a long soak: go test ./appfailover -run TestModel -args -seeds=20000
var seeds = flag.Int("seeds", 50, "random histories TestModelRandomHistories plays")

// model is the rules of Policy.Decide restated second by second, as plainly
// as they can be: the oracle the decision is held to.
type model struct {
	window, unknownWindow, grace int
	unknown                      appfailover.UnknownPolicy
}

// failAt returns the first second at which a copy seen as obs[s] at each
// second s fails over; -1 when it never does.
func (m model) failAt(obs []appfailover.Observation) int {
	counted, started, genSince, runSince := 0, false, 0, 0
	var gen int64
	for s, o := range obs {
		switch {
		case s == 0:
			gen, started = o.Generation, o.Health == healthy
		case m.grace > 0 && o.Generation != 0 && o.Generation != gen:
			gen, genSince, started = o.Generation, s, false
		}
		if s > 0 && o.Health != obs[s-1].Health {
			runSince = s
		}
		if o.Health == healthy {
			counted, started = 0, true
		}
		if o.Health == unknown && m.unknown == appfailover.UnknownResets {
			counted = 0
		}
		starting := m.grace > 0 && !started && s < genSince+m.grace
		counts := !starting && (o.Health == unhealthy ||
			o.Health == unknown && m.unknown == appfailover.UnknownCounts && s >= runSince+m.unknownWindow)
		if !starting && counted >= m.window && (counted > 0 || counts) {
			return s
		}
		if counts {
			counted++
		}
	}
	return -1
}

func (m model) policy(t testing.TB) appfailover.Policy {
	o := appfailover.Options{Unknown: m.unknown, StartupGraceSeconds: int32(m.grace)}
	if m.unknown == appfailover.UnknownCounts {
		o.UnknownTolerationSeconds = ptr.To(int32(m.unknownWindow))
	}
	return policy(t, int32(m.window), o)
}

// randomModel draws a policy: windows short enough for the histories to
// reach them, and every Unknown policy.
func randomModel(r *rand.Rand) model {
	return model{
		window:        []int{0, 1, 30, 120, 300}[r.IntN(5)],
		unknownWindow: []int{0, 10, 60}[r.IntN(3)],
		grace:         []int{0, 0, 45, 200}[r.IntN(4)],
		unknown:       []appfailover.UnknownPolicy{appfailover.UnknownHolds, appfailover.UnknownCounts, appfailover.UnknownResets}[r.IntN(3)],
	}
}

// randomHistory is n seconds of a copy whose health flaps in stretches of
// 1 to 150 seconds, mostly between Unhealthy and Unknown, and whose
// generation, on its own stretches, now and then moves on or is not
// reported.
func randomHistory(r *rand.Rand, n int) []appfailover.Observation {
	obs := make([]appfailover.Observation, 0, n)
	for len(obs) < n {
		h := []gracefulevict.ResourceHealth{healthy, unhealthy, unhealthy, unknown, unknown}[r.IntN(5)]
		for range 1 + r.IntN(150) {
			obs = append(obs, appfailover.Observation{Health: h})
		}
	}
	obs = obs[:n]
	gen := int64(1)
	for s := 0; s < n; {
		g := gen
		switch r.IntN(6) {
		case 0, 1, 2:
			gen++
			g = gen
		case 3:
			g = 0
		}
		for end := min(n, s+1+r.IntN(300)); s < end; s++ {
			obs[s].Generation = g
		}
	}
	return obs
}

// Random histories, policies and restarts: a controller asked every second,
// one woken only by changes and After, and the model fail over at the same
// second; and a controller restarted at random seconds from the record as
// stored (written only when a Result says Changed) answers exactly as one
// that kept its record in memory, at every second and at instants between;
// one that loses its timers now and then fails over no earlier.
func TestModelRandomHistories(t *testing.T) {
	runs := *seeds
	if testing.Short() {
		runs = min(runs, 20)
	}
	for seed := range uint64(runs) {
		r := rand.New(rand.NewPCG(seed, 39))
		m := randomModel(r)
		p := m.policy(t)
		obs := randomHistory(r, 1200)
		want := m.failAt(obs)
		require.Equal(t, want, firstFailOver(p, obs), "seed %d, %+v: asked every second", seed, m)
		require.Equal(t, want, eventDriven(t, p, obs), "seed %d, %+v: woken by changes and After", seed, m)
		if got := forgetful(r, p, obs); got >= 0 {
			require.GreaterOrEqual(t, got, want, "seed %d, %+v: a timer lost fails over earlier", seed, m)
			require.NotEqual(t, -1, want, "seed %d, %+v: a timer lost fails over where none would", seed, m)
		}
		restartsDecideAlike(t, r, p, seed, [2][]appfailover.Observation{obs, randomHistory(r, 1200)})
	}
}

// forgetful is firstFailOver with a controller that now and then loses
// its timer (a record unreadable, or past MaxClusters).
func forgetful(r *rand.Rand, p appfailover.Policy, obs []appfailover.Observation) int {
	var timer *appfailover.Timer
	for s, o := range obs {
		if r.IntN(40) == 0 {
			timer = nil
		}
		d := p.Decide("m1", timer, o, at(s))
		if d.FailOver {
			return s
		}
		timer = d.Timer
	}
	return -1
}

// restartsDecideAlike plays two clusters' histories through DecideAll in
// two controllers: one keeps its record in memory, the other keeps only
// what was stored and reads it back at random moments. Every decision
// must be the same; instants fall at random fractions of a second.
func restartsDecideAlike(t *testing.T, r *rand.Rand, p appfailover.Policy, seed uint64, hist [2][]appfailover.Observation) {
	t.Helper()
	var memory appfailover.Record
	var stored string
	restarted := appfailover.Record(nil)
	for s := range hist[0] {
		now := at(s).Add(time.Duration(r.IntN(1000)) * time.Millisecond)
		seen := map[string]appfailover.Observation{"m1": hist[0][s], "m2": hist[1][s]}
		if r.IntN(50) == 0 {
			var err error
			restarted, err = appfailover.ParseRecord(stored)
			require.NoError(t, err)
		}
		a, b := p.DecideAll(memory, seen, now), p.DecideAll(restarted, seen, now)
		require.Equal(t, a.FailOver, b.FailOver, "seed %d, second %d", seed, s)
		require.Equal(t, a.After, b.After, "seed %d, second %d", seed, s)
		for c, da := range a.Decisions {
			db := b.Decisions[c]
			require.Equal(t, da.Reason, db.Reason, "seed %d, second %d, %s", seed, s, c)
			require.Equal(t, da.Counted, db.Counted, "seed %d, second %d, %s", seed, s, c)
		}
		require.Equal(t, a.Record.String(), b.Record.String(), "seed %d, second %d", seed, s)
		if b.Changed {
			stored = b.Record.String()
		}
		memory, restarted = a.Record, b.Record
	}
}

package main

import (
	"cmp"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
)

// The scenarios of issue #30: each safety feature holds in the verdict, and
// the verdict fails when the feature is off.

// checkPassed reports whether the report's check name passed.
func checkPassed(t *testing.T, r *report, name string) bool {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c.Pass
		}
	}
	t.Fatalf("no check %q in the report", name)
	return false
}

// scheduledOn reports whether b is scheduled on cluster.
func scheduledOn(b *binding, cluster string) bool {
	return slices.ContainsFunc(b.gb.Clusters, func(t failover.TargetCluster) bool { return t.Name == cluster })
}

func TestControlPlaneCutOff(t *testing.T) {
	for _, tc := range []struct {
		file string
		held time.Duration // how long the storm holds evictions
		// cutOffEvicted are the evictions from cut-off clusters: none while
		// it holds, the secondary rate's after the hold if the cut lasts.
		cutOffEvicted int
	}{
		{"scenarios/control-plane-cut-off-43s.yaml", 43 * time.Second, 0},
		{"scenarios/control-plane-cut-off-10m.yaml", 5 * time.Minute, 30},
		{"scenarios/control-plane-cut-off-30m.yaml", 5 * time.Minute, 140},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s, r := runSim(t, tc.file)
			if !r.Pass {
				t.Fatalf("checks failed: %+v", r.Checks)
			}
			if len(r.StormHolds) != 1 || r.Held != tc.held {
				t.Errorf("want one hold of %v from the cut, got %v in %+v", tc.held, r.Held, r.StormHolds)
			}
			if cut := s.sc.Start.Add(2 * time.Minute); !r.StormHolds[0].From.Equal(cut) {
				t.Errorf("the hold starts at %s, want at the cut %s", r.StormHolds[0].From, cut)
			}
			if r.CutOffEvicted != tc.cutOffEvicted {
				t.Errorf("%d evictions from cut-off clusters, want %d", r.CutOffEvicted, tc.cutOffEvicted)
			}
			// The real failure is handled: every workload left use1-04, and
			// nothing waits in the queues.
			for _, b := range s.w.bindings {
				if scheduledOn(b, "use1-04") {
					t.Errorf("%s is still scheduled on use1-04, which failed", b.key())
				}
			}
			if n := s.w.queues[qRB].Len() + s.w.queues[qCRB].Len(); n != 0 {
				t.Errorf("%d items still queued at the end", n)
			}
		})
	}
}

// An operator's confirmation ends the storm's hold at once, through the
// Limiter's ConfirmStorm, as the fork's confirm: storm does.
func TestStormConfirmed(t *testing.T) {
	s, r := runSim(t, "scenarios/storm-confirmed.yaml")
	if !r.Pass {
		t.Fatalf("checks failed: %+v", r.Checks)
	}
	fail, confirm := s.sc.Start.Add(2*time.Minute), s.sc.Start.Add(4*time.Minute)
	if len(r.StormHolds) != 1 || !r.StormHolds[0].From.Equal(fail) || !r.StormHolds[0].To.Equal(confirm) {
		t.Fatalf("want one hold from the failure at %s to the confirmation at %s, got %+v", fail, confirm, r.StormHolds)
	}
	var first time.Time
	for _, e := range s.w.rec.log {
		if e.kind == entryPermit && e.result == "evicted" {
			first = e.t
			break
		}
	}
	if !first.Equal(confirm) {
		t.Errorf("the first eviction at %s, want at the confirmation %s", first, confirm)
	}
}

// Evictions from cut-off clusters after an operator confirmed the storm are
// what the operator asked for: the hold's check allows them.
func TestConfirmedStormEndsTheCutOffWindow(t *testing.T) {
	sc, err := readScenario("scenarios/control-plane-cut-off-10m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc.Timeline = append(sc.Timeline, timelineEvent{At: metav1.Duration{Duration: 4 * time.Minute}, ConfirmStorm: true})
	slices.SortStableFunc(sc.Timeline, func(a, b timelineEvent) int { return cmp.Compare(a.At.Duration, b.At.Duration) })
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.rateConfig(sc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSim(sc, cfg, prometheus.NewRegistry(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := s.report()
	if !checkPassed(t, r, checkStormHold) || r.Held != 2*time.Minute || r.CutOffEvicted == 0 {
		t.Errorf("confirmed at 4m: want the hold ended after 2m, evictions from cut-off clusters allowed, got held %v, %d evictions, %+v",
			r.Held, r.CutOffEvicted, r.Checks)
	}
}

func TestControlPlaneCutOffWithoutTheHoldFails(t *testing.T) {
	for _, f := range []string{"43s", "10m", "30m"} {
		t.Run(f, func(t *testing.T) {
			r, err := runReport(t, "--scenario", "scenarios/control-plane-cut-off-"+f+".yaml", "--storm-threshold", "0")
			if err != errChecksFailed {
				t.Fatalf("with the storm's hold off, want the checks to fail, got %v", err)
			}
			if checkPassed(t, r, checkStormHold) || r.CutOffEvicted == 0 || len(r.StormHolds) != 0 {
				t.Errorf("with the storm's hold off, want evictions from cut-off clusters at once and the check failed, "+
					"got %d evictions, holds %+v, checks %+v", r.CutOffEvicted, r.StormHolds, r.Checks)
			}
		})
	}
}

// A run that ends inside the hold leaves the real failure's items queued:
// the check says so.
func TestRealFailureCheckCanFail(t *testing.T) {
	sc, err := readScenario("scenarios/control-plane-cut-off-30m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc.Duration = 6 * time.Minute // the hold lasts from 2m to 7m
	sc.Timeline = sc.Timeline[:2] // the cut and use1-04's failure
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.rateConfig(sc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSim(sc, cfg, prometheus.NewRegistry(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := s.report()
	if checkPassed(t, r, checkRealFailure) || !checkPassed(t, r, checkStormHold) {
		t.Errorf("ended inside the hold: want the real failure's items found still queued, got %+v", r.Checks)
	}
}

func TestFreezeMidOutage(t *testing.T) {
	s, r := runSim(t, "scenarios/freeze-mid-outage.yaml")
	if !r.Pass {
		t.Fatalf("checks failed: %+v", r.Checks)
	}
	start := s.sc.Start
	freeze, thaw := start.Add(91*time.Second), start.Add(6*time.Minute)
	if len(r.Frozen) != 1 || !r.Frozen[0].From.Equal(freeze) || !r.Frozen[0].To.Equal(thaw) {
		t.Fatalf("want one freeze from %s to %s, got %+v", freeze, thaw, r.Frozen)
	}
	var evicted, deferred []time.Time
	for _, e := range s.w.rec.log {
		if e.kind != entryPermit {
			continue
		}
		switch e.result {
		case "evicted":
			evicted = append(evicted, e.t)
		case "deferred":
			deferred = append(deferred, e.t)
		}
	}
	// Items were held back, none was evicted while frozen, all were after.
	if len(deferred) == 0 {
		t.Fatal("the freeze held nothing back: the scenario proves nothing")
	}
	var during, after []time.Time
	for _, t := range evicted {
		switch {
		case t.After(freeze) && t.Before(thaw):
			during = append(during, t)
		case !t.Before(thaw):
			after = append(after, t)
		}
	}
	if len(during) != 0 {
		t.Errorf("evictions while frozen at %v", during)
	}
	left := s.w.queues[qRB].Len() + s.w.queues[qCRB].Len()
	if queued := sum2(r.Totals.Queued); len(evicted) != queued || len(after) == 0 || left != 0 {
		t.Errorf("want all %d queued evicted, some after the thaw, none left: %d evicted, %d after, %d queued",
			queued, len(evicted), len(after), left)
	}
	o := s.w.rec.outcomes
	if o[qRB][evictionqueue.Failed]+o[qCRB][evictionqueue.Failed] != 0 || o[qRB][evictionqueue.Retrying]+o[qCRB][evictionqueue.Retrying] == 0 {
		t.Errorf("held back without a failure counted: want Retrying outcomes and no Failed one, got %v", o)
	}
	// No burst after the thaw: in any window, at most the bucket's one
	// permit plus the rate times the window.
	for i := range after {
		for j := i + 1; j < len(after); j++ {
			if n, w := float64(j-i+1), after[j].Sub(after[i]).Seconds(); n > 1+0.5*w+1e-9 {
				t.Fatalf("%v evictions in %vs after the thaw, from %s", n, w, after[i])
			}
		}
	}
}

// The freeze checks fail on what a freeze must not let happen.
func TestFreezeChecksCanFail(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	t.Run("an eviction while frozen", func(t *testing.T) {
		r := newRecorder()
		r.freeze(t0, true)
		r.permit(qRB, t0.Add(time.Second), 0.5, 1, "")
		r.setResult("evicted")
		r.freeze(t0.Add(time.Minute), false)
		r.checkFreeze()
		if len(r.violations[checkFrozen]) != 1 {
			t.Errorf("want a violation of %q, got %v", checkFrozen, r.violations)
		}
	})
	t.Run("an item held back and never handled", func(t *testing.T) {
		r := newRecorder()
		it := evictionqueue.Item{Cluster: "c1", Key: "ns/a"}
		r.permit(qRB, t0, 0.5, 1, "")
		r.deferred(qRB, it, true)
		r.checkFreeze()
		if len(r.violations[checkThawed]) != 1 {
			t.Errorf("want a violation of %q, got %v", checkThawed, r.violations)
		}
		r = newRecorder()
		r.permit(qRB, t0, 0.5, 1, "")
		r.deferred(qRB, it, true)
		r.outcome(qRB, evictionqueue.Outcome{Item: it, Kind: evictionqueue.Succeeded})
		r.checkFreeze()
		if len(r.violations) != 0 {
			t.Errorf("handled after the thaw: want no violation, got %v", r.violations)
		}
	})
}

func TestTransitBudget(t *testing.T) {
	failed := []string{"euc1-01", "euc1-02", "euc1-03"}
	run := func(t *testing.T, budget gracefulevict.TransitBudget) (*sim, *report) {
		sc, err := readScenario("scenarios/transit-budget.yaml")
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range sc.Bindings {
			if b.key() == "payments/api" {
				b.Budget = budget
			}
		}
		return runLoaded(t, sc)
	}
	s, r := run(t, 1)
	if !r.Pass {
		t.Fatalf("checks failed: %+v", r.Checks)
	}
	if p := r.Transit["payments/api"]; p.Budget != 1 || p.Peak != 1 {
		t.Errorf("payments/api: want at most 1 cluster in transit under a budget of 1, got %+v", p)
	}
	if p := r.Transit["payments/worker"]; p.Peak != 3 {
		t.Errorf("payments/worker, without a budget: want all 3 in transit at once, got %+v", p)
	}
	api := s.w.byKey[qRB]["payments/api"]
	for _, c := range failed {
		if scheduledOn(api, c) {
			t.Errorf("payments/api is still on %s: all three failed clusters must be evicted in the end", c)
		}
	}
	if o := s.w.rec.outcomes[qRB]; o[evictionqueue.Failed] != 0 || o[evictionqueue.Retrying] == 0 {
		t.Errorf("waiting for the budget is no failure: want Retrying outcomes and no Failed one, got %v", o)
	}

	// Without the budget the same workload has all three in transit.
	_, r = run(t, 0)
	if p := r.Transit["payments/api"]; p.Peak != 3 {
		t.Errorf("payments/api without its budget: want 3 in transit at once, got %+v", p)
	}
}

// The budget check fails on a binding over its budget.
func TestTransitCheckCanFail(t *testing.T) {
	r := newRecorder()
	b := &binding{spec: &bindingSpecResolved{Namespace: "ns", Name: "a", Group: "ns/a", Budget: 1}}
	r.inTransit(b, 1)
	if len(r.violations) != 0 {
		t.Fatalf("1 in transit under a budget of 1: want no violation, got %v", r.violations)
	}
	r.inTransit(b, 2)
	if v := r.violations[checkTransit]; len(v) != 1 || !strings.Contains(v[0], "ns/a: 2 clusters in transit, budget 1") {
		t.Errorf("want a violation of %q, got %v", checkTransit, r.violations)
	}
}

package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/metrics"
)

// runAppFailover plays scenarios/application-failover.yaml, changed by
// change when it is not nil.
func runAppFailover(t *testing.T, change func(*appFailoverConfig)) (*sim, *report) {
	t.Helper()
	sc, err := readScenario("scenarios/application-failover.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(sc.AppFailover)
	}
	return runLoaded(t, sc)
}

// reachedFromTimeline is when the copy of workload on cluster, Healthy
// from the start, had been Unhealthy for window (Unknown neither counting
// nor resetting, Healthy resetting), as the scenario's own timeline plays
// it; false if never within the run.
func reachedFromTimeline(sc *scenario, workload, cluster string, window time.Duration) (time.Duration, bool) {
	health, since, counted := gracefulevict.Healthy, time.Duration(0), time.Duration(0)
	for _, e := range sc.AppFailover.Timeline {
		if e.Workload != workload || e.Confirm || e.Clusters == nil || !slices.Contains(e.Clusters.ClusterNames, cluster) {
			continue
		}
		if health == gracefulevict.Unhealthy {
			if counted+e.At.Duration-since >= window {
				return since + window - counted, true
			}
			counted += e.At.Duration - since
		}
		if e.Health == gracefulevict.Healthy {
			counted = 0
		}
		health, since = e.Health, e.At.Duration
	}
	if health == gracefulevict.Unhealthy && since+window-counted <= sc.Duration {
		return since + window - counted, true
	}
	return 0, false
}

// Issue 39's done-when on the application failover scenario: the
// flapping storefront fails over from use1-02 at the very moment its
// Unhealthy time (Unknown excluded) reaches the window, as the scenario's
// timeline plays it, and from use1-01 at its window's end; the payments
// API, Unhealthy on all its clusters at once (a bad rollout), is held with
// 0 evictions until the operator confirms at 20m, then fails over from
// each of its clusters, one at a time (its budget), each to a cluster with
// room; the cart, with nowhere to go, is refused and never evicted; the
// verdict passes.
func TestApplicationFailoverScenario(t *testing.T) {
	s, r := runAppFailover(t, nil)
	if !r.Pass {
		t.Fatalf("checks failed: %+v", r.Checks)
	}
	want := len(checkOrder) + len(appFailoverChecks)
	if len(r.Checks) != want {
		t.Fatalf("%d checks, want %d (the application failover's included)", len(r.Checks), want)
	}
	af := s.w.appf
	at := func(d appFailoverDone) time.Duration { return d.at.Sub(s.sc.Start) }
	var web, api []appFailoverDone
	for _, d := range af.done {
		switch d.b.key() {
		case "shop/web":
			web = append(web, d)
		case "payments/api":
			api = append(api, d)
		default:
			t.Errorf("%s failed over from %s: it does not opt in", d.b.key(), d.cluster)
		}
	}

	// The storefront: once per unhealthy cluster, when the timeline says.
	if len(web) != 2 {
		t.Fatalf("shop/web failed over %d times, want 2: %+v", len(web), web)
	}
	for _, d := range web {
		reached, ok := reachedFromTimeline(s.sc, "shop/web", d.cluster, 3*time.Minute)
		if !ok || at(d) != reached {
			t.Errorf("shop/web from %s at %s, want at %s, when its Unhealthy time reached the 3m window", d.cluster, fmtClock(at(d)), fmtClock(reached))
		}
		if d.unhealthy != 3*time.Minute || d.counted != 3*time.Minute {
			t.Errorf("shop/web from %s: Unhealthy %v, the library counted %v, want the window", d.cluster, d.unhealthy, d.counted)
		}
	}
	if web[1].cluster != "use1-02" || web[1].unknown != 2*time.Minute {
		t.Errorf("the flapping copy: %+v, want use1-02 with 2m of Unknown not counted", web[1])
	}

	// The payments API: held from its window's end to the confirmation,
	// with nothing evicted; then from each of its three clusters, one at a
	// time.
	confirmed := 20 * time.Minute
	if len(af.holds) != 1 || af.holds[0].b.key() != "payments/api" {
		t.Fatalf("bad-rollout holds: %+v, want one, of payments/api", af.holds)
	}
	h := af.holds[0]
	if from, to := h.from.Sub(s.sc.Start), h.to.Sub(s.sc.Start); from != 12*time.Minute || to != confirmed || !h.confirmed {
		t.Errorf("the hold from %s to %s (confirmed %v), want from 00:12:00 (10m + the 2m window) to the confirmation at 00:20:00", fmtClock(from), fmtClock(to), h.confirmed)
	}
	if len(api) != 3 {
		t.Fatalf("payments/api failed over %d times, want from each of its 3 clusters: %+v", len(api), api)
	}
	var from []string
	for i, d := range api {
		from = append(from, d.cluster)
		if at(d) < confirmed {
			t.Errorf("payments/api from %s at %s, before the confirmation", d.cluster, fmtClock(at(d)))
		}
		// Each waits for the one before: its task lasts the 2-minute
		// grace period, as the copies left behind stay Unhealthy.
		if want := confirmed + time.Duration(i)*2*time.Minute; at(d) != want {
			t.Errorf("payments/api from %s at %s, want %s", d.cluster, fmtClock(at(d)), fmtClock(want))
		}
	}
	slices.Sort(from)
	if strings.Join(from, ",") != "euw1-01,euw1-02,euw1-03" {
		t.Errorf("payments/api failed over from %v", from)
	}
	if p := r.Transit["payments/api"]; p.Peak != 1 || p.Budget != 1 {
		t.Errorf("payments/api in transit: %+v, want at most its budget of 1", p)
	}
	if af.decisions[metrics.AppFailoverHeldBack] == 0 || af.decisions[metrics.AppFailoverWaiting] == 0 || af.decisions[metrics.AppFailoverFailedOver] != 5 {
		t.Errorf("decisions %v: want held back (the bad rollout), waiting (the budget) and 5 failed over", af.decisions)
	}
	if af.confirmed[h.b] {
		t.Error("the confirmation is still there: the controller removes it once the hold no longer applies")
	}

	// The cart, past its window on use1-06 from 3m to 15m, has nowhere to
	// go: refused each minute, never evicted.
	refused := 0
	for k, n := range r.AppFailover.Refused {
		if !strings.HasPrefix(k, "shop/cart: ") {
			t.Errorf("refused %d: %s", n, k)
		}
		refused += n
	}
	if refused != 12 || af.decisions[metrics.AppFailoverRefused] != 12 {
		t.Errorf("shop/cart refused %d times (%d decisions), want once a minute from 3m to 14m: 12", refused, af.decisions[metrics.AppFailoverRefused])
	}
}

// The checks can fail: with Karmada v1.18's rule (unknown Reset) the
// flapping storefront never fails over from use1-02, and the window check
// says so; with the bad-rollout hold off (threshold 1) the payments API
// fails over before anyone confirmed, and the bad-rollout check says so.
func TestApplicationFailoverScenarioChecksCanFail(t *testing.T) {
	failed := func(r *report) []string {
		var out []string
		for _, c := range r.Checks {
			if !c.Pass {
				out = append(out, c.Name)
			}
		}
		return out
	}
	s, r := runAppFailover(t, func(a *appFailoverConfig) { a.Options.Unknown = appfailover.UnknownResets })
	if got := failed(r); r.Pass || !slices.Equal(got, []string{checkAppWindow}) {
		t.Errorf("unknown Reset: failed %q, want the window check alone", got)
	}
	for _, d := range s.w.appf.done {
		if d.b.key() == "shop/web" && d.cluster == "use1-02" {
			t.Errorf("unknown Reset: shop/web failed over from the flapping use1-02 at %s", fmtClock(d.at.Sub(s.sc.Start)))
		}
	}

	s, r = runAppFailover(t, func(a *appFailoverConfig) { a.Threshold = 1 })
	if got := failed(r); r.Pass || !slices.Equal(got, []string{checkAppBadRollout}) {
		t.Errorf("threshold 1: failed %q, want the bad-rollout check alone", got)
	}
	early := 0
	for _, d := range s.w.appf.done {
		if d.b.key() == "payments/api" && d.at.Sub(s.sc.Start) < 20*time.Minute {
			early++
		}
	}
	if early == 0 || len(s.w.appf.holds) != 0 {
		t.Errorf("threshold 1: %d failovers of payments/api before the confirmation, %d holds: the scenario does not test the hold", early, len(s.w.appf.holds))
	}
}

// A minimal scenario with application failover, which the bad cases below
// break one piece at a time.
const goodAppScenario = `apiVersion: fleetsim.failoverkit.dev/v1alpha1
kind: Scenario
metadata: {name: app}
spec:
  duration: 5m
  fleet:
  - {provider: aws, region: r1, clusters: 3}
  applicationFailover:
    unknown: Hold
    timeline:
    - {at: 1m, workload: shop/web, clusters: {clusterNames: [r1-01]}, health: Unhealthy}
    - {at: 3m, workload: shop/web, confirm: true}
---
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: web, namespace: shop}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    replicaScheduling: {replicaSchedulingType: Duplicated}
    spreadConstraints: [{spreadByField: cluster, minGroups: 2, maxGroups: 2}]
  failover:
    application: {decisionConditions: {tolerationSeconds: 60}}
---
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: db, namespace: shop}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, name: db}
`

func TestBadApplicationFailoverScenarios(t *testing.T) {
	sc, err := readScenario(writeScenario(t, goodAppScenario))
	if err != nil {
		t.Fatal(err)
	}
	if a := sc.AppFailover; a == nil || a.Threshold != appfailover.DefaultBadRolloutThreshold || len(a.Timeline) != 2 {
		t.Fatalf("loaded %+v", sc.AppFailover)
	}
	if _, r := runLoaded(t, sc); !r.Pass || r.AppFailover == nil || len(r.AppFailover.Failovers) != 1 {
		t.Errorf("the minimal scenario: pass %v, %+v", r.Pass, r.AppFailover)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"an unknown Unknown policy", "unknown: Hold", "unknown: Ignore", `spec.applicationFailover: appfailover: unknown: unknown value "Ignore"`},
		{"a threshold of 0", "unknown: Hold", "badRolloutThreshold: 0", "spec.applicationFailover.badRolloutThreshold: 0: want a fraction in (0, 1]"},
		{"an unknown health", "health: Unhealthy", "health: Sick", `spec.applicationFailover.timeline[0].health: "Sick"`},
		{"no health", ", health: Unhealthy}", "}", "spec.applicationFailover.timeline[0].health: missing"},
		{"a confirmation with a health", "confirm: true}", "confirm: true, health: Healthy}", "spec.applicationFailover.timeline[1].confirm: true"},
		{"past the end", "{at: 3m,", "{at: 6m,", "spec.applicationFailover.timeline[1].at: 6m0s"},
		{"no such workload", "{at: 3m, workload: shop/web", "{at: 3m, workload: shop/webs", `spec.applicationFailover.timeline[1].workload: "shop/webs": no such binding`},
		{"a workload that does not opt in", "{at: 3m, workload: shop/web", "{at: 3m, workload: shop/db", `"shop/db" does not opt in`},
		{"no cluster selected", "clusterNames: [r1-01]", "clusterNames: [r2-01]", "spec.applicationFailover.timeline[0].clusters: selects no cluster"},
		{"a bad spec.failover.application", "tolerationSeconds: 60", "tolerationSeconds: -1", "decisionConditions.tolerationSeconds: -1: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.Replace(goodAppScenario, tc.old, tc.new, 1)
			if body == goodAppScenario {
				t.Fatalf("%q not in the scenario", tc.old)
			}
			_, err := readScenario(writeScenario(t, body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

//go:build e2e

package e2e

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover/karmada/controllers"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/ratelimit"
)

// recoveryPlan is the part of fleetsim --what-if --recover --json the
// failback test compares (examples/fleetsim/REFERENCE.md, "The
// --what-if --recover --json schema").
type recoveryPlan struct {
	SchemaVersion string `json:"schemaVersion"`
	ReadAt        string `json:"readAt"`
	Recovered     struct {
		Clusters []string `json:"clusters"`
	} `json:"recovered"`
	WindowSeconds     float64 `json:"windowSeconds"`
	MaxInFlight       int     `json:"maxInFlight"`
	ReadyAfterSeconds float64 `json:"readyAfterSeconds"`
	TaintsGoneSeconds float64 `json:"taintsGoneSeconds"`
	PerSecond         float64 `json:"perSecond"`
	Failbacks         []struct {
		Kind      string  `json:"kind"`
		Binding   string  `json:"binding"`
		Origin    string  `json:"origin"`
		Outcome   string  `json:"outcome"`
		AtSeconds float64 `json:"atSeconds"`
		To        []struct {
			Name     string `json:"name"`
			Replicas int32  `json:"replicas"`
		} `json:"to"`
		Leaving []string `json:"leaving"`
		Reason  string   `json:"reason"`
	} `json:"failbacks"`
	DoneSeconds float64  `json:"doneSeconds"`
	Notes       []string `json:"notes"`
}

// plannedFailback is what a recovery plan says of one binding, and which
// plan said it.
type plannedFailback struct {
	outcome, origin, reason string
	at                      float64 // seconds after the plan's recovery
	order                   int     // its place among the plan's failbacks that go back, from 0; -1 if it does not
	to                      map[string]int32
	leaving                 []string
	plan                    string // the plan's --recover
}

// failbacksOf are plan's failbacks of the ResourceBindings of namespace ns,
// by name.
func (plan *recoveryPlan) failbacksOf(ns, recover string) map[string]plannedFailback {
	out := map[string]plannedFailback{}
	back := 0
	for _, f := range plan.Failbacks {
		name, ok := strings.CutPrefix(f.Binding, ns+"/")
		if f.Kind != "ResourceBinding" || !ok {
			continue // another suite's
		}
		p := plannedFailback{outcome: f.Outcome, origin: f.Origin, reason: f.Reason, at: f.AtSeconds, order: -1,
			to: map[string]int32{}, leaving: slices.Sorted(slices.Values(f.Leaving)), plan: recover}
		if f.Outcome == "back" {
			p.order = back
			back++
		}
		for _, x := range f.To {
			p.to[x.Name] += x.Replicas
		}
		out[name] = p
	}
	return out
}

// planRecovery asks bin (fleetsim) for the --json plan of recover on the
// e2e API server, with the fork's flags as --controller-flags. It returns
// the plan and when the run started and ended: the plan's recovery, the
// moment it read the control plane, is between.
func planRecovery(t *testing.T, bin, recover, controllerFlags string) (plan recoveryPlan, started, ended time.Time) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	run := exec.Command(bin, "--what-if", "--kubeconfig", filepath.Join(env.dir, "kubeconfig"), "--recover", recover,
		"--controller-flags", controllerFlags, "--json")
	run.Stdout, run.Stderr = &stdout, &stderr
	started = time.Now()
	require.NoError(t, run.Run(), "fleetsim --what-if --recover %s: %s", recover, stderr.String())
	ended = time.Now()
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &plan), "the plan: %s", stdout.String())
	return plan, started, ended
}

// forkFlags are the flags of the fork's controller-manager that run as
// opts does: the failback window and cap, and every rate flag.
func forkFlags(opts forkOptions) string {
	maxInFlight := opts.MaxFailbacksInFlight
	if maxInFlight == 0 {
		maxInFlight = controllers.DefaultMaxFailbacksInFlight
	}
	r := opts.Rate
	float := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	flags := []string{
		"--failback-stabilization-window=" + opts.FailbackWindow.String(),
		"--max-failbacks-in-flight=" + strconv.Itoa(maxInFlight),
		"--" + ratelimit.FlagResourceEvictionRate + "=" + float(r.ResourceEvictionRate),
		"--" + ratelimit.FlagSecondaryResourceEvictionRate + "=" + float(r.SecondaryResourceEvictionRate),
		"--" + ratelimit.FlagUnhealthyClusterThreshold + "=" + float(r.UnhealthyClusterThreshold),
		"--" + ratelimit.FlagLargeClusterNumThreshold + "=" + strconv.Itoa(r.LargeClusterNumThreshold),
		"--" + ratelimit.FlagDisruptionDomain + "=" + r.DisruptionDomain.String(),
		"--" + ratelimit.FlagStormThreshold + "=" + float(r.StormThreshold),
		"--" + ratelimit.FlagStormWindow + "=" + r.StormWindow.String(),
		"--" + ratelimit.FlagStormConfirm + "=" + r.StormConfirm.String(),
	}
	if opts.EnableNoExecuteTaintEviction {
		flags = append(flags, "--enable-no-execute-taint-eviction")
	}
	if opts.NoLedger {
		flags = append(flags, "--eviction-capacity-hold=0")
	}
	return strings.Join(flags, " ")
}

// The tolerance of a failback's time against the plan's. The controller
// counts the window from the origin's Ready lastTransitionTime, which the
// API server keeps in whole seconds: the window ends up to a second before
// the recovery plus the window, and the plan, whose recovery is the
// instant it read the control plane (not truncated, and before the real
// recovery by the run of fleetsim), cannot know that fraction. So a
// failback's time is compared as the controller counts it, from the
// origin's lastTransitionTime as stored to the FailedBack write (the
// watch's delivery of spec.rescheduleTriggeredAt); from the recovery it is
// up to a second earlier, and printed too.
//
//   - early by at most 50 ms: never before the window's end, nor before the
//     rate's next permit (the controller requeues for either, on the
//     test's clock); 50 ms for the wall clock the stored time is read on.
//   - late by at most 750 ms: the controller's reconcile when its requeue
//     fires, its write and the watch's delivery, on a loaded two-core
//     machine under -race with the other subtests running (a few tens of
//     ms when alone), each failback after the first inheriting the
//     lateness of the permit before it.
const (
	failbackEarly = 50 * time.Millisecond
	failbackLate  = 750 * time.Millisecond
)

// backOutcome is what happened to a binding of the failback test, as its
// Events and its placement tell.
type backOutcome struct {
	outcome string           // back, not-placed, or none
	placed  map[string]int32 // where it ends, karmada-scheduler's placement
	leaving []string         // the clusters its failback's tasks were for
	// For back: the FailedBack write, from the origin's recovery and from
	// its Ready lastTransitionTime as the API server keeps it.
	sent, sinceReady time.Duration
	reason           string // the Event's note
	events           []string
}

// compareRecoveryPlan compares, per binding of cases, the plan's outcome
// (planned), placement and clusters left with what happened (got),
// counting the bindings that agree and printing each that does not with
// the plan's reason and its Events, and each planned time with the
// measured ones.
func compareRecoveryPlan(t *testing.T, cases []backCase, planned map[string]plannedFailback, got map[string]backOutcome) (agree int) {
	t.Helper()
	for _, bc := range cases {
		p, ok := planned[bc.name]
		g := got[bc.name]
		switch {
		case !ok:
			t.Logf("difference: %s: not in the plan; really %s to %s; Events: %v", bc.name, g.outcome, placementOfMap(g.placed), g.events)
			continue
		case p.outcome != g.outcome || !maps.Equal(p.to, g.placed) || (g.outcome == "back" && !slices.Equal(p.leaving, g.leaving)):
			t.Logf("difference: %s: planned (--recover %s) %s to %s leaving %v (%s); really %s to %s leaving %v; Events: %v",
				bc.name, p.plan, p.outcome, placementOfMap(p.to), p.leaving, p.reason, g.outcome, placementOfMap(g.placed), g.leaving, g.events)
			continue
		}
		agree++
		if g.outcome != "back" {
			t.Logf("planned and measured: %s %s, stays on %s (plan: %s; Event: %s)", bc.name, g.outcome, placementOfMap(g.placed), p.reason, g.reason)
			continue
		}
		t.Logf("planned and measured: %s back to %s (leaving %v): planned (--recover %s, failback %d) at %.1fs after the recovery; sent back %s after it, %s after the origin's lastTransitionTime (%+.2fs)",
			bc.name, placementOfMap(g.placed), g.leaving, p.plan, p.order+1, p.at, ms(g.sent), ms(g.sinceReady), (g.sinceReady - seconds(p.at)).Seconds())
	}
	return agree
}

// failbackSlots compares the times at which the plan of recover sends
// bindings back with the measured ones, slot by slot: the k-th planned
// time with the k-th measured one, whichever bindings take them. Bindings
// whose windows end together take the rate's permits in the order of the
// controller's workqueue, which the plan does not know (it orders them by
// kind and key): the order is returned, not compared. bad lists the slots
// outside the tolerance.
func failbackSlots(planned map[string]plannedFailback, got map[string]backOutcome, recover string) (plannedOrder, measuredOrder, slots, bad []string) {
	var names []string
	for n, p := range planned {
		if p.plan == recover && p.outcome == "back" && got[n].outcome == "back" {
			names = append(names, n)
		}
	}
	plannedOrder = slices.SortedFunc(slices.Values(names), func(a, b string) int { return cmp.Compare(planned[a].order, planned[b].order) })
	measuredOrder = slices.SortedFunc(slices.Values(names), func(a, b string) int { return cmp.Compare(got[a].sent, got[b].sent) })
	for k := range plannedOrder {
		want := seconds(planned[plannedOrder[k]].at)
		g := got[measuredOrder[k]]
		d := g.sinceReady - want
		line := fmt.Sprintf("%d: planned %.1fs (%s), measured %s after the recovery, %s after the lastTransitionTime (%s) %+.2fs",
			k+1, want.Seconds(), plannedOrder[k], ms(g.sent), ms(g.sinceReady), measuredOrder[k], d.Seconds())
		slots = append(slots, line)
		if d < -failbackEarly || d > failbackLate {
			bad = append(bad, line)
		}
	}
	return plannedOrder, measuredOrder, slots, bad
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// placementOfMap is m as the Events write a placement: "a1:2, b1:1".
func placementOfMap(m map[string]int32) string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s:%d", c, m[c]))
	}
	return strings.Join(parts, ", ")
}

// outcomeOf is what happened to the failback test's binding name since its
// origin recovered (at recovered; Ready since readySince, as the API server
// keeps it), by its Events, its placement and the states snaps a watch
// delivered.
func outcomeOf(s *suite, name string, snaps []backSnap, recovered, readySince time.Time) backOutcome {
	rb := s.getBinding(name)
	o := backOutcome{outcome: "none", placed: asMap(rb.Spec.Clusters), leaving: []string{}}
	for _, e := range s.events(name) {
		o.events = append(o.events, e.Reason+": "+e.Note)
		switch {
		case e.Reason == controllers.EventReasonFailedBack:
			o.outcome, o.reason = "back", e.Note
		case e.Reason == controllers.EventReasonFailbackNotPlaced && o.outcome == "none":
			o.outcome, o.reason = "not-placed", e.Note
		}
	}
	if w := slices.IndexFunc(snaps, func(sn backSnap) bool { return sn.rb.Spec.RescheduleTriggeredAt != nil }); w >= 0 {
		o.sent, o.sinceReady = snaps[w].at.Sub(recovered), snaps[w].at.Sub(readySince)
		for _, tk := range snaps[w].rb.Spec.GracefulEvictionTasks {
			if tk.Producer == engine.FailbackProducer {
				o.leaving = append(o.leaving, tk.FromCluster)
			}
		}
		slices.Sort(o.leaving)
	}
	return o
}

// readySince is the lastTransitionTime of the cluster's Ready condition,
// as the API server keeps it (whole seconds).
func (s *suite) readySince(name string) time.Time {
	s.t.Helper()
	c := s.getCluster(name)
	i := slices.IndexFunc(c.Status.Conditions, func(x metav1.Condition) bool { return x.Type == clusterv1alpha1.ClusterConditionReady })
	require.GreaterOrEqual(s.t, i, 0, "%s has no Ready condition", name)
	return c.Status.Conditions[i].LastTransitionTime.Time
}

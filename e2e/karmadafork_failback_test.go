//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/failoverkit/failover/failback"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/controllers"
	"github.com/failoverkit/failover/karmada/engine"
)

// The failback test's timing: the stabilisation window, how long a copy
// that starts (or grows) is reported Unhealthy before Healthy, and the
// fleet rate failbacks share with evictions.
const (
	backWindow  = 4 * time.Second
	backStartup = 1500 * time.Millisecond
	backRate    = 2.0
)

// backCase is one binding of the failback test and what it should do once
// its origin has been healthy for the window.
type backCase struct {
	name   string
	origin string
	// back: the FailbackController sends it back (FailedBack) and
	// karmada-scheduler places it there. notPlaced: a fresh placement would
	// not put it back (FailbackNotPlaced), and it stays.
	expect string
}

// testFailback plays issue 38's outage and recovery with Karmada's own
// karmada-scheduler: region r1 (back-r1: back-a1, back-a2, back-a3) fails, the
// bindings on it fail over (the EvictionController's tasks, the
// scheduler's new placements, the test reporting the new copies Healthy)
// and each eviction records its origin on the binding; r1 recovers (Ready
// True with its lastTransitionTime now, taints lifted). No binding goes
// back before the window (4 s) has passed since; then the
// FailbackController sends back each one that Karmada's algorithm, in
// process, predicts a fresh placement returns to its origin (FailedBack:
// the clusters it leaves in graceful eviction tasks,
// spec.rescheduleTriggeredAt): two Aggregated and one weighted by
// available replicas, which leaves one of its two clusters and keeps the
// other. karmada-scheduler places each where the prediction said; the
// copies that leave keep running in their tasks until the test reports the
// returning copies Healthy (1.5 s after they are placed), so that the
// ready replicas never drop; the origin leaves the record. back-a2 flaps:
// down again half way through the window, its binding does not go back
// when that window ends; up again, it goes back a window after. back-a3,
// with less room than the cluster its binding failed over to, gets it not
// back (FailbackNotPlaced, whose prediction is where the binding stays).
//
// Right before r1 recovers, and before back-a2's second recovery (which no
// plan can foresee), the built fleetsim plans the recovery (--what-if
// --recover --json, the fork's flags in --controller-flags): each
// binding's outcome, placement and clusters left must be the plan's, and
// the failbacks' times its times, slot by slot (compareRecoveryPlan,
// failbackSlots).
//
// No Duplicated binding: one spread over regions was moved off the failed
// region by karmada-scheduler itself as the region's clusters were tainted
// NoSchedule, before any eviction (so no record to go back by), and one
// without spread constraints runs everywhere it may, so the pre-check finds
// no cluster to replace the failed copy (NoEligibleCluster) and it is not
// evicted.
func testFailback(t *testing.T) {
	s := newSuite(t, "back")
	const a1, a2, a3, b1, b2, c1, c2 = "back-a1", "back-a2", "back-a3", "back-b1", "back-b2", "back-c1", "back-c2"
	// Regions of their own: the subtests share the API server, and a plan
	// of a region's recovery takes in every cluster of that name.
	const r1, r2, r3 = "back-r1", "back-r2", "back-r3"
	regions := map[string]string{a1: r1, a2: r1, a3: r1, b1: r2, b2: r2, c1: r3, c2: r3}
	rooms := map[string]int64{a1: 60, a2: 60, a3: 10, b1: 30, b2: 30, c1: 20, c2: 20}
	for _, c := range slices.Sorted(maps.Keys(regions)) {
		s.member(c, regions[c], rooms[c])
	}
	s.releasedPolicy(a1, a2, a3)

	only := func(names ...string) *policyv1alpha1.ClusterAffinity {
		return &policyv1alpha1.ClusterAffinity{ClusterNames: names}
	}
	dynamic := &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
		WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}}
	s.scheduledBinding("agg-0", 2, policyv1alpha1.Placement{ClusterAffinity: only(a1, b1, c1), ReplicaScheduling: aggregated}, a1)
	s.scheduledBinding("agg-1", 2, policyv1alpha1.Placement{ClusterAffinity: only(a1, b1, c1), ReplicaScheduling: aggregated}, a1)
	s.scheduledBinding("dyn-0", 2, policyv1alpha1.Placement{ClusterAffinity: only(a1, b1, c1), ReplicaScheduling: dynamic}, a1)
	s.scheduledBinding("flap-0", 2, policyv1alpha1.Placement{ClusterAffinity: only(a2, b2, c2), ReplicaScheduling: aggregated}, a2)
	s.scheduledBinding("small-0", 2, policyv1alpha1.Placement{ClusterAffinity: only(a3, b1), ReplicaScheduling: aggregated}, a3)
	cases := []backCase{
		{"agg-0", a1, "back"}, {"agg-1", a1, "back"}, {"dyn-0", a1, "back"}, {"flap-0", a2, "back"}, {"small-0", a3, "notPlaced"},
	}

	// fleetsim, for its plans of the recovery, built before anything is
	// timed.
	bin := buildFleetsim(t)
	opts := forkOptions{Rate: rate(backRate, backRate), EnableNoExecuteTaintEviction: true, FailbackWindow: backWindow}
	flags := forkFlags(opts)

	hist := s.watchHistory()
	p := s.playCopies(backStartup)
	s.start("back", opts, nil)

	// Region r1 fails; every binding on it fails over.
	p.setDown(true, a1, a2, a3)
	s.notReady(a1, a2, a3)
	s.waitTaint(a1, a2, a3)
	settled := func(rb *workv1alpha2.ResourceBinding) bool {
		return len(rb.Spec.GracefulEvictionTasks) == 0 && rb.Status.SchedulerObservedGeneration == rb.Generation && allHealthy(rb)
	}
	failedOver := map[string][]workv1alpha2.TargetCluster{}
	defer s.describeOnFailure(cases)
	eventually(t, 40*time.Second, "every binding failed over from r1, its new copies Healthy and its tasks cleared", func() bool {
		for _, bc := range cases {
			rb := s.getBinding(bc.name)
			where := targets(&rb.Spec)
			if !settled(rb) || slices.ContainsFunc(where, func(c string) bool { return regions[c] == r1 }) || !whole(rb) {
				return false
			}
			failedOver[bc.name] = rb.Spec.Clusters
		}
		return true
	})
	for _, bc := range cases {
		rec, err := failback.ParseRecord(s.getBinding(bc.name).Annotations[karmada.FailedOverFromAnnotation])
		require.NoError(t, err)
		_, ok := rec.Find(bc.origin)
		assert.True(t, ok, "%s: the record %v does not name %s", bc.name, rec, bc.origin)
	}
	t.Logf("failed over: %s", placementsOf(failedOver))

	// fleetsim's plan of r1's recovery, right before it: its recovery is
	// the moment it reads the control plane.
	plan, planStarted, planEnded := planRecovery(t, bin, "region="+r1, flags)
	require.Equal(t, []string{a1, a2, a3}, plan.Recovered.Clusters)
	planned := plan.failbacksOf(s.ns, "region="+r1)

	// r1 recovers; back-a2 fails again half way through the window, and
	// recovers for good once the first window has passed.
	recovered := map[string]time.Time{}
	recovered[a1] = s.backUp(p, a1, a2, a3)
	t.Logf("planned: fleetsim --what-if --recover region=%s --controller-flags %q, run %s to %s before the recovery: window %.0fs, at most %d in flight, %.1f/s, the last back at %.1fs; notes: %q",
		r1, flags, ms(recovered[a1].Sub(planStarted)), ms(recovered[a1].Sub(planEnded)), plan.WindowSeconds, plan.MaxInFlight, plan.PerSecond, plan.DoneSeconds, plan.Notes)
	recovered[a3] = recovered[a1]
	time.Sleep(time.Until(recovered[a1].Add(backWindow / 2)))
	flapped := time.Now()
	p.setDown(true, a2)
	s.notReady(a2)
	s.waitTaint(a2)
	time.Sleep(time.Until(recovered[a1].Add(backWindow + time.Second)))
	flap := s.getBinding("flap-0")
	assert.Nil(t, flap.Spec.RescheduleTriggeredAt, "flap-0 sent back to %s, which was down again before its window ended", a2)
	assert.Equal(t, failedOver["flap-0"], flap.Spec.Clusters, "flap-0 moved while %s flapped", a2)
	// No plan knows of a flap to come: flap-0's is that of back-a2's
	// second recovery, again right before it.
	flapPlan, flapStarted, flapEnded := planRecovery(t, bin, "clusters="+a2, flags)
	recovered[a2] = s.backUp(p, a2)
	if before, ok := planned["flap-0"]; ok {
		t.Logf("planned: before the flap, flap-0 %s to %s at %.1fs after r1's recovery; superseded by the plan of %s's second recovery (run %s to %s before it)",
			before.outcome, placementOfMap(before.to), before.at, a2, ms(recovered[a2].Sub(flapStarted)), ms(recovered[a2].Sub(flapEnded)))
	}
	maps.Copy(planned, flapPlan.failbacksOf(s.ns, "clusters="+a2))
	t.Logf("r1 recovered at %s; %s down again at +%s, up again at +%s", stampMS(recovered[a1]), a2, ms(flapped.Sub(recovered[a1])), ms(recovered[a2].Sub(recovered[a1])))

	eventually(t, 30*time.Second, "the bindings back on their origins, their tasks cleared, the copies there Healthy", func() bool {
		for _, bc := range cases {
			rb := s.getBinding(bc.name)
			if bc.expect == "notPlaced" {
				if len(eventsOf(s, bc.name, controllers.EventReasonFailbackNotPlaced)) == 0 {
					return false
				}
				continue
			}
			if !settled(rb) || !slices.Contains(targets(&rb.Spec), bc.origin) || recordNames(rb, bc.origin) {
				return false
			}
		}
		return true
	})
	// What happens after (karmada-scheduler's, the members') is seen too.
	time.Sleep(time.Second)

	// The plans against what happened, per binding: the outcome, the
	// placement, the clusters left and the time of each failback.
	readySince := map[string]time.Time{}
	got := map[string]backOutcome{}
	for _, bc := range cases {
		if _, ok := readySince[bc.origin]; !ok {
			readySince[bc.origin] = s.readySince(bc.origin)
		}
		got[bc.name] = outcomeOf(s, bc.name, hist.of(bc.name), recovered[bc.origin], readySince[bc.origin])
	}
	agree := compareRecoveryPlan(t, cases, planned, got)
	t.Logf("measured: what-if --recover agreement %d of %d bindings (outcome, placement, clusters left)", agree, len(cases))
	assert.Equal(t, len(cases), agree, "bindings where the recovery plan and the real thing disagree (printed above)")
	for _, recover := range []string{"region=" + r1, "clusters=" + a2} {
		plannedOrder, measuredOrder, slots, bad := failbackSlots(planned, got, recover)
		t.Logf("measured: the failbacks of --recover %s, in the planned order %v, in the measured %v; planned and measured times, slot by slot:\n  %s",
			recover, plannedOrder, measuredOrder, strings.Join(slots, "\n  "))
		assert.Empty(t, bad, "failbacks of --recover %s outside the plan's time by more than -%v/+%v", recover, failbackEarly, failbackLate)
	}

	for _, bc := range cases {
		snaps := hist.of(bc.name)
		ready := readyReplicas(snaps)
		rb := s.getBinding(bc.name)
		recoveredAt := recovered[bc.origin]
		// Conditions keep whole seconds: the window may end up to a second
		// before recoveredAt+window.
		earliest := recoveredAt.Truncate(time.Second).Add(backWindow)
		fromRecovery := slices.IndexFunc(snaps, func(sn backSnap) bool { return sn.at.After(recoveredAt) })
		if fromRecovery < 0 {
			fromRecovery = len(snaps) // unchanged since
		}
		require.Positive(t, fromRecovery, "%s: no state before the recovery", bc.name)
		atRecovery := ready[fromRecovery-1]
		minReady := slices.Min(ready[fromRecovery-1:])
		assert.GreaterOrEqual(t, minReady, atRecovery, "%s: ready replicas dropped below the %d it had at the recovery: %s", bc.name, atRecovery, readyTrace(snaps, ready))
		var all int32
		for _, r := range asMap(rb.Spec.Clusters) {
			all += r
		}
		assert.Equal(t, all, ready[len(ready)-1], "%s: ready replicas at the end", bc.name)
		written := slices.IndexFunc(snaps, func(sn backSnap) bool { return sn.rb.Spec.RescheduleTriggeredAt != nil })

		switch bc.expect {
		case "back":
			evs := eventsOf(s, bc.name, controllers.EventReasonFailedBack)
			require.Len(t, evs, 1, "%s: FailedBack Events", bc.name)
			predicted := predictedPlacement(t, evs[0].Note)
			assert.Equal(t, predicted, asMap(rb.Spec.Clusters),
				"%s: karmada-scheduler placed it elsewhere than the in-process prediction (Event: %s)", bc.name, evs[0].Note)
			require.Positive(t, written, "%s: no state with spec.rescheduleTriggeredAt", bc.name)
			w := snaps[written]
			assert.False(t, w.at.Before(earliest), "%s: sent back at %s, before the window ended at %s (recovered %s)",
				bc.name, stampMS(w.at), stampMS(earliest), stampMS(recoveredAt))
			assert.Less(t, w.at.Sub(recoveredAt), backWindow+5*time.Second, "%s: sent back long after its window", bc.name)
			before := asMap(snaps[written-1].rb.Spec.Clusters)
			var leaving []string
			for c := range before {
				if _, ok := predicted[c]; !ok {
					leaving = append(leaving, c)
				}
			}
			slices.Sort(leaving)
			var from []string
			for _, tk := range w.rb.Spec.GracefulEvictionTasks {
				from = append(from, tk.FromCluster)
				assert.Equal(t, engine.FailbackProducer, tk.Producer, "%s: task from %s", bc.name, tk.FromCluster)
				assert.Equal(t, engine.FailbackReason, tk.Reason, "%s: task from %s", bc.name, tk.FromCluster)
				require.NotNil(t, tk.Replicas, "%s: task from %s", bc.name, tk.FromCluster)
				assert.Equal(t, before[tk.FromCluster], *tk.Replicas, "%s: task from %s", bc.name, tk.FromCluster)
			}
			slices.Sort(from)
			assert.Equal(t, leaving, from, "%s: the failback's tasks are not the clusters it leaves", bc.name)
			placed := firstAfter(snaps, written, func(rb *workv1alpha2.ResourceBinding) bool { return slices.Contains(targets(&rb.Spec), bc.origin) })
			healthy := firstAfter(snaps, written, func(rb *workv1alpha2.ResourceBinding) bool {
				return healthOf(rb)[bc.origin] == workv1alpha2.ResourceHealthy
			})
			cleared := firstAfter(snaps, written, func(rb *workv1alpha2.ResourceBinding) bool { return len(rb.Spec.GracefulEvictionTasks) == 0 })
			require.Positive(t, placed, "%s: never placed on %s", bc.name, bc.origin)
			require.Positive(t, healthy, "%s: never Healthy on %s", bc.name, bc.origin)
			require.Positive(t, cleared, "%s: its tasks never cleared", bc.name)
			if len(leaving) > 0 {
				assert.True(t, allHealthy(snaps[cleared].rb), "%s: its failback tasks ended before every copy of %v was Healthy", bc.name, asMap(snaps[cleared].rb.Spec.Clusters))
				assert.GreaterOrEqual(t, cleared, healthy, "%s: its failback tasks ended before the copy on %s was Healthy", bc.name, bc.origin)
			}
			assert.False(t, recordNames(rb, bc.origin), "%s: the record still names %s", bc.name, bc.origin)
			t.Logf("measured: %s back to %s as predicted (%s → %s), sent back %s after the recovery (%s after its lastTransitionTime, in whole seconds; window %v), placed by karmada-scheduler %s later, "+
				"reported Healthy %s after that; the copies on %v held in FailbackController tasks for %s; ready replicas %d at the recovery, never below %d",
				bc.name, bc.origin, placementOf(snaps[written-1].rb.Spec.Clusters), placementOf(rb.Spec.Clusters), ms(w.at.Sub(recoveredAt)),
				ms(w.at.Sub(recoveredAt.Truncate(time.Second))), backWindow,
				ms(snaps[placed].at.Sub(w.at)), ms(snaps[healthy].at.Sub(snaps[placed].at)), leaving, ms(snaps[cleared].at.Sub(w.at)), atRecovery, minReady)
			t.Logf("Event on %s: %s %s: %s", bc.name, evs[0].Type, evs[0].Reason, evs[0].Note)

		case "notPlaced":
			assert.Negative(t, written, "%s: sent back, though a fresh placement would not put it on %s", bc.name, bc.origin)
			assert.Empty(t, eventsOf(s, bc.name, controllers.EventReasonFailedBack), "%s", bc.name)
			assert.Equal(t, asMap(failedOver[bc.name]), asMap(rb.Spec.Clusters), "%s moved", bc.name)
			evs := eventsOf(s, bc.name, controllers.EventReasonFailbackNotPlaced)
			require.NotEmpty(t, evs)
			// "… Karmada's scheduler would place it as x:2, y:2": where it is.
			_, would, ok := strings.Cut(evs[0].Note, "would place it as ")
			if assert.True(t, ok, "%s: %s", bc.name, evs[0].Note) {
				assert.Equal(t, placementOf(rb.Spec.Clusters), would, "%s: the prediction is not where karmada-scheduler keeps it", bc.name)
			}
			assert.True(t, recordNames(rb, bc.origin), "%s: the record of %s dropped", bc.name, bc.origin)
			t.Logf("Event on %s: %s %s: %s", bc.name, evs[0].Type, evs[0].Reason, evs[0].Note)

		}
	}
}

// backUp plays the recovery of clusters: Ready True, its lastTransitionTime
// now, and then every taint lifted (the policy's NoExecute, Karmada's
// cluster controller's NoSchedule). It returns the time just before.
func (s *suite) backUp(p *copyPlayer, names ...string) time.Time {
	s.t.Helper()
	at := time.Now()
	for _, n := range names {
		s.setReady(n, metav1.ConditionTrue)
	}
	for _, n := range names {
		s.setTaints(n)
	}
	p.setDown(false, names...)
	return at
}

// whole reports whether the schedule result of a Divided binding holds
// every replica.
func whole(rb *workv1alpha2.ResourceBinding) bool {
	var sum int32
	for _, tc := range rb.Spec.Clusters {
		sum += tc.Replicas
	}
	return sum == rb.Spec.Replicas
}

// copiesOf is every copy of the binding and its replicas: on the clusters
// of its schedule result, and on those its graceful eviction tasks keep.
func copiesOf(rb *workv1alpha2.ResourceBinding) map[string]int32 {
	out := asMap(rb.Spec.Clusters)
	for _, tk := range rb.Spec.GracefulEvictionTasks {
		r := rb.Spec.Replicas
		if tk.Replicas != nil {
			r = *tk.Replicas
		}
		out[tk.FromCluster] = max(out[tk.FromCluster], r)
	}
	return out
}

func asMap(ts []workv1alpha2.TargetCluster) map[string]int32 {
	out := map[string]int32{}
	for _, tc := range ts {
		out[tc.Name] = tc.Replicas
	}
	return out
}

func healthOf(rb *workv1alpha2.ResourceBinding) map[string]workv1alpha2.ResourceHealth {
	out := map[string]workv1alpha2.ResourceHealth{}
	for _, it := range rb.Status.AggregatedStatus {
		out[it.ClusterName] = it.Health
	}
	return out
}

// allHealthy reports whether every cluster of the schedule result reports
// its copy Healthy.
func allHealthy(rb *workv1alpha2.ResourceBinding) bool {
	h := healthOf(rb)
	for _, tc := range rb.Spec.Clusters {
		if h[tc.Name] != workv1alpha2.ResourceHealthy {
			return false
		}
	}
	return len(rb.Spec.Clusters) > 0
}

// recordNames reports whether the binding's failover record names origin.
func recordNames(rb *workv1alpha2.ResourceBinding, origin string) bool {
	rec, err := failback.ParseRecord(rb.Annotations[karmada.FailedOverFromAnnotation])
	if err != nil {
		return true
	}
	_, ok := rec.Find(origin)
	return ok
}

func eventsOf(s *suite, name, reason string) []eventsv1.Event {
	return slices.DeleteFunc(s.events(name), func(e eventsv1.Event) bool { return e.Reason != reason })
}

var placementInNote = regexp.MustCompile(`\(([^()]*)\)$`)

// predictedPlacement reads the fresh placement a FailedBack Event's note
// ends with: "(a1:2, b1:1)".
func predictedPlacement(t *testing.T, note string) map[string]int32 {
	t.Helper()
	m := placementInNote.FindStringSubmatch(note)
	require.Len(t, m, 2, "no placement in %q", note)
	out := map[string]int32{}
	for _, part := range strings.Split(m[1], ", ") {
		name, n, ok := strings.Cut(part, ":")
		require.True(t, ok, "%q in %q", part, note)
		r, err := strconv.ParseInt(n, 10, 32)
		require.NoError(t, err, "%q in %q", part, note)
		out[name] = int32(r)
	}
	return out
}

// placementOf is ts as the Events write a placement: "a1:2, b1:1", by name.
func placementOf(ts []workv1alpha2.TargetCluster) string {
	m := asMap(ts)
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s:%d", c, m[c]))
	}
	return strings.Join(parts, ", ")
}

func placementsOf(m map[string][]workv1alpha2.TargetCluster) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, n+" on "+placementOf(m[n]))
	}
	return strings.Join(parts, "; ")
}

func stampMS(t time.Time) string { return t.Format("15:04:05.000") }

// backSnap is a state of a binding as a watch delivered it, and when.
type backSnap struct {
	at time.Time
	rb *workv1alpha2.ResourceBinding
}

// backHistory is every state of the suite's bindings a watch delivers.
type backHistory struct {
	mu    sync.Mutex
	snaps map[string][]backSnap
}

func (s *suite) watchHistory() *backHistory {
	s.t.Helper()
	h := &backHistory{snaps: map[string][]backSnap{}}
	s.watch(func(obj runtime.Object) {
		if rb, ok := obj.(*workv1alpha2.ResourceBinding); ok {
			h.mu.Lock()
			h.snaps[rb.Name] = append(h.snaps[rb.Name], backSnap{at: time.Now(), rb: rb})
			h.mu.Unlock()
		}
	}, &workv1alpha2.ResourceBindingList{})
	return h
}

func (h *backHistory) of(name string) []backSnap {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.snaps[name])
}

// firstAfter is the index of the first state after i for which cond
// holds; -1 if none.
func firstAfter(snaps []backSnap, i int, cond func(*workv1alpha2.ResourceBinding) bool) int {
	for j := max(i+1, 0); j < len(snaps); j++ {
		if cond(snaps[j].rb) {
			return j
		}
	}
	return -1
}

// readyReplicas is, for each state of a binding in order, the replicas
// its copies run ready, by what the members report: a copy reported
// Healthy runs all its replicas ready; one not reported Healthy at most
// what it ran when it last was, if it has been a copy since (a Deployment
// scaled up keeps its ready pods; one scaled down loses some).
func readyReplicas(snaps []backSnap) []int32 {
	last := map[string]int32{}
	out := make([]int32, len(snaps))
	for i, sn := range snaps {
		copies, health := copiesOf(sn.rb), healthOf(sn.rb)
		for c := range last {
			if _, ok := copies[c]; !ok {
				delete(last, c)
			}
		}
		var sum int32
		for c, r := range copies {
			if health[c] == workv1alpha2.ResourceHealthy {
				last[c] = r
			} else {
				last[c] = min(last[c], r)
			}
			sum += last[c]
		}
		out[i] = sum
	}
	return out
}

// readyTrace prints each state's copies, health and ready replicas.
func readyTrace(snaps []backSnap, ready []int32) string {
	var b strings.Builder
	for i, sn := range snaps {
		h := healthOf(sn.rb)
		var tasks []string
		for _, tk := range sn.rb.Spec.GracefulEvictionTasks {
			tasks = append(tasks, tk.FromCluster+"("+tk.Producer+")")
		}
		fmt.Fprintf(&b, "\n  %s clusters [%s] tasks %v health %v ready %d", stampMS(sn.at), placementOf(sn.rb.Spec.Clusters), tasks, h, ready[i])
	}
	return b.String()
}

// copyPlayer plays the member clusters for the failback test, as Karmada's
// binding status controller aggregates what their Works report: every copy
// of a binding, on the clusters of its schedule result and on those its
// graceful eviction tasks keep (their Works stay until the tasks end), is
// in status.aggregatedStatus; a copy that starts, or grows, is Unhealthy
// (its Deployment progressing) for startup, then Healthy; a copy on a
// cluster that is down is Unknown.
type copyPlayer struct {
	s       *suite
	startup time.Duration

	mu     sync.Mutex
	down   map[string]bool
	copies map[string]map[string]copyState // binding → cluster
}

// copyState is a copy's replicas and since when it has run that many (zero:
// since before the player started).
type copyState struct {
	replicas int32
	since    time.Time
}

func (s *suite) playCopies(startup time.Duration) *copyPlayer {
	p := &copyPlayer{s: s, startup: startup, down: map[string]bool{}, copies: map[string]map[string]copyState{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = p.report(ctx) // an API error: the next tick again
			}
		}
	})
	s.t.Cleanup(func() { cancel(); wg.Wait() })
	return p
}

func (p *copyPlayer) setDown(down bool, names ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range names {
		p.down[n] = down
	}
}

func (p *copyPlayer) report(ctx context.Context) error {
	var list workv1alpha2.ResourceBindingList
	if err := p.s.c.List(ctx, &list, client.InNamespace(p.s.ns), client.MatchingLabels(p.s.labels())); err != nil {
		return err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range list.Items {
		rb := &list.Items[i]
		present := copiesOf(rb)
		known, seen := p.copies[rb.Name]
		if !seen {
			known = map[string]copyState{}
			for c, r := range present {
				known[c] = copyState{replicas: r}
			}
			p.copies[rb.Name] = known
		}
		for c, r := range present {
			k, ok := known[c]
			switch {
			case !ok || r > k.replicas:
				known[c] = copyState{replicas: r, since: now}
			case r < k.replicas:
				k.replicas = r
				known[c] = k
			}
		}
		for c := range known {
			if _, ok := present[c]; !ok {
				delete(known, c)
			}
		}
		var want []workv1alpha2.AggregatedStatusItem
		for _, c := range slices.Sorted(maps.Keys(present)) {
			h := workv1alpha2.ResourceHealthy
			switch {
			case p.down[c]:
				h = workv1alpha2.ResourceUnknown
			case now.Sub(known[c].since) < p.startup:
				h = workv1alpha2.ResourceUnhealthy
			}
			want = append(want, workv1alpha2.AggregatedStatusItem{ClusterName: c, Health: h, Applied: true})
		}
		if slices.EqualFunc(want, rb.Status.AggregatedStatus, func(a, b workv1alpha2.AggregatedStatusItem) bool {
			return a.ClusterName == b.ClusterName && a.Health == b.Health
		}) {
			continue
		}
		rb.Status.AggregatedStatus = want
		_ = p.s.c.Status().Update(ctx, rb) // changed meanwhile: the next tick sees it
	}
	return nil
}

// describeOnFailure logs each binding's state and Events when the test
// has failed.
func (s *suite) describeOnFailure(cases []backCase) {
	if !s.t.Failed() {
		return
	}
	for _, bc := range cases {
		rb := s.getBinding(bc.name)
		var tasks []string
		for _, tk := range rb.Spec.GracefulEvictionTasks {
			tasks = append(tasks, tk.FromCluster+"("+tk.Producer+")")
		}
		s.t.Logf("%s: clusters [%s] tasks %v health %v generation %d observed %d record %s",
			bc.name, placementOf(rb.Spec.Clusters), tasks, healthOf(rb), rb.Generation, rb.Status.SchedulerObservedGeneration,
			rb.Annotations[karmada.FailedOverFromAnnotation])
		for _, e := range s.events(bc.name) {
			s.t.Logf("  Event %s %s: %s", e.Type, e.Reason, e.Note)
		}
	}
}

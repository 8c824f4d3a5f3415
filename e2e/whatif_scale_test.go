//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The what-if case at the size issue 36 names: 12 clusters in 3 regions,
// 60 bindings of the shapes fleets have, a region lost at 1/s, the
// summaries reported every 20 s: twenty permits a report, as at 2/s and
// 10 s, with each report half a permit (0.5 s) from the permits either
// side. At 2/s the quarter second either side was less than a loaded
// two-core machine's jitter: an eviction 0.3 s late put a report before
// the permit the plan put after it, and the order of what the report woke
// changed (55 of 60 in two runs of three on a quiet machine).
const (
	whatIfRate         = 1
	whatIfReportPeriod = 20 * time.Second
)

// TestWhatIfPlacesAsTheScheduler proves that the what-if planner places as
// Karmada's scheduler does while a failover runs: with the summaries
// reported every --cluster-status-update-frequency (played here as Karmada's
// cluster status controller reports them: each survivor's pods, those of
// the replicas placed on it by then included), the scheduler places each
// eviction by the room last reported, so a burst goes to the roomiest
// survivors until the next report, and the Ledger holds what the reports
// do not show yet. Region ws-a fails; its 60 bindings are Duplicated over
// two regions, Aggregated, weighted by available replicas, weighted
// statically, and pinned to regions. The plan, asked with the fork's
// controller-manager flags as one argument (--controller-flags), is
// compared binding by binding with what the fork's controllers and the
// real karmada-scheduler did: the clusters each landed on with their
// replicas, or that it stayed; and its drain time with the one measured.
func TestWhatIfPlacesAsTheScheduler(t *testing.T) {
	noLeaks(t)
	ensureForkManifests(t)
	startKarmadaScheduler(t)
	s := newSuite(t, "whatif-scale")

	regions := []string{"ws-a", "ws-b", "ws-c"}
	rooms := map[string][]int64{"ws-a": {20, 20, 20, 20}, "ws-b": {30, 24, 18, 12}, "ws-c": {28, 22, 16, 10}}
	cluster := func(region string, i int) string { return fmt.Sprintf("%s%d", region, i+1) }
	var names, failed []string
	for _, r := range regions {
		for i, room := range rooms[r] {
			c := cluster(r, i)
			s.member(c, r, room)
			names = append(names, c)
			if r == "ws-a" {
				failed = append(failed, c)
			}
		}
	}
	s.releasedPolicy(names...)

	all := s.suiteClusters()
	inRegions := func(rs ...string) *policyv1alpha1.ClusterAffinity {
		return &policyv1alpha1.ClusterAffinity{LabelSelector: all.LabelSelector, FieldSelector: &policyv1alpha1.FieldSelector{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "region", Operator: corev1.NodeSelectorOpIn, Values: rs}}}}
	}
	dynamic := &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
		WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}}
	static := func(a, b, c string) (*policyv1alpha1.ClusterAffinity, *policyv1alpha1.ReplicaSchedulingStrategy) {
		weight := func(name string, w int64) policyv1alpha1.StaticClusterWeight {
			return policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{name}}, Weight: w}
		}
		return &policyv1alpha1.ClusterAffinity{LabelSelector: all.LabelSelector, ClusterNames: []string{a, b, c}},
			&policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
				WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
					weight(a, 1), weight(b, 2), weight(c, 1)}}}
	}
	// Fifteen bindings on each failed cluster, named after it so that the
	// plan's order of items due together (by key) is the cluster's.
	var bindings []string
	add := func(name string, replicas int32, p policyv1alpha1.Placement, on ...string) {
		s.scheduledBinding(name, replicas, p, on...)
		bindings = append(bindings, name)
	}
	for k, a := range failed {
		b, c := cluster("ws-b", k), cluster("ws-c", (k+1)%4)
		for i, other := range []string{b, c, cluster("ws-b", (k+2)%4)} {
			add(fmt.Sprintf("%s-dup-%d", a, i), 2, policyv1alpha1.Placement{ClusterAffinity: all, SpreadConstraints: spreadOver(2),
				ReplicaScheduling: duplicated}, a, other)
		}
		for i, n := range []int32{2, 3, 4, 3} {
			add(fmt.Sprintf("%s-agg-%d", a, i), n, policyv1alpha1.Placement{ClusterAffinity: all, ReplicaScheduling: aggregated}, a)
		}
		for i, n := range []int32{4, 6, 8} {
			other := b
			if i%2 == 1 {
				other = c
			}
			add(fmt.Sprintf("%s-dyn-%d", a, i), n, policyv1alpha1.Placement{ClusterAffinity: all, ReplicaScheduling: dynamic}, a, other)
		}
		for i := range 3 {
			aff, strategy := static(a, cluster("ws-b", (k+i)%4), cluster("ws-c", (k+i)%4))
			add(fmt.Sprintf("%s-static-%d", a, i), 8, policyv1alpha1.Placement{ClusterAffinity: aff, ReplicaScheduling: strategy},
				a, cluster("ws-b", (k+i)%4), cluster("ws-c", (k+i)%4))
		}
		add(a+"-pinned-a", 2, policyv1alpha1.Placement{ClusterAffinity: inRegions("ws-a"), ReplicaScheduling: aggregated}, a)
		add(a+"-pinned-ab", 3, policyv1alpha1.Placement{ClusterAffinity: inRegions("ws-a", "ws-b"), ReplicaScheduling: aggregated}, a)
	}
	require.Len(t, bindings, 60)
	before := map[string]*workv1alpha2.ResourceBinding{}
	existing := map[string]int64{} // the replicas already on each survivor, which its summary counts
	for _, b := range bindings {
		before[b] = s.getBinding(b)
		for _, tc := range before[b].Spec.Clusters {
			existing[tc.Name] += int64(tc.Replicas)
		}
	}

	flags := fmt.Sprintf("--controllers=*,failoverEviction --enable-no-execute-taint-eviction --resource-eviction-rate=%d "+
		"--secondary-resource-eviction-rate=%d --cluster-status-update-frequency=%v", whatIfRate, whatIfRate, whatIfReportPeriod)
	plan := planWhatIf(t, buildFleetsim(t), "region=ws-a", "--controller-flags", flags)
	require.Equal(t, failed, plan.Failure.Clusters)
	predicted := plan.predictions(s.ns, "")
	require.ElementsMatch(t, bindings, slices.Collect(maps.Keys(predicted)), "the plan covers every binding on ws-a")

	// The outage: the survivors report their summaries every period from
	// the failure on, with the pods of the replicas placed on them.
	room := map[string]int64{}
	for _, r := range regions[1:] {
		for i, n := range rooms[r] {
			room[cluster(r, i)] = n + existing[cluster(r, i)]
		}
	}
	log := s.watchFailover(failed...)
	m := s.playMembers(room, whatIfReportPeriod)
	s.start("whatif-scale", forkOptions{Rate: rate(whatIfRate, whatIfRate), EnableNoExecuteTaintEviction: true, StatusPeriod: whatIfReportPeriod}, nil)
	// The failed clusters close to the scheduler together, then turn not
	// Ready one after the other, each once the one before is tainted: the
	// controllers queue a cluster's bindings in key order when its taint
	// comes, and the clusters' taints in this order, which is the plan's
	// (by key; the bindings are named after their cluster). Within a
	// report, the scheduler places by the same summaries whatever the
	// order; across one, the order decides which evictions it sees placed.
	for _, n := range failed {
		c := s.getCluster(n)
		s.setTaints(n, append(c.Spec.Taints, corev1.Taint{Key: forkTaintKey, Effect: corev1.TaintEffectNoSchedule})...)
	}
	for i, n := range failed {
		s.setReady(n, metav1.ConditionFalse)
		s.waitTaint(n)
		if i == 0 {
			// The plan's permits come every 1/rate from the failure on,
			// and its reports every period from the failure on, each
			// showing what was placed before it: a report falls on a
			// permit, and what it shows is the plan's evictions before
			// it. The members report half a permit after the eviction
			// the plan puts last before each report, as seen, rather
			// than at the clock's moment: on a loaded machine the real
			// permits fall behind the clock (a try that waits for room
			// holds the worker too), and a report on the clock then
			// lands before a permit the plan puts before it, and wakes
			// what waits for room in another order. Which evictions a
			// report shows is so the plan's; when each happens is
			// measured (the drain below). A report never goes before
			// its moment on the clock; should the evictions not come,
			// it goes half a period after it.
			first := log.first(t, 10*time.Second)
			m.reportSummariesAt(func(ctx context.Context, k int) time.Time {
				moment := time.Duration(k) * whatIfReportPeriod
				n := 0
				for _, b := range bindings {
					for _, at := range predicted[b].at {
						if at < moment.Seconds() {
							n++
						}
					}
				}
				// Nor before its moment on the clock (half a permit
				// early, as the plan's permits are seen late by the
				// watch): where the plan has no eviction for a while
				// before a report, or past its last, the report waits
				// for the clock.
				early, late := first.Add(moment-time.Second/(2*whatIfRate)), first.Add(moment+whatIfReportPeriod/2)
				for time.Now().Before(late) && ctx.Err() == nil {
					if seen := log.evictions(); len(seen) >= n && n > 0 {
						if at := seen[n-1].Add(time.Second / (2 * whatIfRate)); at.After(early) {
							return at
						}
						return early
					}
					time.Sleep(20 * time.Millisecond)
				}
				return late
			})
		}
		time.Sleep(100 * time.Millisecond) // its bindings queued
	}

	onFailed := func(rb *workv1alpha2.ResourceBinding) bool {
		return slices.ContainsFunc(rb.Spec.Clusters, func(tc workv1alpha2.TargetCluster) bool { return slices.Contains(failed, tc.Name) })
	}
	var moving []string
	for _, b := range bindings {
		if moves(predicted[b].outcome) {
			moving = append(moving, b)
		}
	}
	settled := func(b string) bool {
		rb := s.getBinding(b)
		return !onFailed(rb) && complete(rb, len(before[b].Spec.Clusters)) && rb.Status.SchedulerObservedGeneration == rb.Generation
	}
	wait := time.Duration(float64(len(moving))/whatIfRate*float64(time.Second)) + 3*whatIfReportPeriod
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) && slices.ContainsFunc(moving, func(b string) bool { return !settled(b) }) {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // a refusal is decided within the same queue

	agree, diffs := s.compareWithPlan(bindings, before, predicted, s.getBinding, onFailed)
	for _, d := range diffs {
		t.Logf("difference: %s", d)
	}
	share := float64(agree) / float64(len(bindings))
	t.Logf("measured: what-if at 12 clusters, 3 regions, %d bindings, %d/s, summaries every %v: %d of %d bindings (%.1f%%) landed on the "+
		"predicted clusters with the predicted replicas, or stayed as predicted", len(bindings), whatIfRate, whatIfReportPeriod,
		agree, len(bindings), 100*share)
	want, got, n, ok := drainSpans(predicted, bindings, log)
	require.True(t, ok, "some bindings predicted to move were not seen evicted")
	off := (got - want).Seconds() / got.Seconds()
	t.Logf("measured: time to drain %d evictions: planned %s from the first to the last, took %s (%+.1f%%)", n, ms(want), ms(got), -100*off)
	// Each binding's eviction, planned and seen, from the first of each.
	log.mu.Lock()
	first := time.Time{}
	for _, at := range log.evicted {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	var timeline []string
	for _, b := range bindings {
		p := predicted[b]
		seen := "-"
		if at, ok := log.evicted[b]; ok {
			seen = fmt.Sprintf("%.1fs", at.Sub(first).Seconds())
		}
		timeline = append(timeline, fmt.Sprintf("%s %s %v at %v, seen %s", b, p.outcome, p.to, p.at, seen))
	}
	log.mu.Unlock()
	t.Logf("planned and seen:\n%s", strings.Join(timeline, "\n"))
	require.GreaterOrEqual(t, share, 0.95, "what-if agreement below 95%%")
	require.InDelta(t, 0, off, 0.10, "the planned drain time is off by more than 10%% of the measured")
}

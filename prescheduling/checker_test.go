package prescheduling

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

func regional(name, provider, region, zone string, taints ...corev1.Taint) failover.Cluster {
	return failover.Cluster{Name: name, Provider: provider, Region: region, Zone: zone, Taints: taints,
		Labels: map[string]string{"team": "team-" + region, "tier": "gold"}}
}

func sched(names ...string) []failover.TargetCluster {
	out := make([]failover.TargetCluster, len(names))
	for i, n := range names {
		out[i] = failover.TargetCluster{Name: n}
	}
	return out
}

var (
	noSchedule   = corev1.Taint{Key: "maintenance", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	preferNoExec = corev1.Taint{Key: "cluster.karmada.io/degraded", Effect: failover.TaintEffectPreferNoExecute}
	// divided names no division preference: Karmada's admission webhook
	// makes it Weighted, every cluster weighing the same.
	divided        = &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided}
	aggregated     = &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: ReplicaDivisionPreferenceAggregated}
	threeRegionsUS = []failover.Cluster{
		regional("a1", "aws", "us-east", "us-east-1a"),
		regional("a2", "aws", "us-east", "us-east-1b"),
		regional("b1", "gcp", "us-west", "us-west-1a"),
		regional("c1", "azure", "eu", "eu-1a"),
		regional("c2", "azure", "eu", "eu-1b"),
	}
)

func TestCheckRules(t *testing.T) {
	cases := []struct {
		name      string
		placement Placement
		scheduled []failover.TargetCluster
		evicting  []string
		fleet     []failover.Cluster
		feasible  bool
		cands     []string
		reason    string // a substring the Reason must contain
	}{
		// Eligibility.
		{"nil placement: any healthy unscheduled cluster replaces the copy", Placement{},
			sched("a1", "a2"), []string{"a1"}, threeRegionsUS, true, []string{"b1", "c1", "c2"}, "feasible: b1, c1 and c2 can replace the copy on a1"},
		{"being evicted from rules a cluster out even when unscheduled", Placement{},
			sched("a1"), []string{"a1", "b1", "c1", "c2"}, threeRegionsUS, true, []string{"a2"}, ""},
		{"faulty by NoExecute even if tolerated", Placement{ClusterTolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
			sched("a1"), []string{"a1"}, fleetWith(threeRegionsUS[:2], 1, notReady), false, nil,
			"a2 (taint cluster.karmada.io/not-ready:NoExecute) is faulty"},
		{"faulty by PreferNoExecute, which tolerations do not cover", Placement{ClusterTolerations: []corev1.Toleration{{Key: preferNoExec.Key, Operator: corev1.TolerationOpExists}}},
			sched("a1"), []string{"a1"}, fleetWith(threeRegionsUS[:2], 1, preferNoExec), false, nil,
			"a2 (taint cluster.karmada.io/degraded:PreferNoExecute) is faulty"},
		{"untolerated NoSchedule rules a cluster out", Placement{},
			sched("a1"), []string{"a1"}, fleetWith(threeRegionsUS[:2], 1, noSchedule), false, nil,
			"a2 (maintenance=true:NoSchedule) has a NoSchedule taint the placement does not tolerate"},
		{"NoSchedule tolerated by key and value", Placement{ClusterTolerations: []corev1.Toleration{{Key: "maintenance", Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
			sched("a1"), []string{"a1"}, fleetWith(threeRegionsUS[:2], 1, noSchedule), true, []string{"a2"}, ""},
		{"NoSchedule not tolerated by another value", Placement{ClusterTolerations: []corev1.Toleration{{Key: "maintenance", Value: "false"}}},
			sched("a1"), []string{"a1"}, fleetWith(threeRegionsUS[:2], 1, noSchedule), false, nil, "does not tolerate"},
		{"NoSchedule tolerated by an empty-key Exists toleration", Placement{ClusterTolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
			sched("a1"), []string{"a1"}, fleetWith(threeRegionsUS[:2], 1, noSchedule), true, []string{"a2"}, ""},
		{"NoSchedule not tolerated by a NoExecute-only toleration", Placement{ClusterTolerations: []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}},
			sched("a1"), []string{"a1"}, fleetWith(threeRegionsUS[:2], 1, noSchedule), false, nil, "does not tolerate"},
		{"label selector", Placement{ClusterAffinity: &failover.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "team-eu"}}}},
			sched("a1"), []string{"a1"}, threeRegionsUS, true, []string{"c1", "c2"}, ""},
		{"field selector", Placement{ClusterAffinity: &failover.ClusterAffinity{FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "provider", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"azure"}}}}}},
			sched("a1"), []string{"a1"}, threeRegionsUS, true, []string{"a2", "b1"}, ""},
		{"exclude", Placement{ClusterAffinity: &failover.ClusterAffinity{ExcludeClusters: []string{"a2", "b1", "c1", "c2"}}},
			sched("a1"), []string{"a1"}, threeRegionsUS, false, nil, "a2, b1, c1 and 1 more do not match clusterAffinity"},
		{"empty fleet", Placement{}, sched("a1"), []string{"a1"}, nil, false, nil, "no eligible cluster outside a1 to replace the copy on a1: the fleet is empty"},

		// Duplicated counts.
		{"two copies need two new clusters", Placement{ClusterAffinity: &failover.ClusterAffinity{ClusterNames: []string{"a1", "a2", "b1", "c1"}}},
			sched("a1", "a2", "c1"), []string{"a1", "a2"}, threeRegionsUS, false, []string{"b1"},
			"only 1 eligible cluster (b1) outside a1, a2 and c1 to replace the copies on a1 and a2"},
		{"two copies and two new clusters", Placement{},
			sched("a1", "a2", "c1"), []string{"a1", "a2"}, threeRegionsUS, true, []string{"b1", "c2"}, ""},

		// Spread.
		{"region MinGroups met by remaining plus candidates", Placement{SpreadConstraints: []SpreadConstraint{{SpreadByField: SpreadByFieldRegion, MinGroups: 3, MaxGroups: 3}}},
			sched("a1", "b1", "c1"), []string{"c1"}, threeRegionsUS, true, []string{"a2", "c2"}, ""},
		{"region MinGroups lost when the only cluster of a region is faulty", Placement{SpreadConstraints: []SpreadConstraint{{SpreadByField: SpreadByFieldRegion, MinGroups: 3, MaxGroups: 3}}},
			sched("a1", "b1", "c1"), []string{"c1"}, fleetWith(threeRegionsUS, 4, notReady), false, []string{"a2"},
			"spreadConstraints[0] needs at least 3 regions, but the remaining and eligible clusters span only 2 regions when replacing the copy on c1"},
		// Karmada's scheduler picks the fewest regions that hold enough
		// clusters, and without a cluster constraint one cluster in each:
		// us-east, where two clusters have room (eu has one).
		{"region MaxGroups: the scheduler moves to the best region", Placement{SpreadConstraints: []SpreadConstraint{{SpreadByField: SpreadByFieldRegion, MinGroups: 1, MaxGroups: 1}}},
			sched("c1", "c2"), []string{"c2"}, threeRegionsUS, false, []string{"a1", "a2", "b1"},
			"Karmada's scheduler would run it on 1 cluster (a1), fewer than the 2 it ran on, when replacing the copy on c2: it selects the fewest regions that hold enough clusters for spreadConstraints[0], 1 region (us-east), and there is no cluster constraint"},
		{"region MaxGroups: a replacement in the same region keeps one region", Placement{SpreadConstraints: []SpreadConstraint{{SpreadByField: SpreadByFieldRegion, MaxGroups: 1}}},
			sched("a1"), []string{"a1"}, []failover.Cluster{threeRegionsUS[0], threeRegionsUS[2], threeRegionsUS[1]}, true, []string{"a2", "b1"}, ""},
		{"cluster MinGroups beyond the fleet", Placement{SpreadConstraints: []SpreadConstraint{{MinGroups: 7}}},
			sched("a1"), []string{"a1"}, threeRegionsUS, false, []string{"a2", "b1", "c1", "c2"}, "needs at least 7 clusters, but the remaining and eligible clusters span only 4"},
		// Karmada v1.18 selects only by region and cluster constraints.
		{"provider alone places nothing", Placement{SpreadConstraints: []SpreadConstraint{{SpreadByField: SpreadByFieldProvider, MinGroups: 3}}},
			sched("a1", "b1"), []string{"b1"}, fleetWith(threeRegionsUS, 3, notReady, 4), false, []string{"a2"},
			"Karmada v1.18's scheduler selects clusters by a region or a cluster spread constraint, and spreadConstraints[0] (by provider) is neither, so it places nothing when replacing the copy on b1"},
		{"zone MinGroups is not counted", Placement{SpreadConstraints: []SpreadConstraint{{SpreadByField: SpreadByFieldZone, MinGroups: 4}, {MinGroups: 1, MaxGroups: 5}}},
			sched("a1"), []string{"a1"}, threeRegionsUS, true, []string{"a2", "b1", "c1", "c2"},
			"(Karmada v1.18's scheduler does not count the groups of spreadConstraints[0] (by zone))"},
		{"label alone places nothing", Placement{SpreadConstraints: []SpreadConstraint{{SpreadByLabel: "team", MinGroups: 4}}},
			sched("a1"), []string{"a1"}, threeRegionsUS, false, []string{"a2", "b1", "c1", "c2"}, "spreadConstraints[0] (by label team) is neither"},
		{"cluster constraint without maxGroups selects nothing", Placement{SpreadConstraints: []SpreadConstraint{{MinGroups: 1}}},
			sched("a1"), []string{"a1"}, threeRegionsUS, false, []string{"a2", "b1", "c1", "c2"},
			"spreadConstraints[0] (by cluster) has no maxGroups, and Karmada v1.18's scheduler reads that as 0: it selects no cluster"},
		{"a cluster without the spread field is not a candidate", Placement{SpreadConstraints: []SpreadConstraint{{SpreadByField: SpreadByFieldRegion, MaxGroups: 1}, {MaxGroups: 1}}},
			sched("a1"), []string{"a1"}, append(fleetOf("x1"), threeRegionsUS[0]), false, nil,
			"x1 (no region for spreadConstraints[0]) cannot be put in a spread group"},

		// Divided.
		{"divided: the clusters it runs on count", Placement{ReplicaScheduling: divided},
			[]failover.TargetCluster{{Name: "a1", Replicas: 2}, {Name: "a2", Replicas: 2}}, []string{"a1"},
			fleetWith(threeRegionsUS, 2, notReady, 3, 4), true, []string{"a2"}, "a2 can take the 2 replicas evicted from a1"},
		{"divided: empty type inside replicaScheduling is Divided", Placement{ReplicaScheduling: &ReplicaSchedulingStrategy{}},
			[]failover.TargetCluster{{Name: "a1", Replicas: 2}, {Name: "a2", Replicas: 2}}, []string{"a1"},
			fleetWith(threeRegionsUS, 2, notReady, 3, 4), true, []string{"a2"}, ""},
		{"divided: nothing eligible", Placement{ReplicaScheduling: divided},
			[]failover.TargetCluster{{Name: "a1", Replicas: 2}}, []string{"a1"},
			fleetWith(threeRegionsUS, 1, notReady, 2, 3, 4), false, nil, "no eligible cluster can take the 2 replicas evicted from a1: of 5 clusters, a1 is being evicted from"},
		{"divided: empty fleet", Placement{ReplicaScheduling: divided},
			[]failover.TargetCluster{{Name: "a1", Replicas: 2}}, []string{"a1"}, nil, false, nil,
			"no eligible cluster can take the 2 replicas evicted from a1: the fleet is empty"},
		// Karmada's scheduler does not apply its taint filter to a cluster
		// that keeps the workload.
		{"divided: a cluster it runs on keeps it whatever its NoSchedule taints", Placement{ReplicaScheduling: divided},
			[]failover.TargetCluster{{Name: "a1", Replicas: 2}, {Name: "a2", Replicas: 2}}, []string{"a1"},
			fleetWith(fleetWith(threeRegionsUS, 2, notReady, 3, 4), 1, noSchedule), true, []string{"a2"}, "feasible: a2 can take the 2 replicas evicted from a1"},
		// getStaticWeightInfoList: when no entry weighs a cluster the
		// scheduler may use, every cluster weighs the same.
		{"divided: static weights left without a weighted cluster weigh all alike", Placement{ReplicaScheduling: &ReplicaSchedulingStrategy{
			ReplicaSchedulingType: ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: ReplicaDivisionPreferenceWeighted,
			WeightPreference: &ClusterPreferences{StaticWeightList: []StaticClusterWeight{
				{TargetCluster: failover.ClusterAffinity{ClusterNames: []string{"a1"}}, Weight: 1},
				{TargetCluster: failover.ClusterAffinity{ClusterNames: []string{"a2"}}, Weight: 2}}}}},
			[]failover.TargetCluster{{Name: "a1", Replicas: 1}, {Name: "a2", Replicas: 2}}, []string{"a1", "a2"},
			threeRegionsUS, true, []string{"b1", "c1", "c2"}, "feasible: b1, c1 and c2 can take the 3 replicas evicted from a1 and a2"},
		{"divided: static weights send replicas only to weighted clusters", Placement{ReplicaScheduling: &ReplicaSchedulingStrategy{
			ReplicaSchedulingType: ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: ReplicaDivisionPreferenceWeighted,
			WeightPreference: &ClusterPreferences{StaticWeightList: []StaticClusterWeight{
				{TargetCluster: failover.ClusterAffinity{ClusterNames: []string{"a1"}}, Weight: 1},
				{TargetCluster: failover.ClusterAffinity{ClusterNames: []string{"c2"}}, Weight: 2}}}}},
			[]failover.TargetCluster{{Name: "a1", Replicas: 1}, {Name: "a2", Replicas: 2}}, []string{"a1", "a2"},
			threeRegionsUS, true, []string{"b1", "c1", "c2"}, "feasible: c2 can take the 3 replicas evicted from a1 and a2"},
		{"divided: dynamic weight ignores the static list", Placement{ReplicaScheduling: &ReplicaSchedulingStrategy{
			ReplicaSchedulingType: ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: ReplicaDivisionPreferenceWeighted,
			WeightPreference: &ClusterPreferences{DynamicWeight: DynamicWeightByAvailableReplicas, StaticWeightList: []StaticClusterWeight{
				{TargetCluster: failover.ClusterAffinity{ClusterNames: []string{"a1"}}, Weight: 1}}}}},
			[]failover.TargetCluster{{Name: "a1", Replicas: 1}}, []string{"a1"},
			threeRegionsUS, true, []string{"a2", "b1", "c1", "c2"}, ""},
		{"divided: aggregated ignores a static list", Placement{ReplicaScheduling: &ReplicaSchedulingStrategy{
			ReplicaSchedulingType: ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: ReplicaDivisionPreferenceAggregated,
			WeightPreference: &ClusterPreferences{StaticWeightList: []StaticClusterWeight{
				{TargetCluster: failover.ClusterAffinity{ClusterNames: []string{"a1"}}, Weight: 1}}}}},
			[]failover.TargetCluster{{Name: "a1", Replicas: 1}}, []string{"a1"},
			threeRegionsUS, true, []string{"a2", "b1", "c1", "c2"}, ""},
		{"divided: region MinGroups counts the remaining clusters", Placement{ReplicaScheduling: aggregated,
			SpreadConstraints: []SpreadConstraint{{SpreadByField: SpreadByFieldRegion, MinGroups: 2, MaxGroups: 2}, {MinGroups: 1, MaxGroups: 3}}},
			[]failover.TargetCluster{{Name: "a1", Replicas: 1}, {Name: "c1", Replicas: 1}}, []string{"c1"},
			fleetWith(threeRegionsUS, 2, notReady, 4), false, []string{"a1", "a2"}, "spreadConstraints[0] needs at least 2 regions, but the remaining and eligible clusters span only 1 region"},

		// Evicting clusters outside the schedule result.
		{"nothing to evict", Placement{}, sched("a1"), []string{"b1"}, threeRegionsUS, false, nil,
			"nothing to evict: b1 is not in the schedule result (a1)"},
		{"an unscheduled evicting cluster is ignored but not a target", Placement{},
			sched("a1"), []string{"a1", "a2"}, threeRegionsUS, true, []string{"b1", "c1", "c2"}, "can replace the copy on a1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := mustChecker().Check(Request{Placement: tc.placement, Scheduled: tc.scheduled, Evicting: tc.evicting}, tc.fleet)
			assert.Equal(t, tc.feasible, got.Feasible, got.Reason)
			assert.Equal(t, tc.cands, got.Candidates)
			assert.Contains(t, got.Reason, tc.reason)
			assert.NoError(t, got.Err)
			assert.NoError(t, tc.placement.Validate())
		})
	}
}

// fleetWith copies fleet and gives the clusters at the indexes after the
// taint that taint; a plain int after the taint repeats it.
func fleetWith(fleet []failover.Cluster, i int, taint corev1.Taint, more ...int) []failover.Cluster {
	out := make([]failover.Cluster, len(fleet))
	copy(out, fleet)
	for _, j := range append([]int{i}, more...) {
		out[j].Taints = append([]corev1.Taint{taint}, out[j].Taints...)
	}
	return out
}

func TestCheckCapacity(t *testing.T) {
	req := Request{
		Placement: Placement{ReplicaScheduling: aggregated},
		Scheduled: []failover.TargetCluster{{Name: "a1", Replicas: 5}, {Name: "a2", Replicas: 1}},
		Evicting:  []string{"a1"},
	}
	spare := func(m map[string]int32) Option {
		return WithCapacity(func(c string) (int32, bool) { n, ok := m[c]; return n, ok })
	}
	cases := []struct {
		name     string
		req      Request
		opt      Option
		feasible bool
		reason   string
	}{
		// Without capacities, every cluster is assumed to have room for
		// the workload, and Aggregated fills the one it keeps first.
		{"no capacity function: feasible", req, nil, true, "feasible: a2 can take the 5 replicas evicted from a1"},
		{"known spare covers the replicas together", req, spare(map[string]int32{"a2": 1, "b1": 2, "c1": 2, "c2": 0}), true, "feasible: a2, b1 and c1 can take"},
		{"known spare falls short", req, spare(map[string]int32{"a2": 1, "b1": 1, "c1": 1, "c2": 1}), false,
			"the eligible clusters (a2, b1, c1 and c2) have spare capacity for 4 of the 5 replicas evicted from a1"},
		{"negative spare counts as none", req, spare(map[string]int32{"a2": -10, "b1": 5, "c1": 0, "c2": 0}), true, ""},
		{"unknown capacity is assumed sufficient and said so", req, spare(map[string]int32{"a2": 1, "b1": 1}), true,
			"(the unknown capacity of c1 is assumed sufficient)"},
		// Even weights: six replicas over four clusters, two each for two
		// of them (which two, the workload's UID decides), one for the
		// others. The scheduler shares whatever the room.
		{"static weights may give a cluster more than its room", Request{Placement: Placement{ReplicaScheduling: divided}, Scheduled: req.Scheduled, Evicting: req.Evicting},
			spare(map[string]int32{"a2": 5, "b1": 5, "c1": 5, "c2": 1}), true,
			"feasible: a2, b1, c1 and c2 can take the 5 replicas evicted from a1 (the static weights share whatever the room, and c2 (room for 1) may get more replicas than it has room for, which would wait pending)"},
		{"static weights within every cluster's room", Request{Placement: Placement{ReplicaScheduling: divided}, Scheduled: req.Scheduled, Evicting: req.Evicting},
			spare(map[string]int32{"a2": 5, "b1": 5, "c1": 5, "c2": 2}), true, "feasible: a2, b1, c1 and c2 can take the 5 replicas evicted from a1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var opts []Option
			if tc.opt != nil {
				opts = append(opts, tc.opt)
			}
			got := mustChecker(opts...).Check(tc.req, threeRegionsUS)
			assert.Equal(t, tc.feasible, got.Feasible, got.Reason)
			assert.Contains(t, got.Reason, tc.reason)
		})
	}
}

func TestCheckAffinityTerms(t *testing.T) {
	terms := func(ts ...ClusterAffinityTerm) Placement { return Placement{ClusterAffinities: ts} }
	primary := ClusterAffinityTerm{AffinityName: "primary", ClusterAffinity: failover.ClusterAffinity{ClusterNames: []string{"a1", "a2"}}}
	backup := ClusterAffinityTerm{AffinityName: "backup", ClusterAffinity: failover.ClusterAffinity{ClusterNames: []string{"c1", "c2"}}}
	req := func(p Placement) Request {
		return Request{Placement: p, Scheduled: sched("a1"), Evicting: []string{"a1"}}
	}

	got := mustChecker().Check(req(terms(primary, backup)), threeRegionsUS)
	assert.True(t, got.Feasible)
	assert.Equal(t, "primary", got.AffinityName)
	assert.Equal(t, []string{"a2"}, got.Candidates)
	assert.Equal(t, `clusterAffinities term "primary": feasible: a2 can replace the copy on a1`, got.Reason)

	got = mustChecker().Check(req(terms(primary, backup)), fleetWith(threeRegionsUS, 1, notReady))
	assert.True(t, got.Feasible)
	assert.Equal(t, "backup", got.AffinityName, "the primary group lost its only other cluster")
	assert.Equal(t, []string{"c1", "c2"}, got.Candidates)

	got = mustChecker().Check(req(terms(primary, backup)), fleetWith(threeRegionsUS, 1, notReady, 3, 4))
	assert.False(t, got.Feasible)
	assert.Empty(t, got.AffinityName)
	assert.Empty(t, got.Candidates, "the first term's candidates")
	assert.True(t, strings.HasPrefix(got.Reason, `no clusterAffinities term can take the workload: clusterAffinities term "primary": no eligible cluster`), got.Reason)
	assert.Contains(t, got.Reason, `; clusterAffinities term "backup": no eligible cluster`)
	assert.Contains(t, got.Reason, `a2 (taint cluster.karmada.io/not-ready:NoExecute) is faulty; b1, c1 and c2 do not match clusterAffinities term "primary"`)
	assert.Contains(t, got.Reason, `c1 (taint cluster.karmada.io/not-ready:NoExecute) and c2 (taint cluster.karmada.io/not-ready:NoExecute) are faulty; a2 and b1 do not match clusterAffinities term "backup"`)
}

func TestCheckBadInput(t *testing.T) {
	valid := Request{Scheduled: sched("a1"), Evicting: []string{"a1"}}
	with := func(f func(r *Request)) Request {
		r := valid
		f(&r)
		return r
	}
	cases := []struct {
		name  string
		req   Request
		fleet []failover.Cluster
		field string
	}{
		{"negative minGroups", with(func(r *Request) { r.Placement.SpreadConstraints = []SpreadConstraint{{MinGroups: -1}} }), threeRegionsUS,
			"prescheduling: placement.spreadConstraints[0].minGroups: -1: must not be negative"},
		{"negative maxGroups", with(func(r *Request) { r.Placement.SpreadConstraints = []SpreadConstraint{{MaxGroups: -2}} }), threeRegionsUS,
			"placement.spreadConstraints[0].maxGroups: -2"},
		{"minGroups above maxGroups", with(func(r *Request) {
			r.Placement.SpreadConstraints = []SpreadConstraint{{}, {SpreadByField: SpreadByFieldRegion, MinGroups: 3, MaxGroups: 2}}
		}), threeRegionsUS, "placement.spreadConstraints[1]: minGroups 3 is greater than maxGroups 2"},
		{"unknown spread field", with(func(r *Request) { r.Placement.SpreadConstraints = []SpreadConstraint{{SpreadByField: "country"}} }), threeRegionsUS,
			`placement.spreadConstraints[0].spreadByField: unknown value "country"`},
		{"field and label together", with(func(r *Request) {
			r.Placement.SpreadConstraints = []SpreadConstraint{{SpreadByField: SpreadByFieldZone, SpreadByLabel: "team"}}
		}), threeRegionsUS, `spreadByField "zone" and spreadByLabel "team" cannot both be set`},
		{"bad spread label", with(func(r *Request) { r.Placement.SpreadConstraints = []SpreadConstraint{{SpreadByLabel: "not a key"}} }), threeRegionsUS,
			`placement.spreadConstraints[0].spreadByLabel: "not a key"`},
		{"unknown scheduling type", with(func(r *Request) {
			r.Placement.ReplicaScheduling = &ReplicaSchedulingStrategy{ReplicaSchedulingType: "Triplicated"}
		}), threeRegionsUS, `placement.replicaScheduling.replicaSchedulingType: unknown value "Triplicated"`},
		{"unknown division preference", with(func(r *Request) {
			r.Placement.ReplicaScheduling = &ReplicaSchedulingStrategy{ReplicaDivisionPreference: "Even"}
		}), threeRegionsUS, `replicaScheduling.replicaDivisionPreference: unknown value "Even"`},
		{"zero static weight", with(func(r *Request) {
			r.Placement.ReplicaScheduling = &ReplicaSchedulingStrategy{ReplicaDivisionPreference: ReplicaDivisionPreferenceWeighted,
				WeightPreference: &ClusterPreferences{StaticWeightList: []StaticClusterWeight{{Weight: 0}}}}
		}), threeRegionsUS, "replicaScheduling.weightPreference.staticWeightList[0].weight: 0: must be at least 1"},
		{"unknown dynamic weight", with(func(r *Request) {
			r.Placement.ReplicaScheduling = &ReplicaSchedulingStrategy{WeightPreference: &ClusterPreferences{DynamicWeight: "CPU"}}
		}), threeRegionsUS, `weightPreference.dynamicWeight: unknown value "CPU"`},
		{"malformed label selector", with(func(r *Request) {
			r.Placement.ClusterAffinity = &failover.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}}}
		}), threeRegionsUS, "placement.clusterAffinity.labelSelector:"},
		{"unknown field selector key", with(func(r *Request) {
			r.Placement.ClusterAffinity = &failover.ClusterAffinity{FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "country", Operator: corev1.NodeSelectorOpIn, Values: []string{"fr"}}}}}
		}), threeRegionsUS, `placement.clusterAffinity.fieldSelector.matchExpressions[0].key: unknown field "country"`},
		{"field selector In without values", with(func(r *Request) {
			r.Placement.ClusterAffinity = &failover.ClusterAffinity{FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "region", Operator: corev1.NodeSelectorOpIn}}}}
		}), threeRegionsUS, "placement.clusterAffinity.fieldSelector.matchExpressions[0]:"},
		{"affinity and affinities together", with(func(r *Request) {
			r.Placement.ClusterAffinity = &failover.ClusterAffinity{}
			r.Placement.ClusterAffinities = []ClusterAffinityTerm{{AffinityName: "a"}}
		}), threeRegionsUS, "prescheduling: placement.clusterAffinity and clusterAffinities cannot both be set"},
		{"unnamed affinity term", with(func(r *Request) { r.Placement.ClusterAffinities = []ClusterAffinityTerm{{}} }), threeRegionsUS,
			"placement.clusterAffinities[0].affinityName is empty"},
		{"duplicate affinity term", with(func(r *Request) {
			r.Placement.ClusterAffinities = []ClusterAffinityTerm{{AffinityName: "x"}, {AffinityName: "x"}}
		}), threeRegionsUS, `placement.clusterAffinities[1].affinityName: "x" is also the name of clusterAffinities[0]`},
		{"bad affinity term selector", with(func(r *Request) {
			r.Placement.ClusterAffinities = []ClusterAffinityTerm{{AffinityName: "x", ClusterAffinity: failover.ClusterAffinity{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "v"}}}}}
		}), threeRegionsUS, "placement.clusterAffinities[0].labelSelector:"},
		{"toleration operator Lt", with(func(r *Request) {
			r.Placement.ClusterTolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpLt, Value: "3"}}
		}), threeRegionsUS, `placement.clusterTolerations[0].operator: unsupported value "Lt"`},
		{"toleration Exists with a value", with(func(r *Request) {
			r.Placement.ClusterTolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}
		}), threeRegionsUS, `placement.clusterTolerations[0].value: "v": must be empty with operator Exists`},
		{"toleration empty key with Equal", with(func(r *Request) {
			r.Placement.ClusterTolerations = []corev1.Toleration{{Value: "v"}}
		}), threeRegionsUS, "placement.clusterTolerations[0]: an empty key needs operator Exists"},
		{"toleration unknown effect", with(func(r *Request) {
			r.Placement.ClusterTolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: "NoWay"}}
		}), threeRegionsUS, `placement.clusterTolerations[0].effect: unknown value "NoWay"`},
		{"no evicting cluster", Request{Scheduled: sched("a1")}, threeRegionsUS, "prescheduling: request.evicting is empty"},
		{"empty evicting name", Request{Scheduled: sched("a1"), Evicting: []string{"a1", ""}}, threeRegionsUS, "request.evicting[1] is empty"},
		{"empty scheduled name", Request{Scheduled: sched("a1", ""), Evicting: []string{"a1"}}, threeRegionsUS, "request.scheduled[1].name is empty"},
		{"negative replicas", Request{Scheduled: []failover.TargetCluster{{Name: "a1", Replicas: -1}}, Evicting: []string{"a1"}}, threeRegionsUS,
			"request.scheduled[0].replicas: -1: must not be negative"},
		{"scheduled twice", Request{Scheduled: sched("a1", "b1", "a1"), Evicting: []string{"a1"}}, threeRegionsUS,
			`request.scheduled[2].name: "a1" is also request.scheduled[0]`},
		{"fleet cluster without a name", valid, append(fleetOf("a1"), failover.Cluster{}), "prescheduling: fleet[1].name is empty"},
		{"fleet lists a candidate twice", valid, fleetOf("a1", "b1", "b1"), `prescheduling: fleet lists cluster "b1" more than once`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := mustChecker().Check(tc.req, tc.fleet)
			assert.False(t, got.Feasible)
			assert.Error(t, got.Err)
			assert.Contains(t, got.Reason, tc.field)
			assert.Equal(t, got.Err.Error(), got.Reason)
		})
	}
}

func TestValidateNamesEveryBadField(t *testing.T) {
	p := Placement{
		SpreadConstraints: []SpreadConstraint{{MinGroups: -1}, {SpreadByField: "country"}},
		ReplicaScheduling: &ReplicaSchedulingStrategy{ReplicaSchedulingType: "Triplicated"},
	}
	err := p.Validate()
	assert.ErrorContains(t, err, "spreadConstraints[0].minGroups")
	assert.ErrorContains(t, err, "spreadConstraints[1].spreadByField")
	assert.ErrorContains(t, err, "replicaScheduling.replicaSchedulingType")
	assert.NoError(t, (&Placement{}).Validate())
}

func TestNilCheckerIsUsable(t *testing.T) {
	var c *Checker
	got := c.Check(Request{Scheduled: sched("a1"), Evicting: []string{"a1"}}, threeRegionsUS)
	assert.True(t, got.Feasible)
}

func TestNewCheckerIgnoresANilOption(t *testing.T) {
	var none Option
	c := mustChecker(none)
	got := c.Check(Request{Scheduled: sched("a1"), Evicting: []string{"a1"}}, threeRegionsUS)
	assert.True(t, got.Feasible, got.Reason)
}

// Each way a check can end carries its own Code, whatever the Reason's words.
func TestCheckCodes(t *testing.T) {
	byRegion := func(minG, maxG int) Placement {
		return Placement{SpreadConstraints: []SpreadConstraint{{SpreadByField: SpreadByFieldRegion, MinGroups: minG, MaxGroups: maxG}}}
	}
	noRoom := mustChecker(WithCapacity(func(string) (int32, bool) { return 0, true }))
	for _, tc := range []struct {
		name    string
		checker *Checker
		req     Request
		want    Code
	}{
		{"somewhere to go", mustChecker(), Request{Scheduled: sched("a1"), Evicting: []string{"a1"}}, Feasible},
		{"not scheduled there", mustChecker(), Request{Scheduled: sched("a1"), Evicting: []string{"zz"}}, NothingToEvict},
		{"every cluster already runs it", mustChecker(), Request{Scheduled: sched("a1", "a2", "b1", "c1", "c2"), Evicting: []string{"a1"}}, NoEligibleCluster},
		{"four regions wanted, three exist", mustChecker(), Request{Placement: byRegion(4, 4), Scheduled: sched("a1"), Evicting: []string{"a1"}}, SpreadConstraintUnsatisfiable},
		{"no spare capacity", noRoom, Request{Placement: Placement{ReplicaScheduling: aggregated},
			Scheduled: []failover.TargetCluster{{Name: "a1", Replicas: 3}}, Evicting: []string{"a1"}}, InsufficientCapacity},
		{"MinGroups above MaxGroups", mustChecker(), Request{Placement: byRegion(3, 2), Scheduled: sched("a1"), Evicting: []string{"a1"}}, InvalidRequest},
		// Capped at int32, the sum once passed as a schedule the scheduler
		// cannot hold.
		{"divided replicas summing past int32", mustChecker(), Request{Placement: Placement{ReplicaScheduling: aggregated},
			Scheduled: []failover.TargetCluster{{Name: "a1", Replicas: math.MaxInt32}, {Name: "a2", Replicas: 1}}, Evicting: []string{"a1"}}, InvalidRequest},
		{"duplicated copies of int32's most replicas each", mustChecker(), Request{
			Scheduled: []failover.TargetCluster{{Name: "a1", Replicas: math.MaxInt32}, {Name: "a2", Replicas: math.MaxInt32}}, Evicting: []string{"a1"}}, Feasible},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.checker.Check(tc.req, threeRegionsUS)
			assert.Equal(t, tc.want, got.Code, got.Reason)
			assert.Equal(t, tc.want == Feasible, got.Feasible)
		})
	}
}

// mustChecker is NewChecker for options a test knows to be valid.
func mustChecker(opts ...Option) *Checker {
	c, err := NewChecker(opts...)
	if err != nil {
		panic(err)
	}
	return c
}

func TestNewCheckerRejectsBadOptions(t *testing.T) {
	_, err := NewChecker(WithCapacity(nil))
	assert.EqualError(t, err, "prescheduling: WithCapacity: capacity function is nil")
	c, err := NewChecker(nil)
	require.NoError(t, err, "a nil option is skipped")
	assert.NotNil(t, c)
}

// PlacedByRoom says whether the scheduler picks the Moves by room: only an
// Aggregated or dynamically weighted division does.
func TestCheckPlacedByRoom(t *testing.T) {
	dynamic := &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: ReplicaDivisionPreferenceWeighted, WeightPreference: &ClusterPreferences{DynamicWeight: DynamicWeightByAvailableReplicas}}
	for _, tc := range []struct {
		name string
		rs   *ReplicaSchedulingStrategy
		want bool
	}{
		{"Duplicated", nil, false},
		{"Divided, static weights (none: evenly)", divided, false},
		{"Divided, Aggregated", aggregated, true},
		{"Divided, dynamic weights", dynamic, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustChecker().Check(Request{
				Placement: Placement{ReplicaScheduling: tc.rs},
				Scheduled: []failover.TargetCluster{{Name: "a1", Replicas: 2}, {Name: "a2", Replicas: 2}},
				Evicting:  []string{"a1"},
			}, threeRegionsUS)
			require.True(t, got.Feasible, got.Reason)
			require.NotEmpty(t, got.Moves)
			assert.Equal(t, tc.want, got.PlacedByRoom)
		})
	}
}

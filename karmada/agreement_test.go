package karmada_test

import (
	"fmt"
	"testing"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// member is a ready cluster in region with room for pods more pods, as
// Karmada's API server stores it.
func member(name, region string, pods int64, opts ...func(*clusterv1alpha1.Cluster)) *clusterv1alpha1.Cluster {
	c := &clusterv1alpha1.Cluster{}
	c.Name = name
	c.Spec.Region = region
	c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue}}
	c.Status.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}}}
	c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(110, resource.DecimalSI)},
		Allocated:   corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(110-pods, resource.DecimalSI)},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func failed(c *clusterv1alpha1.Cluster) { fail(c) }

func tainted(key string, effect corev1.TaintEffect) func(*clusterv1alpha1.Cluster) {
	return func(c *clusterv1alpha1.Cluster) {
		c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: key, Effect: effect})
	}
}

func zones(z ...string) func(*clusterv1alpha1.Cluster) {
	return func(c *clusterv1alpha1.Cluster) { c.Spec.Zones = z }
}

func targets(kv ...any) []workv1alpha2.TargetCluster {
	var out []workv1alpha2.TargetCluster
	for i := 0; i < len(kv); i += 2 {
		out = append(out, workv1alpha2.TargetCluster{Name: kv[i].(string), Replicas: int32(kv[i+1].(int))})
	}
	return out
}

var (
	duplicated = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}
	aggregated = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated}
	evenly = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted}
)

func spread(field policyv1alpha1.SpreadFieldValue, min, max int) policyv1alpha1.SpreadConstraint {
	return policyv1alpha1.SpreadConstraint{SpreadByField: field, MinGroups: min, MaxGroups: max}
}

// TestAgreesWithKarmada pins, case by case, the classes of disagreement the
// differential test found between the pre-scheduling check and Karmada
// v1.18's scheduler, each with both answers: those the check got wrong
// before it followed the scheduler's own choice, and the one it keeps by
// design (prescheduling's package doc says why). Each case is the fleet
// after the failure, the placement, the schedule result before the eviction
// and the clusters evicted from; Karmada reschedules the binding as the
// eviction leaves it.
func TestAgreesWithKarmada(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fleet       []*clusterv1alpha1.Cluster
		placement   policyv1alpha1.Placement
		scheduled   []workv1alpha2.TargetCluster
		tasks       []string // earlier evictions whose tasks are still open
		observed    string   // status.schedulerObservedAffinityName
		evicting    []string
		karmada     bool // Karmada places what the eviction removes
		feasible    bool // the library's answer
		reasonHas   string
		karmadaSays string // the schedule result Karmada writes, or its error
	}{
		// Unsound before: the check found a choice, the scheduler took
		// another.
		{
			name:  "region: the scheduler takes the fewest regions that hold the clusters",
			fleet: []*clusterv1alpha1.Cluster{member("a1", "R1", 10), member("a2", "R1", 10), member("b1", "R2", 10), member("c1", "R3", 10, failed)},
			placement: policyv1alpha1.Placement{ReplicaScheduling: duplicated, SpreadConstraints: []policyv1alpha1.SpreadConstraint{
				spread(policyv1alpha1.SpreadByFieldRegion, 1, 3), spread(policyv1alpha1.SpreadByFieldCluster, 1, 3)}},
			scheduled: targets("a1", 1, "b1", 1, "c1", 1), evicting: []string{"c1"},
			karmada: false, feasible: false, karmadaSays: "[{a1 1} {a2 1}]",
			reasonHas: "Karmada's scheduler would run it on 2 clusters (a1 and a2), fewer than the 3 it ran on, when replacing the copy on c1: it selects the fewest regions that hold enough clusters for spreadConstraints[0], 1 region (R1)",
		},
		{
			name:  "a cluster constraint without maxGroups selects nothing",
			fleet: []*clusterv1alpha1.Cluster{member("a1", "R1", 10, failed), member("a2", "R1", 10)},
			placement: policyv1alpha1.Placement{ReplicaScheduling: duplicated, SpreadConstraints: []policyv1alpha1.SpreadConstraint{
				spread(policyv1alpha1.SpreadByFieldCluster, 1, 0)}},
			scheduled: targets("a1", 1), evicting: []string{"a1"},
			karmada: false, feasible: false, karmadaSays: "no clusters available to schedule",
			reasonHas: "spreadConstraints[0] (by cluster) has no maxGroups",
		},
		{
			name:  "clusterAffinities: the scheduler resumes from the term it last used",
			fleet: []*clusterv1alpha1.Cluster{member("a1", "R1", 10), member("a2", "R1", 10), member("b1", "R2", 10, failed)},
			placement: policyv1alpha1.Placement{ReplicaScheduling: duplicated, ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
				{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a1", "a2"}}},
				{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"b1"}}}}},
			scheduled: targets("b1", 1), observed: "backup", evicting: []string{"b1"},
			karmada: false, feasible: false, karmadaSays: "every clusterAffinities term from \"backup\" on failed",
			reasonHas: `clusterAffinities term "backup": no eligible cluster outside b1`,
		},
		{
			name:      "an open graceful eviction task keeps its cluster out",
			fleet:     []*clusterv1alpha1.Cluster{member("a1", "R1", 10, failed), member("a2", "R1", 10), member("b1", "R2", 10, tainted(dedicatedKey, corev1.TaintEffectNoSchedule))},
			placement: policyv1alpha1.Placement{ReplicaScheduling: duplicated},
			scheduled: targets("a1", 1), tasks: []string{"a2"}, evicting: []string{"a1"},
			karmada: false, feasible: false, karmadaSays: "0/3 clusters are available",
			reasonHas: "a1 and a2 are being evicted from",
		},
		{
			name:  "a spread constraint by label alone places nothing",
			fleet: []*clusterv1alpha1.Cluster{member("a1", "R1", 10, failed), member("a2", "R1", 10)},
			placement: policyv1alpha1.Placement{ReplicaScheduling: duplicated, SpreadConstraints: []policyv1alpha1.SpreadConstraint{
				{SpreadByLabel: "team", MinGroups: 1, MaxGroups: 2}}},
			scheduled: targets("a1", 1), evicting: []string{"a1"},
			karmada: false, feasible: false, karmadaSays: "just support cluster and region spread constraint",
			reasonHas: "spreadConstraints[0] (by label team) is neither",
		},
		// Incomplete before: the check held constraints the scheduler does
		// not.
		{
			name: "zone: the scheduler counts no zones",
			fleet: []*clusterv1alpha1.Cluster{member("a1", "R1", 10, zones("Z1"), failed), member("a2", "R1", 10, zones("Z1")),
				member("a3", "R1", 10, zones("Z1"))},
			placement: policyv1alpha1.Placement{ReplicaScheduling: duplicated, SpreadConstraints: []policyv1alpha1.SpreadConstraint{
				spread(policyv1alpha1.SpreadByFieldZone, 2, 2), spread(policyv1alpha1.SpreadByFieldCluster, 1, 2)}},
			scheduled: targets("a1", 1, "a2", 1), evicting: []string{"a1"},
			karmada: true, feasible: true, karmadaSays: "[{a2 1} {a3 1}]",
			reasonHas: "feasible: a3 can replace the copy on a1 (Karmada v1.18's scheduler does not count the groups of spreadConstraints[0] (by zone))",
		},
		{
			name:      "a cluster that keeps the workload passes the taint filter",
			fleet:     []*clusterv1alpha1.Cluster{member("a1", "R1", 10, failed), member("a2", "R1", 10, tainted(dedicatedKey, corev1.TaintEffectNoSchedule))},
			placement: policyv1alpha1.Placement{ReplicaScheduling: aggregated},
			scheduled: targets("a1", 2, "a2", 2), evicting: []string{"a1"},
			karmada: true, feasible: true, karmadaSays: "[{a2 4}]",
			reasonHas: "feasible: a2 can take the 2 replicas evicted from a1",
		},
		{
			name:  "static weights that weigh no cluster left weigh all alike",
			fleet: []*clusterv1alpha1.Cluster{member("a1", "R1", 10, failed), member("a2", "R1", 10), member("b1", "R2", 10)},
			placement: policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
				ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
				WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
					{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a1"}}, Weight: 1}}}}},
			scheduled: targets("a1", 4), evicting: []string{"a1"},
			karmada: true, feasible: true, karmadaSays: "[{a2 2} {b1 2}]",
			reasonHas: "feasible: a2 and b1 can take the 4 replicas evicted from a1",
		},
		{
			name:      "static weights share whatever the room",
			fleet:     []*clusterv1alpha1.Cluster{member("a1", "R1", 10, failed), member("a2", "R1", 0), member("b1", "R2", 10)},
			placement: policyv1alpha1.Placement{ReplicaScheduling: evenly},
			scheduled: targets("a1", 2, "b1", 2), evicting: []string{"a1"},
			karmada: true, feasible: true, karmadaSays: "[{a2 2} {b1 2}]",
			reasonHas: "a2 (room for 0) may get more replicas than it has room for, which would wait pending",
		},
		// By design: the library refuses what the scheduler does.
		{
			name: "by design: no move onto a faulty cluster, though the placement tolerates its taint",
			fleet: []*clusterv1alpha1.Cluster{member("a1", "R1", 10), member("b1", "R1", 10, failed),
				member("c1", "R2", 10, tainted(maintenanceKey, corev1.TaintEffectNoExecute))},
			placement: policyv1alpha1.Placement{ReplicaScheduling: duplicated, ClusterTolerations: []corev1.Toleration{
				{Key: maintenanceKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}},
			scheduled: targets("a1", 1, "b1", 1), evicting: []string{"b1"},
			karmada: true, feasible: false, karmadaSays: "[{a1 1} {c1 1}]",
			reasonHas: "c1 (taint maintenance:NoExecute) is faulty",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &workv1alpha2.ResourceBindingSpec{
				Resource:  workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "web", UID: "uid-web"},
				Placement: &tc.placement,
				Clusters:  tc.scheduled,
			}
			for _, s := range tc.scheduled {
				if tc.placement.ReplicaSchedulingType() == policyv1alpha1.ReplicaSchedulingTypeDuplicated {
					spec.Replicas = s.Replicas
				} else {
					spec.Replicas += s.Replicas
				}
			}
			for _, name := range tc.tasks {
				spec.GracefulEvictionTasks = append(spec.GracefulEvictionTasks, workv1alpha2.GracefulEvictionTask{FromCluster: name, Reason: "TaintUntolerated", Producer: "taint-manager"})
			}
			c := &diffCase{after: tc.fleet, spec: spec, observed: tc.observed, evicting: tc.evicting}
			v := c.check()
			t.Logf("%s", v)
			assert.Equal(t, tc.karmada, v.placed, "Karmada: %v %v", v.result, v.err)
			if v.err != nil {
				assert.ErrorContains(t, v.err, tc.karmadaSays)
			} else {
				assert.Equal(t, tc.karmadaSays, sortedTargets(v.result))
			}
			assert.Equal(t, tc.feasible, v.ours.Feasible, v.ours.Reason)
			assert.Contains(t, v.ours.Reason, tc.reasonHas)
			if !tc.feasible && tc.karmada {
				assert.Equal(t, classFaultyTarget, v.class, "the only refusal by design")
			}
		})
	}
}

func sortedTargets(ts []workv1alpha2.TargetCluster) string {
	names := targetNames(ts)
	byName := map[string]int32{}
	for _, t := range ts {
		byName[t.Name] = t.Replicas
	}
	out := make([]workv1alpha2.TargetCluster, len(names))
	for i, n := range names {
		out[i] = workv1alpha2.TargetCluster{Name: n, Replicas: byName[n]}
	}
	return fmt.Sprint(out)
}

package scheduling_test

import (
	"fmt"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// scaleFleet is n clusters as issue #29's fleet has them: 4 regions of 3
// zones each, Ready, serving Deployments, each with a resource summary that
// leaves room for a different number of pods.
func scaleFleet(n int) []*clusterv1alpha1.Cluster {
	out := make([]*clusterv1alpha1.Cluster, n)
	for i := range out {
		region, zone := i%4, (i/4)%3
		out[i] = scaleCluster(fmt.Sprintf("member-%05d", i), fmt.Sprintf("r%d", region), fmt.Sprintf("r%d-z%d", region, zone), int64(i%37))
	}
	return out
}

// scaleCluster is one cluster of scaleFleet with free pods of room (and 1
// CPU and 2 GiB per pod).
func scaleCluster(name, region, zone string, free int64) *clusterv1alpha1.Cluster {
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"region": region, "zone": zone}}}
	c.Spec.Provider = "p"
	c.Spec.Region = region
	c.Spec.Zones = []string{zone}
	c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue}}
	c.Status.APIEnablements = []clusterv1alpha1.APIEnablement{
		{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}}},
	}
	c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
			corev1.ResourceCPU:    *resource.NewMilliQuantity(64000, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(128<<30, resource.BinarySI),
		},
		Allocated: corev1.ResourceList{
			corev1.ResourcePods:   *resource.NewQuantity(110-free, resource.DecimalSI),
			corev1.ResourceCPU:    *resource.NewMilliQuantity(64000-1000*free, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity((128-2*free)<<30, resource.BinarySI),
		},
	}
	return c
}

// deployment is a binding of a Deployment with replicas of 1 CPU and 2 GiB
// each, placed by p.
func deployment(name string, replicas int32, p *policyv1alpha1.Placement) *workv1alpha2.ResourceBindingSpec {
	return &workv1alpha2.ResourceBindingSpec{
		Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Replicas: replicas,
		ReplicaRequirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(1000, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(2<<30, resource.BinarySI),
		}},
		Placement: p,
	}
}

// scalePlacements are the placements the benchmarks schedule: Duplicated
// over 2 regions and 4 to 8 clusters (spread constraints); Divided by the
// clusters' available replicas; and clusterAffinities, a primary region and
// a backup, Divided and Aggregated.
func scalePlacements() []struct {
	name string
	spec *workv1alpha2.ResourceBindingSpec
} {
	duplicated := &policyv1alpha1.Placement{
		SpreadConstraints: []policyv1alpha1.SpreadConstraint{
			{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 2, MaxGroups: 2},
			{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 4, MaxGroups: 8},
		},
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated},
	}
	divided := &policyv1alpha1.Placement{
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas},
		},
	}
	region := func(name, r string) policyv1alpha1.ClusterAffinityTerm {
		return policyv1alpha1.ClusterAffinityTerm{AffinityName: name, ClusterAffinity: policyv1alpha1.ClusterAffinity{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": r}}}}
	}
	affinities := &policyv1alpha1.Placement{
		ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{region("primary", "r0"), region("backup", "r1")},
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated,
		},
	}
	return []struct {
		name string
		spec *workv1alpha2.ResourceBindingSpec
	}{
		{"duplicated", deployment("dup", 3, duplicated)},
		{"divided", deployment("div", 40, divided)},
		{"affinities", deployment("aff", 40, affinities)},
	}
}

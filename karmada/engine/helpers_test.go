package engine_test

import (
	"slices"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Small fixtures, as the karmada package's tests have them.

// member is a Ready cluster in region with room for pods more pods, which
// serves Deployments, changed by opts.
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

// notReadyKey is the taint Karmada's cluster controller puts on a cluster
// that is not Ready.
const notReadyKey = "cluster.karmada.io/not-ready"

// fail makes c not Ready, with the NoSchedule and NoExecute not-ready
// taints Karmada gives it.
func fail(c *clusterv1alpha1.Cluster) {
	c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionFalse}}
	for _, effect := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
		if !slices.ContainsFunc(c.Spec.Taints, func(t corev1.Taint) bool { return t.Key == notReadyKey && t.Effect == effect }) {
			c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: notReadyKey, Effect: effect, TimeAdded: ptr.To(metav1.Unix(0, 0))})
		}
	}
}

// aggregated is a Divided placement by Aggregated division.
var aggregated = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
	ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated}

// evictedFrom is spec after its eviction from cluster, as Karmada's taint
// manager leaves it: cluster moved from spec.clusters into a graceful
// eviction task.
func evictedFrom(spec *workv1alpha2.ResourceBindingSpec, cluster string) *workv1alpha2.ResourceBindingSpec {
	out := spec.DeepCopy()
	out.Clusters = slices.DeleteFunc(out.Clusters, func(t workv1alpha2.TargetCluster) bool { return t.Name == cluster })
	for _, t := range spec.Clusters {
		if t.Name == cluster {
			out.GracefulEvictionTasks = append(out.GracefulEvictionTasks, workv1alpha2.GracefulEvictionTask{
				FromCluster: t.Name, Replicas: ptr.To(t.Replicas), Reason: "TaintUntolerated", Producer: "taint-manager"})
		}
	}
	return out
}

package engine_test

import (
	"context"
	"fmt"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
)

// A planner's eviction, decided on the Fleet it holds (confirm nil): the
// binding leaves the failed cluster for the one with room, its spec gets
// the graceful eviction task, and the Ledger holds the room until the write.
func ExampleEvictor() {
	cluster := func(name string, freePods int64, taints ...corev1.Taint) *clusterv1alpha1.Cluster {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		c.Spec.Taints = taints
		c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue}}
		c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
			Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(110, resource.DecimalSI)},
			Allocated:   corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(110-freePods, resource.DecimalSI)},
		}
		return c
	}
	failed := cluster("member1", 100, corev1.Taint{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute})
	var fleet engine.Fleet
	for _, c := range []*clusterv1alpha1.Cluster{failed, cluster("member2", 0), cluster("member3", 50)} {
		if _, err := fleet.Set(c); err != nil {
			fmt.Println(err)
			return
		}
	}
	ledger, err := engine.NewLedger()
	if err != nil {
		fmt.Println(err)
		return
	}

	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment",
		Annotations: map[string]string{karmada.AppliedPlacementAnnotation: "{}"}}}
	rb.Spec = workv1alpha2.ResourceBindingSpec{
		Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", UID: "uid-web"},
		Placement: &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated}},
		Replicas: 3,
		Clusters: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 3}},
	}

	e, err := engine.NewEvictor(engine.EvictorOptions{Fleet: &fleet, Ledger: ledger, EnableNoExecuteTaintEviction: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	step, err := e.Evict(context.Background(), now, "shop/web-deployment", rb, failed, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(step.Action, step.Result.Moves, step.Hold)
	t := rb.Spec.GracefulEvictionTasks[0]
	fmt.Println(t.FromCluster, *t.Replicas, t.Producer, t.Reason, t.PurgeMode)
	fmt.Println(len(rb.Spec.Clusters), "clusters left in spec.clusters")
	// Output:
	// Evict [{member3 3}] shop/web-deployment@member1
	// member1 3 TaintManager TaintUntolerated Gracefully
	// 0 clusters left in spec.clusters
}

package karmada_test

import (
	"errors"
	"fmt"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/prescheduling"
	"github.com/failoverkit/failover/taintpolicy"
)

func ExampleFromCluster() {
	var c clusterv1alpha1.Cluster
	if err := yaml.UnmarshalStrict([]byte(`
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: member1
spec:
  syncMode: Push
  region: us-east-1
  zones: [us-east-1a, us-east-1b]
  taints:
  - key: cluster.karmada.io/not-ready
    effect: NoExecute
`), &c); err != nil {
		panic(err)
	}
	fc, err := karmada.FromCluster(&c)
	if err != nil {
		panic(err)
	}
	fmt.Println(fc.Name, fc.Region, fc.Zones, "faulty:", failover.IsFaulty(fc))
	// Output: member1 us-east-1 [us-east-1a us-east-1b] faulty: true
}

// A taint controller on typed Karmada objects: evaluate the cluster against
// Karmada's ClusterTaintPolicy and write the taints back.
func ExampleApplyClusterTaints() {
	policy := &policyv1alpha1.ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "not-ready"},
		Spec: policyv1alpha1.ClusterTaintPolicySpec{
			AddOnConditions: []policyv1alpha1.MatchCondition{{ConditionType: "Ready", Operator: policyv1alpha1.MatchConditionOpNotIn,
				StatusValues: []metav1.ConditionStatus{metav1.ConditionTrue}}},
			Taints: []policyv1alpha1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}},
		},
	}
	p, err := karmada.FromClusterTaintPolicy(policy)
	if err != nil {
		panic(err)
	}
	ev, err := taintpolicy.NewEvaluator([]taintpolicy.ClusterTaintPolicy{p})
	if err != nil {
		panic(err)
	}

	cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}
	cluster.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse}}
	fc, err := karmada.FromCluster(cluster)
	if err != nil {
		panic(err)
	}
	res := ev.Evaluate(fc, time.Date(2025, 1, 17, 3, 0, 0, 0, time.UTC))
	if err := karmada.ApplyClusterTaints(cluster, res.Taints); err != nil {
		panic(err)
	}
	for _, t := range cluster.Spec.Taints {
		fmt.Println(t.Key, t.Effect, t.TimeAdded.UTC().Format(time.RFC3339))
	}
	// Output: cluster.karmada.io/not-ready NoExecute 2025-01-17T03:00:00Z
}

// The pre-scheduling check before evicting a Divided workload: member2 has
// room for the replica member1 loses only when its resource summary says so.
func ExamplePreschedulingRequest() {
	spec := &workv1alpha2.ResourceBindingSpec{
		Placement: &policyv1alpha1.Placement{
			ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided},
		},
		ReplicaRequirements: &workv1alpha2.ReplicaRequirements{
			ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		},
		Clusters: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 1}, {Name: "member2", Replicas: 2}},
	}
	clusters := []clusterv1alpha1.Cluster{{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}, {ObjectMeta: metav1.ObjectMeta{Name: "member2"}}}
	clusters[1].Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourcePods: resource.MustParse("110")},
	}
	var fleet []failover.Cluster
	for i := range clusters {
		c, err := karmada.FromCluster(&clusters[i])
		if err != nil {
			panic(err)
		}
		fleet = append(fleet, c)
	}

	req, err := karmada.PreschedulingRequest(spec, "member1")
	if err != nil {
		panic(err)
	}
	checker, err := prescheduling.NewChecker(prescheduling.WithCapacity(karmada.Capacity(clusters, spec.ReplicaRequirements)))
	if err != nil {
		panic(err)
	}
	fmt.Println("member2 takes", karmada.MaxReplicas(clusters[1].Status.ResourceSummary, spec.ReplicaRequirements), "more; feasible:", checker.Check(req, fleet).Feasible)
	// Output: member2 takes 1 more; feasible: true
}

// Evicting a cluster from a ResourceBinding: convert, let gracefulevict move
// the cluster into a task, write spec back.
func ExampleApplyBinding() {
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "nginx", Namespace: "default", Generation: 3}}
	rb.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 1}, {Name: "member2", Replicas: 2}}
	rb.Status.SchedulerObservedGeneration = 3

	b, err := karmada.FromResourceBinding(rb)
	if err != nil {
		panic(err)
	}
	b = gracefulevict.Evict(b, "member1", gracefulevict.Task{Reason: "TaintUntolerated", Producer: "EvictionQueue"})
	karmada.ApplyBinding(&rb.Spec, b)

	fmt.Println("clusters:", rb.Spec.Clusters)
	t := rb.Spec.GracefulEvictionTasks[0]
	fmt.Println("task:", t.FromCluster, *t.Replicas, t.Reason)
	// Output:
	// clusters: [{member2 2}]
	// task: member1 1 TaintUntolerated
}

// A field the library cannot carry is reported, with the rest converted.
func ExampleLossError() {
	p := &policyv1alpha1.Placement{
		ClusterAffinity:  &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}},
		WorkloadAffinity: &policyv1alpha1.WorkloadAffinity{AntiAffinity: &policyv1alpha1.WorkloadAntiAffinityTerm{GroupByLabelKey: "app.group"}},
	}
	got, err := karmada.FromPlacement(p)
	var loss *karmada.LossError
	if errors.As(err, &loss) {
		fmt.Println("lost:", loss.Losses[0].Field)
		fmt.Println("kept:", got.ClusterAffinity.ClusterNames)
	}
	// Output:
	// lost: placement.workloadAffinity
	// kept: [member1 member2]
}

// A Karmada Cluster read through a dynamic client.
func ExampleFromUnstructuredCluster() {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": "member1"},
		"spec": map[string]any{
			"region": "eu-west-1",
			"taints": []any{map[string]any{"key": "cluster.karmada.io/not-ready", "effect": "PreferNoExecute"}},
		},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Ready", "status": "False", "lastTransitionTime": "2025-01-17T02:36:26Z",
		}}},
	}}
	c, err := karmada.FromUnstructuredCluster(u)
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Name, c.Region, c.Condition("Ready").Status, failover.IsFaulty(c))
	// Output: member1 eu-west-1 False true
}

package karmada_test

import (
	"fmt"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/prescheduling"
	"github.com/failoverkit/failover/taintpolicy"
)

// Example_readme is the README's karmada snippet, in context: member1 is not
// Ready, Karmada's ClusterTaintPolicy taints it, and the binding running on
// it is evicted to member2.
func Example_readme() {
	now := time.Date(2025, 1, 17, 3, 0, 0, 0, time.UTC)
	cluster := clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}
	cluster.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse}}
	clusters := []clusterv1alpha1.Cluster{cluster, {ObjectMeta: metav1.ObjectMeta{Name: "member2"}}}
	ctp := policyv1alpha1.ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "not-ready"},
		Spec: policyv1alpha1.ClusterTaintPolicySpec{
			AddOnConditions: []policyv1alpha1.MatchCondition{{ConditionType: "Ready", Operator: policyv1alpha1.MatchConditionOpNotIn,
				StatusValues: []metav1.ConditionStatus{metav1.ConditionTrue}}},
			Taints: []policyv1alpha1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}},
		},
	}
	rb := workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "nginx", Namespace: "default",
		Annotations: map[string]string{karmada.AppliedPlacementAnnotation: "{}"}}} // Karmada's detector writes it
	rb.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1"}}
	rb.Spec.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}}

	p, err := karmada.FromClusterTaintPolicy(&ctp) // released form → taintpolicy.ClusterTaintPolicy
	must(err)
	evaluator, err := taintpolicy.NewEvaluator([]taintpolicy.ClusterTaintPolicy{p})
	must(err)
	fc, err := karmada.FromCluster(&cluster) // clusterv1alpha1.Cluster → failover.Cluster
	must(err)
	res := evaluator.Evaluate(fc, now)
	err = karmada.ApplyClusterTaints(&cluster, res.Taints) // taintpolicy's result → spec.taints
	must(err)
	clusters[0] = cluster

	var fleet []failover.Cluster
	for i := range clusters {
		c, err := karmada.FromCluster(&clusters[i])
		must(err)
		fleet = append(fleet, c)
	}
	req, err := karmada.PreschedulingRequest(&rb.Spec, "member1") // spec.placement and spec.clusters
	must(err)
	capacity := karmada.Capacity(clusters, rb.Spec.ReplicaRequirements) // for prescheduling.WithCapacity
	checker, err := prescheduling.NewChecker(prescheduling.WithCapacity(capacity))
	if err != nil {
		panic(err)
	}
	check := checker.Check(req, fleet)
	fmt.Println("member1 faulty:", failover.IsFaulty(fleet[0]), "feasible:", check.Feasible, check.Candidates)

	behavior, err := karmada.FromClusterFailoverBehavior(rb.Spec.Failover.Cluster) // spec.failover.cluster → failover.ClusterFailoverBehavior
	must(err)
	tolerations, err := karmada.AppliedTolerations(rb.Annotations) // as Karmada's taint manager reads them
	must(err)
	d := failover.DecideEviction(fleet[0].Taints, tolerations, behavior, now)
	fmt.Println("evict now:", d.Evict, d.Reason)

	b, err := karmada.FromResourceBinding(&rb) // spec.clusters, tasks, aggregated health
	must(err)
	task := gracefulevict.Task{PurgeMode: karmada.EvictionPurgeMode(rb.Spec.Failover, "Gracefully"), // as Karmada's taint manager: spec.failover.cluster, else --no-execute-taint-eviction-purge-mode
		Producer: karmada.TaintManagerProducer, Reason: karmada.TaintUntoleratedReason}
	karmada.ApplyBinding(&rb.Spec, gracefulevict.Evict(b, "member1", task)) // write spec.clusters and tasks back
	fmt.Println("clusters:", len(rb.Spec.Clusters), "task from:", rb.Spec.GracefulEvictionTasks[0].FromCluster, rb.Spec.GracefulEvictionTasks[0].PurgeMode)
	// Output:
	// member1 faulty: true feasible: true [member2]
	// evict now: true taint cluster.karmada.io/not-ready:NoExecute is not tolerated
	// clusters: 0 task from: member1 Directly
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

package engine_test

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

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/prescheduling"
)

// One-replica workloads leave a failed cluster while the survivor's resource
// summary still shows room for two: the ledger lets two go and holds the
// next back, to be retried (not abandoned) when the summary catches up or a
// hold ends. An eviction that fails gives its room back.
func ExampleLedger() {
	cluster := func(name string, freePods int64, taints ...corev1.Taint) clusterv1alpha1.Cluster {
		return clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       clusterv1alpha1.ClusterSpec{Taints: taints},
			Status: clusterv1alpha1.ClusterStatus{ResourceSummary: &clusterv1alpha1.ResourceSummary{
				Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(10, resource.DecimalSI)},
				Allocated:   corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(10-freePods, resource.DecimalSI)},
			}},
		}
	}
	clusters := []clusterv1alpha1.Cluster{
		cluster("member1", 0, corev1.Taint{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}),
		cluster("member2", 2),
	}
	var fleet []failover.Cluster
	for i := range clusters {
		c, err := karmada.FromCluster(&clusters[i])
		if err != nil {
			panic(err)
		}
		fleet = append(fleet, c)
	}
	ledger, err := engine.NewLedger(engine.WithHold(10 * time.Minute))
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)

	// What an eviction queue's handler does for each workload.
	handle := func(name string, evict func() error) error {
		spec := &workv1alpha2.ResourceBindingSpec{
			Placement: &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
				ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated}},
			Replicas: 1,
			Clusters: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 1}},
		}
		req, err := karmada.PreschedulingRequest(spec, "member1")
		if err != nil {
			return err
		}
		checker, err := prescheduling.NewChecker(prescheduling.WithCapacity(karmada.Capacity(clusters, spec.ReplicaRequirements)))
		if err != nil {
			return err
		}
		res := ledger.Admit(now, "default/"+name, "lost", checker.Check(req, fleet), karmada.SummariesOf(clusters), spec.ReplicaRequirements)
		switch {
		case res.Feasible:
			if err := evict(); err != nil {
				ledger.Release("default/"+name, "lost")
				return err
			}
			fmt.Printf("%s: evicted, to %v\n", name, res.Moves)
			return nil
		case res.Code == prescheduling.AwaitingCapacity:
			// Retried, not abandoned: in a real handler,
			// evictionqueue.RetryAfter(min(res.RetryAfter, how often
			// the summaries are reported), err).
			return fmt.Errorf("%s: %s (retry within %v)", name, res.Reason, res.RetryAfter)
		default:
			// Nowhere to go at all: evictionqueue.Abandon in a real handler.
			return errors.New(res.Reason)
		}
	}
	ok := func() error { return nil }
	conflict := func() error { return errors.New("the binding changed meanwhile") }
	for _, w := range []struct {
		name  string
		evict func() error
	}{{"web-1", ok}, {"web-2", conflict}, {"web-3", ok}, {"web-4", ok}} {
		if err := handle(w.name, w.evict); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(ledger.Held(now))
	// Output:
	// web-1: evicted, to [{member2 1}]
	// the binding changed meanwhile
	// web-3: evicted, to [{member2 1}]
	// web-4: waiting for room: member2 has room for 0 of 1 after the 2 replicas of evictions in flight (retry within 10m0s)
	// map[member2:2]
}

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
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
)

// An application failover: appfailover decides it is time, on the timers
// the binding keeps, and the eviction's own path does the rest: the copy
// on member1, where the application has been Unhealthy for its window,
// leaves for member2 in the task Karmada's application failover writes.
func ExampleEvictor_EvictApplication() {
	cluster := func(name string) *clusterv1alpha1.Cluster {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue}}
		c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
			Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(110, resource.DecimalSI)},
		}
		return c
	}
	member1 := cluster("member1")
	var fleet engine.Fleet
	for _, c := range []*clusterv1alpha1.Cluster{member1, cluster("member2")} {
		if _, err := fleet.Set(c); err != nil {
			fmt.Println(err)
			return
		}
	}
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment"}}
	rb.Spec = workv1alpha2.ResourceBindingSpec{
		Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", UID: "uid-web"},
		Replicas: 1,
		Clusters: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 1}},
		Failover: &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To[int32](60)},
			PurgeMode:          policyv1alpha1.PurgeModeGracefully, GracePeriodSeconds: ptr.To[int32](600)}},
	}
	rb.Status.AggregatedStatus = []workv1alpha2.AggregatedStatusItem{{ClusterName: "member1", Health: workv1alpha2.ResourceUnhealthy}}

	// Seen Unhealthy at start, and still a minute later.
	start := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	behavior, err := karmada.FromApplicationFailoverBehavior(rb.Spec.Failover.Application)
	if err != nil {
		fmt.Println(err)
		return
	}
	policy, err := appfailover.New(*behavior, appfailover.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var res appfailover.Result
	for _, now := range []time.Time{start, start.Add(time.Minute)} {
		seen, err := karmada.ApplicationObservations(&rb.Spec, &rb.Status)
		if err != nil {
			fmt.Println(err)
			return
		}
		rec, _ := karmada.ApplicationTimers(rb.Annotations)
		res = policy.DecideAll(rec, seen, now)
		rb.Annotations = karmada.WithApplicationTimers(rb.Annotations, res.Record)
	}
	fmt.Println("fail over from", res.FailOver)

	e, err := engine.NewEvictor(engine.EvictorOptions{Fleet: &fleet})
	if err != nil {
		fmt.Println(err)
		return
	}
	step, err := e.EvictApplication(context.Background(), start.Add(time.Minute), "shop/web-deployment", rb, member1, nil, res.Decisions["member1"])
	if err != nil {
		fmt.Println(err)
		return
	}
	t := rb.Spec.GracefulEvictionTasks[0]
	fmt.Println(step.Action, step.Result.Candidates)
	fmt.Println(t.FromCluster, t.Producer, t.Reason, t.PurgeMode, *t.GracePeriodSeconds)
	// Output:
	// fail over from [member1]
	// Evict [member2]
	// member1 ApplicationFailoverController ApplicationFailure Gracefully 600
}

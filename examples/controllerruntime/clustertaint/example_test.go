package clustertaint_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover/examples/controllerruntime/api/v1alpha1"
	"github.com/failoverkit/failover/examples/controllerruntime/clustertaint"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

// A policy in the controller's own group keeps new workloads off a cluster
// that has been NotReady for a minute. Reconcile first says when to come
// back (the window), then writes the taint. (In a manager,
// SetupWithManager registers the Reconciler; here the fake client stands in
// for the API server and Reconcile is called by hand.)
func ExampleReconciler() {
	policies, err := taintpolicy.LoadPoliciesWith(strings.NewReader(`
apiVersion: fleet.example.com/v1alpha1
kind: ClusterTaintPolicy
metadata: {name: not-ready}
spec:
  matchConditions: [{conditionType: Ready, operator: In, statusValues: ["False"]}]
  taintsToAdd: [{key: fleet.example.com/not-ready, effect: NoSchedule, addOnMatchSeconds: 60}]
`), taintpolicy.ValidateOptions{APIVersion: v1alpha1.GroupVersion.String()})
	if err != nil {
		panic(err)
	}
	clk := testingclock.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	scheme := runtime.NewScheme()
	_ = v1alpha1.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&v1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "eu-1"},
		Status: v1alpha1.MemberClusterStatus{Conditions: []metav1.Condition{{
			Type: "Ready", Status: metav1.ConditionFalse, Reason: "ProbeFailed", LastTransitionTime: metav1.NewTime(clk.Now()),
		}}},
	}).Build()

	r, err := clustertaint.New(c, clustertaint.Config{Policies: policies, Rates: ratelimit.DefaultConfig(), Clock: clk})
	if err != nil {
		panic(err)
	}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "eu-1"}}
	res, _ := r.Reconcile(context.Background(), req)
	fmt.Println("come back in", res.RequeueAfter)

	clk.Step(res.RequeueAfter)
	_, _ = r.Reconcile(context.Background(), req)
	var mc v1alpha1.MemberCluster
	_ = c.Get(context.Background(), req.NamespacedName, &mc)
	for _, t := range mc.Spec.Taints {
		fmt.Println(t.ToString(), "added", t.TimeAdded.UTC().Format(time.TimeOnly))
	}
	// Output:
	// come back in 1m0s
	// fleet.example.com/not-ready:NoSchedule added 12:01:00
}

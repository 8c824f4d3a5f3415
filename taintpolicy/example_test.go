package taintpolicy_test

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/taintpolicy"
)

const notReadyYAML = `
apiVersion: "policy.karmada.io/v1alpha1"
kind: "ClusterTaintPolicy"
metadata:
  name: "detect-cluster-not-ready"
spec:
  targetCluster:
    clusterNames: ["member1", "member2"]
  matchConditions:
  - conditionType: "Ready"
    operator: "In"
    statusValues: ["False", "Unknown"]
  taintsToAdd:
  - key: "cluster.karmada.io/not-ready"
    effect: PreferNoExecute
    addOnMatchSeconds: 300
    removeOnMismatchSeconds: 180
`

// A cluster-taint controller loads the policies, evaluates a cluster when
// its conditions change or its requeue time comes, and writes back the
// taints when they changed.
func Example() {
	policies, err := taintpolicy.LoadPolicies(strings.NewReader(notReadyYAML))
	if err != nil {
		panic(err)
	}
	e, err := taintpolicy.NewEvaluator(policies)
	if err != nil {
		panic(err)
	}

	notReadySince := time.Date(2025, 1, 17, 2, 36, 26, 0, time.UTC)
	member1 := failover.Cluster{
		Name: "member1",
		Conditions: []metav1.Condition{{
			Type: "Ready", Status: metav1.ConditionFalse, Reason: "ClusterNotReachable",
			LastTransitionTime: metav1.Time{Time: notReadySince},
		}},
	}

	r := e.Evaluate(member1, notReadySince)
	fmt.Printf("02:36:26 changed=%v, evaluate again in %s\n", r.Changed(), r.RequeueAfter)

	r = e.Evaluate(member1, notReadySince.Add(r.RequeueAfter))
	for _, t := range r.Added {
		fmt.Printf("02:41:26 added %s:%s at %s\n", t.Key, t.Effect, t.TimeAdded.UTC().Format(time.TimeOnly))
	}
	member1.Taints = r.Taints // the controller updates the cluster object

	readySince := notReadySince.Add(8*time.Minute + 34*time.Second)
	member1.Conditions[0].Status = metav1.ConditionTrue
	member1.Conditions[0].LastTransitionTime = metav1.Time{Time: readySince}
	r = e.Evaluate(member1, readySince)
	fmt.Printf("02:45:00 changed=%v, evaluate again in %s\n", r.Changed(), r.RequeueAfter)

	r = e.Evaluate(member1, readySince.Add(r.RequeueAfter))
	for _, t := range r.Removed {
		fmt.Printf("02:48:00 removed %s:%s\n", t.Key, t.Effect)
	}
	// Output:
	// 02:36:26 changed=false, evaluate again in 5m0s
	// 02:41:26 added cluster.karmada.io/not-ready:PreferNoExecute at 02:41:26
	// 02:45:00 changed=false, evaluate again in 3m0s
	// 02:48:00 removed cluster.karmada.io/not-ready:PreferNoExecute
}

// The released Karmada form, as Karmada v1.18 serves it, has no windows:
// taints come and go as soon as the conditions hold.
func ExampleEvaluator_Evaluate_releasedForm() {
	policies, err := taintpolicy.LoadPolicies(strings.NewReader(`
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata: {name: not-ready-noschedule}
spec:
  addOnConditions: [{conditionType: Ready, operator: NotIn, statusValues: ["True"]}]
  removeOnConditions: [{conditionType: Ready, operator: In, statusValues: ["True"]}]
  taints: [{key: cluster.karmada.io/not-ready, effect: NoSchedule}]
`))
	if err != nil {
		panic(err)
	}
	e, err := taintpolicy.NewEvaluator(policies)
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 1, 17, 3, 0, 0, 0, time.UTC)
	c := failover.Cluster{
		Name:       "member2",
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionUnknown, LastTransitionTime: metav1.Time{Time: now}}},
		Taints:     []corev1.Taint{{Key: "team.example.com/maintenance", Effect: corev1.TaintEffectNoSchedule}},
	}
	r := e.Evaluate(c, now)
	for _, t := range r.Taints {
		fmt.Println(t.Key, t.Effect)
	}
	// Output:
	// team.example.com/maintenance NoSchedule
	// cluster.karmada.io/not-ready NoSchedule
}

// Strict decoding names the document and the field a typo is in.
func ExampleLoadPolicies_unknownField() {
	_, err := taintpolicy.LoadPolicies(strings.NewReader(strings.Replace(notReadyYAML, "addOnMatchSeconds", "addOnMatchSecond", 1)))
	fmt.Println(err)
	// Output:
	// taintpolicy: document 1 (line 2): unknown field "spec.taintsToAdd[0].addOnMatchSecond"
}

func ExampleClusterTaintPolicy_Validate() {
	p := taintpolicy.ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "typos"},
		Spec: taintpolicy.ClusterTaintPolicySpec{
			MatchConditions: []taintpolicy.MatchCondition{{ConditionType: "Ready", Operator: "Equals", StatusValues: []metav1.ConditionStatus{"false"}}},
			TaintsToAdd:     []taintpolicy.TaintToAdd{{Key: "cluster.karmada.io/not-ready", Effect: "Evict"}},
		},
	}
	for _, err := range p.Validate() {
		fmt.Println(err)
	}
	// Output:
	// spec.matchConditions[0].operator: Unsupported value: "Equals": supported values: "In", "NotIn"
	// spec.matchConditions[0].statusValues[0]: Unsupported value: "false": supported values: "True", "False", "Unknown"
	// spec.taintsToAdd[0].effect: Unsupported value: "Evict": supported values: "NoSchedule", "PreferNoExecute", "NoExecute"
}

// Refuse NoExecute taints, which evict every workload that does not tolerate
// them, as Karmada's webhook does by default.
func ExampleWithDenyNoExecute() {
	p := taintpolicy.ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "hard-evict"},
		Spec: taintpolicy.ClusterTaintPolicySpec{
			TaintsToAdd: []taintpolicy.TaintToAdd{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}},
		},
	}
	_, err := taintpolicy.NewEvaluator([]taintpolicy.ClusterTaintPolicy{p}, taintpolicy.WithDenyNoExecute())
	fmt.Println(err)
	// Output:
	// taintpolicy: policies[0]: policy "hard-evict" is invalid: spec.taintsToAdd[0].effect: Forbidden: NoExecute evicts every workload that does not tolerate it and is refused here; use PreferNoExecute or NoSchedule
}

// A controller that watches ClusterTaintPolicy objects replaces the whole
// set on every change; what the Evaluator remembers about clusters whose
// conditions carry no transition time survives the swap.
func ExampleEvaluator_SetPolicies() {
	notReady := taintpolicy.ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "not-ready"},
		Spec: taintpolicy.ClusterTaintPolicySpec{
			MatchConditions: []taintpolicy.MatchCondition{{ConditionType: "Ready", Operator: taintpolicy.MatchConditionOpIn, StatusValues: []metav1.ConditionStatus{metav1.ConditionFalse}}},
			TaintsToAdd:     []taintpolicy.TaintToAdd{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	e, err := taintpolicy.NewEvaluator([]taintpolicy.ClusterTaintPolicy{notReady})
	if err != nil {
		panic(err)
	}
	start := time.Date(2025, 1, 17, 3, 0, 0, 0, time.UTC)
	// This cluster's status has no lastTransitionTime.
	c := failover.Cluster{Name: "edge-7", Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse}}}
	fmt.Println("first seen, evaluate again in", e.Evaluate(c, start).RequeueAfter)

	evict := notReady.DeepCopy()
	evict.Name = "not-ready-evict"
	evict.Spec.TaintsToAdd[0].Effect = failover.TaintEffectPreferNoExecute
	if err := e.SetPolicies([]taintpolicy.ClusterTaintPolicy{notReady, *evict}); err != nil {
		panic(err)
	}
	for _, t := range e.Evaluate(c, start.Add(5*time.Minute)).Added {
		fmt.Println("added", t.Key, t.Effect)
	}
	e.Forget(c.Name) // the cluster was deleted
	// Output:
	// first seen, evaluate again in 5m0s
	// added cluster.karmada.io/not-ready NoSchedule
	// added cluster.karmada.io/not-ready PreferNoExecute
}

// A controller that serves ClusterTaintPolicy from a CRD of its own group
// names that group/version to the loader and to the Evaluator.
func ExampleLoadPoliciesWith_ownGroup() {
	const own = "fleet.example.com/v1alpha1"
	policies, err := taintpolicy.LoadPoliciesWith(strings.NewReader(strings.Replace(notReadyYAML, "policy.karmada.io/v1alpha1", own, 1)),
		taintpolicy.ValidateOptions{APIVersion: own})
	if err != nil {
		panic(err)
	}
	e, err := taintpolicy.NewEvaluator(policies, taintpolicy.WithAPIVersion(own))
	if err != nil {
		panic(err)
	}
	fmt.Println(policies[0].APIVersion, policies[0].Name, len(e.Policies()))

	// Karmada's group is refused once another is named.
	_, err = taintpolicy.LoadPoliciesWith(strings.NewReader(notReadyYAML), taintpolicy.ValidateOptions{APIVersion: own})
	fmt.Println(err)
	// Output:
	// fleet.example.com/v1alpha1 detect-cluster-not-ready 1
	// taintpolicy: document 1 (line 2): apiVersion "policy.karmada.io/v1alpha1", kind "ClusterTaintPolicy": want apiVersion "fleet.example.com/v1alpha1", kind "ClusterTaintPolicy"
}

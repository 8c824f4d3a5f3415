package controller_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/failoverkit/failover/examples/taintcontroller/controller"
)

// A policy that fails taintpolicy's validation is reported with its name
// and the offending field; the controller ignores it and keeps the others.
func ExamplePolicyFromUnstructured() {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterTaintPolicy",
		"metadata": map[string]any{"name": "detect-cluster-not-ready"},
		"spec": map[string]any{
			"matchConditions": []any{map[string]any{"conditionType": "Ready", "operator": "In", "statusValues": []any{"False"}}},
			"taintsToAdd":     []any{map[string]any{"key": "cluster.karmada.io/not-ready", "effect": "Evict"}},
		},
	}}
	_, err := controller.PolicyFromUnstructured(u)
	fmt.Println(err)
	// Output: controller: policy "detect-cluster-not-ready": spec.taintsToAdd[0].effect: Unsupported value: "Evict": supported values: "NoSchedule", "PreferNoExecute", "NoExecute"
}

package controller

import (
	"fmt"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/taintpolicy"
)

var (
	// ClusterGVR is Karmada's cluster.karmada.io/v1alpha1 Cluster resource.
	ClusterGVR = schema.GroupVersionResource{Group: clusterv1alpha1.GroupVersion.Group, Version: clusterv1alpha1.GroupVersion.Version, Resource: clusterv1alpha1.ResourcePluralCluster}
	// PolicyGVR is the policy.karmada.io/v1alpha1 ClusterTaintPolicy resource.
	PolicyGVR = schema.GroupVersionResource{Group: policyv1alpha1.GroupVersion.Group, Version: policyv1alpha1.GroupVersion.Version, Resource: policyv1alpha1.ResourcePluralClusterTaintPolicy}
)

// windowedFields are the spec fields of the cluster failover proposal's
// ClusterTaintPolicy, which Karmada v1.18's Go type does not define.
var windowedFields = []string{"targetCluster", "matchConditions", "taintsToAdd"}

// PolicyFromUnstructured converts a ClusterTaintPolicy object into
// taintpolicy's type and validates it with taintpolicy's rules.
//
// Karmada's released form is converted by
// karmada.FromUnstructuredClusterTaintPolicy, strictly (a field taintpolicy
// has no place for is an error, not a silent drop); it keeps the condition
// windows that a Karmada fork's CRD extension adds to spec.taints
// (github.com/failoverkit/failover/karmada/crds), which Karmada v1.18's Go
// type would drop. The windowed form of the cluster failover proposal, which
// Karmada's CRD cannot hold, is decoded into taintpolicy's type directly.
func PolicyFromUnstructured(u *unstructured.Unstructured) (taintpolicy.ClusterTaintPolicy, error) {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	for _, f := range windowedFields {
		if _, ok := spec[f]; ok {
			return windowedPolicy(u)
		}
	}
	p, err := karmada.FromUnstructuredClusterTaintPolicy(u)
	if err != nil {
		return taintpolicy.ClusterTaintPolicy{}, fmt.Errorf("controller: policy %q: %w", u.GetName(), err)
	}
	return p, nil
}

func windowedPolicy(u *unstructured.Unstructured) (taintpolicy.ClusterTaintPolicy, error) {
	var p taintpolicy.ClusterTaintPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.UnstructuredContent(), &p, true); err != nil {
		return taintpolicy.ClusterTaintPolicy{}, fmt.Errorf("controller: policy %q: %w", u.GetName(), err)
	}
	if errs := p.Validate(); len(errs) > 0 {
		return taintpolicy.ClusterTaintPolicy{}, fmt.Errorf("controller: policy %q: %w", u.GetName(), errs.ToAggregate())
	}
	return p, nil
}

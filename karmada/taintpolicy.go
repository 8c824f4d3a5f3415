package karmada

import (
	"errors"
	"fmt"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/failoverkit/failover/internal/strictyaml"
	"github.com/failoverkit/failover/taintpolicy"
)

// ClusterTaintPolicyGVK is the group, version and kind of Karmada's
// ClusterTaintPolicy, for reading it as unstructured (see
// FromUnstructuredClusterTaintPolicy).
var ClusterTaintPolicyGVK = schema.GroupVersionKind{Group: policyv1alpha1.GroupName, Version: policyv1alpha1.GroupVersion.Version, Kind: "ClusterTaintPolicy"}

// FromClusterTaintPolicy converts Karmada's released ClusterTaintPolicy into
// taintpolicy's, in its released form (spec.targetClusters,
// addOnConditions, removeOnConditions, taints): the taints are added as
// soon as all addOnConditions hold and removed as soon as all
// removeOnConditions hold, as Karmada's controller does. Every field of
// Karmada's Go type is carried; that type has no windows, so a policy
// stored through the fork's CRD extension (crds/) must be read with
// FromUnstructuredClusterTaintPolicy to keep them.
//
// The result is defaulted and validated by taintpolicy's rules: an unknown
// operator, status value or taint effect, a taint key that is not a
// qualified name, or a selector that does not parse is an error naming the
// field and the value.
func FromClusterTaintPolicy(p *policyv1alpha1.ClusterTaintPolicy) (taintpolicy.ClusterTaintPolicy, error) {
	if p == nil {
		return taintpolicy.ClusterTaintPolicy{}, fmt.Errorf("karmada: cluster taint policy is nil")
	}
	out := taintpolicy.ClusterTaintPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: taintpolicy.APIVersion, Kind: taintpolicy.Kind},
		Spec: taintpolicy.ClusterTaintPolicySpec{
			TargetClusters:     fromAffinity(p.Spec.TargetClusters),
			AddOnConditions:    fromConditions(p.Spec.AddOnConditions),
			RemoveOnConditions: fromConditions(p.Spec.RemoveOnConditions),
		},
	}
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if p.Spec.Taints != nil {
		out.Spec.Taints = make([]taintpolicy.Taint, len(p.Spec.Taints))
		for i, t := range p.Spec.Taints {
			out.Spec.Taints[i] = taintpolicy.Taint{Key: t.Key, Effect: t.Effect, Value: t.Value}
		}
	}
	out.SetDefaults()
	if errs := out.Validate(); len(errs) > 0 {
		return taintpolicy.ClusterTaintPolicy{}, fmt.Errorf("karmada: cluster taint policy %q: %w", p.Name, errs.ToAggregate())
	}
	return out, nil
}

// FromUnstructuredClusterTaintPolicy converts a ClusterTaintPolicy read as
// unstructured from a Karmada control plane, keeping what Karmada's Go type
// would drop: the condition windows (addOnMatchSeconds,
// removeOnMismatchSeconds on spec.taints) that the fork's CRD extension in
// crds/ adds. Without the extension the API server prunes them, and the
// result is FromClusterTaintPolicy's.
//
// Decoding is strict: a field taintpolicy.ClusterTaintPolicy has no place
// for is an error naming it, never a silent drop; so is an object of
// another kind. The result is defaulted and validated as
// FromClusterTaintPolicy's, with the same errors.
func FromUnstructuredClusterTaintPolicy(u *unstructured.Unstructured) (taintpolicy.ClusterTaintPolicy, error) {
	if u == nil {
		return taintpolicy.ClusterTaintPolicy{}, fmt.Errorf("karmada: cluster taint policy is nil")
	}
	if gvk := u.GroupVersionKind(); gvk != ClusterTaintPolicyGVK {
		return taintpolicy.ClusterTaintPolicy{}, fmt.Errorf("karmada: cluster taint policy %q: apiVersion %q, kind %q: want %q, %q",
			u.GetName(), u.GetAPIVersion(), u.GetKind(), ClusterTaintPolicyGVK.GroupVersion().String(), ClusterTaintPolicyGVK.Kind)
	}
	// Through taintpolicy's own strict decoding, as LoadPolicies reads a
	// file: its errors give the full path of a value of the wrong type,
	// where the unstructured converter names only the Go type.
	data, err := u.MarshalJSON()
	if err != nil {
		return taintpolicy.ClusterTaintPolicy{}, fmt.Errorf("karmada: cluster taint policy %q: %w", u.GetName(), err)
	}
	var out taintpolicy.ClusterTaintPolicy
	for _, doc := range strictyaml.Split(data) { // one document: JSON is YAML
		if err := strictyaml.Decode(doc, &out); err != nil {
			if se := (*strictyaml.Error)(nil); errors.As(err, &se) {
				err = se.Err // "document 1 (line 1)" says nothing here
			}
			return taintpolicy.ClusterTaintPolicy{}, fmt.Errorf("karmada: cluster taint policy %q: %w", u.GetName(), err)
		}
	}
	out.SetDefaults()
	if errs := out.Validate(); len(errs) > 0 {
		return taintpolicy.ClusterTaintPolicy{}, fmt.Errorf("karmada: cluster taint policy %q: %w", u.GetName(), errs.ToAggregate())
	}
	return out, nil
}

func fromConditions(cs []policyv1alpha1.MatchCondition) []taintpolicy.MatchCondition {
	if cs == nil {
		return nil
	}
	out := make([]taintpolicy.MatchCondition, len(cs))
	for i, c := range cs {
		out[i] = taintpolicy.MatchCondition{
			ConditionType: c.ConditionType,
			Operator:      taintpolicy.MatchConditionOperator(c.Operator),
			StatusValues:  append([]metav1.ConditionStatus(nil), c.StatusValues...),
		}
	}
	return out
}

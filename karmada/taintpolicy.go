package karmada

import (
	"fmt"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover/taintpolicy"
)

// FromClusterTaintPolicy converts Karmada's released ClusterTaintPolicy into
// taintpolicy's, in its released form (spec.targetClusters,
// addOnConditions, removeOnConditions, taints; no windows): the taints are
// added as soon as all addOnConditions hold and removed as soon as all
// removeOnConditions hold, as Karmada's controller does. Every field is
// carried.
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

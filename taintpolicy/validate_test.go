package taintpolicy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(p *ClusterTaintPolicy)
		opts   ValidateOptions
		want   []string // "type path", in order; empty: valid
	}{
		{name: "the proposal's example is valid", mutate: func(*ClusterTaintPolicy) {}},
		{name: "empty matchConditions and no target are valid", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.MatchConditions = nil
		}},
		{name: "PreferNoExecute, NoSchedule and NoExecute are valid effects", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.TaintsToAdd = []TaintToAdd{toAdd("a", prefer, "", 0, 0), toAdd("a", noSchedule, "", 0, 0), toAdd("a", corev1.TaintEffectNoExecute, "", 0, 0)}
		}},
		{name: "no taint to add, as in the released form", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.TaintsToAdd = nil
		}, want: []string{"FieldValueRequired spec.taintsToAdd"}},
		{name: "operator other than In/NotIn", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.MatchConditions[0].Operator = "Exists"
		}, want: []string{"FieldValueNotSupported spec.matchConditions[0].operator"}},
		{name: "operator is case-sensitive", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.MatchConditions[0].Operator = "in"
		}, want: []string{"FieldValueNotSupported spec.matchConditions[0].operator"}},
		{name: "empty statusValues", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.MatchConditions[0].StatusValues = nil
		}, want: []string{"FieldValueRequired spec.matchConditions[0].statusValues"}},
		{name: "a status other than True/False/Unknown", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.MatchConditions[0].StatusValues = []metav1.ConditionStatus{"False", "false"}
		}, want: []string{"FieldValueNotSupported spec.matchConditions[0].statusValues[1]"}},
		{name: "empty conditionType", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.MatchConditions[0].ConditionType = ""
		}, want: []string{"FieldValueRequired spec.matchConditions[0].conditionType"}},
		{name: "taint key not a qualified name", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.TaintsToAdd[0].Key = "not ready"
		}, want: []string{"FieldValueInvalid spec.taintsToAdd[0].key"}},
		{name: "empty taint key", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.TaintsToAdd[0].Key = ""
		}, want: []string{"FieldValueRequired spec.taintsToAdd[0].key"}},
		{name: "taint value not a label value", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.TaintsToAdd[0].Value = "two words"
		}, want: []string{"FieldValueInvalid spec.taintsToAdd[0].value"}},
		{name: "effect PreferNoSchedule", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.TaintsToAdd[0].Effect = corev1.TaintEffectPreferNoSchedule
		}, want: []string{"FieldValueNotSupported spec.taintsToAdd[0].effect"}},
		{name: "empty effect", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.TaintsToAdd[0].Effect = ""
		}, want: []string{"FieldValueRequired spec.taintsToAdd[0].effect"}},
		{name: "NoExecute refused when asked", opts: ValidateOptions{DenyNoExecute: true}, mutate: func(p *ClusterTaintPolicy) {
			p.Spec.TaintsToAdd[0].Effect = corev1.TaintEffectNoExecute
		}, want: []string{"FieldValueForbidden spec.taintsToAdd[0].effect"}},
		{name: "windows of 0 and -1", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.TaintsToAdd[0].AddOnMatchSeconds = ptr32(0)
			p.Spec.TaintsToAdd[0].RemoveOnMismatchSeconds = ptr32(-1)
		}, want: []string{"FieldValueInvalid spec.taintsToAdd[0].addOnMatchSeconds", "FieldValueInvalid spec.taintsToAdd[0].removeOnMismatchSeconds"}},
		{name: "windows of 1 are valid", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.TaintsToAdd[0].AddOnMatchSeconds = ptr32(1)
			p.Spec.TaintsToAdd[0].RemoveOnMismatchSeconds = ptr32(1)
		}},
		{name: "duplicate key+effect", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.TaintsToAdd = append(p.Spec.TaintsToAdd, toAdd(notReady, prefer, "other", 0, 0))
		}, want: []string{"FieldValueDuplicate spec.taintsToAdd[1]"}},
		{name: "a label selector that does not parse", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.TargetCluster.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Has"}}}
		}, want: []string{"FieldValueInvalid spec.targetCluster.labelSelector"}},
		{name: "a field selector on an unknown field", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.TargetCluster.FieldSelector = &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: failover.RegionField, Operator: corev1.NodeSelectorOpIn, Values: []string{"eu"}},
				{Key: "country", Operator: corev1.NodeSelectorOpIn, Values: []string{"fr"}},
			}}
		}, want: []string{"FieldValueInvalid spec.targetCluster.fieldSelector.matchExpressions[1]"}},
		{name: "a missing name", mutate: func(p *ClusterTaintPolicy) {
			p.Name = ""
		}, want: []string{"FieldValueRequired metadata.name"}},
		{name: "a wrong kind and apiVersion", mutate: func(p *ClusterTaintPolicy) {
			p.APIVersion, p.Kind = "policy.karmada.io/v1", "PropagationPolicy"
		}, want: []string{"FieldValueNotSupported apiVersion", "FieldValueNotSupported kind"}},
		{name: "every problem is reported", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.MatchConditions = append(p.Spec.MatchConditions, MatchCondition{})
			p.Spec.TaintsToAdd[0].Effect = "Evict"
		}, want: []string{
			"FieldValueRequired spec.matchConditions[1].conditionType",
			"FieldValueNotSupported spec.matchConditions[1].operator",
			"FieldValueRequired spec.matchConditions[1].statusValues",
			"FieldValueNotSupported spec.taintsToAdd[0].effect",
		}},
		{name: "the released form is valid", mutate: func(p *ClusterTaintPolicy) {
			p.Spec = ClusterTaintPolicySpec{
				TargetClusters:     &failover.ClusterAffinity{ClusterNames: []string{"member1"}},
				AddOnConditions:    []MatchCondition{notIn("Ready", condTrue)},
				RemoveOnConditions: []MatchCondition{in("Ready", condTrue)},
				Taints:             []Taint{{Key: notReady, Effect: noSchedule}},
			}
		}},
		{name: "the released form's windows may be 0, meaning none", mutate: func(p *ClusterTaintPolicy) {
			p.Spec = ClusterTaintPolicySpec{
				AddOnConditions: []MatchCondition{notIn("Ready", condTrue)},
				Taints:          []Taint{{Key: notReady, Effect: prefer, AddOnMatchSeconds: ptr32(0), RemoveOnMismatchSeconds: ptr32(0)}},
			}
		}},
		{name: "the released form's windows may not be negative", mutate: func(p *ClusterTaintPolicy) {
			p.Spec = ClusterTaintPolicySpec{
				AddOnConditions: []MatchCondition{notIn("Ready", condTrue)},
				Taints:          []Taint{{Key: notReady, Effect: prefer, AddOnMatchSeconds: ptr32(-1), RemoveOnMismatchSeconds: ptr32(-5)}},
			}
		}, want: []string{"FieldValueInvalid spec.taints[0].addOnMatchSeconds", "FieldValueInvalid spec.taints[0].removeOnMismatchSeconds"}},
		{name: "the released form needs a taint", mutate: func(p *ClusterTaintPolicy) {
			p.Spec = ClusterTaintPolicySpec{AddOnConditions: []MatchCondition{notIn("Ready", condTrue)}}
		}, want: []string{"FieldValueRequired spec.taints"}},
		{name: "the released form's fields are checked like the windowed ones", mutate: func(p *ClusterTaintPolicy) {
			p.Spec = ClusterTaintPolicySpec{
				TargetClusters:     &failover.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}}},
				AddOnConditions:    []MatchCondition{{ConditionType: "Ready", Operator: "Is", StatusValues: []metav1.ConditionStatus{"True"}}},
				RemoveOnConditions: []MatchCondition{{ConditionType: "Ready", Operator: "In", StatusValues: []metav1.ConditionStatus{"Maybe"}}},
				Taints:             []Taint{{Key: notReady, Effect: "Evict"}, {Key: notReady, Effect: "Evict"}},
			}
		}, want: []string{
			"FieldValueInvalid spec.targetClusters.labelSelector",
			"FieldValueNotSupported spec.addOnConditions[0].operator",
			"FieldValueNotSupported spec.removeOnConditions[0].statusValues[0]",
			"FieldValueNotSupported spec.taints[0].effect",
			"FieldValueNotSupported spec.taints[1].effect",
			"FieldValueDuplicate spec.taints[1]",
		}},
		{name: "mixing the two forms", mutate: func(p *ClusterTaintPolicy) {
			p.Spec.Taints = []Taint{{Key: "other", Effect: noSchedule}}
		}, want: []string{
			"FieldValueForbidden spec.targetCluster",
			"FieldValueForbidden spec.matchConditions",
			"FieldValueForbidden spec.taintsToAdd",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := exampleRaw()
			tc.mutate(p)
			errs := p.ValidateWith(tc.opts)
			var got []string
			for _, e := range errs {
				got = append(got, string(e.Type)+" "+e.Field)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s\n(full: %v)", strings.Join(got, "\n"), strings.Join(tc.want, "\n"), errs.ToAggregate())
			}
		})
	}
}

func TestValidateMessagesNameTheValue(t *testing.T) {
	p := exampleRaw()
	p.Spec.TaintsToAdd[0].AddOnMatchSeconds = ptr32(0)
	p.Spec.MatchConditions[0].Operator = "Exists"
	got := p.Validate().ToAggregate().Error()
	for _, want := range []string{
		`spec.matchConditions[0].operator: Unsupported value: "Exists": supported values: "In", "NotIn"`,
		`spec.taintsToAdd[0].addOnMatchSeconds: Invalid value: 0: must be at least 1`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q lacks %q", got, want)
		}
	}
}

func TestValidateDoesNotNeedDefaults(t *testing.T) {
	p := exampleRaw()
	p.Spec.TaintsToAdd[0].AddOnMatchSeconds = nil
	p.Spec.TaintsToAdd[0].RemoveOnMismatchSeconds = nil
	if errs := p.Validate(); len(errs) > 0 {
		t.Fatalf("unset windows are valid (they default): %v", errs)
	}
	p.SetDefaults()
	if got := *p.Spec.TaintsToAdd[0].AddOnMatchSeconds; got != 300 {
		t.Errorf("addOnMatchSeconds defaulted to %d, want 300", got)
	}
	if got := *p.Spec.TaintsToAdd[0].RemoveOnMismatchSeconds; got != 180 {
		t.Errorf("removeOnMismatchSeconds defaulted to %d, want 180", got)
	}
	p.Spec.TaintsToAdd[0].AddOnMatchSeconds = ptr32(7)
	p.SetDefaults()
	if got := *p.Spec.TaintsToAdd[0].AddOnMatchSeconds; got != 7 {
		t.Errorf("SetDefaults overwrote a set window: %d", got)
	}
}

// exampleRaw is the proposal's detect-cluster-not-ready policy as Go.
func exampleRaw() *ClusterTaintPolicy {
	return &ClusterTaintPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "detect-cluster-not-ready"},
		Spec: ClusterTaintPolicySpec{
			TargetCluster:   &failover.ClusterAffinity{ClusterNames: []string{"member1", "member2"}},
			MatchConditions: []MatchCondition{in("Ready", condFalse, condUnknown)},
			TaintsToAdd:     []TaintToAdd{toAdd(notReady, prefer, "", 300, 180)},
		},
	}
}

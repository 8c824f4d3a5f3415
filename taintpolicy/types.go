package taintpolicy

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

// The API group, version and kind of a ClusterTaintPolicy, as Karmada serves it.
const (
	GroupName  = "policy.karmada.io"
	Version    = "v1alpha1"
	APIVersion = GroupName + "/" + Version
	Kind       = "ClusterTaintPolicy"
)

// The windows a TaintToAdd gets when it does not set them.
const (
	DefaultAddOnMatchSeconds       int32 = 300
	DefaultRemoveOnMismatchSeconds int32 = 180
)

// ClusterTaintPolicy says which taints a cluster gets when its status
// conditions match, and when they are taken away again. It decodes from
// Karmada's policy.karmada.io/v1alpha1 ClusterTaintPolicy in either of its two
// forms:
//
//   - the windowed form of the cluster failover proposal: spec.targetCluster,
//     spec.matchConditions and spec.taintsToAdd, where each taint is added
//     after the conditions have matched for addOnMatchSeconds and removed
//     after they have not matched for removeOnMismatchSeconds;
//   - the released form: spec.targetClusters, spec.addOnConditions,
//     spec.removeOnConditions and spec.taints. Karmada v1.18's CRD gives its
//     taints no windows; a Karmada fork that applies the CRD extension of
//     package github.com/failoverkit/failover/karmada adds the proposal's
//     addOnMatchSeconds and removeOnMismatchSeconds to each taint (see
//     Taint), and unset they mean no window, as Karmada behaves.
//
// A policy uses one form; Validate rejects one that mixes them.
//
// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ClusterTaintPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour of the policy.
	Spec ClusterTaintPolicySpec `json:"spec"`
}

// ClusterTaintPolicySpec is the body of a ClusterTaintPolicy. The first three
// fields are the windowed form; the last four are Karmada's released form.
//
// +k8s:deepcopy-gen=true
type ClusterTaintPolicySpec struct {
	// TargetCluster selects the clusters the policy applies to; nil selects
	// every cluster. A cluster it does not select keeps its taints as they
	// are.
	TargetCluster *failover.ClusterAffinity `json:"targetCluster,omitempty"`

	// MatchConditions are ANDed. When empty the policy always matches and
	// its taints are added at once.
	MatchConditions []MatchCondition `json:"matchConditions,omitempty"`

	// TaintsToAdd are the taints the policy adds and removes, each with its
	// own windows.
	TaintsToAdd []TaintToAdd `json:"taintsToAdd,omitempty"`

	// TargetClusters is the released form's TargetCluster.
	TargetClusters *failover.ClusterAffinity `json:"targetClusters,omitempty"`

	// AddOnConditions (released form) are ANDed; when they all hold the
	// taints are added, at once unless a taint sets AddOnMatchSeconds.
	// Empty: the policy never adds.
	AddOnConditions []MatchCondition `json:"addOnConditions,omitempty"`

	// RemoveOnConditions (released form) are ANDed; when they all hold the
	// taints are removed, at once unless a taint sets
	// RemoveOnMismatchSeconds, even if AddOnConditions hold too (Karmada
	// evaluates them second). Empty: the policy never removes.
	RemoveOnConditions []MatchCondition `json:"removeOnConditions,omitempty"`

	// Taints (released form) are the taints the policy adds and removes; at
	// least one is required.
	Taints []Taint `json:"taints,omitempty"`
}

// MatchCondition matches one status condition of a cluster. A condition the
// cluster does not have never matches, whatever the operator.
//
// +k8s:deepcopy-gen=true
type MatchCondition struct {
	// ConditionType is the type of the cluster status condition, e.g. Ready.
	ConditionType string `json:"conditionType"`

	// Operator is In or NotIn.
	Operator MatchConditionOperator `json:"operator"`

	// StatusValues are the statuses the operator compares with: True, False
	// or Unknown. At least one is required.
	StatusValues []metav1.ConditionStatus `json:"statusValues"`
}

// MatchConditionOperator relates a condition's status to StatusValues.
type MatchConditionOperator string

// The operators a MatchCondition accepts.
const (
	// MatchConditionOpIn matches when the condition's status is listed.
	MatchConditionOpIn MatchConditionOperator = "In"
	// MatchConditionOpNotIn matches when the condition exists and its
	// status is not listed.
	MatchConditionOpNotIn MatchConditionOperator = "NotIn"
)

// TaintToAdd is a taint of the windowed form with its two windows.
//
// +k8s:deepcopy-gen=true
type TaintToAdd struct {
	// Key is the taint key, a qualified name such as
	// cluster.karmada.io/not-ready.
	Key string `json:"key"`

	// Effect is NoSchedule, PreferNoExecute or NoExecute.
	Effect corev1.TaintEffect `json:"effect"`

	// Value is the taint value; it may be empty.
	Value string `json:"value,omitempty"`

	// AddOnMatchSeconds is how long the policy must match continuously
	// before the taint is added. Nil means DefaultAddOnMatchSeconds (300);
	// at least 1.
	AddOnMatchSeconds *int32 `json:"addOnMatchSeconds,omitempty"`

	// RemoveOnMismatchSeconds is how long the policy must not match,
	// continuously, before the taint is removed. Nil means
	// DefaultRemoveOnMismatchSeconds (180); at least 1.
	RemoveOnMismatchSeconds *int32 `json:"removeOnMismatchSeconds,omitempty"`
}

// Taint is a taint of the released form. Karmada v1.18 has only Key, Effect
// and Value; the two windows are the fields a Karmada fork adds to its
// ClusterTaintPolicy CRD (the cluster failover proposal's names), read as
// the released form's conditions read: the taint is added once all
// addOnConditions have held for AddOnMatchSeconds, and removed once all
// removeOnConditions have held for RemoveOnMismatchSeconds. Unset or 0
// means no window: at once, as Karmada does.
//
// +k8s:deepcopy-gen=true
type Taint struct {
	// Key is the taint key, a qualified name.
	Key string `json:"key"`

	// Effect is NoSchedule, PreferNoExecute or NoExecute.
	Effect corev1.TaintEffect `json:"effect"`

	// Value is the taint value; it may be empty.
	Value string `json:"value,omitempty"`

	// AddOnMatchSeconds is how long all addOnConditions must hold,
	// continuously, before the taint is added. Nil or 0: at once. At least
	// 0.
	AddOnMatchSeconds *int32 `json:"addOnMatchSeconds,omitempty"`

	// RemoveOnMismatchSeconds is how long all removeOnConditions must hold,
	// continuously, before the taint is removed. Nil or 0: at once. At
	// least 0.
	RemoveOnMismatchSeconds *int32 `json:"removeOnMismatchSeconds,omitempty"`
}

// ClusterTaintPolicyList is a list of policies, as `kubectl get -o yaml`
// prints them.
//
// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ClusterTaintPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the policies.
	Items []ClusterTaintPolicy `json:"items"`
}

// Released reports whether the policy is written in Karmada's released form:
// it sets at least one of targetClusters, addOnConditions, removeOnConditions
// and taints.
func (s *ClusterTaintPolicySpec) Released() bool {
	return s.TargetClusters != nil || len(s.AddOnConditions) > 0 || len(s.RemoveOnConditions) > 0 || len(s.Taints) > 0
}

// windowed reports whether the spec sets a field of the windowed form.
func (s *ClusterTaintPolicySpec) windowed() bool {
	return s.TargetCluster != nil || len(s.MatchConditions) > 0 || len(s.TaintsToAdd) > 0
}

// SetDefaults fills the windows a TaintToAdd leaves unset with
// DefaultAddOnMatchSeconds and DefaultRemoveOnMismatchSeconds, as Karmada's
// API server does. LoadPolicies and NewEvaluator call it.
func (p *ClusterTaintPolicy) SetDefaults() {
	for i := range p.Spec.TaintsToAdd {
		t := &p.Spec.TaintsToAdd[i]
		if t.AddOnMatchSeconds == nil {
			v := DefaultAddOnMatchSeconds
			t.AddOnMatchSeconds = &v
		}
		if t.RemoveOnMismatchSeconds == nil {
			v := DefaultRemoveOnMismatchSeconds
			t.RemoveOnMismatchSeconds = &v
		}
	}
}

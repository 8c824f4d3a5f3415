package failover

import "time"

// ClusterFailoverBehavior is a workload's opt-in to cluster failover: how its
// copy leaves a cluster with a PreferNoExecute taint, and after how long. Its
// JSON is that of Karmada's policy/v1alpha1 ClusterFailoverBehavior (a
// PropagationPolicy's spec.failover.cluster).
//
// +k8s:deepcopy-gen=true
type ClusterFailoverBehavior struct {
	// PurgeMode says how the copy on the cluster left behind is removed;
	// empty means Gracefully.
	PurgeMode PurgeMode `json:"purgeMode,omitempty"`
	// TolerationSeconds is how long the workload stays on a cluster after a
	// PreferNoExecute taint was added; nil means 300, 0 means at once.
	TolerationSeconds *int32 `json:"tolerationSeconds,omitempty"`
}

// EvictionDecision is the answer of [DecideEviction] for one workload on one
// cluster.
type EvictionDecision struct {
	// Evict says the workload must leave the cluster now.
	Evict bool
	// After, when Evict is false and After is positive, is how long until the
	// earliest deadline still to come: decide again then. Zero with Evict
	// false means never, as far as the current taints go.
	After time.Duration
	// Reason says which taint and which rule decided, in words.
	Reason string
}

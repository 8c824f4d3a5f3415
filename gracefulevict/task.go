package gracefulevict

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

// Task is one graceful eviction task: the copy of a workload on FromCluster
// that waits to be removed. Its JSON is that of Karmada's
// work.karmada.io/v1alpha2 GracefulEvictionTask, so the
// spec.gracefulEvictionTasks of a ResourceBinding decode into it.
type Task struct {
	// FromCluster is the cluster the workload is evicted from.
	FromCluster string `json:"fromCluster"`
	// PurgeMode says how the old copy is removed. Empty means Gracefully;
	// the legacy names Immediately and Graciously are accepted. An unknown
	// mode is assessed as Gracefully, the choice that never deletes a copy
	// early; Validate reports it.
	PurgeMode failover.PurgeMode `json:"purgeMode,omitempty"`
	// Replicas is the number of replicas evicted; nil for workloads that are
	// not divided.
	Replicas *int32 `json:"replicas,omitempty"`
	// Reason is a CamelCase identifier of why the eviction happened, e.g.
	// "TaintUntolerated".
	Reason string `json:"reason"`
	// Message is a human-readable explanation; may be empty.
	Message string `json:"message,omitempty"`
	// Producer names the controller that evicted, e.g. "TaintManager".
	Producer string `json:"producer"`
	// GracePeriodSeconds is the longest the old copy is kept once the task
	// is stamped; nil falls back to the Assessor's default timeout. A value
	// of zero or less has elapsed as soon as the task is stamped.
	GracePeriodSeconds *int32 `json:"gracePeriodSeconds,omitempty"`
	// SuppressDeletion, when set, overrides everything but the cluster's
	// return: true keeps the old copy until someone clears it, false removes
	// it at once.
	SuppressDeletion *bool `json:"suppressDeletion,omitempty"`
	// PreservedLabelState is application state collected from the old
	// cluster, to be injected into the new copy as labels. Assess does not
	// read it; it is carried so the task round-trips.
	PreservedLabelState map[string]string `json:"preservedLabelState,omitempty"`
	// ClustersBeforeFailover is the schedule result before the eviction.
	// Assess does not read it; it is carried so the task round-trips.
	ClustersBeforeFailover []string `json:"clustersBeforeFailover,omitempty"`
	// CreationTimestamp is when the task was first assessed. The Assessor
	// stamps it on a task that has none; grace periods count from it.
	CreationTimestamp *metav1.Time `json:"creationTimestamp,omitempty"`
}

// Validate returns an error naming the field and the value when t could not
// have come from a valid binding: an empty FromCluster, an unknown purge mode,
// a grace period below 1, or both GracePeriodSeconds and SuppressDeletion set
// (Karmada forbids them together). Assess accepts invalid tasks anyway and
// decides them as documented on each field, so a bad task never blocks the
// others.
func (t Task) Validate() error {
	if t.FromCluster == "" {
		return fmt.Errorf("gracefulevict: task.fromCluster is empty")
	}
	if err := t.PurgeMode.Validate(); err != nil {
		return fmt.Errorf("gracefulevict: task %q: purgeMode: unknown value %q: want Directly, Gracefully or Never (legacy Immediately, Graciously)", t.FromCluster, string(t.PurgeMode))
	}
	if t.GracePeriodSeconds != nil && *t.GracePeriodSeconds < 1 {
		return fmt.Errorf("gracefulevict: task %q: gracePeriodSeconds: %d: must be at least 1", t.FromCluster, *t.GracePeriodSeconds)
	}
	if t.GracePeriodSeconds != nil && t.SuppressDeletion != nil {
		return fmt.Errorf("gracefulevict: task %q: gracePeriodSeconds and suppressDeletion cannot both be set", t.FromCluster)
	}
	if t.Replicas != nil && *t.Replicas < 0 {
		return fmt.Errorf("gracefulevict: task %q: replicas: %d: must not be negative", t.FromCluster, *t.Replicas)
	}
	return nil
}

// ResourceHealth is the health a member cluster reports for the workload's
// copy there, as in Karmada's aggregated status.
type ResourceHealth string

// The values of ResourceHealth.
const (
	// Healthy: the copy runs as intended.
	Healthy ResourceHealth = "Healthy"
	// Unhealthy: the copy runs but is not healthy.
	Unhealthy ResourceHealth = "Unhealthy"
	// Unknown: the health could not be interpreted.
	Unknown ResourceHealth = "Unknown"
)

// Binding is the part of a ResourceBinding or ClusterResourceBinding that
// graceful eviction reads: the schedule result, whether the scheduler has
// seen the latest spec, the health of each copy, and the tasks.
type Binding struct {
	// Generation is the binding's metadata.generation; ObservedGeneration is
	// the scheduler's status.schedulerObservedGeneration. The binding is
	// scheduled when they are equal.
	Generation, ObservedGeneration int64
	// Clusters is the schedule result (spec.clusters).
	Clusters []failover.TargetCluster
	// Health is the aggregated health per cluster name; a missing cluster
	// counts as not healthy.
	Health map[string]ResourceHealth
	// Tasks are the graceful eviction tasks (spec.gracefulEvictionTasks).
	Tasks []Task
}

// Scheduled reports whether the scheduler has observed the binding's latest
// spec, so that Clusters is its answer to it.
func (b Binding) Scheduled() bool { return b.Generation == b.ObservedGeneration }

// inResult reports whether cluster is in the schedule result.
func (b *Binding) inResult(cluster string) bool {
	for i := range b.Clusters {
		if b.Clusters[i].Name == cluster {
			return true
		}
	}
	return false
}

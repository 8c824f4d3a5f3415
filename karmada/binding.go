package karmada

import (
	"fmt"
	"maps"
	"slices"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/gracefulevict"
)

// FromResourceBinding converts the part of a ResourceBinding that graceful
// eviction reads: metadata.generation and status.schedulerObservedGeneration,
// the schedule result (spec.clusters), the graceful eviction tasks
// (spec.gracefulEvictionTasks, every field carried) and the health of each
// copy (status.aggregatedStatus[].health).
//
// An aggregated status item without a health is Unknown, as Karmada's
// graceful eviction controller counts it not healthy. A health other than
// Healthy, Unhealthy or Unknown, an item without a cluster name, two items
// for one cluster, or a task gracefulevict.Task.Validate rejects are errors
// naming the field.
func FromResourceBinding(rb *workv1alpha2.ResourceBinding) (gracefulevict.Binding, error) {
	if rb == nil {
		return gracefulevict.Binding{}, fmt.Errorf("karmada: resource binding is nil")
	}
	b, err := fromBinding(rb.Generation, &rb.Spec, &rb.Status)
	if err != nil {
		return gracefulevict.Binding{}, fmt.Errorf("karmada: resource binding %s/%s: %w", rb.Namespace, rb.Name, err)
	}
	return b, nil
}

// FromClusterResourceBinding is FromResourceBinding for a
// ClusterResourceBinding.
func FromClusterResourceBinding(crb *workv1alpha2.ClusterResourceBinding) (gracefulevict.Binding, error) {
	if crb == nil {
		return gracefulevict.Binding{}, fmt.Errorf("karmada: cluster resource binding is nil")
	}
	b, err := fromBinding(crb.Generation, &crb.Spec, &crb.Status)
	if err != nil {
		return gracefulevict.Binding{}, fmt.Errorf("karmada: cluster resource binding %s: %w", crb.Name, err)
	}
	return b, nil
}

func fromBinding(generation int64, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) (gracefulevict.Binding, error) {
	b := gracefulevict.Binding{
		Generation:         generation,
		ObservedGeneration: status.SchedulerObservedGeneration,
		Clusters:           fromTargets(spec.Clusters),
	}
	if spec.GracefulEvictionTasks != nil {
		b.Tasks = make([]gracefulevict.Task, len(spec.GracefulEvictionTasks))
		for i := range spec.GracefulEvictionTasks {
			b.Tasks[i] = fromTask(&spec.GracefulEvictionTasks[i])
			if err := b.Tasks[i].Validate(); err != nil {
				return gracefulevict.Binding{}, fmt.Errorf("spec.gracefulEvictionTasks[%d]: %w", i, err)
			}
		}
	}
	if status.AggregatedStatus != nil {
		b.Health = make(map[string]gracefulevict.ResourceHealth, len(status.AggregatedStatus))
		first := make(map[string]int, len(status.AggregatedStatus))
		for i := range status.AggregatedStatus {
			it := &status.AggregatedStatus[i]
			if it.ClusterName == "" {
				return gracefulevict.Binding{}, fmt.Errorf("status.aggregatedStatus[%d].clusterName is empty", i)
			}
			if j, dup := first[it.ClusterName]; dup {
				return gracefulevict.Binding{}, fmt.Errorf("status.aggregatedStatus[%d].clusterName: duplicate value %q (first at [%d])", i, it.ClusterName, j)
			}
			first[it.ClusterName] = i
			h := gracefulevict.ResourceHealth(it.Health)
			switch h {
			case "":
				h = gracefulevict.Unknown
			case gracefulevict.Healthy, gracefulevict.Unhealthy, gracefulevict.Unknown:
			default:
				return gracefulevict.Binding{}, fmt.Errorf("status.aggregatedStatus[%d].health: unknown value %q (cluster %q): want Healthy, Unhealthy or Unknown", i, it.Health, it.ClusterName)
			}
			b.Health[it.ClusterName] = h
		}
	}
	return b, nil
}

func fromTargets(ts []workv1alpha2.TargetCluster) []failover.TargetCluster {
	if ts == nil {
		return nil
	}
	out := make([]failover.TargetCluster, len(ts))
	for i, t := range ts {
		out[i] = failover.TargetCluster{Name: t.Name, Replicas: t.Replicas}
	}
	return out
}

func fromTask(t *workv1alpha2.GracefulEvictionTask) gracefulevict.Task {
	t = t.DeepCopy()
	return gracefulevict.Task{
		FromCluster:            t.FromCluster,
		PurgeMode:              failover.PurgeMode(t.PurgeMode),
		Replicas:               t.Replicas,
		Reason:                 t.Reason,
		Message:                t.Message,
		Producer:               t.Producer,
		GracePeriodSeconds:     t.GracePeriodSeconds,
		SuppressDeletion:       t.SuppressDeletion,
		PreservedLabelState:    t.PreservedLabelState,
		ClustersBeforeFailover: t.ClustersBeforeFailover,
		CreationTimestamp:      t.CreationTimestamp,
	}
}

// ApplyBinding writes what an eviction or an assessment changes back into a
// binding's spec: spec.clusters from b.Clusters and
// spec.gracefulEvictionTasks from b.Tasks, every task field carried; an
// empty list clears the field. Every other field of spec is left as it is.
// Generation and health are the API server's and the status's, and are not
// written. Pass &rb.Spec or &crb.Spec; spec must not be nil.
func ApplyBinding(spec *workv1alpha2.ResourceBindingSpec, b gracefulevict.Binding) {
	spec.Clusters = nil
	if len(b.Clusters) > 0 {
		spec.Clusters = make([]workv1alpha2.TargetCluster, len(b.Clusters))
		for i, c := range b.Clusters {
			spec.Clusters[i] = workv1alpha2.TargetCluster{Name: c.Name, Replicas: c.Replicas}
		}
	}
	spec.GracefulEvictionTasks = nil
	if len(b.Tasks) > 0 {
		spec.GracefulEvictionTasks = make([]workv1alpha2.GracefulEvictionTask, len(b.Tasks))
		for i := range b.Tasks {
			spec.GracefulEvictionTasks[i] = toTask(&b.Tasks[i])
		}
	}
}

func toTask(t *gracefulevict.Task) workv1alpha2.GracefulEvictionTask {
	out := workv1alpha2.GracefulEvictionTask{
		FromCluster:            t.FromCluster,
		PurgeMode:              policyv1alpha1.PurgeMode(t.PurgeMode),
		Reason:                 t.Reason,
		Message:                t.Message,
		Producer:               t.Producer,
		PreservedLabelState:    maps.Clone(t.PreservedLabelState),
		ClustersBeforeFailover: slices.Clone(t.ClustersBeforeFailover),
		CreationTimestamp:      t.CreationTimestamp.DeepCopy(),
	}
	if t.Replicas != nil {
		out.Replicas = ptr.To(*t.Replicas)
	}
	if t.GracePeriodSeconds != nil {
		out.GracePeriodSeconds = ptr.To(*t.GracePeriodSeconds)
	}
	if t.SuppressDeletion != nil {
		out.SuppressDeletion = ptr.To(*t.SuppressDeletion)
	}
	return out
}

package karmada

import (
	"encoding/json"
	"fmt"
	"maps"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/gracefulevict"
)

// ApplicationTimersAnnotation on a ResourceBinding or ClusterResourceBinding
// holds its application failover timers: an appfailover.Record, as JSON,
// that the fork's application failover controller writes whenever
// appfailover.Result.Changed says so, before it acts, and reads back after
// a restart or a leader change. It is bounded (appfailover.MaxClusters).
const ApplicationTimersAnnotation = "failover.karmada.io/application-failover-timers"

// ApplicationFailureReason is the reason of the graceful eviction task an
// application failover writes: Karmada's
// workv1alpha2.EvictionReasonApplicationFailure.
const ApplicationFailureReason = workv1alpha2.EvictionReasonApplicationFailure

// FromApplicationFailoverBehavior converts a binding's
// spec.failover.application (Karmada copies it there from the policy);
// nil, a workload that has not opted in, is nil. Every field is carried,
// v1.18's purge mode names and v1.19's alike, and nothing is shared with a.
// A value appfailover.Behavior.Validate rejects is an error naming the
// field, and nil.
func FromApplicationFailoverBehavior(a *policyv1alpha1.ApplicationFailoverBehavior) (*appfailover.Behavior, error) {
	if a == nil {
		return nil, nil
	}
	b := &appfailover.Behavior{
		PurgeMode: failover.PurgeMode(a.PurgeMode),
	}
	if s := a.DecisionConditions.TolerationSeconds; s != nil {
		b.DecisionConditions.TolerationSeconds = ptr.To(*s)
	}
	if g := a.GracePeriodSeconds; g != nil {
		b.GracePeriodSeconds = ptr.To(*g)
	}
	if sp := a.StatePreservation; sp != nil {
		b.StatePreservation = &appfailover.StatePreservation{}
		if sp.Rules != nil {
			b.StatePreservation.Rules = make([]appfailover.StatePreservationRule, len(sp.Rules))
			for i, r := range sp.Rules {
				b.StatePreservation.Rules[i] = appfailover.StatePreservationRule{AliasLabelName: r.AliasLabelName, JSONPath: r.JSONPath}
			}
		}
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("karmada: failover.application: %w", err)
	}
	return b, nil
}

// ApplicationObservations is what application failover judges of a binding
// whose spec and status are given: one observation per cluster of the
// schedule result (spec.clusters) that has no graceful eviction task (one
// already leaving is not judged again, as in Karmada v1.18's controller).
//
// The health is status.aggregatedStatus[].health; a cluster the status has
// no item for yet, or an item without a health, is Unknown. The generation
// is what the member reports in the collected status (Karmada's native
// interpreters for Deployments, StatefulSets, DaemonSets and ReplicaSets
// report it): resourceTemplateGeneration, once the member's controller has
// observed its latest spec (observedGeneration equals generation), else 0,
// which changes nothing. Any change of the resource template, its replicas
// included, is a new generation. A workload kind whose status reports none
// has its start-up counted from its first sight on each cluster.
//
// A health other than Healthy, Unhealthy or Unknown, an item without a
// cluster name, two items for one cluster, or a collected status that is not
// a JSON object with integer generations is an error naming the field, and
// nil.
func ApplicationObservations(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) (map[string]appfailover.Observation, error) {
	if spec == nil || status == nil {
		return nil, fmt.Errorf("karmada: ApplicationObservations: the binding's spec and status must not be nil")
	}
	items := make(map[string]int, len(status.AggregatedStatus))
	for i := range status.AggregatedStatus {
		it := &status.AggregatedStatus[i]
		if it.ClusterName == "" {
			return nil, fmt.Errorf("karmada: status.aggregatedStatus[%d].clusterName is empty", i)
		}
		if j, dup := items[it.ClusterName]; dup {
			return nil, fmt.Errorf("karmada: status.aggregatedStatus[%d].clusterName: duplicate value %q (first at [%d])", i, it.ClusterName, j)
		}
		items[it.ClusterName] = i
	}
	out := make(map[string]appfailover.Observation, len(spec.Clusters))
	for _, c := range spec.Clusters {
		if spec.ClusterInGracefulEvictionTasks(c.Name) {
			continue
		}
		i, ok := items[c.Name]
		if !ok {
			out[c.Name] = appfailover.Observation{Health: gracefulevict.Unknown}
			continue
		}
		it := &status.AggregatedStatus[i]
		o := appfailover.Observation{Health: gracefulevict.ResourceHealth(it.Health)}
		switch o.Health {
		case "":
			o.Health = gracefulevict.Unknown
		case gracefulevict.Healthy, gracefulevict.Unhealthy, gracefulevict.Unknown:
		default:
			return nil, fmt.Errorf("karmada: status.aggregatedStatus[%d].health: unknown value %q (cluster %q): want Healthy, Unhealthy or Unknown", i, it.Health, it.ClusterName)
		}
		if it.Status != nil && len(it.Status.Raw) > 0 {
			var g struct {
				Generation                 int64 `json:"generation"`
				ObservedGeneration         int64 `json:"observedGeneration"`
				ResourceTemplateGeneration int64 `json:"resourceTemplateGeneration"`
			}
			if err := json.Unmarshal(it.Status.Raw, &g); err != nil {
				return nil, fmt.Errorf("karmada: status.aggregatedStatus[%d].status (cluster %q): %w", i, it.ClusterName, err)
			}
			if g.Generation > 0 && g.ObservedGeneration == g.Generation {
				o.Generation = g.ResourceTemplateGeneration
			}
		}
		out[c.Name] = o
	}
	return out, nil
}

// ApplicationTimers reads the record in a binding's
// ApplicationTimersAnnotation; none is an empty record. A record that does
// not parse is an error naming the annotation and the bad entry, with an
// empty record: a controller that goes on with it fails over later than
// the lost timers would have, never earlier.
func ApplicationTimers(annotations map[string]string) (appfailover.Record, error) {
	rec, err := appfailover.ParseRecord(annotations[ApplicationTimersAnnotation])
	if err != nil {
		return nil, fmt.Errorf("karmada: annotation %s: %w", ApplicationTimersAnnotation, err)
	}
	return rec, nil
}

// WithApplicationTimers returns annotations, copied, with rec as their
// ApplicationTimersAnnotation, or without it when rec is empty.
func WithApplicationTimers(annotations map[string]string, rec appfailover.Record) map[string]string {
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	if len(rec) == 0 {
		delete(out, ApplicationTimersAnnotation)
	} else {
		out[ApplicationTimersAnnotation] = rec.String()
	}
	return out
}

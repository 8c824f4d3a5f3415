package controllers

import (
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
)

// MaxClustersInTransitAnnotation on a ResourceBinding or
// ClusterResourceBinding is its own budget of clusters in transit, which
// overrides EvictionOptions.MaxClustersInTransit: a non-negative integer,
// 0 for unlimited. Karmada's detector copies neither a resource template's
// nor a policy's annotations to the binding, but keeps the binding's own
// when it updates it, so a fork sets it on the binding (kubectl annotate,
// or its own code that derives it from its policies).
const MaxClustersInTransitAnnotation = karmada.MaxClustersInTransitAnnotation

// EventReasonClustersInTransit is the reason of the Warning Event on a
// binding whose eviction from a cluster waits for its budget of clusters in
// transit (EvictionOptions.MaxClustersInTransit).
const EventReasonClustersInTransit = "ClustersInTransit"

// EventReasonInvalidTransitBudget is the reason of the Warning Event on a
// binding whose MaxClustersInTransitAnnotation is not a non-negative
// integer: EvictionOptions.MaxClustersInTransit applies instead.
const EventReasonInvalidTransitBudget = "InvalidMaxClustersInTransit"

// EventReasonInvalidFailoverRecord is the reason of the Warning Event on a
// binding evicted while its karmada.FailedOverFromAnnotation could not be
// read: the eviction replaced it with a record of its own failover.
const EventReasonInvalidFailoverRecord = "InvalidFailedOverFrom"

// maxTransitRetry bounds how long an eviction waiting for its binding's
// budget of clusters in transit waits before it is tried again.
const maxTransitRetry = 10 * time.Second

// transitBudget is the budget of clusters in transit of obj, 0 for
// unlimited: its MaxClustersInTransitAnnotation, or
// EvictionOptions.MaxClustersInTransit without one. A value that is not a
// non-negative integer is an error naming the annotation and the value,
// returned with the option's budget, which then applies.
func (c *EvictionController) transitBudget(obj client.Object) (int, error) {
	v, ok := obj.GetAnnotations()[MaxClustersInTransitAnnotation]
	if !ok {
		return c.opts.MaxClustersInTransit, nil
	}
	n, err := gracefulevict.ParseTransitBudget(v)
	if err != nil {
		return c.opts.MaxClustersInTransit, fmt.Errorf("controllers: annotation %s %q: want a non-negative integer (0: unlimited); --max-clusters-in-transit %d applies", MaxClustersInTransitAnnotation, v, c.opts.MaxClustersInTransit)
	}
	return int(n), nil
}

// transitRetry is how long an eviction waiting for its binding's budget of
// clusters in transit waits before it is tried again: tasks end as the
// clusters report their workloads' status.
func (c *EvictionController) transitRetry() time.Duration {
	return min(c.opts.ClusterStatusUpdateFrequency, maxTransitRetry)
}

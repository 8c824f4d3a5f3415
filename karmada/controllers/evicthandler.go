package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/prescheduling"
)

// Event reasons and actions on a binding.
const (
	eventActionEvict = "Evict"
	// EventReasonEvicted is the reason of the Normal Event on a binding
	// moved off a cluster. Not evicted, the Warning Event's reason is the
	// prescheduling.Code of the check that said no.
	EventReasonEvicted = "EvictedFromCluster"
)

// maxConfirmRounds bounds the rounds of fresh reads that confirm the
// clusters a check's approval relies on: each round reads the clusters the
// check newly picked, so it ends when the fleet holds still that long.
const maxConfirmRounds = 8

// evictHandler is run by k's eviction queue once the Limiter grants a
// permit. Each attempt starts from fresh reads and ends in one write at
// most; a conflict on that write starts a new attempt from the top, so
// every write is preceded by a decision and a check on exactly what it
// overwrites.
func (c *EvictionController) evictHandler(k *kind) evictionqueue.Handler {
	return func(ctx context.Context, it evictionqueue.Item) error {
		key, err := objectKey(it.Key)
		if err != nil {
			return evictionqueue.Abandon(err)
		}
		logger := log.FromContext(ctx).WithValues("queue", k.queue, "binding", it.Key, "cluster", it.Cluster)
		var result error
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			result = c.attempt(ctx, k, it, key, logger)
			return result
		})
		if apierrors.IsConflict(err) {
			return err // every attempt conflicted: retried with backoff
		}
		return result
	}
}

// attempt is one pass of the handler: decide again on fresh reads, check,
// hold room, write. It returns the handler's result: ErrInProgress once the
// task is written (the eviction is in flight until the task ends), Skip when
// there is nothing to do, Abandon or RetryAfter when the check says no or
// an operator's freeze holds it back (EvictionOptions.Freeze) or the
// binding's budget of clusters in transit is used up
// (EvictionOptions.MaxClustersInTransit), a
// conflict for another attempt, another error to retry with backoff.
func (c *EvictionController) attempt(ctx context.Context, k *kind, it evictionqueue.Item, key types.NamespacedName, logger logr.Logger) error {
	// Waiting for its binding's budget, it is decided again now, or waits
	// for the thaw: either way it no longer waits for the budget, and
	// eviction_waiting_for_transit_budget stops counting it.
	k.inTransit.forget(it)
	// An operator's freeze holds every eviction back before anything is
	// read: the item stays queued and its permit goes back.
	// It is tried again at once when the freeze thaws (thawed).
	if f := c.freeze.check(); f.frozen {
		k.frozen.add(it)
		return evictionqueue.RetryAfter(f.retryAfter(c.opts.Clock.Now()),
			fmt.Errorf("controllers: evictions frozen by ConfigMap %s: %s", c.opts.Freeze, f.why))
	}
	// Waiting for a thaw, it is decided again now.
	k.frozen.forget(it)
	// The item may have waited long, and the cache may lag: decide on what
	// the API server holds now. A cluster that recovered meanwhile, or a
	// binding that moved or now tolerates the taint, is left alone.
	var cl clusterv1alpha1.Cluster
	if err := c.reader.Get(ctx, types.NamespacedName{Name: it.Cluster}, &cl); err != nil {
		if apierrors.IsNotFound(err) {
			k.refused.forget(it)
			return evictionqueue.Skip(fmt.Errorf("cluster %s is gone", it.Cluster))
		}
		return err
	}
	obj := k.new()
	if err := c.reader.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			c.bindingGone(k, it.Key)
			return evictionqueue.Skip(fmt.Errorf("binding %s is gone", it.Key))
		}
		return err
	}
	spec := k.spec(obj)
	if !obj.GetDeletionTimestamp().IsZero() {
		k.refused.forget(it)
		return evictionqueue.Skip(fmt.Errorf("binding %s is being deleted", it.Key))
	}
	if !spec.TargetContains(it.Cluster) {
		k.refused.forget(it)
		return evictionqueue.Skip(fmt.Errorf("binding %s is no longer scheduled on %s", it.Key, it.Cluster))
	}
	d, err := c.decide(obj, spec, &cl)
	if err != nil {
		return evictionqueue.Abandon(err)
	}
	if !d.Evict {
		k.refused.forget(it)
		logger.V(1).Info("no longer to be evicted", "why", d.Reason)
		return evictionqueue.Skip(errors.New(d.Reason))
	}

	// The binding's budget of clusters in transit, counted on the binding
	// read fresh: whoever wrote its open tasks, and whichever replica led
	// then, they are there.
	budget, err := c.transitBudget(obj)
	if err != nil {
		c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonInvalidTransitBudget, eventActionEvict, "%v", err)
		logger.Error(err, "a bad budget of clusters in transit")
	}
	if budget > 0 {
		lib, err := k.toLib(obj)
		if err != nil {
			return err
		}
		if open := gracefulevict.InTransit(lib.Tasks); !gracefulevict.TransitBudget(budget).Allows(open) {
			c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonClustersInTransit, eventActionEvict,
				"not evicted from cluster %s yet: %d of at most %d clusters in transit (%s)", it.Cluster, len(open), budget, strings.Join(open, ", "))
			k.inTransit.add(it)
			return evictionqueue.RetryAfter(c.transitRetry(),
				fmt.Errorf("controllers: %s from %s waits: %d of at most %d clusters in transit", it.Key, it.Cluster, len(open), budget))
		}
	}

	// Is there somewhere to go?
	req, err := karmada.PreschedulingRequest(spec, it.Cluster)
	var loss *karmada.LossError
	if err != nil && !errors.As(err, &loss) {
		c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, string(prescheduling.InvalidRequest), eventActionEvict,
			"not evicted from cluster %s: %v", it.Cluster, err)
		return evictionqueue.Abandon(err)
	}
	// The scheduler resumes at the clusterAffinities term it last
	// scheduled the binding under, never one before it.
	req.ObservedAffinityName = k.status(obj).SchedulerObservedAffinityName
	res, fleet, err := c.check(ctx, spec, req, &cl, logger)
	if err != nil {
		return err
	}
	// One eviction per graceful eviction task: a binding may leave
	// several clusters, each with room of its own held.
	hold := holdKey(it.Key, it.Cluster)
	if ledger := c.opts.Ledger; ledger != nil {
		res = ledger.Admit(c.opts.Clock.Now(), hold, res, fleet.summary, spec.ReplicaRequirements)
	}
	if !res.Feasible {
		c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, string(res.Code), eventActionEvict,
			"not evicted from cluster %s: %s", it.Cluster, res.Reason)
		why := fmt.Errorf("controllers: %s from %s: %s", it.Key, it.Cluster, res.Reason)
		if res.Code == prescheduling.AwaitingCapacity {
			// The room frees as the summaries catch up, which the
			// Ledger learns only when asked again.
			return evictionqueue.RetryAfter(min(res.RetryAfter, c.opts.ClusterStatusUpdateFrequency), why)
		}
		// Decided again when the fleet changes so that it may help, and
		// at the latest after RefusalRecheck (EvictionController.recheck).
		k.refused.add(it)
		return evictionqueue.Abandon(why)
	}

	// Move the cluster into a graceful eviction task, over exactly the
	// object decided and checked on: a conflict means another writer came
	// between, and the next attempt decides again on what it left.
	b, err := k.toLib(obj)
	if err == nil {
		var task gracefulevict.Task
		if task, err = c.task(spec, k.status(obj), it.Cluster, d.Reason); err == nil {
			karmada.ApplyBinding(spec, gracefulevict.Evict(b, it.Cluster, task))
			err = c.client.Update(ctx, obj, client.FieldOwner(FieldManager))
		}
	}
	if err != nil {
		if c.opts.Ledger != nil {
			c.opts.Ledger.Release(hold) // nothing moves: the room is free
		}
		if apierrors.IsNotFound(err) {
			c.bindingGone(k, it.Key)
			return evictionqueue.Skip(fmt.Errorf("binding %s is gone", it.Key))
		}
		return err
	}
	k.refused.forget(it)
	logger.Info("evicted", "why", d.Reason)
	c.recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventReasonEvicted, eventActionEvict,
		"moved off cluster %s into a graceful eviction task: %s", it.Cluster, d.Reason)
	// In flight until the task ends (EvictionController.Ended) or
	// EvictionOptions.InFlightTTL passes.
	return evictionqueue.ErrInProgress
}

// check runs the pre-scheduling check for req on the fleet as the Fleet
// holds it (karmada.Fleet.Check, on its index), with evicting (read fresh)
// in place of the Fleet's copy. The cache may lag behind the
// API server, so the clusters a feasible answer relies on, those it moves
// replicas to, are then read fresh and the check run again on them, until
// every cluster it relies on was read fresh: a handful of reads, not the
// fleet. A cluster already tainted in the API server, not yet in the
// cache, is so never taken for a target.
func (c *EvictionController) check(ctx context.Context, spec *workv1alpha2.ResourceBindingSpec, req prescheduling.Request, evicting *clusterv1alpha1.Cluster, logger logr.Logger) (prescheduling.Result, *fleetView, error) {
	fleet := checkView(c.fleet)
	fleet.put(evicting, logger)
	fresh := map[string]bool{evicting.Name: true}
	for round := 0; ; round++ {
		res := fleet.check(req, spec.ReplicaRequirements)
		if !res.Feasible {
			return res, fleet, nil
		}
		var stale []string
		for _, m := range res.Moves {
			if !fresh[m.Name] {
				stale = append(stale, m.Name)
			}
		}
		if len(stale) == 0 {
			return res, fleet, nil
		}
		if round == maxConfirmRounds {
			return prescheduling.Result{}, nil, fmt.Errorf("controllers: the clusters the check picks kept changing over %d rounds of fresh reads", round)
		}
		for _, name := range stale {
			var cl clusterv1alpha1.Cluster
			switch err := c.reader.Get(ctx, types.NamespacedName{Name: name}, &cl); {
			case apierrors.IsNotFound(err):
				fleet.drop(name)
			case err != nil:
				return prescheduling.Result{}, nil, err
			default:
				fleet.put(&cl, logger)
			}
			fresh[name] = true
		}
	}
}

// bindingGone gives back what is held for the binding key of kind k, which
// is gone: the room held for its evictions in flight, and its refusals.
func (c *EvictionController) bindingGone(k *kind, key string) {
	k.refused.forgetBinding(key)
	k.inTransit.forgetBinding(key)
	if l := c.opts.Ledger; l != nil {
		for _, h := range l.Keys(c.opts.Clock.Now()) {
			if b, _, ok := splitHoldKey(h); ok && b == key {
				l.Release(h)
			}
		}
	}
}

// holdKey names the room the Ledger holds for the eviction of the binding
// key from cluster, which the graceful eviction task from cluster gives
// back. No Kubernetes name holds "@".
func holdKey(key, cluster string) string { return key + "@" + cluster }

// splitHoldKey is holdKey's inverse.
func splitHoldKey(h string) (key, cluster string, ok bool) {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i] == '@' {
			return h[:i], h[i+1:], true
		}
	}
	return "", "", false
}

// task is the graceful eviction task for cluster, as Karmada v1.18's taint
// manager writes it: producer TaintManager, reason TaintUntolerated, the
// purge mode karmada.EvictionPurgeMode derives, and with
// StatefulFailoverInjection the state spec.failover.cluster preserves (an
// error while it cannot be read: the eviction is retried, as in Karmada).
// gracefulevict.Evict sets FromCluster and carries the replicas over. Two
// fields Karmada leaves for later are set at once: the creation time (the
// grace period counts from the eviction) and, as the message, why.
func (c *EvictionController) task(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, cluster, why string) (gracefulevict.Task, error) {
	now := metav1.NewTime(c.opts.Clock.Now())
	t := gracefulevict.Task{
		PurgeMode:         karmada.EvictionPurgeMode(spec.Failover, string(c.opts.NoExecuteTaintEvictionPurgeMode)),
		Reason:            karmada.TaintUntoleratedReason,
		Message:           why,
		Producer:          karmada.TaintManagerProducer,
		CreationTimestamp: &now,
	}
	if c.opts.StatefulFailoverInjection && spec.Failover != nil && spec.Failover.Cluster != nil {
		state, err := karmada.PreservedLabelState(spec.Failover.Cluster, status.AggregatedStatus, cluster)
		if err != nil {
			return gracefulevict.Task{}, err
		}
		t.PreservedLabelState = state
	}
	return t, nil
}

package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/prescheduling"
)

// eventActionEvict is the action of the Warning Events on a binding not
// evicted, whose reason is the prescheduling.Code of the check that said
// no. An eviction written records no Event: its graceful eviction task's
// message says why, and at a storm's rate an Event each would double the
// writes the evictions send the API server (Karmada's taint manager records
// none either).
const eventActionEvict = "Evict"

// evictHandler is run by k's eviction queue once the Limiter grants a
// permit. Each attempt reads, decides and ends in one write at most; a
// conflict on that write starts a new attempt from the top, so every write
// is preceded by a decision and a check on exactly what it overwrites. The
// first attempt reads the binding from the cache, as the taint manager
// that queued it did: the write carries its resourceVersion, so a stale
// copy is a conflict and the next attempt reads the binding from the API
// server. The Cluster is read from the API server each time.
func (c *EvictionController) evictHandler(k *kind) evictionqueue.Handler {
	return func(ctx context.Context, it evictionqueue.Item) error {
		key, err := objectKey(it.Key)
		if err != nil {
			return evictionqueue.Abandon(err)
		}
		logger := log.FromContext(ctx).WithValues("queue", k.queue, "binding", it.Key, "cluster", it.Cluster)
		var result error
		var src client.Reader = c.client
		var sent requests
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			result = c.attempt(ctx, k, it, key, src, &sent, logger)
			src = c.reader
			sent.readBinding = true // from the API server from now on
			return result
		})
		c.requests.APIRequests(k.queue, "get", sent.gets)
		c.requests.APIRequests(k.queue, "update", sent.updates)
		if apierrors.IsConflict(err) {
			return err // every attempt conflicted: retried with backoff
		}
		return result
	}
}

// attempt is one pass of the handler: decide again on current reads, check,
// hold room, write (engine.Evictor.Evict decides, checks and holds; this
// reads, records and writes). It returns the handler's result: ErrInProgress
// once the task is written, or found written already (the eviction is in
// flight until the task ends), Skip when there is nothing to do, Park at a
// gate when the check says no or waits for room, an operator's freeze holds
// it back (EvictionOptions.Freeze) or the binding's budget of clusters in
// transit is used up (EvictionOptions.MaxClustersInTransit), Abandon for a
// bad request, RetryAfter when the fresh reads do not confirm the check, a
// conflict for another attempt, another error to retry with backoff.
//
// The binding is read from bindings: the cache first, the API server after
// a conflict.
func (c *EvictionController) attempt(ctx context.Context, k *kind, it evictionqueue.Item, key types.NamespacedName, bindings client.Reader, sent *requests, logger logr.Logger) error {
	// An operator's freeze holds every eviction back before anything is
	// read: the item parks at the freeze's gate, its permit back, and is
	// decided again at once when the freeze thaws (thawed).
	if err := c.heldByFreeze(); err != nil {
		return err
	}
	// The item may have waited long, and the cache may lag: decide on the
	// Cluster as the API server holds it now, and on a binding the write
	// confirms (its resourceVersion) or reads fresh after a conflict. A
	// cluster that recovered meanwhile, or a binding that moved or now
	// tolerates the taint, is left alone; a binding the cache shows moved
	// or tolerating too early is queued again by the taint manager when the
	// cache catches up.
	var cl clusterv1alpha1.Cluster
	sent.gets++
	if err := c.reader.Get(ctx, types.NamespacedName{Name: it.Cluster}, &cl); err != nil {
		if apierrors.IsNotFound(err) {
			return evictionqueue.Skip(fmt.Errorf("cluster %s is gone", it.Cluster))
		}
		return err
	}
	obj := k.new()
	if sent.readBinding {
		sent.gets++
	}
	if err := bindings.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			c.bindingGone(k, it.Key)
			return evictionqueue.Skip(fmt.Errorf("binding %s is gone", it.Key))
		}
		return err
	}
	// Already evicted from the cluster (a taint manager's task from it, the
	// binding off it): this controller's earlier write, a predecessor's or
	// Karmada's, which a new leader's queue may hold queued as well as the
	// task (takeOver) or the cache showed too late. It is in flight: it
	// belongs to this item until its task ends, with the room its replicas
	// take held again as a take-over holds it. Decided again instead, on a
	// stale copy, it would hold that room under the same key and give it
	// back when its write conflicted.
	if t := taintManagerTask(k.spec(obj), it.Cluster); t != nil && !k.spec(obj).TargetContains(it.Cluster) {
		return inFlight(t, c.restore(ctx, obj, k.spec(obj), k.status(obj), *t))
	}
	ev := c.evictor
	step, err := ev.Evict(logr.NewContext(ctx, logger), c.opts.Clock.Now(), it.Key, obj, &cl, sent.counting(c.confirm))
	if step.BudgetErr != nil {
		_, err := c.transitBudget(obj) // the path's error, in the controller's words
		c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonInvalidTransitBudget, eventActionEvict, "%v", err)
		logger.Error(err, "a bad budget of clusters in transit")
	}
	if err != nil {
		return err
	}
	res := step.Result
	switch step.Action {
	case engine.EvictionSkip:
		return evictionqueue.Skip(errors.New(step.Why))
	case engine.EvictionInvalid:
		if res.Code == prescheduling.InvalidRequest {
			c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, string(prescheduling.InvalidRequest), eventActionEvict,
				"not evicted from cluster %s: %v", it.Cluster, step.Err)
		}
		return evictionqueue.Abandon(step.Err)
	case engine.EvictionStays:
		logger.V(1).Info("no longer to be evicted", "why", step.Decision.Reason)
		return evictionqueue.Skip(errors.New(step.Decision.Reason))
	case engine.EvictionWaitForBudget:
		open, budget := step.InTransit, step.Budget
		c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonClustersInTransit, eventActionEvict,
			"not evicted from cluster %s yet: %d of at most %d clusters in transit (%s)", it.Cluster, len(open), budget, strings.Join(open, ", "))
		return evictionqueue.Park(engine.TransitGate(it.Key), c.transitRetry(),
			fmt.Errorf("controllers: %s from %s waits: %d of at most %d clusters in transit", it.Key, it.Cluster, len(open), budget))
	case engine.EvictionWaitForRoom, engine.EvictionRefused:
		c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, string(res.Code), eventActionEvict,
			"not evicted from cluster %s: %s", it.Cluster, res.Reason)
		why := fmt.Errorf("controllers: %s from %s: %s", it.Key, it.Cluster, res.Reason)
		if step.Action == engine.EvictionWaitForRoom {
			// The room frees as the summaries catch up, which the
			// Ledger learns only when asked again: at the next change
			// of a summary (recheck opens the gate), in its place in
			// line, or when the first hold in the way may end.
			return evictionqueue.Park(engine.RoomGate, min(res.RetryAfter, c.opts.ClusterStatusUpdateFrequency), why)
		}
		// Decided again when the fleet changes so that it may help
		// (recheck opens the gate), and after RefusalRecheck at the
		// latest: a change while this call decided included.
		return evictionqueue.Park(engine.RefusedGate, c.opts.RefusalRecheck, why)
	case engine.EvictionUnconfirmed:
		// The Fleet lags behind the clusters it relies on, or the
		// placement needs more read than an eviction reads: decided again
		// once the informer has caught up, without a failure or a permit.
		c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, string(res.Code), eventActionEvict,
			"not evicted from cluster %s yet: %s", it.Cluster, res.Reason)
		return evictionqueue.RetryAfter(c.unconfirmedRetry(), fmt.Errorf("controllers: %s from %s: %s", it.Key, it.Cluster, res.Reason))
	case engine.EvictionEvict:
	default:
		return fmt.Errorf("controllers: %s from %s: unknown step %v", it.Key, it.Cluster, step.Action)
	}

	// A freeze set while this attempt read and decided stops its write:
	// nothing moves, so the room held goes back.
	if err := c.heldByFreeze(); err != nil {
		step.Hold.Release()
		return err
	}
	// The spec now holds the graceful eviction task: write exactly the
	// object decided and checked on. A conflict means another writer came
	// between, and the next attempt decides again on what it left.
	sent.updates++
	if err := c.client.Update(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
		step.Hold.Release() // nothing moves: the room is free
		if apierrors.IsNotFound(err) {
			c.bindingGone(k, it.Key)
			return evictionqueue.Skip(fmt.Errorf("binding %s is gone", it.Key))
		}
		return err
	}
	logger.Info("evicted", "why", step.Decision.Reason)
	if step.RecordErr != nil {
		c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonInvalidFailoverRecord, eventActionEvict,
			"%v: replaced with a record of this failover from %s", step.RecordErr, it.Cluster)
		logger.Error(step.RecordErr, "a bad failover record, replaced")
	}
	// In flight, with the room it holds, until the binding's reconcile sees
	// its task gone (endRemoved) or EvictionOptions.InFlightTTL passes.
	return inFlight(taintManagerTask(k.spec(obj), it.Cluster), step.Hold)
}

// heldByFreeze is the handler's result when an operator's freeze holds
// evictions back now (parked at engine.FreezeGate, with no failure counted, until
// the freeze may lapse or thaws), and nil when none does.
func (c *EvictionController) heldByFreeze() error {
	f := c.freeze.check()
	if !f.frozen {
		return nil
	}
	return evictionqueue.Park(engine.FreezeGate, f.retryAfter(c.opts.Clock.Now()),
		fmt.Errorf("controllers: evictions frozen by ConfigMap %s: %s", c.opts.Freeze, f.why))
}

// confirm is the decision path's engine.Confirm: the clusters a check's
// approval relies on, read fresh from the API server, nil for one that is
// gone.
func (c *EvictionController) confirm(ctx context.Context, names []string) ([]*clusterv1alpha1.Cluster, error) {
	out := make([]*clusterv1alpha1.Cluster, len(names))
	for i, name := range names {
		var cl clusterv1alpha1.Cluster
		switch err := c.reader.Get(ctx, types.NamespacedName{Name: name}, &cl); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		default:
			out[i] = &cl
		}
	}
	return out, nil
}

// requests counts what one handler call sends the API server, for
// eviction_api_requests_total: the Cluster it leaves, the clusters the
// check's approval relies on (at most engine.MaxConfirmReads), the binding
// after a conflict (the first attempt reads the cache), and the write.
type requests struct {
	gets, updates int
	readBinding   bool // the binding is read from the API server
}

// counting is confirm, counting its reads.
func (r *requests) counting(confirm engine.Confirm) engine.Confirm {
	return func(ctx context.Context, names []string) ([]*clusterv1alpha1.Cluster, error) {
		r.gets += len(names)
		return confirm(ctx, names)
	}
}

// requestMetrics is the metric of the requests sent: *metrics.Metrics.
type requestMetrics interface {
	APIRequests(queue, verb string, n int)
}

// bindingGone gives back what is held for the binding key of kind k, which
// is gone: its evictions in flight end (their slots in the queue and the
// room held for them). Its items parked at a gate are decided again when
// it opens or their wait ends, and then skipped.
func (c *EvictionController) bindingGone(k *kind, key string) {
	if k.q != nil {
		for _, f := range k.q.Flights(key) {
			k.q.EndFlight(f)
		}
	}
	if l := c.opts.Ledger; l != nil {
		l.ReleaseWorkload(c.opts.Clock.Now(), key)
	}
}

// unconfirmedRetry is how long an eviction whose check the fresh reads did
// not confirm waits before it is decided again: the informer's lag is
// usually gone by then, and a placement that needs more clusters read than
// an eviction reads costs the API server a few reads that often, no more.
func (c *EvictionController) unconfirmedRetry() time.Duration {
	return min(c.opts.ClusterStatusUpdateFrequency, maxTransitRetry)
}

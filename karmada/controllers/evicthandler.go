package controllers

import (
	"context"
	"errors"
	"fmt"

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

// evictHandler is run by k's eviction queue once the Limiter grants a
// permit.
func (c *EvictionController) evictHandler(k *kind) evictionqueue.Handler {
	return func(ctx context.Context, it evictionqueue.Item) error {
		key, err := objectKey(it.Key)
		if err != nil {
			return evictionqueue.Abandon(err)
		}
		logger := log.FromContext(ctx).WithValues("queue", k.queue, "binding", it.Key, "cluster", it.Cluster)

		// The item may have waited long: decide again on what the API
		// server holds now. A cluster that recovered meanwhile, or a
		// binding that moved or now tolerates the taint, is left alone.
		var cl clusterv1alpha1.Cluster
		if err := c.reader.Get(ctx, types.NamespacedName{Name: it.Cluster}, &cl); err != nil {
			return client.IgnoreNotFound(err)
		}
		obj := k.new()
		if err := c.reader.Get(ctx, key, obj); err != nil {
			return client.IgnoreNotFound(err)
		}
		spec := k.spec(obj)
		if !spec.TargetContains(it.Cluster) || !obj.GetDeletionTimestamp().IsZero() {
			return nil
		}
		d, err := c.decide(obj, spec, &cl)
		if err != nil {
			return evictionqueue.Abandon(err)
		}
		if !d.Evict {
			logger.V(1).Info("no longer to be evicted", "why", d.Reason)
			return nil
		}

		// Is there somewhere to go?
		clusters, fleet, err := fleet(ctx, c.client, logger)
		if err != nil {
			return err
		}
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
		checker, err := prescheduling.NewChecker(prescheduling.WithCapacity(karmada.Capacity(clusters, spec.ReplicaRequirements)))
		if err != nil {
			return evictionqueue.Abandon(err) // the same options fail every time
		}
		res := checker.Check(req, fleet)
		// One eviction per graceful eviction task: a binding may leave
		// several clusters, each with room of its own held.
		hold := holdKey(it.Key, it.Cluster)
		if ledger := c.opts.Ledger; ledger != nil {
			res = ledger.Admit(c.opts.Clock.Now(), hold, res, clusters, spec.ReplicaRequirements)
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
			return evictionqueue.Abandon(why)
		}

		// Move the cluster into a graceful eviction task. On a conflict
		// read the binding again and decide again on what the other
		// writer left, so its change is kept: if it moved the binding off
		// the cluster, made it tolerate the taint or deleted it, nothing
		// is evicted here, moved stays false and no Event says otherwise.
		moved, reread := false, false
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if !spec.TargetContains(it.Cluster) || !obj.GetDeletionTimestamp().IsZero() {
				return nil
			}
			if reread {
				var err error
				if d, err = c.decide(obj, spec, &cl); err != nil {
					return evictionqueue.Abandon(err)
				}
				if !d.Evict {
					logger.V(1).Info("no longer to be evicted", "why", d.Reason)
					return nil
				}
			}
			b, err := k.toLib(obj)
			if err != nil {
				return err
			}
			task, err := c.task(spec, k.status(obj), it.Cluster, d.Reason)
			if err != nil {
				return err
			}
			karmada.ApplyBinding(spec, gracefulevict.Evict(b, it.Cluster, task))
			err = c.client.Update(ctx, obj, client.FieldOwner(FieldManager))
			if apierrors.IsConflict(err) {
				obj = k.new()
				if gerr := c.reader.Get(ctx, key, obj); gerr != nil {
					return gerr
				}
				spec, reread = k.spec(obj), true
			}
			moved = err == nil
			return err
		})
		if err != nil || !moved {
			if c.opts.Ledger != nil {
				c.opts.Ledger.Release(hold) // nothing moves: the room is free
			}
			return client.IgnoreNotFound(err)
		}
		logger.Info("evicted", "why", d.Reason)
		c.recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventReasonEvicted, eventActionEvict,
			"moved off cluster %s into a graceful eviction task: %s", it.Cluster, d.Reason)
		return nil
	}
}

// holdKey names the room the Ledger holds for the eviction of the binding
// key from cluster, which the graceful eviction task from cluster gives
// back. No Kubernetes name holds "@".
func holdKey(key, cluster string) string { return key + "@" + cluster }

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

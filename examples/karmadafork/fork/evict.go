package fork

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

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/prescheduling"
)

// The task fields Karmada's taint manager writes
// (workv1alpha2.EvictionProducerTaintManager, EvictionReasonTaintUntolerated).
const (
	evictionProducer = "TaintManager"
	evictionReason   = "TaintUntolerated"
)

// Event reasons and actions on a binding.
const (
	eventActionEvict = "Evict"
	// EventReasonEvicted is the reason of the Normal Event on a binding
	// moved off a cluster. Not evicted, the Warning Event's reason is the
	// prescheduling.Code of the check that said no.
	EventReasonEvicted = "EvictedFromCluster"
)

// evictHandler is reconciler 3, run by k's eviction queue once the Limiter
// grants a permit.
func (f *forker) evictHandler(k *kind) evictionqueue.Handler {
	return func(ctx context.Context, it evictionqueue.Item) error {
		key, err := objectKey(it.Key)
		if err != nil {
			return evictionqueue.Abandon(err)
		}
		logger := log.FromContext(ctx).WithValues("queue", k.name, "binding", it.Key, "cluster", it.Cluster)

		// The item may have waited long: decide again on what the API
		// server holds now. A cluster that recovered meanwhile, or a
		// binding that moved or now tolerates the taint, is left alone.
		var c clusterv1alpha1.Cluster
		if err := f.reader.Get(ctx, types.NamespacedName{Name: it.Cluster}, &c); err != nil {
			return client.IgnoreNotFound(err)
		}
		obj := k.new()
		if err := f.reader.Get(ctx, key, obj); err != nil {
			return client.IgnoreNotFound(err)
		}
		spec := k.spec(obj)
		if !scheduledOn(spec, it.Cluster) || !obj.GetDeletionTimestamp().IsZero() {
			return nil
		}
		d, err := f.decide(obj, spec, &c)
		if err != nil {
			return evictionqueue.Abandon(err)
		}
		if !d.Evict {
			logger.V(1).Info("no longer to be evicted", "why", d.Reason)
			return nil
		}

		// Is there somewhere to go?
		var clusters clusterv1alpha1.ClusterList
		if err := f.client.List(ctx, &clusters); err != nil {
			return err
		}
		fleet := make([]failover.Cluster, 0, len(clusters.Items))
		for i := range clusters.Items {
			fc, err := karmada.FromCluster(&clusters.Items[i])
			if err != nil {
				// A cluster whose taints cannot be read is no target.
				logger.Error(err, "cluster left out of the fleet")
				continue
			}
			fleet = append(fleet, fc)
		}
		req, err := karmada.PreschedulingRequest(spec, it.Cluster)
		var loss *karmada.LossError
		if err != nil && !errors.As(err, &loss) {
			f.recorder.Eventf(obj, nil, corev1.EventTypeWarning, string(prescheduling.InvalidRequest), eventActionEvict,
				"not evicted from cluster %s: %v", it.Cluster, err)
			return evictionqueue.Abandon(err)
		}
		checker, err := prescheduling.NewChecker(prescheduling.WithCapacity(karmada.Capacity(clusters.Items, spec.ReplicaRequirements)))
		if err != nil {
			return err
		}
		res := checker.Check(req, fleet)
		if !res.Feasible {
			f.recorder.Eventf(obj, nil, corev1.EventTypeWarning, string(res.Code), eventActionEvict,
				"not evicted from cluster %s: %s", it.Cluster, res.Reason)
			return evictionqueue.Abandon(fmt.Errorf("fork: %s from %s: %s", it.Key, it.Cluster, res.Reason))
		}

		// Move the cluster into a graceful eviction task. On a conflict
		// read the binding again and decide again on what the other
		// writer left, so its change is kept: if it moved the binding off
		// the cluster, made it tolerate the taint or deleted it, nothing
		// is evicted here, moved stays false and no Event says otherwise.
		moved, reread := false, false
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if !scheduledOn(spec, it.Cluster) || !obj.GetDeletionTimestamp().IsZero() {
				return nil
			}
			if reread {
				var err error
				if d, err = f.decide(obj, spec, &c); err != nil {
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
			karmada.ApplyBinding(spec, gracefulevict.Evict(b, it.Cluster, f.task(spec, d.Reason)))
			err = f.client.Update(ctx, obj, client.FieldOwner(FieldManager))
			if apierrors.IsConflict(err) {
				obj = k.new()
				if gerr := f.reader.Get(ctx, key, obj); gerr != nil {
					return gerr
				}
				spec, reread = k.spec(obj), true
			}
			moved = err == nil
			return err
		})
		if err != nil || !moved {
			return client.IgnoreNotFound(err)
		}
		logger.Info("evicted", "why", d.Reason)
		f.recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventReasonEvicted, eventActionEvict,
			"moved off cluster %s into a graceful eviction task: %s", it.Cluster, d.Reason)
		return nil
	}
}

// task is the graceful eviction task gracefulevict.Evict gives the
// cluster, as Karmada's taint manager fills it: the purge mode of
// spec.failover.cluster (Gracefully when it names none), else the configured
// NoExecute purge mode. Evict sets FromCluster and carries the replicas over.
func (f *forker) task(spec *workv1alpha2.ResourceBindingSpec, why string) gracefulevict.Task {
	mode := f.opts.NoExecuteTaintEvictionPurgeMode
	if spec.Failover != nil && spec.Failover.Cluster != nil {
		mode = failover.PurgeModeGracefully
		if spec.Failover.Cluster.PurgeMode != "" {
			mode = failover.PurgeMode(spec.Failover.Cluster.PurgeMode)
		}
	}
	now := metav1.NewTime(f.opts.Now())
	return gracefulevict.Task{
		PurgeMode:         mode,
		Reason:            evictionReason,
		Message:           why,
		Producer:          evictionProducer,
		CreationTimestamp: &now,
	}
}

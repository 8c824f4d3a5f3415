package controllers

import (
	"context"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/karmada"
)

// TaintManagerName prefixes the names of the EvictionController's
// controller-runtime controllers (the controller label of
// controller-runtime's own series): TaintManagerName for Clusters, and
// TaintManagerName-resourcebinding and -clusterresourcebinding.
const TaintManagerName = "failover-taint-manager"

// taintsChanged lets a Cluster's update through only when its spec.taints
// changed: of a Cluster, the reconcilers here read only the taints
// (ClusterFaulty, decide; the disruption domains are read by the queues and
// the fleet health source, not here). Karmada's cluster status controller
// updates every Cluster's status every --cluster-status-update-frequency,
// which would otherwise reconcile every binding on it each time. Creations,
// deletions and generic events pass.
var taintsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok := e.ObjectOld.(*clusterv1alpha1.Cluster)
		cur, ok2 := e.ObjectNew.(*clusterv1alpha1.Cluster)
		return !ok || !ok2 || !apiequality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints)
	},
}

// roomChanged lets a Cluster's update through when its resource summary
// changed: room that appears may change the answer of a refused eviction.
var roomChanged = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	DeleteFunc: func(event.DeleteEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok := e.ObjectOld.(*clusterv1alpha1.Cluster)
		cur, ok2 := e.ObjectNew.(*clusterv1alpha1.Cluster)
		return ok && ok2 && !apiequality.Semantic.DeepEqual(old.Status.ResourceSummary, cur.Status.ResourceSummary)
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// setupRecovery adds the Cluster side: a cluster that is no longer faulty
// (or is gone) cancels its items still queued for eviction, and a change
// of the fleet that may give a refused eviction somewhere to go (a cluster
// no longer faulty, a new one, a resource summary that changed) decides
// the refused evictions again.
func (c *EvictionController) setupRecovery(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(TaintManagerName).
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(predicate.Or(taintsChanged, roomChanged))).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var cl clusterv1alpha1.Cluster
			err := c.client.Get(ctx, req.NamespacedName, &cl)
			switch {
			case err != nil && !apierrors.IsNotFound(err):
				return reconcile.Result{}, err
			case err == nil && ClusterFaulty(&cl):
				c.setFaulty(req.Name, true)
				return reconcile.Result{}, nil
			}
			for _, k := range c.kinds {
				if n := k.q.CancelCluster(req.Name); n > 0 {
					log.FromContext(ctx).Info("cluster recovered: queued evictions cancelled", "queue", k.queue, "cancelled", n)
				}
				k.refused.forgetCluster(req.Name)
				k.inTransit.forgetCluster(req.Name)
			}
			recovered := c.setFaulty(req.Name, false)
			switch {
			case err != nil: // gone: no target
			case recovered:
				// A target again for what was refused: decide now.
				c.recheck()
			default:
				// New, or with room it may have lacked: every cluster
				// reports its summary often, so at most once a report.
				c.recheckOnRoom()
			}
			return reconcile.Result{}, nil
		}))
}

// setupTaintManager adds the reconciler of one binding kind: it reconciles
// a binding when it changes and when the taints of a cluster of its
// schedule result do.
func (c *EvictionController) setupTaintManager(mgr manager.Manager, k *kind) error {
	byCluster := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list := k.list()
		if err := c.client.List(ctx, list, client.MatchingFields{clusterIndex: o.GetName()}); err != nil {
			log.FromContext(ctx).Error(err, "listing bindings of a cluster", "cluster", o.GetName())
			return nil
		}
		var out []reconcile.Request
		_ = meta.EachListItem(list, func(b runtime.Object) error { // fails only on a list without Items
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(b.(client.Object))})
			return nil
		})
		return out
	})
	return builder.ControllerManagedBy(mgr).
		Named(TaintManagerName+"-"+k.name).
		For(k.new()).
		Watches(&clusterv1alpha1.Cluster{}, byCluster, builder.WithPredicates(taintsChanged)).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return c.manageTaints(ctx, k, req.NamespacedName)
		}))
}

// manageTaints decides, for each cluster of the binding's schedule result,
// whether the binding leaves it: now puts it into the kind's eviction queue,
// later reconciles the binding again at the earliest deadline, never does
// nothing. A decision that fails (an applied placement that cannot be read)
// is retried with the controller's backoff, as Karmada's taint manager
// retries it, and the binding stays.
func (c *EvictionController) manageTaints(ctx context.Context, k *kind, key types.NamespacedName) (reconcile.Result, error) {
	obj := k.new()
	if err := c.client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone: nothing is held for it any more.
			c.bindingGone(k, itemKey(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}))
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return reconcile.Result{}, nil
	}
	spec := k.spec(obj)
	var after time.Duration
	for _, target := range spec.Clusters {
		var cl clusterv1alpha1.Cluster
		if err := c.client.Get(ctx, types.NamespacedName{Name: target.Name}, &cl); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return reconcile.Result{}, err
		}
		d, err := c.decide(obj, spec, &cl)
		if err != nil {
			return reconcile.Result{}, err
		}
		switch {
		case d.Evict:
			if k.q.Add(evictionqueue.Item{Cluster: target.Name, Key: itemKey(obj), ResourceKind: resourceKind(spec)}) {
				log.FromContext(ctx).V(1).Info("queued for eviction", "cluster", target.Name, "why", d.Reason)
			}
		case d.After > 0 && (after == 0 || d.After < after):
			after = d.After
		}
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// decide is failover.DecideEviction for one binding on one cluster, as
// Karmada's taint manager decides for NoExecute taints: only with
// EnableNoExecuteTaintEviction (without, they are left out), judged
// against the tolerations of the applied placement, which are read only
// when a NoExecute taint is left to judge. PreferNoExecute taints follow
// spec.failover.cluster.
func (c *EvictionController) decide(obj client.Object, spec *workv1alpha2.ResourceBindingSpec, cl *clusterv1alpha1.Cluster) (failover.EvictionDecision, error) {
	return karmada.DecideBindingEviction(obj.GetAnnotations(), spec, cl, c.opts.EnableNoExecuteTaintEviction, c.opts.Clock.Now())
}

package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
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
// controller-runtime's own series): TaintManagerName for Clusters,
// TaintManagerName-resourcebinding and -clusterresourcebinding for the
// bindings, and TaintManagerName-resourcebinding-by-cluster and
// -clusterresourcebinding-by-cluster for the bindings of a Cluster whose
// taints changed.
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
			return c.clusterChanged(ctx, req.Name)
		}))
}

// clusterChanged is setupRecovery's reconcile of the Cluster named name.
func (c *EvictionController) clusterChanged(ctx context.Context, name string) (reconcile.Result, error) {
	var cl clusterv1alpha1.Cluster
	err := c.client.Get(ctx, types.NamespacedName{Name: name}, &cl)
	if err == nil {
		// What follows may wake refusals, decided on the Fleet: it must
		// hold this change first.
		if synced, ok := catchUpFleet(ctx, c.client, c.fleet, name, log.FromContext(ctx)); ok {
			cl = *synced
		}
	}
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return reconcile.Result{}, err
	case err == nil && ClusterFaulty(&cl):
		c.setFaulty(name, true)
		// Its room still steers the scheduler: a faulty cluster that
		// reports less room may no longer be where an Aggregated
		// placement would go, and a refusal for it may go elsewhere now.
		c.recheckOnRoom()
		return reconcile.Result{}, nil
	}
	for _, k := range c.kinds {
		if n := k.q.CancelCluster(name); n > 0 {
			log.FromContext(ctx).Info("cluster recovered: queued evictions cancelled", "queue", k.queue, "cancelled", n)
		}
	}
	recovered := c.setFaulty(name, false)
	// A cluster that loses its last NoSchedule taint is a target
	// again too, though it was never faulty.
	if c.setUnschedulable(name, err == nil && unschedulable(&cl)) && (err != nil || !unschedulable(&cl)) {
		recovered = true
	}
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
}

// unschedulable reports whether cl has a NoSchedule taint: the scheduler
// puts nothing new there unless tolerated.
func unschedulable(cl *clusterv1alpha1.Cluster) bool {
	return slices.ContainsFunc(cl.Spec.Taints, func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoSchedule })
}

// setupTaintManager adds the reconcilers of one binding kind: one
// reconciles a binding when it changes, the other a Cluster's bindings of
// the kind when its taints change.
func (c *EvictionController) setupTaintManager(mgr manager.Manager, k *kind) error {
	err := builder.ControllerManagedBy(mgr).
		Named(TaintManagerName + "-" + k.name).
		For(k.new()).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return c.manageTaints(ctx, k, req.NamespacedName)
		}))
	if err != nil {
		return err
	}
	return builder.ControllerManagedBy(mgr).
		Named(TaintManagerName+"-"+k.name+"-by-cluster").
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(taintsChanged)).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return c.manageClusterTaints(ctx, k, req.Name)
		}))
}

// manageTaints decides, for each cluster of the binding's schedule result,
// whether the binding leaves it (judge): now puts it into the kind's
// eviction queue, later reconciles the binding again at the earliest
// deadline, never does nothing. Before, the binding's evictions in flight
// whose graceful eviction tasks another writer removed end (endRemoved), and
// a binding gone ends all of its own (bindingGone). A decision that fails
// (an applied placement that cannot be read) is retried with the
// controller's backoff, as Karmada's taint manager retries it, and the
// binding stays.
//
// It reads the binding and its clusters as the cache holds them, without
// copying them (client.UnsafeDisableDeepCopy), and changes neither.
func (c *EvictionController) manageTaints(ctx context.Context, k *kind, key types.NamespacedName) (reconcile.Result, error) {
	obj := k.new()
	if err := c.client.Get(ctx, key, obj, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone: nothing is held for it any more.
			c.bindingGone(k, itemKey(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}))
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	spec := k.spec(obj)
	again, err := c.endRemoved(ctx, k, obj, spec)
	if err != nil {
		return reconcile.Result{}, err
	}
	var after time.Duration
	if again {
		after = runningRecheck
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return reconcile.Result{RequeueAfter: after}, nil
	}
	for _, target := range spec.Clusters {
		var cl clusterv1alpha1.Cluster
		if err := c.client.Get(ctx, types.NamespacedName{Name: target.Name}, &cl, client.UnsafeDisableDeepCopy); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return reconcile.Result{}, err
		}
		d, err := c.judge(ctx, k, obj, spec, &cl)
		if err != nil {
			return reconcile.Result{}, err
		}
		after = earlier(after, d)
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// manageClusterTaints is manageTaints for every binding of kind k on the
// Cluster named name, after its taints changed, as Karmada's taint manager
// queues a tainted cluster's bindings from its reconcile of the Cluster:
// each binding listed is judged on this cluster, and the Cluster is
// reconciled again at the earliest deadline of a later. A decision that
// fails does not stop the others, and the Cluster is reconciled again with
// the controller's backoff.
//
// A taint on a cluster hosting thousands of bindings judges each one: a
// reconcile of each binding instead, through the controller's queue, cost
// as much again as the decision (BenchmarkReconcileRequest), and copies of
// the binding and the Cluster for each, more than twice what Karmada's
// taint manager spends to queue it (BenchmarkScaleQueueing). It reads the
// cache's own objects (client.UnsafeDisableDeepCopy) and changes none.
func (c *EvictionController) manageClusterTaints(ctx context.Context, k *kind, name string) (reconcile.Result, error) {
	var cl clusterv1alpha1.Cluster
	if err := c.client.Get(ctx, types.NamespacedName{Name: name}, &cl, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err) // gone: its bindings have nothing to leave
	}
	list := k.list()
	if err := c.client.List(ctx, list, client.MatchingFields{clusterIndex: name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	// Queued in the order of their keys, not the cache's (a map's): the
	// bindings a taint queues together go, and so are placed as the room
	// allows, in an order a person and the what-if planner can tell.
	type keyed struct {
		key string
		obj client.Object
	}
	var objs []keyed
	_ = meta.EachListItem(list, func(o runtime.Object) error { // fails only on a list without Items
		if obj := o.(client.Object); obj.GetDeletionTimestamp().IsZero() {
			objs = append(objs, keyed{itemKey(obj), obj})
		}
		return nil
	})
	slices.SortFunc(objs, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	var after time.Duration
	var errs []error
	for _, o := range objs {
		d, err := c.judge(ctx, k, o.obj, k.spec(o.obj), &cl)
		if err != nil {
			errs = append(errs, fmt.Errorf("binding %s: %w", o.key, err))
			continue
		}
		after = earlier(after, d)
	}
	return reconcile.Result{RequeueAfter: after}, errors.Join(errs...)
}

// judge decides whether the binding obj, with spec, leaves cl, and puts it
// into the kind's eviction queue when now.
func (c *EvictionController) judge(ctx context.Context, k *kind, obj client.Object, spec *workv1alpha2.ResourceBindingSpec, cl *clusterv1alpha1.Cluster) (failover.EvictionDecision, error) {
	d, err := c.decide(obj, spec, cl)
	if err != nil {
		return d, err
	}
	if d.Evict && k.q.Add(queueItem(obj, spec, cl.Name)) {
		log.FromContext(ctx).V(1).Info("queued for eviction", "binding", itemKey(obj), "cluster", cl.Name, "why", d.Reason)
	}
	return d, nil
}

// earlier returns the earlier of the deadline after (0: none) and d's
// later, if d is one.
func earlier(after time.Duration, d failover.EvictionDecision) time.Duration {
	if !d.Evict && d.After > 0 && (after == 0 || d.After < after) {
		return d.After
	}
	return after
}

// queueItem is the eviction queue's item for the binding obj, with spec,
// on cluster.
func queueItem(obj client.Object, spec *workv1alpha2.ResourceBindingSpec, cluster string) evictionqueue.Item {
	return evictionqueue.Item{Cluster: cluster, Key: itemKey(obj), ResourceKind: resourceKind(spec)}
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

package fork

import (
	"context"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
)

// setupTaintManager adds reconciler 2 for one binding kind: it reconciles a
// binding when it changes and when a cluster of its schedule result does.
func (f *forker) setupTaintManager(mgr manager.Manager, k *kind) error {
	byCluster := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list := k.list()
		if err := f.client.List(ctx, list, client.MatchingFields{clusterIndex: o.GetName()}); err != nil {
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
		Named("taint-manager-"+k.name).
		For(k.new()).
		Watches(&clusterv1alpha1.Cluster{}, byCluster).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return f.manageTaints(ctx, k, req.NamespacedName)
		}))
}

// manageTaints decides, for each cluster of the binding's schedule result,
// whether the binding leaves it: now puts it into the kind's eviction queue,
// later reconciles the binding again at the earliest deadline, never does
// nothing.
func (f *forker) manageTaints(ctx context.Context, k *kind, key types.NamespacedName) (reconcile.Result, error) {
	obj := k.new()
	if err := f.client.Get(ctx, key, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return reconcile.Result{}, nil
	}
	spec := k.spec(obj)
	var after time.Duration
	for _, target := range spec.Clusters {
		var c clusterv1alpha1.Cluster
		if err := f.client.Get(ctx, types.NamespacedName{Name: target.Name}, &c); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return reconcile.Result{}, err
		}
		d, err := f.decide(obj, spec, &c)
		if err != nil {
			return reconcile.Result{}, err
		}
		switch {
		case d.Evict:
			if k.queue.Add(evictionqueue.Item{Cluster: target.Name, Key: itemKey(obj), ResourceKind: resourceKind(spec)}) {
				log.FromContext(ctx).V(1).Info("queued for eviction", "cluster", target.Name, "why", d.Reason)
			}
		case d.After > 0 && (after == 0 || d.After < after):
			after = d.After
		}
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// decide is failover.DecideEviction for one binding on one cluster, with
// the tolerations of the applied placement and spec.failover.cluster.
// Without EnableNoExecuteTaintEviction, NoExecute taints are left out, as
// Karmada's taint manager ignores them then.
func (f *forker) decide(obj client.Object, spec *workv1alpha2.ResourceBindingSpec, c *clusterv1alpha1.Cluster) (failover.EvictionDecision, error) {
	tols, err := tolerations(obj, spec)
	if err != nil {
		return failover.EvictionDecision{}, err
	}
	fb, err := failoverBehavior(spec)
	if err != nil {
		return failover.EvictionDecision{}, err
	}
	taints := c.Spec.Taints
	if !f.opts.EnableNoExecuteTaintEviction {
		taints = make([]corev1.Taint, 0, len(c.Spec.Taints))
		for _, t := range c.Spec.Taints {
			if t.Effect != corev1.TaintEffectNoExecute {
				taints = append(taints, t)
			}
		}
	}
	return failover.DecideEviction(taints, tols, fb, f.opts.Now()), nil
}

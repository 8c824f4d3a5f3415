package fork

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/taintpolicy"
)

// taintReconciler is reconciler 1: a Cluster's taints from the
// ClusterTaintPolicies and its conditions.
type taintReconciler struct {
	*forker
	eval *taintpolicy.Evaluator

	mu       sync.Mutex
	policies string // the names and resourceVersions eval was last given
}

func (f *forker) setupTaints(mgr manager.Manager, eval *taintpolicy.Evaluator) error {
	r := &taintReconciler{forker: f, eval: eval}
	allClusters := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list clusterv1alpha1.ClusterList
		if err := f.client.List(ctx, &list); err != nil {
			log.FromContext(ctx).Error(err, "listing clusters after a policy change")
			return nil
		}
		out := make([]reconcile.Request, len(list.Items))
		for i := range list.Items {
			out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
		}
		return out
	})
	return builder.ControllerManagedBy(mgr).
		Named("cluster-taints").
		For(&clusterv1alpha1.Cluster{}).
		Watches(&policyv1alpha1.ClusterTaintPolicy{}, allClusters).
		Complete(r)
}

// Reconcile evaluates the cluster and writes its taints when they change;
// it is reconciled again after the Evaluator's RequeueAfter, when a window
// closes.
func (r *taintReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if err := r.syncPolicies(ctx); err != nil {
		return reconcile.Result{}, err
	}
	var c clusterv1alpha1.Cluster
	if err := r.client.Get(ctx, req.NamespacedName, &c); err != nil {
		if apierrors.IsNotFound(err) {
			r.eval.Forget(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	var res taintpolicy.Result
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fc, err := karmada.FromCluster(&c)
		if err != nil {
			return err
		}
		res = r.eval.Evaluate(fc, r.opts.Now())
		if len(res.Added) == 0 && len(res.Removed) == 0 {
			return nil
		}
		if err := karmada.ApplyClusterTaints(&c, res.Taints); err != nil {
			return err
		}
		err = r.client.Update(ctx, &c, client.FieldOwner(FieldManager))
		if apierrors.IsConflict(err) {
			// Another writer changed the cluster: decide again on what it
			// wrote, read from the API server (the cache may not have it).
			if gerr := r.reader.Get(ctx, req.NamespacedName, &c); gerr != nil {
				return gerr
			}
		}
		return err
	})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("cluster %s: %w", req.Name, err)
	}
	if len(res.Added)+len(res.Removed) > 0 {
		log.FromContext(ctx).Info("taints written", "added", res.Added, "removed", res.Removed)
	}
	return reconcile.Result{RequeueAfter: res.RequeueAfter}, nil
}

// syncPolicies gives the Evaluator the policies in the cache when they have
// changed since the last call. A policy that does not convert is left out
// and logged; the others still apply.
func (r *taintReconciler) syncPolicies(ctx context.Context) error {
	var list policyv1alpha1.ClusterTaintPolicyList
	if err := r.client.List(ctx, &list); err != nil {
		return err
	}
	versions := make([]string, len(list.Items))
	for i := range list.Items {
		versions[i] = list.Items[i].Name + "@" + list.Items[i].ResourceVersion
	}
	slices.Sort(versions)
	fingerprint := strings.Join(versions, ",")

	r.mu.Lock()
	defer r.mu.Unlock()
	if fingerprint == r.policies {
		return nil
	}
	policies := make([]taintpolicy.ClusterTaintPolicy, 0, len(list.Items))
	for i := range list.Items {
		p, err := karmada.FromClusterTaintPolicy(&list.Items[i])
		if err != nil {
			log.FromContext(ctx).Error(err, "ClusterTaintPolicy left out", "policy", list.Items[i].Name)
			continue
		}
		policies = append(policies, p)
	}
	if err := r.eval.SetPolicies(policies); err != nil {
		return err
	}
	r.policies = fingerprint
	return nil
}

// setupRecovery adds the taint manager's cluster side: a cluster that is no
// longer faulty (or is gone) cancels its items still queued for eviction.
func (f *forker) setupRecovery(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named("cluster-recovery").
		For(&clusterv1alpha1.Cluster{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var c clusterv1alpha1.Cluster
			if err := f.client.Get(ctx, req.NamespacedName, &c); err != nil && !apierrors.IsNotFound(err) {
				return reconcile.Result{}, err
			} else if err == nil {
				fc, err := karmada.FromCluster(&c)
				if err != nil || failover.IsFaulty(fc) {
					return reconcile.Result{}, err
				}
			}
			for _, k := range f.kinds {
				if n := k.queue.CancelCluster(req.Name); n > 0 {
					log.FromContext(ctx).Info("cluster recovered: queued evictions cancelled", "queue", k.name, "cancelled", n)
				}
			}
			return reconcile.Result{}, nil
		}))
}

package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/taintpolicy"
)

// ClusterTaintPolicyName is the name of the ClusterTaintPolicyController's
// controller-runtime controller.
const ClusterTaintPolicyName = "failover-cluster-taint-policy"

// ClusterTaintPolicyOptions tune the ClusterTaintPolicyController. The zero
// value of each field means the default stated beside it.
type ClusterTaintPolicyOptions struct {
	// Clock is the clock of the condition windows. Default the real clock.
	Clock clock.PassiveClock
}

// ClusterTaintPolicyController replaces Karmada's clustertaintpolicy
// controller: it keeps each Cluster's taints as Karmada's
// ClusterTaintPolicies and the cluster's conditions decide, through
// taintpolicy.Evaluator. PreferNoExecute is accepted beside NoSchedule and
// NoExecute.
//
// Condition windows (the proposal's addOnMatchSeconds and
// removeOnMismatchSeconds on each entry of spec.taints) need the fork's
// CRD extension (crds/ in this module): Karmada v1.18's CRD has no such
// fields and the API server prunes them. With it, a taint is added once
// the policy's addOnConditions have held for its addOnMatchSeconds and
// removed once its removeOnConditions have held for its
// removeOnMismatchSeconds; a taint that sets neither, and every taint
// without the extension, is added and removed at once, as Karmada does.
// Policies are read as unstructured, since Karmada's Go type has no place
// for the windows (karmada.FromUnstructuredClusterTaintPolicy). At start-up
// the controller reads the CRD and logs, once, whether it carries the
// windows, naming the patch to apply when it does not.
//
// Windows are read from the conditions' lastTransitionTime, so a restarted
// controller decides as a long-running one would; the cluster is
// reconciled again when the next window closes. Taints are written with
// optimistic concurrency: a conflict reads the cluster again and decides
// again on what the other writer left. A policy that does not convert is
// left out and logged; the others still apply.
type ClusterTaintPolicyController struct {
	clock    clock.PassiveClock
	eval     *taintpolicy.Evaluator
	client   client.Client // clusters, from the manager's cache; writes
	reader   client.Reader // the API server: a cluster after a conflict, the CRD
	policies client.Reader // ClusterTaintPolicies as unstructured: the manager's cache
	log      logr.Logger   // the start-up line about the CRD

	mu      sync.Mutex
	applied string // the names and resourceVersions eval was last given
}

// NewClusterTaintPolicyController checks opts and fills in their defaults.
func NewClusterTaintPolicyController(opts ClusterTaintPolicyOptions) (*ClusterTaintPolicyController, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	eval, err := taintpolicy.NewEvaluator(nil)
	if err != nil {
		return nil, err
	}
	return &ClusterTaintPolicyController{clock: opts.Clock, eval: eval, log: logr.Discard()}, nil
}

// SetupWithManager adds the controller to mgr, whose scheme must hold
// AddToScheme's kinds. It reconciles a Cluster when it changes and every
// Cluster when a policy does, and adds a runnable that logs, once at
// start-up and on every replica, what the ClusterTaintPolicy CRD says
// about windows (see ClusterTaintPolicyController).
func (r *ClusterTaintPolicyController) SetupWithManager(mgr manager.Manager) error {
	// Policies come from the cache's unstructured informer, which the
	// watch below starts: the manager's client would read unstructured
	// objects from the API server on every reconcile.
	r.client, r.reader, r.policies = mgr.GetClient(), mgr.GetAPIReader(), mgr.GetCache()
	r.log = mgr.GetLogger().WithName(ClusterTaintPolicyName)
	allClusters := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list clusterv1alpha1.ClusterList
		if err := r.client.List(ctx, &list); err != nil {
			log.FromContext(ctx).Error(err, "listing clusters after a policy change")
			return nil
		}
		out := make([]reconcile.Request, len(list.Items))
		for i := range list.Items {
			out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
		}
		return out
	})
	policy := &unstructured.Unstructured{}
	policy.SetGroupVersionKind(karmada.ClusterTaintPolicyGVK)
	err := builder.ControllerManagedBy(mgr).
		Named(ClusterTaintPolicyName).
		For(&clusterv1alpha1.Cluster{}).
		Watches(policy, allClusters).
		Complete(r)
	if err != nil {
		return err
	}
	return mgr.Add(crdCheck{r})
}

// Reconcile evaluates the cluster and writes its taints when they change;
// it is reconciled again after the Evaluator's RequeueAfter, when a window
// closes.
func (r *ClusterTaintPolicyController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
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
		res = r.eval.Evaluate(fc, r.clock.Now())
		if !res.Changed() {
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
	if res.Changed() {
		log.FromContext(ctx).Info("taints written", "added", res.Added, "removed", res.Removed)
	}
	return reconcile.Result{RequeueAfter: res.RequeueAfter}, nil
}

// syncPolicies gives the Evaluator the policies in the cache when they have
// changed since the last call. A policy that does not convert is left out
// and logged; the others still apply.
func (r *ClusterTaintPolicyController) syncPolicies(ctx context.Context) error {
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(karmada.ClusterTaintPolicyGVK.GroupVersion().WithKind(karmada.ClusterTaintPolicyGVK.Kind + "List"))
	if err := r.policies.List(ctx, &list); err != nil {
		return err
	}
	versions := make([]string, len(list.Items))
	for i := range list.Items {
		versions[i] = list.Items[i].GetName() + "@" + list.Items[i].GetResourceVersion()
	}
	slices.Sort(versions)
	fingerprint := strings.Join(versions, ",")

	r.mu.Lock()
	defer r.mu.Unlock()
	if fingerprint == r.applied {
		return nil
	}
	policies := make([]taintpolicy.ClusterTaintPolicy, 0, len(list.Items))
	for i := range list.Items {
		// A list's items may leave their kind to the list.
		list.Items[i].SetGroupVersionKind(karmada.ClusterTaintPolicyGVK)
		p, err := karmada.FromUnstructuredClusterTaintPolicy(&list.Items[i])
		if err != nil {
			log.FromContext(ctx).Error(err, "ClusterTaintPolicy left out", "policy", list.Items[i].GetName())
			continue
		}
		policies = append(policies, p)
	}
	if err := r.eval.SetPolicies(policies); err != nil {
		return err
	}
	r.applied = fingerprint
	return nil
}

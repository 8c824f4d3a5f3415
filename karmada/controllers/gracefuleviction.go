package fork

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover/karmada"
)

// errGone stops a retry when the binding was deleted meanwhile.
var errGone = errors.New("fork: binding deleted")

// setupGraceful adds reconciler 4 for one binding kind.
func (f *forker) setupGraceful(mgr manager.Manager, k *kind) error {
	return builder.ControllerManagedBy(mgr).
		Named("graceful-eviction-" + k.name).
		For(k.new()).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return f.assess(ctx, k, req.NamespacedName)
		}))
}

// assess runs the Assessor on the binding's graceful eviction tasks and
// writes back the tasks it keeps when some are done or newly stamped. The
// binding is reconciled again at the Assessment's RequeueAfter, the earliest
// grace period still running; a change to the binding (its schedule result,
// its aggregated status) reconciles it at once.
func (f *forker) assess(ctx context.Context, k *kind, key types.NamespacedName) (reconcile.Result, error) {
	obj := k.new()
	if err := f.client.Get(ctx, key, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if len(k.spec(obj).GracefulEvictionTasks) == 0 {
		return reconcile.Result{}, nil
	}
	var requeue time.Duration
	var done int
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b, err := k.toLib(obj)
		if err != nil {
			return err
		}
		a := f.assessor.Assess(b, f.opts.Now())
		requeue, done = a.RequeueAfter, len(a.Done)
		if len(a.Done) == 0 && a.Stamped == 0 {
			return nil
		}
		b.Tasks = a.Keep
		karmada.ApplyBinding(k.spec(obj), b)
		err = f.client.Update(ctx, obj, client.FieldOwner(FieldManager))
		if apierrors.IsConflict(err) {
			obj = k.new()
			if gerr := f.reader.Get(ctx, key, obj); gerr != nil {
				if apierrors.IsNotFound(gerr) {
					return errGone
				}
				return gerr
			}
		}
		return err
	})
	if errors.Is(err, errGone) || apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if done > 0 {
		log.FromContext(ctx).Info("graceful eviction tasks finished", "done", done)
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

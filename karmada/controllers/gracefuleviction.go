package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
)

// GracefulEvictionName prefixes the names of the
// GracefulEvictionController's controller-runtime controllers:
// GracefulEvictionName-resourcebinding and -clusterresourcebinding.
const GracefulEvictionName = "failover-graceful-eviction"

// GracefulEvictionOptions tune the GracefulEvictionController. The zero
// value of each field means the default stated beside it.
type GracefulEvictionOptions struct {
	// Timeout ends a task without its own gracePeriodSeconds this long
	// after it was created: Karmada's --graceful-eviction-timeout. Default
	// 10m, as there.
	Timeout time.Duration
	// Plugins may end a task early (gracefulevict.WithPlugins). Nil means
	// the Assessor's default, ResourceHealth: every copy in the schedule
	// result reports Healthy.
	Plugins []gracefulevict.Plugin
	// Clock is the clock of the assessments. Default the real clock.
	Clock clock.PassiveClock
}

// GracefulEvictionController replaces Karmada's gracefulEviction
// controllers for ResourceBinding and ClusterResourceBinding: it runs
// gracefulevict.Assessor on every binding with graceful eviction tasks,
// when it changes and at the RequeueAfter the assessment gives (the
// earliest grace period still running), and writes back the tasks it keeps
// when some are done or newly stamped, with optimistic concurrency. Unlike
// Karmada's, a task whose cluster is back in the schedule result ends at
// once (karmada#3747), and an empty schedule result never counts as
// healthy. As Karmada's, it only ends tasks: the EvictionController sees
// each end in its reconcile of the binding, whoever ended it, and gives
// back what the eviction held.
type GracefulEvictionController struct {
	clock    clock.PassiveClock
	assessor *gracefulevict.Assessor
	client   client.Client
	reader   client.Reader
}

// NewGracefulEvictionController checks opts and fills in their defaults.
func NewGracefulEvictionController(opts GracefulEvictionOptions) (*GracefulEvictionController, error) {
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("controllers: GracefulEvictionOptions.Timeout (--graceful-eviction-timeout) %v: must not be negative", opts.Timeout)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	aopts := []gracefulevict.Option{gracefulevict.WithDefaultTimeout(opts.Timeout)}
	if opts.Plugins != nil {
		aopts = append(aopts, gracefulevict.WithPlugins(opts.Plugins...))
	}
	assessor, err := gracefulevict.NewAssessor(aopts...)
	if err != nil {
		return nil, err
	}
	return &GracefulEvictionController{clock: opts.Clock, assessor: assessor}, nil
}

// SetupWithManager adds a controller per binding kind to mgr, whose scheme
// must hold AddToScheme's kinds. As Karmada's, it sees only bindings that
// have graceful eviction tasks.
func (c *GracefulEvictionController) SetupWithManager(mgr manager.Manager) error {
	c.client, c.reader = mgr.GetClient(), mgr.GetAPIReader()
	for _, k := range []*kind{resourceBindings(), clusterResourceBindings()} {
		hasTasks := predicate.NewPredicateFuncs(func(o client.Object) bool {
			return len(k.spec(o).GracefulEvictionTasks) > 0
		})
		// A deleted binding's tasks go with it; nothing else sends
		// generic events.
		hasTasks.DeleteFunc = func(event.DeleteEvent) bool { return false }
		err := builder.ControllerManagedBy(mgr).
			Named(GracefulEvictionName+"-"+k.name).
			For(k.new(), builder.WithPredicates(hasTasks)).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				return c.assess(ctx, k, req.NamespacedName)
			}))
		if err != nil {
			return err
		}
	}
	return nil
}

// errGone stops a retry when the binding was deleted meanwhile.
var errGone = errors.New("controllers: binding deleted")

// assess runs the Assessor on the binding's graceful eviction tasks and
// writes back the tasks it keeps when some are done or newly stamped. The
// binding is reconciled again at the Assessment's RequeueAfter; a change to
// the binding (its schedule result, its aggregated status) reconciles it at
// once.
func (c *GracefulEvictionController) assess(ctx context.Context, k *kind, key types.NamespacedName) (reconcile.Result, error) {
	obj := k.new()
	if err := c.client.Get(ctx, key, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if len(k.spec(obj).GracefulEvictionTasks) == 0 || !obj.GetDeletionTimestamp().IsZero() {
		return reconcile.Result{}, nil
	}
	var requeue time.Duration
	var done []gracefulevict.Task
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b, err := k.toLib(obj)
		if err != nil {
			return err
		}
		a := c.assessor.Assess(b, c.clock.Now())
		requeue, done = a.RequeueAfter, a.Done
		if len(a.Done) == 0 && a.Stamped == 0 {
			return nil
		}
		b.Tasks = a.Keep
		karmada.ApplyBinding(k.spec(obj), b)
		err = c.client.Update(ctx, obj, client.FieldOwner(FieldManager))
		if apierrors.IsConflict(err) {
			obj = k.new()
			if gerr := c.reader.Get(ctx, key, obj); gerr != nil {
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
	if len(done) > 0 {
		log.FromContext(ctx).Info("graceful eviction tasks finished", "done", len(done))
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

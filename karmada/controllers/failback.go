package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/failback"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/karmada/scheduling"
	"github.com/failoverkit/failover/metrics"
)

// FailbackName prefixes the names of the FailbackController's
// controller-runtime controllers: FailbackName-resourcebinding and
// -clusterresourcebinding.
const FailbackName = "failover-failback"

// The reasons of the Events a failback records on its binding.
const (
	// EventReasonFailedBack (Normal): the binding was sent back to the
	// cluster it failed over from.
	EventReasonFailedBack = "FailedBack"
	// EventReasonFailbackNotPlaced (Normal): the origin has been healthy
	// long enough, but a fresh placement would not put the binding back
	// there now, or not without shrinking a cluster it keeps; or its
	// budget of clusters in transit is smaller than the clusters it would
	// leave.
	EventReasonFailbackNotPlaced = "FailbackNotPlaced"
	// EventReasonInvalidFailbackWindow (Warning): the binding's
	// FailbackWindowAnnotation is not a non-negative duration; the flag's
	// window applies.
	EventReasonInvalidFailbackWindow = "InvalidFailbackWindow"
)

// FailbackWindowAnnotation on a binding is its own failback stabilisation
// window (karmada.FailbackWindowAnnotation), which overrides
// FailbackOptions.Window: a Go duration, "0" turning failback off for it.
const FailbackWindowAnnotation = karmada.FailbackWindowAnnotation

// eventActionFailback is the action of the failback's Events.
const eventActionFailback = "Failback"

// DefaultMaxFailbacksInFlight is FailbackOptions.MaxInFlight's default.
const DefaultMaxFailbacksInFlight = 10

// failbackRecheck is how soon a failback held back by something that sends
// no event of its own (the rate, the storm hold, the fleet-wide cap, a
// fresh placement that does not go back) is decided again.
const failbackRecheck = 30 * time.Second

// failbackIndex indexes bindings by the origins of their failover record
// (karmada.FailedOverFromAnnotation), so that a change of a Cluster finds
// the bindings that may go back to it.
const failbackIndex = "failover.failback.origin"

// failbackTaskIndex indexes bindings with an open graceful eviction task a
// failback wrote, under one value, so that the failbacks in flight are
// counted without a list of every binding.
const failbackTaskIndex = "failover.failback.task"

// FailbackOptions tune the FailbackController. The zero value of each field
// means the default stated beside it.
type FailbackOptions struct {
	// Window is how long a cluster a binding failed over from must have
	// been healthy, without a break, before the binding goes back:
	// --failback-stabilization-window. 0, the default, turns failback off
	// but for the bindings whose karmada.FailbackWindowAnnotation sets a
	// window of their own. It must not be negative.
	Window time.Duration
	// MaxInFlight is how many bindings may be going back at once, fleet
	// wide (their failback tasks open): --max-failbacks-in-flight.
	// Default DefaultMaxFailbacksInFlight; it must not be negative.
	MaxInFlight int
}

// FailbackController sends bindings back to the clusters they failed over
// from (issue 38): for a binding whose karmada.FailedOverFromAnnotation
// names an origin that has been healthy for the window, and that Karmada's
// algorithm, asked for a fresh placement on the fleet as it is, puts
// replicas back on, it writes the binding as engine.PlanFailback leaves it:
// the copies on the clusters it leaves in graceful eviction tasks, which
// keep them running until the returning copies are healthy, and
// spec.rescheduleTriggeredAt, which asks karmada-scheduler for that fresh
// placement.
//
// It goes through what an eviction goes through, and shares the
// EvictionController's: its Fleet, its Limiter (a failback takes a permit
// of the same fleet rate, and none while a storm holds), the operator's
// freeze. It does not start while an eviction of the binding is in flight
// or may be queued (a cluster of its schedule result is faulty), while
// any graceful eviction task of the binding is open, when the clusters it
// would leave exceed the binding's budget of clusters in transit, or when
// MaxInFlight failbacks are under way.
type FailbackController struct {
	opts  FailbackOptions
	ev    *EvictionController
	sched *scheduling.Scheduler

	client client.Client

	// waiting is why each failed-over binding that has not gone back
	// waits: failback_waiting, on the EvictionController's metrics once
	// set up.
	waiting *metrics.FailbackWaiters

	mu sync.Mutex // guards launched and woken
	// woken are the queues of the two kinds' controllers, by kind, once
	// they start: a thaw of the freeze adds the bindings with a record.
	woken map[string]workqueue.TypedRateLimitingInterface[reconcile.Request]
	// launched are the failbacks this controller wrote (or is writing)
	// whose tasks the cache may not show yet, by binding and since when:
	// counted in flight until it does, so that two failbacks decided
	// back to back, or by the two kinds' controllers at once, cannot pass
	// MaxInFlight together.
	launched map[string]time.Time
}

// NewFailbackController checks opts and fills in their defaults. ev is the
// EvictionController whose fleet, rate and freeze a failback shares: set
// it up with the manager before this one.
func NewFailbackController(opts FailbackOptions, ev *EvictionController) (*FailbackController, error) {
	var errs []error
	if opts.Window < 0 {
		errs = append(errs, fmt.Errorf("controllers: FailbackOptions.Window (--failback-stabilization-window) %v: must not be negative", opts.Window))
	}
	if opts.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("controllers: FailbackOptions.MaxInFlight (--max-failbacks-in-flight) %d: must not be negative", opts.MaxInFlight))
	}
	if ev == nil {
		errs = append(errs, errors.New("controllers: NewFailbackController: the EvictionController is nil"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if opts.MaxInFlight == 0 {
		opts.MaxInFlight = DefaultMaxFailbacksInFlight
	}
	return &FailbackController{opts: opts, ev: ev, sched: scheduling.NewScheduler(nil),
		waiting: (*metrics.Metrics)(nil).FailbackWaiters(), launched: map[string]time.Time{}, woken: map[string]workqueue.TypedRateLimitingInterface[reconcile.Request]{}}, nil
}

// SetupWithManager adds a controller per binding kind to mgr, after the
// EvictionController's SetupWithManager: it reconciles the bindings that
// carry a failover record, and again when a cluster they failed over from
// changes. Its Scheduler follows the manager's Cluster informer.
func (c *FailbackController) SetupWithManager(mgr manager.Manager) error {
	ctx := context.Background()
	if c.ev.limiter == nil {
		return errors.New("controllers: FailbackController.SetupWithManager: set up the EvictionController first")
	}
	c.client = mgr.GetClient()
	c.waiting = c.ev.metrics.FailbackWaiters()
	inf, err := mgr.GetCache().GetInformer(ctx, &clusterv1alpha1.Cluster{})
	if err != nil {
		return fmt.Errorf("controllers: the Cluster informer: %w", err)
	}
	if _, err := inf.AddEventHandler(feedScheduler(c.sched)); err != nil {
		return fmt.Errorf("controllers: the Cluster informer: %w", err)
	}
	for _, k := range []*kind{resourceBindings(), clusterResourceBindings()} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, k.new(), failbackIndex, originsOf); err != nil {
			return fmt.Errorf("controllers: indexing %s by failover origin: %w", k.name, err)
		}
		if err := mgr.GetFieldIndexer().IndexField(ctx, k.new(), failbackTaskIndex, failbackTasksOf(k)); err != nil {
			return fmt.Errorf("controllers: indexing %s by failback task: %w", k.name, err)
		}
		// The bindings with a record, those whose failback is under way
		// (the failbacks in flight are counted again when a task ends),
		// and those that lose either or are deleted (they wait no more).
		concerned := func(o client.Object) bool {
			if _, ok := o.GetAnnotations()[karmada.FailedOverFromAnnotation]; ok {
				return true
			}
			return len(failbackTasksOf(k)(o)) > 0
		}
		recorded := predicate.NewPredicateFuncs(concerned)
		recorded.UpdateFunc = func(e event.UpdateEvent) bool { return concerned(e.ObjectOld) || concerned(e.ObjectNew) }
		b := builder.ControllerManagedBy(mgr)
		if c.ev.freeze != nil {
			// The controller's queue, for a thaw to wake.
			b = b.WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.woken[k.name] = q
				return nil
			}))
		}
		err := b.
			Named(FailbackName+"-"+k.name).
			For(k.new(), builder.WithPredicates(recorded)).
			Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
				list := k.list()
				if err := c.client.List(ctx, list, client.MatchingFields{failbackIndex: o.GetName()}); err != nil {
					log.FromContext(ctx).Error(err, "listing the bindings that failed over from a cluster", "cluster", o.GetName())
					return nil
				}
				return requestsOf(list)
			})).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				return c.reconcile(ctx, k, req.NamespacedName)
			}))
		if err != nil {
			return err
		}
	}
	if c.ev.freeze != nil {
		c.ev.freeze.onThaw = append(c.ev.freeze.onThaw, c.thawed)
	}
	return nil
}

// thawed decides again at once the failbacks of every binding with a
// failover record, as the freeze thaws: those it held back would wait out
// failbackRecheck otherwise. The others decide as they would have.
func (c *FailbackController) thawed() {
	ctx := context.Background()
	for _, k := range []*kind{resourceBindings(), clusterResourceBindings()} {
		c.mu.Lock()
		q := c.woken[k.name]
		c.mu.Unlock()
		if q == nil {
			continue
		}
		list := k.list()
		if err := c.client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			log.FromContext(ctx).Error(err, "listing the bindings a thaw wakes", "kind", k.name)
			continue
		}
		_ = apimeta.EachListItem(list, func(o runtime.Object) error {
			if co, ok := o.(client.Object); ok {
				if _, ok := co.GetAnnotations()[karmada.FailedOverFromAnnotation]; ok {
					q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(co)})
				}
			}
			return nil
		})
	}
}

// feedScheduler keeps s's fleet as the informer sees it.
func feedScheduler(s *scheduling.Scheduler) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { setScheduled(s, obj) },
		UpdateFunc: func(_, obj any) { setScheduled(s, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if cl, ok := obj.(*clusterv1alpha1.Cluster); ok {
				s.Delete(cl.Name)
			}
		},
	}
}

func setScheduled(s *scheduling.Scheduler, obj any) {
	if cl, ok := obj.(*clusterv1alpha1.Cluster); ok {
		s.Set(cl)
	}
}

// originsOf is failbackIndex: the clusters the binding o failed over from.
func originsOf(o client.Object) []string {
	rec, err := failback.ParseRecord(o.GetAnnotations()[karmada.FailedOverFromAnnotation])
	if err != nil {
		return nil
	}
	out := make([]string, len(rec))
	for i, r := range rec {
		out[i] = r.Cluster
	}
	return out
}

// failbackTasksOf is failbackTaskIndex for kind k: "open" for a binding
// with an open graceful eviction task a failback wrote.
func failbackTasksOf(k *kind) client.IndexerFunc {
	return func(o client.Object) []string {
		for _, t := range k.spec(o).GracefulEvictionTasks {
			if t.Producer == engine.FailbackProducer {
				return []string{"open"}
			}
		}
		return nil
	}
}

// requestsOf are the reconcile requests of the bindings of list.
func requestsOf(list client.ObjectList) []reconcile.Request {
	var out []reconcile.Request
	_ = apimeta.EachListItem(list, func(o runtime.Object) error {
		if co, ok := o.(client.Object); ok {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(co)})
		}
		return nil
	})
	return out
}

// reconcile decides the failback of the binding key, of kind k, and writes
// it: the record cleaned of moot origins, or the binding sent back.
func (c *FailbackController) reconcile(ctx context.Context, k *kind, key types.NamespacedName) (reconcile.Result, error) {
	id := k.name + "/" + key.String()
	cached, countErr := c.cachedInFlight(ctx)
	if countErr == nil {
		c.ev.metrics.FailbacksInFlight(c.inFlight(cached, c.ev.opts.Clock.Now()))
	}
	obj := k.new()
	if err := c.client.Get(ctx, key, obj); err != nil {
		c.wait(id, "")
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		c.wait(id, "")
		return reconcile.Result{}, nil
	}
	c.refreshOrigins(ctx, obj)
	now := c.ev.opts.Clock.Now()
	next := obj.DeepCopyObject().(client.Object)
	step, err := engine.PlanFailback(engine.FailbackOptions{Fleet: c.ev.fleet, Scheduler: c.sched, Window: c.opts.Window, Ledger: c.ev.opts.Ledger}, now, next)
	if err != nil {
		c.wait(id, "")
		c.ev.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonInvalidFailoverRecord, eventActionFailback, "%v", err)
		return reconcile.Result{}, nil // a person's to mend: the next change of the binding brings it back
	}
	if step.WindowErr != nil {
		c.ev.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonInvalidFailbackWindow, eventActionFailback,
			"%v: --failback-stabilization-window %v applies", step.WindowErr, c.opts.Window)
	}
	logger := log.FromContext(ctx).WithValues("origin", step.Origin.Cluster)
	switch step.Action {
	case engine.FailbackNone:
		c.wait(id, "")
		return reconcile.Result{}, c.writeRecord(ctx, k, obj, step)
	case engine.FailbackWait:
		c.wait(id, metrics.FailbackWaitingStabilizing)
		return reconcile.Result{RequeueAfter: step.After}, c.writeRecord(ctx, k, obj, step)
	case engine.FailbackNotPlaced:
		c.decided(id, metrics.FailbackNotPlaced)
		c.ev.recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventReasonFailbackNotPlaced, eventActionFailback, "not back to %s yet: %s", step.Origin.Cluster, step.Why)
		return reconcile.Result{RequeueAfter: failbackRecheck}, c.writeRecord(ctx, k, obj, step)
	}

	// FailbackGo: through the gates an eviction goes through. The room
	// its replicas take is held until it is written: given back if it is
	// not.
	written := false
	defer func() {
		if !written {
			step.Hold.Release()
		}
	}()
	held := c.heldBack(k, obj)
	if held == "" && countErr != nil {
		held = fmt.Sprintf("the failbacks in flight cannot be counted: %v", countErr)
	}
	if held == "" {
		// A slot of MaxInFlight, held from here: given back if the
		// failback is not written.
		if n, ok := c.launch(id, cached, now); !ok {
			held = fmt.Sprintf("%d failbacks are in flight, the most --max-failbacks-in-flight allows", n)
		} else {
			defer func() {
				if !written {
					c.land(id)
				}
			}()
		}
	}
	if held != "" {
		c.decided(id, metrics.FailbackHeldBack)
		logger.V(1).Info("failback held back", "why", held)
		return reconcile.Result{RequeueAfter: failbackRecheck}, c.writeRecord(ctx, k, obj, step)
	}
	if why, after, err := c.originNow(ctx, obj, step.Origin, now); err != nil || why != "" {
		if err != nil {
			c.decided(id, metrics.FailbackError)
			return reconcile.Result{}, err
		}
		c.wait(id, metrics.FailbackWaitingStabilizing)
		logger.V(1).Info("failback waits: the origin, read afresh, is not healthy for the window", "why", why)
		return reconcile.Result{RequeueAfter: after}, c.writeRecord(ctx, k, obj, step)
	}
	budget, _ := c.ev.transitBudget(obj) // a bad annotation: the flag's, as for an eviction
	if budget > 0 && len(step.Leaving) > budget {
		c.decided(id, metrics.FailbackNotPlaced)
		c.ev.recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventReasonFailbackNotPlaced, eventActionFailback,
			"not back to %s: it would leave %d clusters at once (%v), more than its budget of clusters in transit, %d", step.Origin.Cluster, len(step.Leaving), step.Leaving, budget)
		return reconcile.Result{}, c.writeRecord(ctx, k, obj, step)
	}
	_, giveBack, ok, at := c.ev.limiter.TakeDomainAt(now, []string{failbackDomain(c.ev, step.Origin.Cluster)})
	if !ok {
		c.decided(id, metrics.FailbackHeldBack)
		after := failbackRecheck
		if !at.IsZero() {
			after = at.Sub(now)
		}
		return reconcile.Result{RequeueAfter: after}, nil
	}
	if step.FirstTerm {
		// The scheduler starts from the first clusterAffinities term only
		// with status.schedulerObservedAffinityName cleared, and acts on
		// the spec's change: the status first. Should the spec's write then
		// fail, the next placement of the binding, whatever asks for it,
		// starts from its first term too; the failback is decided again.
		st := obj.DeepCopyObject().(client.Object)
		k.status(st).SchedulerObservedAffinityName = ""
		if err := c.client.Status().Update(ctx, st, client.FieldOwner(FieldManager)); err != nil {
			giveBack()
			c.decided(id, metrics.FailbackError)
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		next.SetResourceVersion(st.GetResourceVersion())
	}
	if err := c.client.Update(ctx, next, client.FieldOwner(FieldManager)); err != nil {
		giveBack() // the room goes back too (written is false)
		if apierrors.IsNotFound(err) {
			c.wait(id, "")
			return reconcile.Result{}, nil
		}
		c.decided(id, metrics.FailbackError)
		return reconcile.Result{}, err // a conflict: decided again on what the other writer left
	}
	written = true
	c.decided(id, metrics.FailbackFailedBack)
	c.ev.metrics.FailbacksInFlight(c.inFlight(cached, now))
	c.ev.recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventReasonFailedBack, eventActionFailback, "%s", step.Why)
	logger.Info("failing back", "why", step.Why, "leaving", step.Leaving)
	return reconcile.Result{}, nil
}

// refreshOrigins brings the Fleet's and the Scheduler's copies of obj's
// origins up to the cache's. The informer handlers that feed them run
// apart from the watch that brought this reconcile (each handler has its
// own goroutine), so a reconcile woken by an origin's recovery could read
// the origin still tainted, wait for a next event that never comes, and
// never go back. The cache is at least as new as any handler's event.
func (c *FailbackController) refreshOrigins(ctx context.Context, obj client.Object) {
	for _, name := range originsOf(obj) {
		if cl, ok := catchUpFleet(ctx, c.client, c.ev.fleet, name, log.FromContext(ctx)); ok {
			c.sched.Set(cl)
		} // else gone, or not cached: the handlers' view stands
	}
}

// originNow asks again, of the origin as the API server has it now, whether
// it has been healthy for the window: the decision read the cache, which
// may trail a failure within the window or a taint by its lag, and a
// failback sends replicas there (as an eviction confirms afresh the
// clusters its replicas go to). One read per failback about to be
// written. why says why not, after when to decide again (sooner, when the
// cache shows the origin's change).
func (c *FailbackController) originNow(ctx context.Context, obj client.Object, o failback.Origin, now time.Time) (why string, after time.Duration, err error) {
	var cl clusterv1alpha1.Cluster
	if err := c.ev.reader.Get(ctx, client.ObjectKey{Name: o.Cluster}, &cl); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("cluster %s is gone", o.Cluster), failbackRecheck, nil
		}
		return "", 0, err
	}
	conv, err := karmada.FromCluster(&cl)
	if err != nil {
		return fmt.Sprintf("cluster %s cannot be read: %v", o.Cluster, err), failbackRecheck, nil
	}
	window, _ := karmada.FailbackWindow(obj.GetAnnotations(), c.opts.Window) // PlanFailback has said so
	d := failback.Decide(o, &conv, window, now)
	if d.Return {
		return "", 0, nil
	}
	if d.After <= 0 {
		d.After = failbackRecheck // the origin's next change brings it back sooner
	}
	return d.Reason, d.After, nil
}

// decided counts a decision of the failback of the binding id, whose
// origin has been healthy for the window, in failback_total; the binding
// waits on, for that reason, unless it went back.
func (c *FailbackController) decided(id, result string) {
	c.ev.metrics.Failback(result)
	switch result {
	case metrics.FailbackNotPlaced:
		c.wait(id, metrics.FailbackWaitingNotPlaced)
	case metrics.FailbackHeldBack, metrics.FailbackError:
		c.wait(id, metrics.FailbackWaitingHeldBack)
	default:
		c.wait(id, "")
	}
}

// wait records why the binding id waits to go back ("": it does not).
func (c *FailbackController) wait(id, reason string) { c.waiting.Set(id, reason) }

// launchedFor is how long a failback this controller wrote counts in
// flight while the cache does not show its tasks: the cache catches up
// within a second or two; a failback whose tasks opened and ended before
// it did must not count for ever.
const launchedFor = time.Minute

// cachedInFlight is the bindings of both kinds whose failback tasks the
// cache shows open, by kind and key.
func (c *FailbackController) cachedInFlight(ctx context.Context) (map[string]bool, error) {
	open := map[string]bool{}
	for _, kk := range []*kind{resourceBindings(), clusterResourceBindings()} {
		list := kk.list()
		if err := c.client.List(ctx, list, client.MatchingFields{failbackTaskIndex: "open"}); err != nil {
			return nil, err
		}
		for _, r := range requestsOf(list) {
			open[kk.name+"/"+r.NamespacedName.String()] = true
		}
	}
	return open, nil
}

// inFlight is how many failbacks are in flight: those the cache shows, and
// those launched that it does not show yet.
func (c *FailbackController) inFlight(cached map[string]bool, now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlightLocked(cached, now)
}

func (c *FailbackController) inFlightLocked(cached map[string]bool, now time.Time) int {
	n := len(cached)
	for id, at := range c.launched {
		switch {
		case cached[id] || now.Sub(at) > launchedFor:
			delete(c.launched, id) // the cache shows it, or it is long over
		default:
			n++
		}
	}
	return n
}

// launch takes a slot of MaxInFlight for the failback of id, unless they
// are all taken: it returns the failbacks in flight and whether it did.
func (c *FailbackController) launch(id string, cached map[string]bool, now time.Time) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.inFlightLocked(cached, now)
	if _, ok := c.launched[id]; ok || cached[id] || n >= c.opts.MaxInFlight {
		return n, false
	}
	c.launched[id] = now
	return n + 1, true
}

// land gives back the slot launch took for id: the failback was not
// written.
func (c *FailbackController) land(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.launched, id)
}

// heldBack says what holds a failback of obj back now, "" when nothing
// does: the freeze, a storm's hold, an eviction of the binding in flight or
// maybe queued. (The failbacks in flight fleet wide are counted by the
// caller.)
func (c *FailbackController) heldBack(k *kind, obj client.Object) string {
	if f := c.ev.freeze.check(); f.frozen {
		return "evictions are frozen: " + f.why
	}
	if c.ev.limiter.StormHold() {
		return "a failure storm holds evictions"
	}
	if q := c.queueOf(k); q != nil && len(q.Flights(itemKey(obj))) > 0 {
		return "an eviction of the binding is in flight"
	}
	for _, t := range k.spec(obj).Clusters {
		if cl, ok := c.ev.fleet.Cluster(t.Name); ok && ClusterFaulty(cl) {
			return fmt.Sprintf("cluster %s of its schedule result is faulty: an eviction may be queued", t.Name)
		}
	}
	return ""
}

// queueOf is the EvictionController's queue of k's kind; nil before it is
// set up.
func (c *FailbackController) queueOf(k *kind) *evictionqueue.Queue {
	for _, ek := range c.ev.kinds {
		if ek.name == k.name {
			return ek.q
		}
	}
	return nil
}

// writeRecord writes obj's record without the origins made moot, when
// step dropped some: what a failback that does not go changes.
func (c *FailbackController) writeRecord(ctx context.Context, k *kind, obj client.Object, step engine.FailbackStep) error {
	if !step.RecordChanged {
		return nil
	}
	rec, err := failback.ParseRecord(obj.GetAnnotations()[karmada.FailedOverFromAnnotation])
	if err != nil {
		return nil // PlanFailback has said so
	}
	live := karmada.MootOrigins(rec, k.spec(obj), karmada.PlacementFingerprint(k.spec(obj).Placement))
	if len(live) == len(rec) {
		return nil
	}
	next := obj.DeepCopyObject().(client.Object)
	next.SetAnnotations(karmada.WithRecord(next.GetAnnotations(), live))
	err = c.client.Update(ctx, next, client.FieldOwner(FieldManager))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// failbackDomain is the disruption domain whose permit a failback to
// origin takes: the origin's, under a domain rule.
func failbackDomain(ev *EvictionController, origin string) string {
	cl, ok := ev.fleet.Cluster(origin)
	if !ok {
		return ""
	}
	return ClusterDomains(ev.opts.Rate.DisruptionDomain)(cl)[0]
}

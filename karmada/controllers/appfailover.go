package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/metrics"
)

// ApplicationFailoverName prefixes the names of the
// ApplicationFailoverController's controller-runtime controllers:
// ApplicationFailoverName-resourcebinding and -clusterresourcebinding.
const ApplicationFailoverName = "failover-application-failover"

// ConfirmBadRolloutAnnotation on a binding is an operator's confirmation
// that the failures the bad-rollout hold stopped are real: while it is
// there, whatever its value, the binding's application failovers go
// through the hold. The controller removes it, in its next write of the
// binding, once the binding is no longer unhealthy on more than the
// threshold of its clusters, so that the next bad rollout holds again:
//
//	kubectl annotate rb <name> failover.karmada.io/confirm-application-failover=true
const ConfirmBadRolloutAnnotation = "failover.karmada.io/confirm-application-failover"

// The reasons of the Events an application failover records on its binding
// (besides EventReasonClustersInTransit, and a prescheduling.Code for a
// failover the pre-scheduling check refused or holds back).
const (
	// EventReasonApplicationFailedOver (Normal): the binding left a
	// cluster where the application was unhealthy for its window.
	EventReasonApplicationFailedOver = "ApplicationFailedOver"
	// EventReasonBadRolloutHold (Warning): the application is unhealthy on
	// more than the threshold of its clusters at once, so its failovers
	// hold until it recovers or an operator confirms
	// (ConfirmBadRolloutAnnotation).
	EventReasonBadRolloutHold = "ApplicationFailoverBadRollout"
	// EventReasonInvalidApplicationFailover (Warning): the binding's
	// spec.failover.application, its aggregated status or its timers
	// (karmada.ApplicationTimersAnnotation) cannot be read.
	EventReasonInvalidApplicationFailover = "InvalidApplicationFailover"
)

// eventActionAppFailover is the action of the application failover's
// Events.
const eventActionAppFailover = "ApplicationFailover"

// DefaultBadRolloutThreshold is ApplicationFailoverOptions.BadRolloutThreshold's
// default: more than half of a binding's clusters
// (appfailover.DefaultBadRolloutThreshold).
const DefaultBadRolloutThreshold = appfailover.DefaultBadRolloutThreshold

// ApplicationFailoverOptions tune the ApplicationFailoverController. The
// zero value of each field means the default stated beside it.
type ApplicationFailoverOptions struct {
	// Policy is the library's additions to Karmada's
	// ApplicationFailoverBehavior, for every binding:
	// --application-failover-unknown (Hold, Count or Reset; default Hold),
	// --application-failover-unknown-toleration (with Count; default 300s)
	// and --application-failover-startup-grace (default none). It is
	// validated (appfailover.Options.Validate).
	Policy appfailover.Options
	// BadRolloutThreshold is the fraction of a binding's clusters above
	// which, when its application is unhealthy (or past its window, or
	// already failed over from) on that many at once and on at least two,
	// every failover of the binding holds: a bad rollout, not a bad
	// cluster, and failing over would only spread it:
	// --application-failover-bad-rollout-threshold. Default
	// DefaultBadRolloutThreshold; it must be in (0, 1], and 1 turns the
	// hold off.
	BadRolloutThreshold float64
}

// withDefaults validates o and fills in the defaults of its zero fields.
func (o ApplicationFailoverOptions) withDefaults() (ApplicationFailoverOptions, error) {
	var errs []error
	if err := o.Policy.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("controllers: ApplicationFailoverOptions.Policy (--application-failover-*): %w", err))
	}
	if t := o.BadRolloutThreshold; math.IsNaN(t) || t < 0 || t > 1 {
		errs = append(errs, fmt.Errorf("controllers: ApplicationFailoverOptions.BadRolloutThreshold (--application-failover-bad-rollout-threshold) %v: want a fraction in (0, 1] (1: no hold)", t))
	}
	if o.BadRolloutThreshold == 0 {
		o.BadRolloutThreshold = DefaultBadRolloutThreshold
	}
	return o, errors.Join(errs...)
}

// ApplicationFailoverController replaces Karmada's applicationFailover
// controllers (issue 39): it fails a workload over from a cluster where
// the workload itself has been unhealthy for its window
// (spec.failover.application), with timers that survive restarts and
// leader changes, and with the safety of cluster failover.
//
// For each ResourceBinding and ClusterResourceBinding that opts in (Karmada's
// bindingFilter: spec.failover.application set, propagateDeps true, an
// aggregated status collected), it reads the binding's timers
// (karmada.ApplicationTimersAnnotation) and its copies' health
// (karmada.ApplicationObservations), decides with appfailover
// (Policy.DecideAll), and writes the timers back when they changed, in the
// same write as a failover when there is one (optimistic concurrency: a
// conflict decides again from the top). It reconciles the binding again
// when the next window may end (Result.After), and on every change of it.
//
// A cluster whose window has passed goes through these gates, in order:
//
//  1. the operator's freeze (EvictionOptions.Freeze) and a failure storm's
//     hold, shared with the EvictionController;
//  2. the bad-rollout hold: the application is unhealthy on more than
//     BadRolloutThreshold of the binding's clusters (and on at least two)
//     at once: a Warning Event and a log line say so, and nothing fails
//     over until it recovers or an operator confirms
//     (ConfirmBadRolloutAnnotation);
//  3. a permit of the EvictionController's Limiter, in the disruption
//     domain of the cluster left: application failovers and taint
//     evictions share the fleet's rate, as what the fleet can absorb (the
//     scheduler, the members' room) does not depend on why replicas move;
//  4. the one decision path (engine.Evictor.EvictApplication) on the
//     cluster read from the API server: the binding's budget of clusters
//     in transit, the pre-scheduling check on the Fleet with confirm
//     reads, the Ledger, and the graceful eviction task as Karmada writes
//     it. A refusal (nowhere to go) never evicts: a Warning Event says
//     why, and the binding is decided again when a Cluster changes so
//     that the answer may (its taints, conditions or resource summary),
//     and after RefusalRecheck at the latest.
//
// It shares the EvictionController's Fleet, Limiter, Ledger, freeze and
// Event recorder: set that one up first.
type ApplicationFailoverController struct {
	opts ApplicationFailoverOptions
	ev   *EvictionController

	client client.Client

	// held are the bindings the bad-rollout hold holds now:
	// application_failover_held, on the EvictionController's metrics once
	// set up.
	held *metrics.AppFailoverHeld

	mu sync.Mutex // guards refused
	// refused are the bindings, by kind, one of whose failovers the check
	// refused: decided again when a Cluster changes.
	refused map[string]map[types.NamespacedName]bool
}

// NewApplicationFailoverController checks opts and fills in their
// defaults. ev is the EvictionController whose fleet, rate, Ledger and
// freeze an application failover shares: set it up with the manager before
// this one.
func NewApplicationFailoverController(opts ApplicationFailoverOptions, ev *EvictionController) (*ApplicationFailoverController, error) {
	opts, err := opts.withDefaults()
	if ev == nil {
		err = errors.Join(err, errors.New("controllers: NewApplicationFailoverController: the EvictionController is nil"))
	}
	if err != nil {
		return nil, err
	}
	return &ApplicationFailoverController{opts: opts, ev: ev, refused: map[string]map[types.NamespacedName]bool{},
		held: (*metrics.Metrics)(nil).AppFailoverHeld(metrics.AppFailoverHeldBadRollout)}, nil
}

// optedIn is Karmada's predicate on a binding of k: it has
// spec.failover.application.
func optedIn(k *kind, o client.Object) bool {
	f := k.spec(o).Failover
	return f != nil && f.Application != nil
}

// SetupWithManager adds a controller per binding kind to mgr, after the
// EvictionController's SetupWithManager: it reconciles the bindings that
// opt in to application failover (and those that stop, to drop their
// timers), and the bindings a refusal left waiting when a Cluster changes.
func (c *ApplicationFailoverController) SetupWithManager(mgr manager.Manager) error {
	if c.ev.limiter == nil {
		return errors.New("controllers: ApplicationFailoverController.SetupWithManager: set up the EvictionController first")
	}
	c.client = mgr.GetClient()
	c.held = c.ev.metrics.AppFailoverHeld(metrics.AppFailoverHeldBadRollout)
	for _, k := range []*kind{resourceBindings(), clusterResourceBindings()} {
		opted := predicate.NewPredicateFuncs(func(o client.Object) bool { return optedIn(k, o) })
		opted.UpdateFunc = func(e event.UpdateEvent) bool { return optedIn(k, e.ObjectOld) || optedIn(k, e.ObjectNew) }
		opted.GenericFunc = func(event.GenericEvent) bool { return false }
		err := builder.ControllerManagedBy(mgr).
			Named(ApplicationFailoverName+"-"+k.name).
			For(k.new(), builder.WithPredicates(opted)).
			Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(c.wakeRefused(k)), builder.WithPredicates(fleetMayHelp())).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				return c.reconcile(ctx, k, req.NamespacedName)
			}))
		if err != nil {
			return err
		}
	}
	return nil
}

// fleetMayHelp lets through the Cluster events that may change a refusal:
// a cluster that appears, or whose taints, conditions or resource summary
// change.
func fleetMayHelp() predicate.Predicate {
	p := predicate.NewPredicateFuncs(func(client.Object) bool { return true })
	p.DeleteFunc = func(event.DeleteEvent) bool { return false }
	p.GenericFunc = func(event.GenericEvent) bool { return false }
	p.UpdateFunc = func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*clusterv1alpha1.Cluster)
		n, ok2 := e.ObjectNew.(*clusterv1alpha1.Cluster)
		if !ok1 || !ok2 {
			return true
		}
		return !apiequality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
			!apiequality.Semantic.DeepEqual(o.Status.Conditions, n.Status.Conditions) ||
			!apiequality.Semantic.DeepEqual(o.Status.ResourceSummary, n.Status.ResourceSummary)
	}
	return p
}

// refusedOf are the reconcile requests of the bindings of k a refusal
// left waiting.
func (c *ApplicationFailoverController) refusedOf(k *kind) []reconcile.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]reconcile.Request, 0, len(c.refused[k.name]))
	for key := range c.refused[k.name] {
		out = append(out, reconcile.Request{NamespacedName: key})
	}
	return out
}

// wakeRefused maps a change of a Cluster to the bindings of k a refusal
// left waiting. They are decided again on the Fleet, which an informer
// handler of its own feeds, apart from this watch: the Fleet's copy of
// the Cluster is brought up to the cache's first (catchUpFleet), so that a
// refusal is not decided again on the copy before the change that woke it,
// to wait RefusalRecheck for a wake-up that has already come (as the
// EvictionController's refusals are woken).
func (c *ApplicationFailoverController) wakeRefused(k *kind) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		refused := c.refusedOf(k)
		if len(refused) > 0 {
			catchUpFleet(ctx, c.client, c.ev.fleet, o.GetName(), log.FromContext(ctx))
		}
		return refused
	}
}

// setRefused records whether the binding key of k waits for the fleet.
func (c *ApplicationFailoverController) setRefused(k *kind, key types.NamespacedName, refused bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !refused {
		delete(c.refused[k.name], key)
		return
	}
	if c.refused[k.name] == nil {
		c.refused[k.name] = map[types.NamespacedName]bool{}
	}
	c.refused[k.name][key] = true
}

// reconcile decides the application failovers of the binding key, of kind
// k, and writes what it decided: its timers, and at most one failover.
func (c *ApplicationFailoverController) reconcile(ctx context.Context, k *kind, key types.NamespacedName) (reconcile.Result, error) {
	c.setRefused(k, key, false) // decided again now
	id := k.name + "/" + key.String()
	held := false
	defer func() { c.held.Set(id, held) }()
	obj := k.new()
	if err := c.client.Get(ctx, key, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return reconcile.Result{}, nil
	}
	spec, status := k.spec(obj), k.status(obj)
	if !optedIn(k, obj) {
		// It no longer opts in: its timers go, so that opting in again
		// starts afresh, as Karmada's controller forgets its own.
		return reconcile.Result{}, c.writeAnnotations(ctx, obj, dropAnnotations(obj.GetAnnotations(), karmada.ApplicationTimersAnnotation, ConfirmBadRolloutAnnotation))
	}
	// Karmada's bindingFilter: its webhook requires propagateDeps with
	// application failover, and a binding whose status has not been
	// collected has nothing to judge. Both leave the timers as they are.
	// Its third condition, a health interpreter for the kind, needs no
	// check here: Karmada's work status controller reports a kind without
	// one Healthy, which starts no timer.
	if !spec.PropagateDeps || len(status.AggregatedStatus) == 0 {
		return reconcile.Result{}, nil
	}
	now := c.ev.opts.Clock.Now()
	logger := log.FromContext(ctx)
	behavior, err := karmada.FromApplicationFailoverBehavior(spec.Failover.Application)
	var policy appfailover.Policy
	if err == nil {
		policy, err = appfailover.New(*behavior, c.opts.Policy)
	}
	if err != nil {
		c.ev.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonInvalidApplicationFailover, eventActionAppFailover, "%v", err)
		return reconcile.Result{}, nil // a person's to mend: the next change of the binding brings it back
	}
	seen, err := karmada.ApplicationObservations(spec, status)
	if err != nil {
		c.ev.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonInvalidApplicationFailover, eventActionAppFailover, "%v", err)
		return reconcile.Result{}, nil
	}
	rec, err := karmada.ApplicationTimers(obj.GetAnnotations())
	if err != nil {
		// Started afresh: a failover can only come later than the lost
		// timers would have made it.
		c.ev.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonInvalidApplicationFailover, eventActionAppFailover, "%v: the timers start afresh", err)
	}
	res := policy.DecideAll(rec, seen, now)
	annotations := karmada.WithApplicationTimers(obj.GetAnnotations(), res.Record)
	result := reconcile.Result{RequeueAfter: res.After}

	bad := badRollout(spec, seen, res, c.opts.BadRolloutThreshold)
	_, confirmed := annotations[ConfirmBadRolloutAnnotation]
	if confirmed && !bad.holds {
		delete(annotations, ConfirmBadRolloutAnnotation) // the next bad rollout holds again
	}
	if len(res.FailOver) == 0 {
		return result, c.writeAnnotations(ctx, obj, annotations)
	}

	// Gates 1 and 2: the freeze, a storm, a bad rollout.
	why, retry := c.heldBack(now)
	if why == "" && bad.holds && !confirmed {
		why, retry, held = bad.why, 0, true
		c.ev.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonBadRolloutHold, eventActionAppFailover,
			"not failed over from %s: %s. If the failures are real, confirm: kubectl annotate %s %s=true",
			strings.Join(res.FailOver, ", "), bad.why, kubectlRef(key), ConfirmBadRolloutAnnotation)
	}
	if why != "" {
		logger.Info("application failover held", "clusters", res.FailOver, "why", why)
		c.count(metrics.AppFailoverHeldBack, len(res.FailOver))
		return earliest(result, retry), c.writeAnnotations(ctx, obj, annotations)
	}

	// Gates 3 and 4, one cluster at a time: the first that fails over is
	// written with the timers; the others are decided again on the
	// binding that write leaves (its update brings it back).
	for _, cluster := range res.FailOver {
		// The cluster's timer leaves with it: a binding leaving a cluster
		// is not judged there again.
		left := slices.DeleteFunc(slices.Clone(res.Record), func(t appfailover.Timer) bool { return t.Cluster == cluster })
		r, done, err := c.failOver(ctx, k, key, obj, karmada.WithApplicationTimers(annotations, left), cluster, res.Decisions[cluster], now, logger.WithValues("cluster", cluster))
		result = earliest(result, r.RequeueAfter)
		if err != nil || done {
			return result, err
		}
	}
	return result, c.writeAnnotations(ctx, obj, annotations)
}

// failOver takes a permit and runs the decision path for the failover of
// obj from cluster. done says obj was written (or is gone): the caller
// writes nothing more.
func (c *ApplicationFailoverController) failOver(ctx context.Context, k *kind, key types.NamespacedName, obj client.Object, annotations map[string]string, cluster string, d appfailover.Decision, now time.Time, logger logr.Logger) (reconcile.Result, bool, error) {
	_, giveBack, ok, at := c.ev.limiter.TakeDomainAt(now, []string{failbackDomain(c.ev, cluster)})
	if !ok {
		c.count(metrics.AppFailoverHeldBack, 1)
		after := failbackRecheck
		if !at.IsZero() {
			after = at.Sub(now)
		}
		return reconcile.Result{RequeueAfter: after}, false, nil
	}
	written := false
	defer func() {
		if !written {
			giveBack() // the rate limits failovers written, not decisions
		}
	}()
	var cl clusterv1alpha1.Cluster
	if err := c.ev.reader.Get(ctx, types.NamespacedName{Name: cluster}, &cl); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, false, nil // the binding's reschedule removes it
		}
		c.count(metrics.AppFailoverError, 1)
		return reconcile.Result{}, false, err
	}
	next := obj.DeepCopyObject().(client.Object)
	step, err := c.ev.evictor.EvictApplication(logr.NewContext(ctx, logger), now, itemKey(obj), next, &cl, c.ev.confirm, d)
	if step.BudgetErr != nil {
		_, err := c.ev.transitBudget(obj)
		c.ev.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonInvalidTransitBudget, eventActionAppFailover, "%v", err)
	}
	if err != nil {
		c.count(metrics.AppFailoverError, 1)
		return reconcile.Result{}, false, err
	}
	res := step.Result
	switch step.Action {
	case engine.EvictionSkip, engine.EvictionStays:
		return reconcile.Result{}, false, nil
	case engine.EvictionInvalid:
		c.ev.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonInvalidApplicationFailover, eventActionAppFailover,
			"not failed over from %s: %v", cluster, step.Err)
		return reconcile.Result{}, false, nil
	case engine.EvictionWaitForBudget:
		c.count(metrics.AppFailoverWaiting, 1)
		c.ev.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonClustersInTransit, eventActionAppFailover,
			"not failed over from %s yet: %d of at most %d clusters in transit (%s)", cluster, len(step.InTransit), step.Budget, strings.Join(step.InTransit, ", "))
		return reconcile.Result{RequeueAfter: c.ev.transitRetry()}, false, nil
	case engine.EvictionWaitForRoom:
		c.count(metrics.AppFailoverWaiting, 1)
		c.ev.recorder.Eventf(obj, nil, corev1.EventTypeWarning, string(res.Code), eventActionAppFailover, "not failed over from %s yet: %s", cluster, res.Reason)
		return reconcile.Result{RequeueAfter: min(max(res.RetryAfter, time.Second), c.ev.opts.ClusterStatusUpdateFrequency)}, false, nil
	case engine.EvictionRefused:
		c.count(metrics.AppFailoverRefused, 1)
		c.ev.recorder.Eventf(obj, nil, corev1.EventTypeWarning, string(res.Code), eventActionAppFailover, "not failed over from %s: %s", cluster, res.Reason)
		c.setRefused(k, key, true)
		return reconcile.Result{RequeueAfter: c.ev.opts.RefusalRecheck}, false, nil
	case engine.EvictionUnconfirmed:
		c.count(metrics.AppFailoverWaiting, 1)
		c.ev.recorder.Eventf(obj, nil, corev1.EventTypeWarning, string(res.Code), eventActionAppFailover, "not failed over from %s yet: %s", cluster, res.Reason)
		return reconcile.Result{RequeueAfter: c.ev.unconfirmedRetry()}, false, nil
	case engine.EvictionEvict:
	default:
		return reconcile.Result{}, false, fmt.Errorf("controllers: application failover of %s from %s: unknown step %v", key, cluster, step.Action)
	}
	// A freeze set while this decided stops its write.
	if why, retry := c.heldBack(now); why != "" {
		step.Hold.Release()
		c.count(metrics.AppFailoverHeldBack, 1)
		return reconcile.Result{RequeueAfter: retry}, false, nil
	}
	next.SetAnnotations(annotations)
	if err := c.client.Update(ctx, next, client.FieldOwner(FieldManager)); err != nil {
		step.Hold.Release()
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, true, nil
		}
		c.count(metrics.AppFailoverError, 1)
		return reconcile.Result{}, true, err // a conflict: decided again on what the other writer left
	}
	written = true
	c.count(metrics.AppFailoverFailedOver, 1)
	c.ev.recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventReasonApplicationFailedOver, eventActionAppFailover, "failed over from %s: %s", cluster, d.Reason)
	logger.Info("application failed over", "why", d.Reason)
	return reconcile.Result{}, true, nil
}

// count adds n decisions with result to application_failover_total.
func (c *ApplicationFailoverController) count(result string, n int) {
	for range n {
		c.ev.metrics.ApplicationFailover(result)
	}
}

// heldBack says what holds every failover back now, "" when nothing does,
// and when to decide again: the operator's freeze, a failure storm's hold.
func (c *ApplicationFailoverController) heldBack(now time.Time) (string, time.Duration) {
	if f := c.ev.freeze.check(); f.frozen {
		return "evictions are frozen: " + f.why, f.retryAfter(now)
	}
	if c.ev.limiter.StormHold() {
		return "a failure storm holds evictions", failbackRecheck
	}
	return "", 0
}

// rollout is the bad-rollout rule's answer for one binding.
type rollout struct {
	holds bool
	why   string
}

// badRollout is the bad-rollout rule (appfailover.BadRollout) on a
// binding: the clusters in transit are those of its open graceful
// eviction tasks that an application failover wrote. Its why names the
// flag that sets the threshold.
func badRollout(spec *workv1alpha2.ResourceBindingSpec, seen map[string]appfailover.Observation, res appfailover.Result, threshold float64) rollout {
	var inTransit []string
	for _, t := range spec.GracefulEvictionTasks {
		if t.Producer == engine.ApplicationFailoverProducer {
			inTransit = append(inTransit, t.FromCluster)
		}
	}
	holds, why := appfailover.BadRollout(seen, res, inTransit, threshold)
	if !holds {
		return rollout{}
	}
	return rollout{holds: true, why: why + " (--application-failover-bad-rollout-threshold)"}
}

// writeAnnotations writes obj with annotations when they differ from its
// own: one update, with obj's resourceVersion, so a conflict decides
// again on what the other writer left.
func (c *ApplicationFailoverController) writeAnnotations(ctx context.Context, obj client.Object, annotations map[string]string) error {
	if maps.Equal(annotations, obj.GetAnnotations()) {
		return nil
	}
	next := obj.DeepCopyObject().(client.Object)
	next.SetAnnotations(annotations)
	err := c.client.Update(ctx, next, client.FieldOwner(FieldManager))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// dropAnnotations is a, copied, without keys.
func dropAnnotations(a map[string]string, keys ...string) map[string]string {
	out := maps.Clone(a)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// earliest is r requeued after d too, when d is positive: the earlier of
// the two.
func earliest(r reconcile.Result, d time.Duration) reconcile.Result {
	if d > 0 && (r.RequeueAfter == 0 || d < r.RequeueAfter) {
		r.RequeueAfter = d
	}
	return r
}

// kubectlRef names the binding key as kubectl takes it.
func kubectlRef(key types.NamespacedName) string {
	if key.Namespace == "" {
		return "crb " + key.Name
	}
	return fmt.Sprintf("rb -n %s %s", key.Namespace, key.Name)
}

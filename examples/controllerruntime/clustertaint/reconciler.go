package clustertaint

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/examples/controllerruntime/api/v1alpha1"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

// Defaults for the zero fields of Config.
const (
	DefaultPermitWait = 5 * time.Second
	DefaultRetryAfter = 5 * time.Second
	DefaultWorkers    = 4
)

// Config configures a Reconciler. Policies and Rates are required.
type Config struct {
	// Policies are the ClusterTaintPolicies to enforce, in the
	// fleet.example.com/v1alpha1 group as LoadPolicies reads them.
	Policies []taintpolicy.ClusterTaintPolicy
	// Rates is the rate rule that paces tainting a cluster for eviction.
	// Only the fleet rule (DisruptionDomain fleet or empty) is supported.
	Rates ratelimit.Config
	// Metrics receives the fleet's health and the rate in force (package
	// metrics implements it). Nil: none.
	Metrics ratelimit.Metrics
	// PermitWait is how long one Reconcile waits for a permit before it
	// writes the cluster's other taint changes alone and comes back after
	// RetryAfter. It bounds how long a worker is held while evictions are
	// paused, so that recovering clusters never wait behind failing ones.
	PermitWait time.Duration
	// RetryAfter is when a cluster whose eviction taint had no permit is
	// reconciled again.
	RetryAfter time.Duration
	// Workers is the controller's MaxConcurrentReconciles.
	Workers int
	// Clock reads the evaluation time and paces the Limiter. Default the
	// real clock.
	Clock clock.WithTickerAndDelayedExecution
}

// Reconciler keeps the taints of MemberClusters as the policies decide, and
// paces the taints that start evictions with a fleet-wide rate limiter. See
// the package documentation.
type Reconciler struct {
	client    client.Client
	cfg       Config
	evaluator *taintpolicy.Evaluator
	tracker   *ratelimit.Tracker
	limiter   *ratelimit.Limiter
	gate      *syncGate
}

// New returns a Reconciler that reads and writes MemberClusters through c.
// It validates cfg and starts nothing.
func New(c client.Client, cfg Config) (*Reconciler, error) {
	if c == nil {
		return nil, errors.New("clustertaint: client is nil")
	}
	if d := cfg.Rates.DisruptionDomain; d.PerDomain() {
		return nil, fmt.Errorf("clustertaint: Config.Rates.DisruptionDomain %q: this example paces the fleet as one; use fleet", d)
	}
	for _, f := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"PermitWait", &cfg.PermitWait, DefaultPermitWait}, {"RetryAfter", &cfg.RetryAfter, DefaultRetryAfter}} {
		if *f.v < 0 {
			return nil, fmt.Errorf("clustertaint: Config.%s is %v, want positive (0: the default %v)", f.name, *f.v, f.def)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("clustertaint: Config.Workers is %d, want positive (0: the default %d)", cfg.Workers, DefaultWorkers)
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	evaluator, err := taintpolicy.NewEvaluator(cfg.Policies, taintpolicy.WithAPIVersion(v1alpha1.GroupVersion.String()))
	if err != nil {
		return nil, fmt.Errorf("clustertaint: Config.Policies: %w", err)
	}
	tracker := ratelimit.NewUnsyncedTracker()
	opts := []ratelimit.Option{ratelimit.WithClock(cfg.Clock)}
	if cfg.Metrics != nil {
		opts = append(opts, ratelimit.WithMetrics(cfg.Metrics))
	}
	limiter, err := ratelimit.NewLimiter(cfg.Rates, tracker, opts...)
	if err != nil {
		return nil, fmt.Errorf("clustertaint: Config.Rates: %w", err)
	}
	return &Reconciler{
		client:    c,
		cfg:       cfg,
		evaluator: evaluator,
		tracker:   tracker,
		limiter:   limiter,
		gate:      &syncGate{tracker: tracker, seen: map[string]bool{}},
	}, nil
}

// SetupWithManager adds the controller to mgr, and beside it the Runnable
// that marks the fleet's health synced once every cluster has been counted.
// Both run on the elected leader only.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.gate.cache = mgr.GetCache()
	if err := mgr.Add(r.gate); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.MemberCluster{}).
		Named("clustertaint").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.cfg.Workers}).
		Complete(r)
}

// Reconcile brings one MemberCluster's taints to what the policies decide
// now. A taint that would make a healthy cluster faulty (NoExecute or
// PreferNoExecute, the taints that start evictions) waits for a permit of
// the Limiter; everything else (NoSchedule taints, removals) is written at
// once.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := logf.FromContext(ctx)
	var mc v1alpha1.MemberCluster
	if err := r.client.Get(ctx, req.NamespacedName, &mc); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		r.evaluator.Forget(req.Name)
		r.tracker.Delete(req.Name)
		r.gate.reconciled(ctx, req.Name)
		return reconcile.Result{}, nil
	}
	c := ToCluster(&mc)
	// The Tracker counts the cluster as it is stored now, before anything
	// below can fail: the sync gate needs every cluster counted once.
	r.tracker.Set(c.Name, failover.IsFaulty(c))
	r.gate.reconciled(ctx, c.Name)

	res := r.evaluator.Evaluate(c, r.cfg.Clock.Now())
	if !res.Changed() {
		return after(res.RequeueAfter), nil
	}
	want, retry := res.Taints, time.Duration(0)
	if held := startsEvictions(c, res); len(held) > 0 {
		if err := r.permit(ctx); err != nil {
			if ctx.Err() != nil {
				return reconcile.Result{}, ctx.Err()
			}
			// No permit within PermitWait (the rate is slow or paused):
			// write the rest now, the eviction taints on a later try.
			want, retry = without(res.Taints, held), r.cfg.RetryAfter
			log.V(1).Info("No eviction permit yet; holding the taints that start evictions",
				"held", taintList(held), "rate", r.limiter.Rate(), "retryAfter", retry)
		} else {
			// Waiting took time: stamp the added taints with the time
			// they are written, not the time they were first due.
			res = r.evaluator.Evaluate(c, r.cfg.Clock.Now())
			want = res.Taints
		}
	}
	if apiequality.Semantic.DeepEqual(want, mc.Spec.Taints) {
		return after(res.RequeueAfter, retry), nil
	}
	mc.Spec.Taints = want
	// Update carries the resourceVersion read: if anyone wrote the cluster
	// since, the server answers 409 and the request comes back (with
	// backoff) to be decided again on the object that writer left, so
	// their changes survive. A permit spent on a failed write is not given
	// back: the rate errs on the slow side.
	if err := r.client.Update(ctx, &mc); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("clustertaint: updating the taints of %s: %w", c.Name, err)
	}
	c.Taints = want
	r.tracker.Set(c.Name, failover.IsFaulty(c))
	log.Info("Updated cluster taints", "taints", taintList(want), "resourceVersion", mc.ResourceVersion)
	return after(res.RequeueAfter, retry), nil
}

// permit takes one permit from the Limiter, waiting at most PermitWait on
// the Reconciler's clock.
func (r *Reconciler) permit(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := r.cfg.Clock.AfterFunc(r.cfg.PermitWait, cancel)
	defer t.Stop()
	return r.limiter.Wait(ctx)
}

// startsEvictions returns the taints res adds that would make the healthy
// cluster c faulty: none when c is faulty already, since its evictions have
// started.
func startsEvictions(c failover.Cluster, res taintpolicy.Result) []corev1.Taint {
	if failover.IsFaulty(c) {
		return nil
	}
	var out []corev1.Taint
	for _, t := range res.Added {
		if failover.IsFaulty(failover.Cluster{Taints: []corev1.Taint{t}}) {
			out = append(out, t)
		}
	}
	return out
}

// without returns taints minus those of drop (by key and effect).
func without(taints, drop []corev1.Taint) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(taints))
	for _, t := range taints {
		dropped := false
		for _, d := range drop {
			dropped = dropped || t.MatchTaint(&d)
		}
		if !dropped {
			out = append(out, t)
		}
	}
	return out
}

// after is a Result that comes back after the shortest positive duration
// of ds, or only on events when there is none.
func after(ds ...time.Duration) reconcile.Result {
	var d time.Duration
	for _, x := range ds {
		if x > 0 && (d == 0 || x < d) {
			d = x
		}
	}
	return reconcile.Result{RequeueAfter: d}
}

func taintList(taints []corev1.Taint) []string {
	out := make([]string, len(taints))
	for i := range taints {
		out[i] = taints[i].ToString()
	}
	return out
}

package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover/failback"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/metrics"
	"github.com/failoverkit/failover/ratelimit"
)

// backCluster is a Ready cluster serving Deployments with cpus CPUs free,
// Ready since readySince.
func backCluster(name string, cpus int64, readySince time.Time) *clusterv1alpha1.Cluster {
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(readySince)}}
	c.Status.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}}}
	c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(110, resource.DecimalSI), corev1.ResourceCPU: *resource.NewQuantity(cpus, resource.DecimalSI)},
	}
	return c
}

// backBinding is shop/name, three replicas of one CPU allowed on a1, b1
// and b2, Divided Aggregated, running on on, which failed over from a1 an
// hour before evictNow.
func backBinding(name string, on ...workv1alpha2.TargetCluster) *workv1alpha2.ResourceBinding {
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name,
		Annotations: map[string]string{karmada.AppliedPlacementAnnotation: "{}"}}}
	rb.Spec = workv1alpha2.ResourceBindingSpec{
		Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: name},
		Placement: &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a1", "b1", "b2"}},
			ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated}},
		Replicas:            3,
		ReplicaRequirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		Clusters:            on,
	}
	rec := failback.Record{}.Add(failback.Origin{Cluster: "a1", At: metav1.NewTime(evictNow.Add(-time.Hour)), Placement: karmada.PlacementFingerprint(rb.Spec.Placement)})
	rb.Annotations[karmada.FailedOverFromAnnotation] = rec.String()
	return rb
}

// backEvents records the Events' reasons and messages.
type backEvents []string

func (r *backEvents) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, note string, args ...any) {
	*r = append(*r, reason+": "+fmt.Sprintf(note, args...))
}

// backWorld is a FailbackController over clusters and bindings on a fake
// API server, with its EvictionController's Fleet, a Limiter at 0.5/s on
// a healthy fleet of 20 (Tracker tr), on the fake clock clk.
type backWorld struct {
	c      client.WithWatch
	ctrl   *FailbackController
	events *backEvents
	clk    *clocktesting.FakeClock
	tr     *ratelimit.Tracker
}

func newBackWorld(t *testing.T, opts FailbackOptions, eviction EvictionOptions, objs ...client.Object) *backWorld {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, AddToScheme(s))
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...)
	for _, k := range []*kind{resourceBindings(), clusterResourceBindings()} {
		b = b.WithStatusSubresource(k.new())
		b = b.WithIndex(k.new(), failbackTaskIndex, failbackTasksOf(k)).WithIndex(k.new(), failbackIndex, originsOf)
	}
	w := &backWorld{c: b.Build(), events: &backEvents{}}
	ev := newController(t, eviction, w.c, w.events)
	w.clk = ev.opts.Clock.(*clocktesting.FakeClock)
	w.tr = ratelimit.NewTracker()
	for i := range 20 {
		w.tr.Set(fmt.Sprintf("m%02d", i), false)
	}
	var err error
	ev.limiter, err = ratelimit.NewLimiter(ratelimit.DefaultConfig(), w.tr, ratelimit.WithClock(w.clk), ratelimit.WithLogger(logr.Discard()))
	require.NoError(t, err)
	require.Equal(t, 0.5, ev.limiter.Rate(), "the healthy fleet, read once")
	w.ctrl, err = NewFailbackController(opts, ev)
	require.NoError(t, err)
	w.ctrl.client = w.c
	for _, o := range objs {
		if cl, ok := o.(*clusterv1alpha1.Cluster); ok {
			w.ctrl.sched.Set(cl)
		}
	}
	return w
}

func (w *backWorld) reconcile(t *testing.T, name string) reconcile.Result {
	t.Helper()
	res, err := w.ctrl.reconcile(context.Background(), resourceBindings(), client.ObjectKey{Namespace: "shop", Name: name})
	require.NoError(t, err)
	return res
}

func (w *backWorld) binding(t *testing.T, name string) *workv1alpha2.ResourceBinding {
	t.Helper()
	var rb workv1alpha2.ResourceBinding
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: name}, &rb))
	return &rb
}

// A binding waits for its origin's window, then goes back: the copies on
// the cluster it leaves wait in a failback task, the scheduler is asked for
// a fresh placement, the origin leaves the record, and an Event says so.
func TestFailbackControllerWaitsThenGoes(t *testing.T) {
	w := newBackWorld(t, FailbackOptions{Window: 10 * time.Minute}, EvictionOptions{},
		backCluster("a1", 100, evictNow.Add(-4*time.Minute)), backCluster("b1", 10, evictNow.Add(-time.Hour)),
		backBinding("web", workv1alpha2.TargetCluster{Name: "b1", Replicas: 3}))

	res := w.reconcile(t, "web")
	assert.Equal(t, 6*time.Minute, res.RequeueAfter, "a1 has been Ready for 4 of 10 minutes")
	assert.Empty(t, w.binding(t, "web").Spec.GracefulEvictionTasks)

	w.clk.Step(6 * time.Minute)
	res = w.reconcile(t, "web")
	assert.Zero(t, res.RequeueAfter)
	rb := w.binding(t, "web")
	require.Len(t, rb.Spec.GracefulEvictionTasks, 1)
	assert.Equal(t, "b1", rb.Spec.GracefulEvictionTasks[0].FromCluster)
	assert.Equal(t, engine.FailbackProducer, rb.Spec.GracefulEvictionTasks[0].Producer)
	require.NotNil(t, rb.Spec.RescheduleTriggeredAt)
	assert.True(t, rb.Spec.RescheduleTriggeredAt.Time.Equal(w.clk.Now()))
	assert.NotContains(t, rb.Annotations, karmada.FailedOverFromAnnotation)
	assert.Equal(t, backEvents{"FailedBack: cluster a1 has been healthy for the 10m0s window, and a fresh placement puts 3 replicas there (a1:3)"}, *w.events)
}

// A failback goes through what an eviction goes through: the storm's hold,
// the rate, a faulty cluster of its schedule result (an eviction may be
// queued), the failbacks in flight fleet wide, its budget of clusters in
// transit; and waits, with an Event, where a fresh placement would not go
// back.
func TestFailbackControllerGates(t *testing.T) {
	ready := evictNow.Add(-time.Hour)
	inFlight := backBinding("busy", workv1alpha2.TargetCluster{Name: "b2", Replicas: 3})
	inFlight.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "b1", Producer: engine.FailbackProducer, Reason: engine.FailbackReason}}
	both := backBinding("both", workv1alpha2.TargetCluster{Name: "b1", Replicas: 2}, workv1alpha2.TargetCluster{Name: "b2", Replicas: 1})
	ledger, err := engine.NewLedger()
	require.NoError(t, err)
	w := newBackWorld(t, FailbackOptions{Window: 10 * time.Minute, MaxInFlight: 3}, EvictionOptions{MaxClustersInTransit: 1, Ledger: ledger},
		backCluster("a1", 100, ready), backCluster("b1", 10, ready), backCluster("b2", 10, ready),
		backBinding("web", workv1alpha2.TargetCluster{Name: "b1", Replicas: 3}), backBinding("api", workv1alpha2.TargetCluster{Name: "b1", Replicas: 3}),
		inFlight, both)

	// A storm holds it.
	for i := range 12 {
		w.tr.Set(fmt.Sprintf("m%02d", i), true)
	}
	assert.Equal(t, failbackRecheck, w.reconcile(t, "web").RequeueAfter)
	assert.Empty(t, w.binding(t, "web").Spec.GracefulEvictionTasks)
	assert.Empty(t, ledger.Held(w.clk.Now()), "held back: the room it would take is given back")
	for i := range 12 {
		w.tr.Set(fmt.Sprintf("m%02d", i), false)
	}

	// Leaving b1 and b2 at once is past a budget of 1.
	assert.Zero(t, w.reconcile(t, "both").RequeueAfter)
	assert.Empty(t, w.binding(t, "both").Spec.GracefulEvictionTasks)
	assert.Contains(t, *w.events, "FailbackNotPlaced: not back to a1: it would leave 2 clusters at once ([b1 b2]), more than its budget of clusters in transit, 1")

	// The first goes, taking the rate's permit; the next waits for the next.
	assert.Zero(t, w.reconcile(t, "web").RequeueAfter)
	require.Len(t, w.binding(t, "web").Spec.GracefulEvictionTasks, 1)
	assert.Equal(t, 2*time.Second, w.reconcile(t, "api").RequeueAfter, "0.5/s: the next permit in 2 s")
	assert.Empty(t, w.binding(t, "api").Spec.GracefulEvictionTasks)
	assert.Equal(t, map[string]int64{"a1": 3}, ledger.Held(w.clk.Now()), "web's room, not api's")

	// Two failbacks in flight (busy's and web's) are the most allowed.
	w.clk.Step(2 * time.Second)
	w.ctrl.opts.MaxInFlight = 2
	assert.Equal(t, failbackRecheck, w.reconcile(t, "api").RequeueAfter)
	assert.Empty(t, w.binding(t, "api").Spec.GracefulEvictionTasks)

	// A faulty cluster of its schedule result: an eviction may be queued.
	b1 := backCluster("b1", 10, ready)
	b1.Spec.Taints = []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: evictNow}}}
	_, err = w.ctrl.ev.fleet.Set(b1)
	require.NoError(t, err)
	w.ctrl.opts.MaxInFlight = 10
	assert.Equal(t, failbackRecheck, w.reconcile(t, "api").RequeueAfter)
	assert.Empty(t, w.binding(t, "api").Spec.GracefulEvictionTasks)
}

func TestFailbackControllerNotPlaced(t *testing.T) {
	ready := evictNow.Add(-time.Hour)
	w := newBackWorld(t, FailbackOptions{Window: 10 * time.Minute}, EvictionOptions{},
		backCluster("a1", 2, ready), backCluster("b1", 100, ready),
		backBinding("web", workv1alpha2.TargetCluster{Name: "b1", Replicas: 3}))
	assert.Equal(t, failbackRecheck, w.reconcile(t, "web").RequeueAfter)
	assert.Empty(t, w.binding(t, "web").Spec.GracefulEvictionTasks)
	assert.Equal(t, backEvents{"FailbackNotPlaced: not back to a1 yet: a fresh placement would not put it back on a1: Karmada's scheduler would place it as b1:3"}, *w.events)
	assert.Contains(t, w.binding(t, "web").Annotations, karmada.FailedOverFromAnnotation, "the origin is kept for later")
}

// Origins made moot leave the record without a failback: the binding runs
// there again. With failback off, nothing is written.
func TestFailbackControllerCleansTheRecord(t *testing.T) {
	ready := evictNow.Add(-time.Hour)
	objs := []client.Object{backCluster("a1", 100, ready), backBinding("web", workv1alpha2.TargetCluster{Name: "a1", Replicas: 3})}
	off := newBackWorld(t, FailbackOptions{}, EvictionOptions{}, objs...)
	rv := off.binding(t, "web").ResourceVersion
	assert.Zero(t, off.reconcile(t, "web").RequeueAfter)
	assert.Equal(t, rv, off.binding(t, "web").ResourceVersion, "off: not written")

	w := newBackWorld(t, FailbackOptions{Window: time.Minute}, EvictionOptions{}, objs...)
	assert.Zero(t, w.reconcile(t, "web").RequeueAfter)
	assert.NotContains(t, w.binding(t, "web").Annotations, karmada.FailedOverFromAnnotation)
}

// A binding's window annotation that cannot be read gets a Warning Event,
// and the flag's window applies.
func TestFailbackControllerBadWindowAnnotation(t *testing.T) {
	ready := evictNow.Add(-time.Hour)
	rb := backBinding("web", workv1alpha2.TargetCluster{Name: "b1", Replicas: 3})
	rb.Annotations[FailbackWindowAnnotation] = "-5m"
	w := newBackWorld(t, FailbackOptions{Window: 10 * time.Minute}, EvictionOptions{},
		backCluster("a1", 100, ready), backCluster("b1", 10, ready), rb)
	w.reconcile(t, "web")
	require.NotEmpty(t, *w.events)
	assert.Equal(t, `InvalidFailbackWindow: karmada: annotation failover.karmada.io/failback-stabilization-window: "-5m" is not a non-negative duration: --failback-stabilization-window 10m0s applies`, (*w.events)[0])
	got := w.binding(t, "web")
	assert.Len(t, got.Spec.GracefulEvictionTasks, 1, "gone back under the flag's window")
	assert.Equal(t, "-5m", got.Annotations[FailbackWindowAnnotation], "the annotation is the person's to mend")
}

func TestNewFailbackControllerRejectsBadOptions(t *testing.T) {
	_, err := NewFailbackController(FailbackOptions{Window: -time.Second, MaxInFlight: -1}, nil)
	assert.EqualError(t, err, "controllers: FailbackOptions.Window (--failback-stabilization-window) -1s: must not be negative\n"+
		"controllers: FailbackOptions.MaxInFlight (--max-failbacks-in-flight) -1: must not be negative\n"+
		"controllers: NewFailbackController: the EvictionController is nil")
}

// The failback series follow the decisions: a binding waiting for its
// origin's window counts as stabilizing, one the cap holds back as
// held_back (a failback_total decision), one sent back leaves the waiting
// set and counts in flight.
func TestFailbackControllerMetrics(t *testing.T) {
	w := newBackWorld(t, FailbackOptions{Window: 10 * time.Minute, MaxInFlight: 1}, EvictionOptions{},
		backCluster("a1", 100, evictNow.Add(-4*time.Minute)), backCluster("b1", 10, evictNow.Add(-time.Hour)),
		backBinding("web", workv1alpha2.TargetCluster{Name: "b1", Replicas: 3}), backBinding("api", workv1alpha2.TargetCluster{Name: "b1", Replicas: 3}))
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.WithKarmadaNames())
	require.NoError(t, err)
	w.ctrl.ev.metrics, w.ctrl.waiting = m, m.FailbackWaiters()
	series := func() map[string]float64 {
		t.Helper()
		out := map[string]float64{}
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if !strings.HasPrefix(mf.GetName(), "failback_") {
				continue
			}
			for _, s := range mf.GetMetric() {
				key := mf.GetName()
				for _, l := range s.GetLabel() {
					key += "{" + l.GetValue() + "}"
				}
				out[key] = s.GetGauge().GetValue() + s.GetCounter().GetValue()
			}
		}
		return out
	}

	w.reconcile(t, "web")
	w.reconcile(t, "api")
	assert.Equal(t, map[string]float64{"failback_in_flight": 0, "failback_waiting{stabilizing}": 2}, series())

	w.clk.Step(6 * time.Minute)
	w.reconcile(t, "web")
	w.reconcile(t, "api")
	assert.Equal(t, map[string]float64{
		"failback_in_flight": 1, "failback_total{failed_back}": 1, "failback_total{held_back}": 1,
		"failback_waiting{stabilizing}": 0, "failback_waiting{held_back}": 1,
	}, series(), "web went back; api waits for the cap of 1")

	require.NoError(t, w.c.Delete(context.Background(), w.binding(t, "api")))
	w.reconcile(t, "api")
	assert.Equal(t, 0.0, series()["failback_waiting{held_back}"], "a deleted binding waits no more")
}

// A failback just written counts against MaxInFlight although the cache
// does not show its task yet, until it does or launchedFor has passed.
func TestFailbackControllerCapWithALaggingCache(t *testing.T) {
	ready := evictNow.Add(-time.Hour)
	w := newBackWorld(t, FailbackOptions{Window: 10 * time.Minute, MaxInFlight: 1}, EvictionOptions{},
		backCluster("a1", 100, ready), backCluster("b1", 10, ready),
		backBinding("web", workv1alpha2.TargetCluster{Name: "b1", Replicas: 3}), backBinding("api", workv1alpha2.TargetCluster{Name: "b1", Replicas: 3}))
	// The cache has not seen any failback task yet.
	w.ctrl.client = interceptor.NewClient(w.c, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			var lo client.ListOptions
			lo.ApplyOptions(opts)
			if lo.FieldSelector != nil && strings.Contains(lo.FieldSelector.String(), failbackTaskIndex) {
				return nil // an empty list
			}
			return c.List(ctx, list, opts...)
		},
	})

	w.reconcile(t, "web")
	require.Len(t, w.binding(t, "web").Spec.GracefulEvictionTasks, 1)
	w.clk.Step(2 * time.Second) // the rate's next permit
	assert.Equal(t, failbackRecheck, w.reconcile(t, "api").RequeueAfter)
	assert.Empty(t, w.binding(t, "api").Spec.GracefulEvictionTasks, "web's failback holds the one slot")

	w.clk.Step(launchedFor)
	w.reconcile(t, "api")
	assert.Len(t, w.binding(t, "api").Spec.GracefulEvictionTasks, 1, "a launch the cache never showed counts for launchedFor only")
}

// A binding that fell back to a later clusterAffinities term goes back to
// the first: its status's term is cleared (the scheduler places afresh
// from the term it observes) and its spec written.
func TestFailbackControllerClearsTheObservedTerm(t *testing.T) {
	ready := evictNow.Add(-time.Hour)
	rb := backBinding("web", workv1alpha2.TargetCluster{Name: "b1", Replicas: 3})
	rb.Spec.Placement.ClusterAffinity = nil
	rb.Spec.Placement.ClusterAffinities = []policyv1alpha1.ClusterAffinityTerm{
		{AffinityName: "home", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a1"}}},
		{AffinityName: "fallback", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"b1"}}},
	}
	rec := failback.Record{}.Add(failback.Origin{Cluster: "a1", At: metav1.NewTime(evictNow.Add(-2 * time.Hour)), Placement: karmada.PlacementFingerprint(rb.Spec.Placement)})
	rb.Annotations[karmada.FailedOverFromAnnotation] = rec.String()
	rb.Status.SchedulerObservedAffinityName = "fallback"
	w := newBackWorld(t, FailbackOptions{Window: 10 * time.Minute}, EvictionOptions{},
		backCluster("a1", 100, ready), backCluster("b1", 10, ready), rb)

	w.reconcile(t, "web")
	got := w.binding(t, "web")
	require.Len(t, got.Spec.GracefulEvictionTasks, 1, "%v", *w.events)
	assert.Equal(t, "b1", got.Spec.GracefulEvictionTasks[0].FromCluster)
	assert.Empty(t, got.Status.SchedulerObservedAffinityName)
	assert.NotNil(t, got.Spec.RescheduleTriggeredAt)
}

// A reconcile woken by an origin's recovery decides on the Cluster as the
// cache has it, though the Fleet and the Scheduler, fed by handlers of
// their own, still hold it tainted.
func TestFailbackControllerReadsTheOriginFromTheCache(t *testing.T) {
	ready := evictNow.Add(-time.Hour)
	tainted := backCluster("a1", 100, ready)
	tainted.ResourceVersion = "1"
	tainted.Spec.Taints = []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: evictNow}}}
	w := newBackWorld(t, FailbackOptions{Window: 10 * time.Minute}, EvictionOptions{},
		backCluster("a1", 100, ready), backCluster("b1", 10, ready), backBinding("web", workv1alpha2.TargetCluster{Name: "b1", Replicas: 3}))
	// The handlers' view lags: a1 still tainted there.
	_, err := w.ctrl.ev.fleet.Set(tainted)
	require.NoError(t, err)
	w.ctrl.sched.Set(tainted)

	assert.Zero(t, w.reconcile(t, "web").RequeueAfter)
	require.Len(t, w.binding(t, "web").Spec.GracefulEvictionTasks, 1, "%v", *w.events)
}

// The freeze holds a failback back; its thaw decides it again at once
// (the bindings with a record are added to the controller's queue), not a
// failbackRecheck later; a binding with no record is not woken.
func TestFailbackControllerThawWakesIt(t *testing.T) {
	plain := backBinding("plain", workv1alpha2.TargetCluster{Name: "b1", Replicas: 3})
	delete(plain.Annotations, karmada.FailedOverFromAnnotation)
	w := newBackWorld(t, FailbackOptions{Window: 10 * time.Minute}, EvictionOptions{},
		backCluster("a1", 100, evictNow.Add(-time.Hour)), backCluster("b1", 10, evictNow.Add(-time.Hour)),
		backBinding("web", workv1alpha2.TargetCluster{Name: "b1", Replicas: 3}), plain)
	gate := newFreezeGate(freezeName, w.clk, &frozenGauge{}, logr.Discard())
	w.ctrl.ev.freeze = gate
	gate.onThaw = append(gate.onThaw, w.ctrl.thawed) // as SetupWithManager does
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	w.ctrl.woken[resourceBindings().name] = q // as the controller's start does

	gate.set(freezeMap(map[string]string{"reason": "INC-7"}))
	assert.Equal(t, failbackRecheck, w.reconcile(t, "web").RequeueAfter, "frozen: held back")
	assert.Empty(t, w.binding(t, "web").Spec.GracefulEvictionTasks)
	assert.Zero(t, q.Len(), "nothing woken while frozen")

	gate.set(nil)
	require.Equal(t, 1, q.Len(), "the thaw wakes the binding with a record, and it only")
	req, _ := q.Get()
	assert.Equal(t, client.ObjectKey{Namespace: "shop", Name: "web"}, req.NamespacedName)
	q.Done(req)
	assert.Zero(t, w.reconcile(t, "web").RequeueAfter)
	require.Len(t, w.binding(t, "web").Spec.GracefulEvictionTasks, 1, "back once thawed")
}

// The cache may trail the API server by its lag: a failback its copy of
// the origin allows waits if the origin, read afresh, failed within the
// window (or is tainted), and goes once the origin read afresh has been
// healthy for it. Found by the model test (TestModelFailback, seeds
// 923242186101 and 747583093381: an origin that failed 2 s before its
// window's end, a cache 5 s behind).
func TestFailbackControllerAsksTheOriginAfresh(t *testing.T) {
	w := newBackWorld(t, FailbackOptions{Window: 10 * time.Minute}, EvictionOptions{},
		backCluster("a1", 100, evictNow.Add(-time.Hour)), backCluster("b1", 10, evictNow.Add(-time.Hour)),
		backBinding("web", workv1alpha2.TargetCluster{Name: "b1", Replicas: 3}))
	// The API server's a1 failed a second ago; the cache, and the Fleet
	// fed from it, still have it Ready for an hour.
	down := backCluster("a1", 100, evictNow.Add(-time.Hour))
	down.Status.Conditions[0].Status = metav1.ConditionFalse
	down.Status.Conditions[0].LastTransitionTime = metav1.NewTime(evictNow.Add(-time.Second))
	s := runtime.NewScheme()
	require.NoError(t, AddToScheme(s))
	api := fake.NewClientBuilder().WithScheme(s).WithObjects(down, backCluster("b1", 10, evictNow.Add(-time.Hour))).Build()
	w.ctrl.ev.reader = api

	res := w.reconcile(t, "web")
	assert.Equal(t, failbackRecheck, res.RequeueAfter, "a1 is down as the API server has it: decided again at the recheck, or when a1 changes")
	assert.Empty(t, w.binding(t, "web").Spec.GracefulEvictionTasks, "sent back to a cluster that had failed")
	assert.Nil(t, w.binding(t, "web").Spec.RescheduleTriggeredAt)

	// a1 recovers on the API server, and has been Ready for the window.
	up := backCluster("a1", 100, evictNow.Add(-time.Second))
	var cur clusterv1alpha1.Cluster
	require.NoError(t, api.Get(context.Background(), client.ObjectKey{Name: "a1"}, &cur))
	up.ResourceVersion = cur.ResourceVersion
	require.NoError(t, api.Update(context.Background(), up))
	w.clk.Step(10 * time.Minute)
	assert.Zero(t, w.reconcile(t, "web").RequeueAfter, "%v", *w.events)
	require.Len(t, w.binding(t, "web").Spec.GracefulEvictionTasks, 1, "back once a1, read afresh, has been healthy for the window")
}

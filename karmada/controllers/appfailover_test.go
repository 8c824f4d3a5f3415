package controllers

import (
	"context"
	"errors"
	"fmt"
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
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/metrics"
	"github.com/failoverkit/failover/ratelimit"
)

// appWorld is an ApplicationFailoverController over clusters and bindings
// on a fake API server, with its EvictionController's Fleet, a Limiter at
// 0.5/s on a healthy fleet of 20, on the fake clock clk.
type appWorld struct {
	reg    *prometheus.Registry
	c      client.WithWatch
	ev     *EvictionController
	ctrl   *ApplicationFailoverController
	events *backEvents
	clk    *clocktesting.FakeClock
}

func newAppWorld(t *testing.T, opts ApplicationFailoverOptions, eviction EvictionOptions, funcs *interceptor.Funcs, objs ...client.Object) *appWorld {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, AddToScheme(s))
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...)
	for _, k := range []*kind{resourceBindings(), clusterResourceBindings()} {
		b = b.WithStatusSubresource(k.new())
	}
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	w := &appWorld{c: b.Build(), events: &backEvents{}}
	w.ev = newController(t, eviction, w.c, w.events)
	w.clk = w.ev.opts.Clock.(*clocktesting.FakeClock)
	tr := ratelimit.NewTracker()
	for i := range 20 {
		tr.Set(fmt.Sprintf("f%02d", i), false)
	}
	var err error
	w.ev.limiter, err = ratelimit.NewLimiter(ratelimit.DefaultConfig(), tr, ratelimit.WithClock(w.clk), ratelimit.WithLogger(logr.Discard()))
	require.NoError(t, err)
	w.reg = prometheus.NewRegistry()
	w.ev.metrics, err = metrics.New(w.reg)
	require.NoError(t, err)
	w.ctrl = w.restart(t, opts)
	return w
}

// restart is a new controller on the same API server, fleet and clock: a
// restart, or a new leader, which remembers nothing but what the API
// server holds.
func (w *appWorld) restart(t *testing.T, opts ApplicationFailoverOptions) *ApplicationFailoverController {
	t.Helper()
	ctrl, err := NewApplicationFailoverController(opts, w.ev)
	require.NoError(t, err)
	ctrl.client = w.c
	ctrl.held = w.ev.metrics.AppFailoverHeld(metrics.AppFailoverHeldBadRollout)
	return ctrl
}

// sample is the value of the series name{label="value"}, 0 when absent.
func (w *appWorld) sample(t *testing.T, name, label, value string) float64 {
	t.Helper()
	mfs, err := w.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					if m.GetCounter() != nil {
						return m.GetCounter().GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

func (w *appWorld) reconcile(t *testing.T, k *kind, key client.ObjectKey) reconcile.Result {
	t.Helper()
	res, err := w.ctrl.reconcile(context.Background(), k, key)
	require.NoError(t, err)
	return res
}

func (w *appWorld) rb(t *testing.T, name string) *workv1alpha2.ResourceBinding {
	t.Helper()
	var rb workv1alpha2.ResourceBinding
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: name}, &rb))
	return &rb
}

// setHealth sets the health of the binding name's copies, by cluster, as
// Karmada's status controller would.
func (w *appWorld) setHealth(t *testing.T, name string, health map[string]workv1alpha2.ResourceHealth) {
	t.Helper()
	rb := w.rb(t, name)
	rb.Status.AggregatedStatus = statusItems(health)
	require.NoError(t, w.c.Status().Update(context.Background(), rb))
}

func statusItems(health map[string]workv1alpha2.ResourceHealth) []workv1alpha2.AggregatedStatusItem {
	var out []workv1alpha2.AggregatedStatusItem
	for _, c := range []string{"m1", "m2", "m3", "m4"} {
		if h, ok := health[c]; ok {
			out = append(out, workv1alpha2.AggregatedStatusItem{ClusterName: c, Health: h,
				Status: &runtime.RawExtension{Raw: []byte(`{"replicas":2,"readyReplicas":0}`)}})
		}
	}
	return out
}

// appBinding is shop/name, one replica of one CPU on each cluster of on
// (Duplicated), allowed on m1 to m4, opted in to application failover with
// a, its dependencies propagated; its copies are as health says.
func appBinding(name string, a *policyv1alpha1.ApplicationFailoverBehavior, health map[string]workv1alpha2.ResourceHealth, on ...string) *workv1alpha2.ResourceBinding {
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
	rb.Spec = workv1alpha2.ResourceBindingSpec{
		Resource:            workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: name},
		Placement:           &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1", "m2", "m3", "m4"}}},
		Replicas:            1,
		ReplicaRequirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		PropagateDeps:       true,
		Failover:            &policyv1alpha1.FailoverBehavior{Application: a},
	}
	for _, c := range on {
		rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: 1})
	}
	rb.Status.AggregatedStatus = statusItems(health)
	return rb
}

// tolerate is an ApplicationFailoverBehavior of s seconds, purge mode
// Gracefully with a grace period of 120 seconds.
func tolerate(s int32) *policyv1alpha1.ApplicationFailoverBehavior {
	return &policyv1alpha1.ApplicationFailoverBehavior{DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To(s)},
		PurgeMode: policyv1alpha1.PurgeModeGracefully, GracePeriodSeconds: ptr.To[int32](120)}
}

// fleet4 is m1 to m4, Ready, with room for ten one-CPU replicas each.
func fleet4() []client.Object {
	var out []client.Object
	for _, n := range []string{"m1", "m2", "m3", "m4"} {
		out = append(out, backCluster(n, 10, evictNow.Add(-time.Hour)))
	}
	return out
}

var (
	rbKey = func(name string) client.ObjectKey { return client.ObjectKey{Namespace: "shop", Name: name} }
	hl    = workv1alpha2.ResourceHealthy
	un    = workv1alpha2.ResourceUnhealthy
	unk   = workv1alpha2.ResourceUnknown
)

// Karmada's detectFailure, ported: the first sight of an Unhealthy copy
// starts its timer and asks again after the whole window ("hasWorkloadBeenUnhealthy
// return false"); within the window nothing fails over and the time left
// is asked for ("less than the tolerance time"); past it the copy's
// cluster is left ("more than the tolerance time"); with no Unhealthy copy
// nothing is asked for ("final duration is 0"). Karmada's syncBinding case
// (member1 Healthy, member2 Unhealthy, 5 s) asks again after 5 s too.
func TestApplicationFailoverDetectsFailure(t *testing.T) {
	objs := append(fleet4(),
		appBinding("web", tolerate(60), map[string]workv1alpha2.ResourceHealth{"m1": un, "m2": hl}, "m1", "m2"),
		appBinding("calm", tolerate(60), map[string]workv1alpha2.ResourceHealth{"m1": hl, "m2": hl}, "m1", "m2"),
		appBinding("sync", tolerate(5), map[string]workv1alpha2.ResourceHealth{"m1": hl, "m2": un}, "m1", "m2"))
	w := newAppWorld(t, ApplicationFailoverOptions{}, EvictionOptions{}, nil, objs...)
	k := resourceBindings()

	assert.Equal(t, 60*time.Second, w.reconcile(t, k, rbKey("web")).RequeueAfter, "first sight: the whole window")
	rec, err := karmada.ApplicationTimers(w.rb(t, "web").Annotations)
	require.NoError(t, err)
	require.Len(t, rec, 1, "the timer is kept on the binding")
	assert.Equal(t, "m1", rec[0].Cluster)

	w.clk.Step(30 * time.Second)
	assert.Equal(t, 30*time.Second, w.reconcile(t, k, rbKey("web")).RequeueAfter, "less than the window: the time left")
	assert.Empty(t, w.rb(t, "web").Spec.GracefulEvictionTasks)

	w.clk.Step(30 * time.Second)
	w.reconcile(t, k, rbKey("web"))
	rb := w.rb(t, "web")
	require.Len(t, rb.Spec.GracefulEvictionTasks, 1, "the window reached: m1 is left")
	assert.Equal(t, "m1", rb.Spec.GracefulEvictionTasks[0].FromCluster)
	assert.Equal(t, []workv1alpha2.TargetCluster{{Name: "m2", Replicas: 1}}, rb.Spec.Clusters)
	assert.NotContains(t, rb.Annotations, karmada.ApplicationTimersAnnotation, "m1's timer left with it")
	assert.Contains(t, (*w.events)[len(*w.events)-1], EventReasonApplicationFailedOver+": failed over from m1")
	assert.Equal(t, 1.0, w.sample(t, "application_failover_total", "result", metrics.AppFailoverFailedOver))

	assert.Zero(t, w.reconcile(t, k, rbKey("calm")).RequeueAfter, "no Unhealthy copy: nothing to ask")
	assert.NotContains(t, w.rb(t, "calm").Annotations, karmada.ApplicationTimersAnnotation)

	assert.Equal(t, 5*time.Second, w.reconcile(t, k, rbKey("sync")).RequeueAfter)
}

// Karmada's distinguishUnhealthyClustersWithOthers, ported: Healthy and
// Unknown copies start no timer; an Unhealthy copy whose cluster is
// already in a graceful eviction task is not judged again.
func TestApplicationFailoverJudgesOnlyUnhealthyCopies(t *testing.T) {
	leaving := appBinding("leaving", tolerate(0), map[string]workv1alpha2.ResourceHealth{"m1": hl, "m2": un}, "m1", "m2")
	leaving.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "m2", Reason: "TaintUntolerated", Producer: "TaintManager"}}
	objs := append(fleet4(),
		appBinding("healthy", tolerate(0), map[string]workv1alpha2.ResourceHealth{"m1": hl, "m2": hl}, "m1", "m2"),
		appBinding("unknown", tolerate(0), map[string]workv1alpha2.ResourceHealth{"m1": unk, "m2": unk}, "m1", "m2"),
		leaving)
	w := newAppWorld(t, ApplicationFailoverOptions{}, EvictionOptions{}, nil, objs...)
	for _, name := range []string{"healthy", "unknown", "leaving"} {
		t.Run(name, func(t *testing.T) {
			before := w.rb(t, name)
			assert.Zero(t, w.reconcile(t, resourceBindings(), rbKey(name)).RequeueAfter)
			after := w.rb(t, name)
			assert.Equal(t, before.Spec, after.Spec, "nothing fails over")
			assert.NotContains(t, after.Annotations, karmada.ApplicationTimersAnnotation)
		})
	}
}

// Karmada's bindingFilter and Reconcile cases, ported: a binding without
// spec.failover.application, without an aggregated status, or without
// propagateDeps is left alone; one that is gone is no error.
func TestApplicationFailoverFilter(t *testing.T) {
	noFailover := appBinding("nofailover", nil, map[string]workv1alpha2.ResourceHealth{"m1": un}, "m1", "m2")
	noFailover.Spec.Failover = nil
	noStatus := appBinding("nostatus", tolerate(0), nil, "m1", "m2")
	noDeps := appBinding("nodeps", tolerate(0), map[string]workv1alpha2.ResourceHealth{"m1": un}, "m1", "m2")
	noDeps.Spec.PropagateDeps = false
	w := newAppWorld(t, ApplicationFailoverOptions{}, EvictionOptions{}, nil, append(fleet4(), noFailover, noStatus, noDeps)...)
	for _, name := range []string{"nofailover", "nostatus", "nodeps", "gone"} {
		t.Run(name, func(t *testing.T) {
			res, err := w.ctrl.reconcile(context.Background(), resourceBindings(), rbKey(name))
			require.NoError(t, err)
			assert.Zero(t, res.RequeueAfter)
			if name == "gone" {
				return
			}
			rb := w.rb(t, name)
			assert.Empty(t, rb.Spec.GracefulEvictionTasks)
			assert.NotContains(t, rb.Annotations, karmada.ApplicationTimersAnnotation)
		})
	}
	assert.Empty(t, *w.events)
}

// Karmada's buildTaskOptions and evictBinding cases, ported, through the
// whole controller on both kinds: the task per purge mode, its grace
// period and suppressDeletion, and the preserved state with the clusters
// before the failover under StatefulFailoverInjection; a status not
// collected from the cluster left is an error, and nothing is written.
func TestApplicationFailoverTaskOptions(t *testing.T) {
	rules := &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{{AliasLabelName: "app.example/replicas", JSONPath: "{.replicas}"}}}
	state := map[string]string{"app.example/replicas": "2"}
	for _, tc := range []struct {
		name      string
		behavior  policyv1alpha1.ApplicationFailoverBehavior
		stateful  bool
		noStatus  bool
		want      workv1alpha2.GracefulEvictionTask
		wantError string
	}{
		{name: "Gracefully purgeMode with StatePreservation", stateful: true,
			behavior: policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeGracefully, GracePeriodSeconds: ptr.To[int32](120), StatePreservation: rules},
			want:     workv1alpha2.GracefulEvictionTask{PurgeMode: policyv1alpha1.PurgeModeGracefully, GracePeriodSeconds: ptr.To[int32](120), PreservedLabelState: state, ClustersBeforeFailover: []string{"m1", "m2"}}},
		{name: "Never purgeMode with StatePreservation", stateful: true,
			behavior: policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: policyv1alpha1.Never, StatePreservation: rules},
			want:     workv1alpha2.GracefulEvictionTask{PurgeMode: policyv1alpha1.Never, SuppressDeletion: ptr.To(true), PreservedLabelState: state, ClustersBeforeFailover: []string{"m1", "m2"}}},
		{name: "Directly purgeMode with StatePreservation", stateful: true,
			behavior: policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly, StatePreservation: rules},
			want:     workv1alpha2.GracefulEvictionTask{PurgeMode: policyv1alpha1.PurgeModeDirectly, PreservedLabelState: state, ClustersBeforeFailover: []string{"m1", "m2"}}},
		{name: "legacy Immediately purgeMode is Directly",
			behavior: policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: policyv1alpha1.PurgeMode("Immediately")},
			want:     workv1alpha2.GracefulEvictionTask{PurgeMode: policyv1alpha1.PurgeModeDirectly}},
		{name: "Gracefully purgeMode, StatePreservation is nil", stateful: true,
			behavior: policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeGracefully, GracePeriodSeconds: ptr.To[int32](120)},
			want:     workv1alpha2.GracefulEvictionTask{PurgeMode: policyv1alpha1.PurgeModeGracefully, GracePeriodSeconds: ptr.To[int32](120)}},
		{name: "Gracefully purgeMode, StatePreservation.Rules is nil", stateful: true,
			behavior: policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeGracefully, GracePeriodSeconds: ptr.To[int32](120), StatePreservation: &policyv1alpha1.StatePreservation{}},
			want:     workv1alpha2.GracefulEvictionTask{PurgeMode: policyv1alpha1.PurgeModeGracefully, GracePeriodSeconds: ptr.To[int32](120)}},
		{name: "StatePreservation without StatefulFailoverInjection",
			behavior: policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeGracefully, StatePreservation: rules},
			want:     workv1alpha2.GracefulEvictionTask{PurgeMode: policyv1alpha1.PurgeModeGracefully}},
		{name: "target cluster status is not collected", stateful: true, noStatus: true,
			behavior:  policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeGracefully, StatePreservation: rules},
			wantError: "no status collected from cluster m1"},
	} {
		for _, k := range []*kind{resourceBindings(), clusterResourceBindings()} {
			t.Run(tc.name+"/"+k.name, func(t *testing.T) {
				b := tc.behavior
				b.DecisionConditions.TolerationSeconds = ptr.To[int32](0)
				rb := appBinding("web", &b, map[string]workv1alpha2.ResourceHealth{"m1": un, "m2": hl}, "m1", "m2")
				if tc.noStatus {
					rb.Status.AggregatedStatus[0].Status = nil
				}
				var obj client.Object = rb
				key := rbKey("web")
				if k.name == "clusterresourcebinding" {
					obj = &workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: rb.Spec, Status: rb.Status}
					key = client.ObjectKey{Name: "web"}
				}
				w := newAppWorld(t, ApplicationFailoverOptions{}, EvictionOptions{StatefulFailoverInjection: tc.stateful}, nil, append(fleet4(), obj)...)
				_, err := w.ctrl.reconcile(context.Background(), k, key)
				got := k.new()
				require.NoError(t, w.c.Get(context.Background(), key, got))
				if tc.wantError != "" {
					require.ErrorContains(t, err, tc.wantError)
					assert.Empty(t, k.spec(got).GracefulEvictionTasks)
					return
				}
				require.NoError(t, err)
				tasks := k.spec(got).GracefulEvictionTasks
				require.Len(t, tasks, 1)
				want := tc.want
				want.FromCluster, want.Replicas = "m1", ptr.To[int32](1)
				want.Reason, want.Producer = workv1alpha2.EvictionReasonApplicationFailure, engine.ApplicationFailoverProducer
				want.Message, want.CreationTimestamp = tasks[0].Message, tasks[0].CreationTimestamp
				assert.Equal(t, want, tasks[0])
			})
		}
	}
}

// Karmada's updateBinding case, ported: a write that fails fails the
// reconcile, which is retried; nothing fails over meanwhile.
func TestApplicationFailoverWriteFails(t *testing.T) {
	boom := errors.New("boom")
	w := newAppWorld(t, ApplicationFailoverOptions{}, EvictionOptions{}, &interceptor.Funcs{
		Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error { return boom },
	}, append(fleet4(), appBinding("web", tolerate(0), map[string]workv1alpha2.ResourceHealth{"m1": un}, "m1"))...)
	_, err := w.ctrl.reconcile(context.Background(), resourceBindings(), rbKey("web"))
	require.ErrorIs(t, err, boom)
	assert.Equal(t, []workv1alpha2.TargetCluster{{Name: "m1", Replicas: 1}}, w.rb(t, "web").Spec.Clusters)
}

// Where this controller decides otherwise than Karmada v1.18, on purpose
// (karmada#7171, #7181): the timers are on the binding, so a controller
// restarted (or a new leader) 40 s into a 60 s window fails over 20 s
// later, at the moment one that ran all along would; Karmada's forgets and
// waits a whole window again.
func TestApplicationFailoverSurvivesRestart(t *testing.T) {
	w := newAppWorld(t, ApplicationFailoverOptions{}, EvictionOptions{}, nil,
		append(fleet4(), appBinding("web", tolerate(60), map[string]workv1alpha2.ResourceHealth{"m1": un, "m2": hl}, "m1", "m2"))...)
	k := resourceBindings()
	w.reconcile(t, k, rbKey("web"))
	w.clk.Step(40 * time.Second)
	w.ctrl = w.restart(t, ApplicationFailoverOptions{})
	assert.Equal(t, 20*time.Second, w.reconcile(t, k, rbKey("web")).RequeueAfter)
	w.clk.Step(20 * time.Second)
	w.ctrl = w.restart(t, ApplicationFailoverOptions{})
	w.reconcile(t, k, rbKey("web"))
	assert.Equal(t, []workv1alpha2.TargetCluster{{Name: "m2", Replicas: 1}}, w.rb(t, "web").Spec.Clusters)
}

// karmada#7431: a copy flapping between Unhealthy and Unknown. Karmada
// counts Unknown as Healthy and never fails it over; here Unknown holds the
// timer (the default), so 40 s and then 20 s of Unhealthy reach the 60 s
// window. --application-failover-unknown=Reset restores Karmada's rule.
func TestApplicationFailoverUnknownFlap(t *testing.T) {
	for _, tc := range []struct {
		unknown  appfailover.UnknownPolicy
		failOver bool
	}{{appfailover.UnknownHolds, true}, {appfailover.UnknownResets, false}} {
		t.Run(string(tc.unknown), func(t *testing.T) {
			opts := ApplicationFailoverOptions{Policy: appfailover.Options{Unknown: tc.unknown}}
			w := newAppWorld(t, opts, EvictionOptions{}, nil,
				append(fleet4(), appBinding("web", tolerate(60), map[string]workv1alpha2.ResourceHealth{"m1": un, "m2": hl}, "m1", "m2"))...)
			k := resourceBindings()
			w.reconcile(t, k, rbKey("web"))
			w.clk.Step(40 * time.Second)
			w.setHealth(t, "web", map[string]workv1alpha2.ResourceHealth{"m1": unk, "m2": hl})
			w.reconcile(t, k, rbKey("web"))
			w.clk.Step(100 * time.Second)
			w.setHealth(t, "web", map[string]workv1alpha2.ResourceHealth{"m1": un, "m2": hl})
			w.reconcile(t, k, rbKey("web"))
			w.clk.Step(20 * time.Second)
			w.reconcile(t, k, rbKey("web"))
			assert.Equal(t, tc.failOver, len(w.rb(t, "web").Spec.GracefulEvictionTasks) == 1)
		})
	}
}

// karmada#6233: with a start-up grace, a copy first seen Unhealthy (still
// pulling images) counts nothing until the grace ends: with 120 s of grace
// and a 60 s window it fails over at 180 s, where Karmada's fails over at
// 60 s.
func TestApplicationFailoverStartupGrace(t *testing.T) {
	opts := ApplicationFailoverOptions{Policy: appfailover.Options{StartupGraceSeconds: 120}}
	w := newAppWorld(t, opts, EvictionOptions{}, nil,
		append(fleet4(), appBinding("web", tolerate(60), map[string]workv1alpha2.ResourceHealth{"m1": un, "m2": hl}, "m1", "m2"))...)
	k := resourceBindings()
	assert.Equal(t, 180*time.Second, w.reconcile(t, k, rbKey("web")).RequeueAfter)
	w.clk.Step(179 * time.Second)
	w.reconcile(t, k, rbKey("web"))
	assert.Empty(t, w.rb(t, "web").Spec.GracefulEvictionTasks)
	w.clk.Step(time.Second)
	w.reconcile(t, k, rbKey("web"))
	assert.Len(t, w.rb(t, "web").Spec.GracefulEvictionTasks, 1)
}

// The bad-rollout hold: unhealthy on 2 of 3 clusters (more than half),
// nothing fails over and a Warning Event says why and how to confirm;
// confirmed, the failovers go, one permit each; once the application is
// healthy again and its tasks are over, the confirmation is removed, so
// the next bad rollout holds again.
func TestApplicationFailoverBadRolloutHold(t *testing.T) {
	health := map[string]workv1alpha2.ResourceHealth{"m1": un, "m2": un, "m3": hl}
	w := newAppWorld(t, ApplicationFailoverOptions{}, EvictionOptions{}, nil,
		append(fleet4(), appBinding("web", tolerate(0), health, "m1", "m2", "m3"))...)
	k := resourceBindings()
	w.reconcile(t, k, rbKey("web"))
	rb := w.rb(t, "web")
	assert.Len(t, rb.Spec.Clusters, 3, "held")
	require.NotEmpty(t, *w.events)
	assert.Contains(t, (*w.events)[0], EventReasonBadRolloutHold+": not failed over from m1, m2: the application is unhealthy on 2 of its 3 clusters (m1, m2)")
	assert.Contains(t, (*w.events)[0], "kubectl annotate rb -n shop web "+ConfirmBadRolloutAnnotation+"=true")
	assert.Equal(t, 1.0, w.sample(t, "application_failover_held", "reason", metrics.AppFailoverHeldBadRollout))
	assert.Equal(t, 2.0, w.sample(t, "application_failover_total", "result", metrics.AppFailoverHeldBack))

	rb.Annotations[ConfirmBadRolloutAnnotation] = "true"
	require.NoError(t, w.c.Update(context.Background(), rb))
	w.reconcile(t, k, rbKey("web"))
	assert.Len(t, w.rb(t, "web").Spec.GracefulEvictionTasks, 1, "confirmed: the first goes")
	assert.Equal(t, 0.0, w.sample(t, "application_failover_held", "reason", metrics.AppFailoverHeldBadRollout))
	assert.Equal(t, 2*time.Second, w.reconcile(t, k, rbKey("web")).RequeueAfter, "the next permit at 0.5/s")
	w.clk.Step(2 * time.Second)
	w.reconcile(t, k, rbKey("web"))
	rb = w.rb(t, "web")
	assert.Len(t, rb.Spec.GracefulEvictionTasks, 2, "and the second")
	assert.Contains(t, rb.Annotations, ConfirmBadRolloutAnnotation, "still a bad rollout: its failovers are in transit")

	// Healthy again, the tasks over: the confirmation goes.
	rb.Spec.GracefulEvictionTasks = nil
	rb.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "m3", Replicas: 1}, {Name: "m4", Replicas: 1}}
	require.NoError(t, w.c.Update(context.Background(), rb))
	w.setHealth(t, "web", map[string]workv1alpha2.ResourceHealth{"m3": hl, "m4": hl})
	w.reconcile(t, k, rbKey("web"))
	assert.NotContains(t, w.rb(t, "web").Annotations, ConfirmBadRolloutAnnotation)
}

// Nowhere to go: the pre-scheduling check refuses, a Warning Event says
// why, nothing is written but the timer; the binding is decided again when
// a Cluster changes (refusedOf) and after RefusalRecheck at the latest.
func TestApplicationFailoverRefused(t *testing.T) {
	rb := appBinding("web", tolerate(0), map[string]workv1alpha2.ResourceHealth{"m1": un}, "m1")
	rb.Spec.Placement.ClusterAffinity.ClusterNames = []string{"m1"}
	w := newAppWorld(t, ApplicationFailoverOptions{}, EvictionOptions{}, nil, append(fleet4(), rb)...)
	k := resourceBindings()
	assert.Equal(t, DefaultRefusalRecheck, w.reconcile(t, k, rbKey("web")).RequeueAfter)
	assert.Equal(t, []workv1alpha2.TargetCluster{{Name: "m1", Replicas: 1}}, w.rb(t, "web").Spec.Clusters)
	require.Len(t, *w.events, 1)
	assert.Contains(t, (*w.events)[0], "not failed over from m1: ")
	assert.Equal(t, []reconcile.Request{{NamespacedName: rbKey("web")}}, w.ctrl.refusedOf(k))
	assert.Equal(t, 1.0, w.sample(t, "application_failover_total", "result", metrics.AppFailoverRefused))
	assert.Empty(t, w.ctrl.refusedOf(clusterResourceBindings()))
	ok, _ := w.ev.limiter.TakeAt(w.clk.Now())
	assert.True(t, ok, "the permit went back: the next failover takes it at once")
}

// A refusal is decided again when a Cluster changes, on the Fleet that an
// informer handler of its own feeds: the change that wakes it must be in
// the Fleet first. Here m2, the only cluster the binding may go to, is
// tainted NoExecute, and the failover refused; the taint goes, and the
// Cluster watch wakes the refusal before the Fleet's handler has applied
// the change: the failover goes now, not RefusalRecheck later.
func TestApplicationFailoverRefusalWokenBeforeFleet(t *testing.T) {
	rb := appBinding("web", tolerate(0), map[string]workv1alpha2.ResourceHealth{"m1": un}, "m1")
	rb.Spec.Placement.ClusterAffinity.ClusterNames = []string{"m1", "m2"}
	objs := fleet4()
	down := objs[1].(*clusterv1alpha1.Cluster)
	down.Spec.Taints = []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}}
	w := newAppWorld(t, ApplicationFailoverOptions{}, EvictionOptions{}, nil, append(objs, rb)...)
	k := resourceBindings()
	assert.Equal(t, DefaultRefusalRecheck, w.reconcile(t, k, rbKey("web")).RequeueAfter, "refused: m2 is tainted")

	var m2 clusterv1alpha1.Cluster
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Name: "m2"}, &m2))
	m2.Spec.Taints = nil
	require.NoError(t, w.c.Update(context.Background(), &m2))
	// The Cluster watch's event, ahead of the Fleet's handler.
	reqs := w.ctrl.wakeRefused(k)(context.Background(), &m2)
	require.Equal(t, []reconcile.Request{{NamespacedName: rbKey("web")}}, reqs)
	w.reconcile(t, k, reqs[0].NamespacedName)
	rb = w.rb(t, "web")
	require.Len(t, rb.Spec.GracefulEvictionTasks, 1, "woken by m2's recovery, the failover goes: %v", *w.events)
	assert.Equal(t, "m1", rb.Spec.GracefulEvictionTasks[0].FromCluster)
	assert.Empty(t, w.ctrl.wakeRefused(k)(context.Background(), &m2), "no refusal is left to wake")
}

// The operator's freeze, shared with the EvictionController, holds every
// application failover; the timers go on.
func TestApplicationFailoverFrozen(t *testing.T) {
	w := newAppWorld(t, ApplicationFailoverOptions{}, EvictionOptions{Freeze: freezeName}, nil,
		append(fleet4(), appBinding("web", tolerate(0), map[string]workv1alpha2.ResourceHealth{"m1": un, "m2": hl}, "m1", "m2"))...)
	w.ev.freeze = newFreezeGate(freezeName, w.clk, &frozenGauge{}, logr.Discard())
	w.ev.freeze.set(freezeMap(map[string]string{"reason": "INC-1"}))
	k := resourceBindings()
	assert.Equal(t, freezeRecheck, w.reconcile(t, k, rbKey("web")).RequeueAfter)
	rb := w.rb(t, "web")
	assert.Len(t, rb.Spec.Clusters, 2)
	assert.Contains(t, rb.Annotations, karmada.ApplicationTimersAnnotation)
	w.ev.freeze.set(nil)
	w.reconcile(t, k, rbKey("web"))
	assert.Len(t, w.rb(t, "web").Spec.GracefulEvictionTasks, 1)
}

// Options are validated at construction, each error naming the field, the
// flag and the value.
func TestApplicationFailoverOptionsValidated(t *testing.T) {
	ev, err := NewEvictionController(EvictionOptions{})
	require.NoError(t, err)
	for _, tc := range []struct {
		opts ApplicationFailoverOptions
		want string
	}{
		{ApplicationFailoverOptions{BadRolloutThreshold: 1.5}, "BadRolloutThreshold (--application-failover-bad-rollout-threshold) 1.5"},
		{ApplicationFailoverOptions{BadRolloutThreshold: -0.1}, "-0.1"},
		{ApplicationFailoverOptions{Policy: appfailover.Options{Unknown: "Sometimes"}}, `unknown value "Sometimes"`},
		{ApplicationFailoverOptions{Policy: appfailover.Options{StartupGraceSeconds: -1}}, "startupGraceSeconds: -1"},
	} {
		_, err := NewApplicationFailoverController(tc.opts, ev)
		assert.ErrorContains(t, err, tc.want)
	}
	_, err = NewApplicationFailoverController(ApplicationFailoverOptions{}, nil)
	assert.ErrorContains(t, err, "the EvictionController is nil")
	c, err := NewApplicationFailoverController(ApplicationFailoverOptions{}, ev)
	require.NoError(t, err)
	assert.Equal(t, DefaultBadRolloutThreshold, c.opts.BadRolloutThreshold)
}

// A binding that stops opting in loses its timers (opting in again starts
// afresh, as Karmada's controller forgets its own); timers that cannot be
// read are said in a Warning Event and start afresh, which can only make a
// failover later.
func TestApplicationFailoverTimersKept(t *testing.T) {
	w := newAppWorld(t, ApplicationFailoverOptions{}, EvictionOptions{}, nil,
		append(fleet4(), appBinding("web", tolerate(60), map[string]workv1alpha2.ResourceHealth{"m1": un, "m2": hl}, "m1", "m2"))...)
	k := resourceBindings()
	w.reconcile(t, k, rbKey("web"))
	rb := w.rb(t, "web")
	require.Contains(t, rb.Annotations, karmada.ApplicationTimersAnnotation)

	rb.Annotations[karmada.ApplicationTimersAnnotation] = "not json"
	require.NoError(t, w.c.Update(context.Background(), rb))
	w.clk.Step(30 * time.Second)
	assert.Equal(t, 60*time.Second, w.reconcile(t, k, rbKey("web")).RequeueAfter, "afresh: a whole window")
	assert.Contains(t, (*w.events)[len(*w.events)-1], EventReasonInvalidApplicationFailover+": karmada: annotation "+karmada.ApplicationTimersAnnotation)
	rec, err := karmada.ApplicationTimers(w.rb(t, "web").Annotations)
	require.NoError(t, err, "rewritten")
	require.Len(t, rec, 1)

	rb = w.rb(t, "web")
	rb.Spec.Failover = nil
	require.NoError(t, w.c.Update(context.Background(), rb))
	assert.Zero(t, w.reconcile(t, k, rbKey("web")).RequeueAfter)
	assert.NotContains(t, w.rb(t, "web").Annotations, karmada.ApplicationTimersAnnotation)
}

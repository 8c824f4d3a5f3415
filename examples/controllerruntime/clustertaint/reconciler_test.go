package clustertaint

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/examples/controllerruntime/api/v1alpha1"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

// The tests run Reconcile as the manager's workers would, on
// controller-runtime's fake client (no API server, no envtest), inside a
// synctest bubble: time moves only when every goroutine waits, so permit
// times and taint windows are exact.

const notReady = "fleet.example.com/not-ready"

// policyYAML: NotReady for 10s gets NoSchedule, for 30s NoExecute; Ready
// for 20s removes both. In the controller's own group.
const policyYAML = `
apiVersion: fleet.example.com/v1alpha1
kind: ClusterTaintPolicy
metadata: {name: not-ready}
spec:
  matchConditions:
  - {conditionType: Ready, operator: In, statusValues: ["False", "Unknown"]}
  taintsToAdd:
  - {key: fleet.example.com/not-ready, effect: NoSchedule, addOnMatchSeconds: 10, removeOnMismatchSeconds: 20}
  - {key: fleet.example.com/not-ready, effect: NoExecute, addOnMatchSeconds: 30, removeOnMismatchSeconds: 20}
`

func policies(t *testing.T) []taintpolicy.ClusterTaintPolicy {
	t.Helper()
	ps, err := taintpolicy.LoadPoliciesWith(strings.NewReader(policyYAML), taintpolicy.ValidateOptions{APIVersion: v1alpha1.GroupVersion.String()})
	require.NoError(t, err)
	return ps
}

func memberCluster(name string, ready metav1.ConditionStatus, since time.Time, taints ...corev1.Taint) *v1alpha1.MemberCluster {
	return &v1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.MemberClusterSpec{Region: "eu", Taints: taints},
		Status: v1alpha1.MemberClusterStatus{Conditions: []metav1.Condition{{
			Type: "Ready", Status: ready, Reason: "Probe", LastTransitionTime: metav1.NewTime(since),
		}}},
	}
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(s))
	return s
}

// fakeCache is the manager's cache as the sync gate reads it: synced, and
// listing what the client holds.
type fakeCache struct{ client.Client }

func (fakeCache) WaitForCacheSync(context.Context) bool { return true }

type env struct {
	t      *testing.T
	client client.Client
	r      *Reconciler
}

// newEnv builds a Reconciler on a fake client holding clusters, with
// DefaultConfig's rates (0.5/s; above 55% faulty a fleet of up to 10
// clusters pauses). funcs, if given, intercept the client's calls.
func newEnv(t *testing.T, funcs *interceptor.Funcs, clusters ...*v1alpha1.MemberCluster) *env {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(newScheme(t)).WithStatusSubresource(&v1alpha1.MemberCluster{})
	for _, c := range clusters {
		b = b.WithObjects(c)
	}
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	c := b.Build()
	r, err := New(c, Config{Policies: policies(t), Rates: ratelimit.DefaultConfig()})
	require.NoError(t, err)
	r.gate.cache = fakeCache{c}
	return &env{t: t, client: c, r: r}
}

func (e *env) reconcile(name string) (reconcile.Result, error) {
	return e.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
}

func (e *env) mustReconcile(name string) reconcile.Result {
	e.t.Helper()
	res, err := e.reconcile(name)
	require.NoError(e.t, err, "reconcile %s", name)
	return res
}

// startGate runs the sync gate's Start, as the manager does once its cache
// has synced.
func (e *env) startGate() {
	e.t.Helper()
	require.NoError(e.t, e.r.gate.Start(context.Background()))
}

func (e *env) get(name string) *v1alpha1.MemberCluster {
	e.t.Helper()
	var mc v1alpha1.MemberCluster
	require.NoError(e.t, e.client.Get(context.Background(), types.NamespacedName{Name: name}, &mc))
	return &mc
}

func (e *env) setReady(name string, status metav1.ConditionStatus, since time.Time) {
	e.t.Helper()
	mc := e.get(name)
	mc.Status.Conditions[0].Status = status
	mc.Status.Conditions[0].LastTransitionTime = metav1.NewTime(since)
	require.NoError(e.t, e.client.Status().Update(context.Background(), mc))
}

func (e *env) health() ratelimit.Health {
	e.t.Helper()
	h, err := e.r.tracker.Health()
	require.NoError(e.t, err)
	return h
}

func taint(c *v1alpha1.MemberCluster, key string, effect corev1.TaintEffect) *corev1.Taint {
	for i := range c.Spec.Taints {
		if t := &c.Spec.Taints[i]; t.Key == key && t.Effect == effect {
			return t
		}
	}
	return nil
}

var userTaint = corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule}

// One cluster through an outage: NoSchedule after 10s, NoExecute after 30s,
// both stamped with the time they were added; Ready again, both go after
// 20s. The user's taint is there throughout, and the Tracker follows.
func TestTaintsFollowTheWindowsAndTheUsersTaintStays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := time.Now()
		e := newEnv(t, nil,
			memberCluster("a", metav1.ConditionFalse, down, userTaint),
			memberCluster("b", metav1.ConditionTrue, down), memberCluster("c", metav1.ConditionTrue, down),
			memberCluster("d", metav1.ConditionTrue, down))
		e.startGate()
		for _, n := range []string{"b", "c", "d"} {
			e.mustReconcile(n)
		}

		assert.Equal(t, 10*time.Second, e.mustReconcile("a").RequeueAfter, "the NoSchedule window")
		assert.Equal(t, []corev1.Taint{userTaint}, e.get("a").Spec.Taints)

		time.Sleep(10 * time.Second)
		assert.Equal(t, 20*time.Second, e.mustReconcile("a").RequeueAfter, "the NoExecute window")
		a := e.get("a")
		require.NotNil(t, taint(a, notReady, corev1.TaintEffectNoSchedule))
		assert.True(t, taint(a, notReady, corev1.TaintEffectNoSchedule).TimeAdded.Time.Equal(time.Now()))
		assert.Equal(t, ratelimit.Health{Total: 4}, e.health(), "NoSchedule does not make a cluster faulty")

		time.Sleep(20 * time.Second)
		e.mustReconcile("a")
		a = e.get("a")
		require.NotNil(t, taint(a, notReady, corev1.TaintEffectNoExecute))
		assert.True(t, taint(a, notReady, corev1.TaintEffectNoExecute).TimeAdded.Time.Equal(time.Now()))
		assert.Equal(t, userTaint, a.Spec.Taints[0])
		assert.Equal(t, ratelimit.Health{Total: 4, Unhealthy: 1}, e.health())

		up := time.Now()
		e.setReady("a", metav1.ConditionTrue, up)
		assert.Equal(t, 20*time.Second, e.mustReconcile("a").RequeueAfter, "the remove window")
		time.Sleep(20 * time.Second)
		e.mustReconcile("a")
		assert.Equal(t, []corev1.Taint{userTaint}, e.get("a").Spec.Taints)
		assert.Equal(t, ratelimit.Health{Total: 4}, e.health())
	})
}

// Until every cluster the cache listed has been reconciled, the Tracker is
// unsynced and the Limiter paused: a cluster long down gets its NoSchedule
// taint but not the NoExecute one. A cluster reconciled before the list,
// and one deleted before its first Reconcile, count. Then NoExecute goes at
// once.
func TestNothingStartsEvictionsUntilEveryClusterIsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		longAgo := time.Now().Add(-time.Hour)
		e := newEnv(t, nil,
			memberCluster("a", metav1.ConditionFalse, longAgo),
			memberCluster("b", metav1.ConditionTrue, longAgo),
			memberCluster("c", metav1.ConditionTrue, longAgo))
		e.mustReconcile("b") // a worker ran before the gate listed the cache
		e.startGate()

		start := time.Now()
		res := e.mustReconcile("a")
		assert.Equal(t, DefaultPermitWait, time.Since(start), "waited PermitWait for a permit")
		assert.Equal(t, DefaultRetryAfter, res.RequeueAfter)
		a := e.get("a")
		assert.NotNil(t, taint(a, notReady, corev1.TaintEffectNoSchedule), "NoSchedule needs no permit")
		assert.Nil(t, taint(a, notReady, corev1.TaintEffectNoExecute), "NoExecute before the fleet is counted")
		_, err := e.r.tracker.Health()
		assert.ErrorIs(t, err, ratelimit.ErrNotSynced, "c is not counted yet")

		require.NoError(t, e.client.Delete(context.Background(), e.get("c")))
		e.mustReconcile("c") // gone: counts as reconciled
		assert.Equal(t, ratelimit.Health{Total: 2}, e.health(), "synced: a and b")

		start = time.Now()
		e.mustReconcile("a")
		assert.Zero(t, time.Since(start), "a permit at once")
		assert.NotNil(t, taint(e.get("a"), notReady, corev1.TaintEffectNoExecute))
	})
}

// Four of five clusters go down at once, reconciled by four workers: the
// NoExecute taints go one permit apart (2s at 0.5/s) until three of five
// (60%, above 55% in a small fleet) are faulty, which pauses the rest. A
// recovery is written at once, paused or not, and lets the last one go.
func TestEvictionTaintsGoAtTheRateAndStopAboveTheThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		longAgo := time.Now().Add(-time.Hour)
		names := []string{"a", "b", "c", "d"}
		var clusters []*v1alpha1.MemberCluster
		for _, n := range names {
			clusters = append(clusters, memberCluster(n, metav1.ConditionFalse, longAgo))
		}
		e := newEnv(t, nil, append(clusters, memberCluster("e", metav1.ConditionTrue, longAgo))...)
		e.startGate()
		e.mustReconcile("e")
		// Four workers, one cluster each, as MaxConcurrentReconciles 4 runs them.
		start := time.Now()
		var wg sync.WaitGroup
		for _, n := range names {
			wg.Go(func() { e.mustReconcile(n) })
		}
		wg.Wait()

		var added []time.Duration
		var held string
		for _, n := range names {
			c := e.get(n)
			require.NotNil(t, taint(c, notReady, corev1.TaintEffectNoSchedule), n)
			if ne := taint(c, notReady, corev1.TaintEffectNoExecute); ne != nil {
				added = append(added, ne.TimeAdded.Sub(start))
			} else {
				held = n
			}
		}
		slices.Sort(added)
		assert.Equal(t, []time.Duration{0, 2 * time.Second, 4 * time.Second}, added, "one permit every 2s")
		require.NotEmpty(t, held, "the fourth is held: 3 of 5 faulty pauses a small fleet")
		assert.Equal(t, ratelimit.Health{Total: 5, Unhealthy: 3}, e.health())
		assert.Zero(t, e.r.limiter.Rate())

		// One of the tainted clusters has been Ready long enough: its taints
		// go without a permit, and the rate comes back.
		recovered := names[0]
		if recovered == held {
			recovered = names[1]
		}
		e.setReady(recovered, metav1.ConditionTrue, longAgo)
		start = time.Now()
		e.mustReconcile(recovered)
		assert.Zero(t, time.Since(start), "a removal waits for nothing")
		assert.Empty(t, e.get(recovered).Spec.Taints)
		assert.Equal(t, 0.5, e.r.limiter.Rate())

		e.mustReconcile(held)
		assert.NotNil(t, taint(e.get(held), notReady, corev1.TaintEffectNoExecute), "the held cluster is tainted once the rate allows")
	})
}

// Another writer changes the cluster between the controller's read and its
// write: the Update fails with a real 409 from the client's resourceVersion
// check, and the retry, reading the writer's object, keeps their taint.
func TestAConflictingWriterIsKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		other := corev1.Taint{Key: "other.example.com/drain", Effect: corev1.TaintEffectNoSchedule}
		interfered := false
		funcs := &interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if !interfered {
				interfered = true
				var mc v1alpha1.MemberCluster
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &mc); err != nil {
					return err
				}
				mc.Spec.Taints = append(mc.Spec.Taints, other)
				if err := c.Update(ctx, &mc); err != nil {
					return err
				}
			}
			return c.Update(ctx, obj, opts...)
		}}
		// Down for 15s: due for NoSchedule, not yet NoExecute.
		e := newEnv(t, funcs, memberCluster("a", metav1.ConditionFalse, time.Now().Add(-15*time.Second)))
		e.startGate()

		_, err := e.reconcile("a")
		require.Error(t, err)
		assert.True(t, apierrors.IsConflict(errors.Unwrap(err)), "a 409: %v", err)

		e.mustReconcile("a")
		a := e.get("a")
		assert.NotNil(t, taint(a, notReady, corev1.TaintEffectNoSchedule))
		assert.NotNil(t, taint(a, other.Key, other.Effect), "the other writer's taint survives")
	})
}

// A deleted cluster leaves the Tracker's count.
func TestDeletedClusterLeavesTheFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		faultyTaint := corev1.Taint{Key: notReady, Effect: corev1.TaintEffectNoExecute}
		e := newEnv(t, nil,
			memberCluster("a", metav1.ConditionFalse, time.Now().Add(-time.Hour), faultyTaint),
			memberCluster("b", metav1.ConditionTrue, time.Now()))
		e.startGate()
		e.mustReconcile("a")
		e.mustReconcile("b")
		assert.Equal(t, ratelimit.Health{Total: 2, Unhealthy: 1}, e.health())
		require.NoError(t, e.client.Delete(context.Background(), e.get("a")))
		e.mustReconcile("a")
		assert.Equal(t, ratelimit.Health{Total: 1}, e.health())
	})
}

func TestNewRejectsBadConfig(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).Build()
	good := func() Config { return Config{Policies: policies(t), Rates: ratelimit.DefaultConfig()} }
	karmadaPolicy := policies(t)
	karmadaPolicy[0].APIVersion = taintpolicy.APIVersion
	for _, tc := range []struct {
		name   string
		client client.Client
		mutate func(*Config)
		want   string
	}{
		{"no client", nil, func(*Config) {}, "clustertaint: client is nil"},
		{"a negative PermitWait", c, func(cfg *Config) { cfg.PermitWait = -time.Second }, "Config.PermitWait is -1s"},
		{"a negative RetryAfter", c, func(cfg *Config) { cfg.RetryAfter = -time.Second }, "Config.RetryAfter is -1s"},
		{"negative workers", c, func(cfg *Config) { cfg.Workers = -1 }, "Config.Workers is -1"},
		{"a domain rule", c, func(cfg *Config) { cfg.Rates.DisruptionDomain = ratelimit.DomainRegion }, `Config.Rates.DisruptionDomain "region"`},
		{"a bad rate", c, func(cfg *Config) { cfg.Rates.ResourceEvictionRate = -1 }, "clustertaint: Config.Rates: "},
		{"a policy in Karmada's group", c, func(cfg *Config) { cfg.Policies = karmadaPolicy }, `Config.Policies: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good()
			tc.mutate(&cfg)
			_, err := New(tc.client, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	r, err := New(c, good())
	require.NoError(t, err)
	assert.Equal(t, DefaultWorkers, r.cfg.Workers)
}

func TestToCluster(t *testing.T) {
	mc := memberCluster("a", metav1.ConditionTrue, time.Unix(0, 0), userTaint)
	mc.Labels = map[string]string{"tier": "gold"}
	mc.Spec.Provider, mc.Spec.Zones = "aws", []string{"eu-1a"}
	assert.Equal(t, failover.Cluster{
		Name: "a", Labels: mc.Labels, Provider: "aws", Region: "eu", Zones: []string{"eu-1a"},
		Taints: []corev1.Taint{userTaint}, Conditions: mc.Status.Conditions,
	}, ToCluster(mc))
}

package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
)

const notReadyKey = "cluster.karmada.io/not-ready"

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// userTaint is a taint no policy lists: it must survive every write.
func userTaint() map[string]any {
	return map[string]any{"key": "example.com/maintenance", "value": "by-user", "effect": "NoSchedule"}
}

func policyTaint(added time.Time) map[string]any {
	return map[string]any{"key": notReadyKey, "effect": "PreferNoExecute", "timeAdded": added.UTC().Format(time.RFC3339)}
}

func clusterObj(name, rv string, ready metav1.ConditionStatus, since time.Time, taints ...map[string]any) *unstructured.Unstructured {
	list := make([]any, 0, len(taints))
	for _, tt := range taints {
		list = append(list, tt)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": name, "resourceVersion": rv},
		"spec":     map[string]any{"apiEndpoint": "https://" + name + ":6443", "taints": list},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Ready", "status": string(ready), "reason": "Test", "message": "",
			"lastTransitionTime": since.UTC().Format(time.RFC3339),
		}}},
	}}
}

func policyObj(name string, addSeconds, removeSeconds int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterTaintPolicy",
		"metadata": map[string]any{"name": name, "generation": int64(1)},
		"spec": map[string]any{
			"matchConditions": []any{map[string]any{"conditionType": "Ready", "operator": "In", "statusValues": []any{"False", "Unknown"}}},
			"taintsToAdd": []any{map[string]any{
				"key": notReadyKey, "effect": "PreferNoExecute",
				"addOnMatchSeconds": addSeconds, "removeOnMismatchSeconds": removeSeconds,
			}},
		},
	}}
}

func invalidPolicyObj(name string) *unstructured.Unstructured {
	p := policyObj(name, 1, 1)
	_ = unstructured.SetNestedSlice(p.Object, []any{map[string]any{"conditionType": "Ready", "operator": "Exists", "statusValues": []any{"False"}}}, "spec", "matchConditions")
	return p
}

type fixture struct {
	c      *Controller
	client *dynamicfake.FakeDynamicClient
	clock  *clocktesting.FakeClock
	reg    *prometheus.Registry
}

// newFixture builds a controller over a fake dynamic client holding objs.
// The informer caches are filled directly, without starting them, so sync
// can be driven step by step.
func newFixture(t *testing.T, cached []*unstructured.Unstructured, stored ...*unstructured.Unstructured) *fixture {
	t.Helper()
	objs := make([]runtime.Object, 0, len(stored))
	for _, o := range stored {
		objs = append(objs, o.DeepCopy())
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		ClusterGVR: "ClusterList", PolicyGVR: "ClusterTaintPolicyList",
	}, objs...)
	clk := clocktesting.NewFakeClock(t0)
	reg := prometheus.NewRegistry()
	c, err := New(Config{Client: client, Clock: clk, Registerer: reg})
	require.NoError(t, err)
	for _, o := range cached {
		switch o.GetKind() {
		case "Cluster":
			require.NoError(t, c.clusterInformer.Informer().GetIndexer().Add(o.DeepCopy()))
		default:
			require.NoError(t, c.policyInformer.Informer().GetIndexer().Add(o.DeepCopy()))
		}
	}
	return &fixture{c: c, client: client, clock: clk, reg: reg}
}

func (f *fixture) stored(t *testing.T, name string) failover.Cluster {
	t.Helper()
	u, err := f.client.Resource(ClusterGVR).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	c, err := karmada.FromUnstructuredCluster(u)
	require.NoError(t, err)
	return c
}

func (f *fixture) count(verb string) int {
	n := 0
	for _, a := range f.client.Actions() {
		if a.GetVerb() == verb && a.GetResource() == ClusterGVR {
			n++
		}
	}
	return n
}

func taintKeys(taints []corev1.Taint) []string {
	out := make([]string, 0, len(taints))
	for _, t := range taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return out
}

func TestSyncWritesWhatTheEvaluatorDecides(t *testing.T) {
	pol := policyObj("not-ready", 300, 180)
	tests := []struct {
		name        string
		cluster     *unstructured.Unstructured
		policies    []*unstructured.Unstructured
		wantTaints  []string
		wantUpdates int
		wantRequeue time.Duration
		wantInvalid float64
	}{
		{
			name:        "a window that closed adds the taint and keeps the user's",
			cluster:     clusterObj("m1", "7", metav1.ConditionFalse, t0.Add(-10*time.Minute), userTaint()),
			policies:    []*unstructured.Unstructured{pol},
			wantTaints:  []string{"example.com/maintenance:NoSchedule", notReadyKey + ":PreferNoExecute"},
			wantUpdates: 1,
		},
		{
			name:        "an open window writes nothing and requeues when it closes",
			cluster:     clusterObj("m1", "7", metav1.ConditionFalse, t0.Add(-100*time.Second), userTaint()),
			policies:    []*unstructured.Unstructured{pol},
			wantTaints:  []string{"example.com/maintenance:NoSchedule"},
			wantRequeue: 200 * time.Second,
		},
		{
			name:        "a recovered cluster loses the taint after the remove window, the user's stays",
			cluster:     clusterObj("m1", "7", metav1.ConditionTrue, t0.Add(-10*time.Minute), userTaint(), policyTaint(t0.Add(-time.Hour))),
			policies:    []*unstructured.Unstructured{pol},
			wantTaints:  []string{"example.com/maintenance:NoSchedule"},
			wantUpdates: 1,
		},
		{
			name:       "a deleted policy's taint is left alone",
			cluster:    clusterObj("m1", "7", metav1.ConditionTrue, t0.Add(-10*time.Minute), userTaint(), policyTaint(t0.Add(-time.Hour))),
			wantTaints: []string{"example.com/maintenance:NoSchedule", notReadyKey + ":PreferNoExecute"},
		},
		{
			name:        "an invalid policy is ignored and counted, the valid one applies",
			cluster:     clusterObj("m1", "7", metav1.ConditionFalse, t0.Add(-10*time.Minute)),
			policies:    []*unstructured.Unstructured{invalidPolicyObj("broken"), pol},
			wantTaints:  []string{notReadyKey + ":PreferNoExecute"},
			wantUpdates: 1,
			wantInvalid: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, append([]*unstructured.Unstructured{tt.cluster}, tt.policies...), tt.cluster)
			requeue, err := f.c.sync(context.Background(), "m1")
			require.NoError(t, err)
			assert.Equal(t, tt.wantRequeue, requeue)
			assert.Equal(t, tt.wantUpdates, f.count("update"))
			got := f.stored(t, "m1")
			assert.Equal(t, tt.wantTaints, taintKeys(got.Taints))
			for _, taint := range got.Taints {
				if taint.Key == "example.com/maintenance" {
					assert.Equal(t, "by-user", taint.Value, "the user's taint is sent back unchanged")
				}
			}
			assert.Equal(t, tt.wantInvalid, testutil.ToFloat64(f.c.metrics.policies.WithLabelValues("invalid")))
		})
	}
}

func TestSyncStampsTimeAddedWithTheClock(t *testing.T) {
	cl := clusterObj("m1", "7", metav1.ConditionFalse, t0.Add(-10*time.Minute))
	f := newFixture(t, []*unstructured.Unstructured{cl, policyObj("not-ready", 300, 180)}, cl)
	_, err := f.c.sync(context.Background(), "m1")
	require.NoError(t, err)
	got := f.stored(t, "m1")
	require.Len(t, got.Taints, 1)
	require.NotNil(t, got.Taints[0].TimeAdded)
	assert.True(t, got.Taints[0].TimeAdded.Time.Equal(t0), "TimeAdded %v, want the clock's now %v", got.Taints[0].TimeAdded, t0)
}

// TestSyncConflictRereadsAndKeepsTheOtherWrite injects another writer between
// the controller's read (the cache) and its update: the first update fails
// with a conflict after the other writer's taint is stored.
func TestSyncConflictRereadsAndKeepsTheOtherWrite(t *testing.T) {
	cl := clusterObj("m1", "7", metav1.ConditionFalse, t0.Add(-10*time.Minute), userTaint())
	f := newFixture(t, []*unstructured.Unstructured{cl, policyObj("not-ready", 300, 180)}, cl)
	injected := false
	f.client.PrependReactor("update", "clusters", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if injected {
			return false, nil, nil
		}
		injected = true
		other := clusterObj("m1", "8", metav1.ConditionFalse, t0.Add(-10*time.Minute), userTaint(),
			map[string]any{"key": "example.com/other-writer", "effect": "NoSchedule"})
		if err := f.client.Tracker().Update(ClusterGVR, other, ""); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewConflict(ClusterGVR.GroupResource(), "m1", fmt.Errorf("the object has been modified"))
	})

	_, err := f.c.sync(context.Background(), "m1")
	require.NoError(t, err)
	assert.Equal(t, 2, f.count("update"))
	assert.Equal(t, 1, f.count("get"), "after a conflict the cluster is read from the API server, not the cache")
	assert.Equal(t, []string{"example.com/maintenance:NoSchedule", "example.com/other-writer:NoSchedule", notReadyKey + ":PreferNoExecute"},
		taintKeys(f.stored(t, "m1").Taints))
	assert.Equal(t, 1.0, testutil.ToFloat64(f.c.metrics.conflicts))
}

func TestSyncGivesUpAfterMaxConflictRetries(t *testing.T) {
	cl := clusterObj("m1", "7", metav1.ConditionFalse, t0.Add(-10*time.Minute))
	f := newFixture(t, []*unstructured.Unstructured{cl, policyObj("not-ready", 300, 180)}, cl)
	f.client.PrependReactor("update", "clusters", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(ClusterGVR.GroupResource(), "m1", fmt.Errorf("the object has been modified"))
	})
	_, err := f.c.sync(context.Background(), "m1")
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "the conflict is returned so the key is retried with backoff: %v", err)
	assert.Equal(t, DefaultMaxConflictRetries+1, f.count("update"))
}

func TestSyncOfADeletedClusterWritesNothing(t *testing.T) {
	f := newFixture(t, []*unstructured.Unstructured{policyObj("not-ready", 300, 180)})
	requeue, err := f.c.sync(context.Background(), "gone")
	require.NoError(t, err)
	assert.Zero(t, requeue)
	assert.Empty(t, f.client.Actions())
}

func TestNewRejectsBadConfig(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no client", Config{}, "Config.Client is nil"},
		{"negative workers", Config{Client: client, Workers: -1}, "Config.Workers is -1"},
		{"negative resync", Config{Client: client, ResyncPeriod: -time.Second}, "Config.ResyncPeriod is -1s"},
		{"negative retries", Config{Client: client, MaxConflictRetries: -2}, "Config.MaxConflictRetries is -2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// TestRunReactsToPoliciesAndRequeuesWhenAWindowCloses runs the whole loop on
// the fake client: a policy created after start makes the controller look at
// every cluster, and the window it opens closes on the fake clock with no
// further event.
func TestRunReactsToPoliciesAndRequeuesWhenAWindowCloses(t *testing.T) {
	defer goleak.VerifyNone(t)
	cl := clusterObj("m1", "", metav1.ConditionFalse, t0, userTaint())
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		ClusterGVR: "ClusterList", PolicyGVR: "ClusterTaintPolicyList",
	}, cl)
	clk := clocktesting.NewFakeClock(t0)
	c, err := New(Config{Client: client, Clock: clk, Workers: 1})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()

	// Wait until the controller has looked at the cluster once (nothing to
	// do: no policy), then add a policy with a 60s window.
	poll := func(cond func() bool) {
		t.Helper()
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) { return cond(), nil }))
	}
	poll(func() bool { return testutil.ToFloat64(c.metrics.syncs.WithLabelValues("unchanged")) >= 1 })
	_, err = client.Resource(PolicyGVR).Create(ctx, policyObj("not-ready", 60, 30), metav1.CreateOptions{})
	require.NoError(t, err)
	poll(func() bool { return testutil.ToFloat64(c.metrics.syncs.WithLabelValues("unchanged")) >= 2 })

	stored := func() failover.Cluster {
		u, err := client.Resource(ClusterGVR).Get(ctx, "m1", metav1.GetOptions{})
		require.NoError(t, err)
		got, err := karmada.FromUnstructuredCluster(u)
		require.NoError(t, err)
		return got
	}
	assert.Len(t, stored().Taints, 1, "the window is open: only the user's taint")

	// The requeue was registered after the evaluation; keep stepping until
	// it fires rather than racing it with one step.
	clk.Step(60 * time.Second)
	poll(func() bool {
		if len(stored().Taints) == 2 {
			return true
		}
		clk.Step(time.Second)
		return false
	})
	got := stored()
	assert.Equal(t, []string{"example.com/maintenance:NoSchedule", notReadyKey + ":PreferNoExecute"}, taintKeys(got.Taints))
	assert.False(t, got.Taints[1].TimeAdded.Time.Before(t0.Add(60*time.Second)), "added at %v, before the window closed", got.Taints[1].TimeAdded)
}

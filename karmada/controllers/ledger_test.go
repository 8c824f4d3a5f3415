package controllers

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/types"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
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

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/prescheduling"
)

// withRoom gives c a resource summary with room for room more pods.
func withRoom(c *clusterv1alpha1.Cluster, room int64) *clusterv1alpha1.Cluster {
	c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(110, resource.DecimalSI)},
		Allocated:   corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(110-room, resource.DecimalSI)},
	}
	return c
}

// issue6518 is Karmada issue 6518's fleet: "lost", NoExecute-tainted, runs
// n one-replica workloads (Divided, Aggregated: the scheduler puts each on
// the survivor with the most room); "big" has room for 10 and "small" for
// 5.
func issue6518(t *testing.T, n int) (*fake.ClientBuilder, []evictionqueue.Item) {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, AddToScheme(s))
	added := metav1.NewTime(evictNow.Add(-time.Minute))
	objs := []client.Object{
		withRoom(&clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "lost"}, Spec: clusterv1alpha1.ClusterSpec{
			Taints: []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}},
		}}, 0),
		withRoom(&clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "big"}}, 10),
		withRoom(&clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "small"}}, 5),
	}
	var items []evictionqueue.Item
	for i := range n {
		name := fmt.Sprintf("web-%02d", i)
		objs = append(objs, &workv1alpha2.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: map[string]string{karmada.AppliedPlacementAnnotation: `{}`}},
			Spec: workv1alpha2.ResourceBindingSpec{
				Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: name},
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
					ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated}},
				Replicas: 1,
				Clusters: []workv1alpha2.TargetCluster{{Name: "lost", Replicas: 1}},
			},
		})
		items = append(items, evictionqueue.Item{Cluster: "lost", Key: "shop/" + name})
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...), items
}

// evicted reports whether the binding has left lost for a graceful eviction
// task.
func evicted(t *testing.T, c client.Client, it evictionqueue.Item) bool {
	t.Helper()
	key, err := objectKey(it.Key)
	require.NoError(t, err)
	var rb workv1alpha2.ResourceBinding
	require.NoError(t, c.Get(context.Background(), key, &rb))
	return len(rb.Spec.GracefulEvictionTasks) == 1 && !rb.Spec.TargetContains("lost")
}

// Issue 6518 through the handler: 15 evictions from one cluster, checked
// one after another against the same resource summaries. Without the
// ledger all 15 go ahead, every check seeing room for 10 on big, where the
// scheduler then puts them all. With it 10 go ahead and 5 wait, deferred
// (not abandoned, no failure counted), each with an AwaitingCapacity Event,
// until big's summary shows the 10 placed; then the check sends them to
// small and they go.
func TestEvictHandlerLedgerIssue6518(t *testing.T) {
	t.Run("without the ledger", func(t *testing.T) {
		b, items := issue6518(t, 15)
		c := b.Build()
		events := &recorded{}
		ctrl := newController(t, EvictionOptions{DisableLedger: true}, c, events)
		assert.Nil(t, ctrl.Ledger())
		for _, it := range items {
			requireEvicted(t, ctrl.evictHandler(resourceBindings())(context.Background(), it))
			assert.True(t, evicted(t, c, it), "%s", it.Key)
		}
	})

	b, items := issue6518(t, 15)
	c := b.Build()
	events := &recorded{}
	ctrl := newController(t, EvictionOptions{ClusterStatusUpdateFrequency: 2 * time.Second}, c, events)
	require.NotNil(t, ctrl.Ledger(), "on by default")
	h := ctrl.evictHandler(resourceBindings())
	var waiting []evictionqueue.Item
	for _, it := range items {
		err := h(context.Background(), it)
		if errors.Is(err, evictionqueue.ErrInProgress) {
			require.True(t, evicted(t, c, it))
			continue
		}
		var deferred *evictionqueue.ParkError
		require.ErrorAs(t, err, &deferred, "%s: want a deferral, not an abandonment or a failure", it.Key)
		assert.Equal(t, engine.RoomGate, deferred.Gate, "decided again when a summary changes")
		assert.Equal(t, 2*time.Second, deferred.Max, "and at the next status report at the latest, sooner than the hold ends")
		assert.Contains(t, err.Error(), "big has room for 0 of 1 after the 10 replicas of evictions in flight")
		assert.False(t, evicted(t, c, it))
		waiting = append(waiting, it)
	}
	assert.Len(t, waiting, 5)
	assert.Equal(t, map[string]int64{"big": 10}, ctrl.Ledger().Held(evictNow))
	assert.Equal(t, 5, count(*events, string(prescheduling.AwaitingCapacity)))
	assert.Len(t, *events, 5, "an eviction written records no Event")

	// Still the same summaries: they wait again.
	for _, it := range waiting {
		require.Error(t, h(context.Background(), it))
	}
	// Karmada's cluster status controller reports big full: the 10 are
	// placed, nothing is held, and the check now sends the rest to small.
	var big clusterv1alpha1.Cluster
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "big"}, &big))
	require.NoError(t, c.Update(context.Background(), withRoom(&big, 0)))
	for _, it := range waiting {
		requireEvicted(t, h(context.Background(), it))
		assert.True(t, evicted(t, c, it))
	}
	// No decision reads big any more, so nothing settles it but Settle.
	assert.Equal(t, map[string]int64{"big": 10, "small": 5}, ctrl.Ledger().Held(evictNow))
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "big"}, &big))
	ctrl.Ledger().Settle(evictNow, karmada.SummariesOf([]clusterv1alpha1.Cluster{big}))
	assert.Equal(t, map[string]int64{"small": 5}, ctrl.Ledger().Held(evictNow))
}

func count(events []string, reason string) int {
	n := 0
	for _, e := range events {
		if e == reason {
			n++
		}
	}
	return n
}

// A deferral waits for the earliest hold in the way to end when that comes
// before the next recheck.
func TestEvictHandlerLedgerRetriesWhenTheHoldEnds(t *testing.T) {
	b, items := issue6518(t, 11)
	c := b.Build()
	ledger, err := engine.NewLedger(engine.WithHold(time.Minute))
	require.NoError(t, err)
	ctrl := newController(t, EvictionOptions{Ledger: ledger, ClusterStatusUpdateFrequency: time.Hour}, c, &recorded{})
	h := ctrl.evictHandler(resourceBindings())
	for _, it := range items[:10] {
		requireEvicted(t, h(context.Background(), it))
	}
	err = h(context.Background(), items[10])
	var deferred *evictionqueue.ParkError
	require.ErrorAs(t, err, &deferred)
	assert.Equal(t, time.Minute, deferred.Max)
}

// An eviction the ledger let through but that writes nothing gives its room
// back at once: a failed write, or a binding another writer moved off the
// cluster meanwhile.
func TestEvictHandlerLedgerReleasesWhenNothingIsWritten(t *testing.T) {
	for _, tc := range []struct {
		name    string
		update  func(ctx context.Context, c client.WithWatch, obj client.Object) error
		wantErr bool
	}{
		{"the write fails", func(context.Context, client.WithWatch, client.Object) error {
			return errors.New("etcd is down")
		}, true},
		{"moved off the cluster meanwhile", func(ctx context.Context, c client.WithWatch, obj client.Object) error {
			var other workv1alpha2.ResourceBinding
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &other); err != nil {
				return err
			}
			other.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "small", Replicas: 1}}
			if err := c.Update(ctx, &other); err != nil {
				return err
			}
			return c.Update(ctx, obj) // a conflict
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, items := issue6518(t, 1)
			c := b.WithInterceptorFuncs(interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, _ ...client.UpdateOption) error {
				return tc.update(ctx, c, obj)
			}}).Build()
			ctrl := newController(t, EvictionOptions{}, c, &recorded{})
			err := ctrl.evictHandler(resourceBindings())(context.Background(), items[0])
			if tc.wantErr {
				require.Error(t, err)
			} else {
				assert.True(t, evictionqueue.IsSkipped(err), "%v: want nothing to do", err)
			}
			assert.Empty(t, ctrl.Ledger().Held(evictNow))
		})
	}
}

func TestEvictionOptionsLedger(t *testing.T) {
	ledger, err := engine.NewLedger()
	require.NoError(t, err)
	_, err = NewEvictionController(EvictionOptions{Ledger: ledger, DisableLedger: true})
	assert.EqualError(t, err, "controllers: EvictionOptions.Ledger is set and DisableLedger too: want one or the other")
	_, err = NewEvictionController(EvictionOptions{ClusterStatusUpdateFrequency: -time.Second})
	assert.EqualError(t, err, "controllers: EvictionOptions.ClusterStatusUpdateFrequency (--cluster-status-update-frequency) -1s: must not be negative")
	c, err := NewEvictionController(EvictionOptions{Ledger: ledger})
	require.NoError(t, err)
	assert.Same(t, ledger, c.Ledger())
	assert.Equal(t, DefaultClusterStatusUpdateFrequency, c.opts.ClusterStatusUpdateFrequency)
}

// A task that ends gives back the room held for its eviction at the
// summaries' next report when it ends because the workload is healthy where
// it went, whoever ends it: the GracefulEvictionController, or another
// writer. The rule is the eviction controller's, in its reconcile of the
// binding (the one end path). The room of a task that ends at once by its
// purge mode, before anything was placed, stays held. A Directly task with
// suppressDeletion true does not end at once (the Assessor reads
// suppressDeletion first and keeps it): when it ends later, its cluster back
// in the schedule result, its room comes back as a Gracefully task's would.
func TestAnEndedTaskReleasesTheRoom(t *testing.T) {
	now := evictNow
	created := metav1.NewTime(now.Add(-time.Minute))
	key := types.NamespacedName{Namespace: "shop", Name: "web"}
	for _, tc := range []struct {
		name     string
		mode     policyv1alpha1.PurgeMode
		health   workv1alpha2.ResourceHealth
		suppress *bool // suppressDeletion
		back     bool  // member1 back in the schedule result
		other    bool  // another writer removes the task
		given    bool  // back at the next report
	}{
		{"Gracefully, healthy elsewhere: given back", policyv1alpha1.PurgeModeGracefully, workv1alpha2.ResourceHealthy, nil, false, false, true},
		{"Gracefully, not healthy yet: kept", policyv1alpha1.PurgeModeGracefully, workv1alpha2.ResourceUnhealthy, nil, false, false, false},
		{"Gracefully, removed by another writer: given back", policyv1alpha1.PurgeModeGracefully, workv1alpha2.ResourceUnhealthy, nil, false, true, true},
		{"Directly: ended at once, kept", policyv1alpha1.PurgeModeDirectly, workv1alpha2.ResourceUnhealthy, nil, false, false, false},
		{"Directly, member1 back: ended at once, kept", policyv1alpha1.PurgeModeDirectly, workv1alpha2.ResourceUnhealthy, nil, true, false, false},
		{"Directly, suppressDeletion true, member1 back: waited, given back", policyv1alpha1.PurgeModeDirectly, workv1alpha2.ResourceUnhealthy, ptr.To(true), true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBinding(nil, workv1alpha2.AggregatedStatusItem{ClusterName: "member2", Health: tc.health})
			b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 3}}
			if tc.back {
				b.Spec.Clusters = append(b.Spec.Clusters, workv1alpha2.TargetCluster{Name: "member1", Replicas: 1})
			}
			b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{
				FromCluster: "member1", PurgeMode: tc.mode, SuppressDeletion: tc.suppress, CreationTimestamp: &created,
				Producer: karmada.TaintManagerProducer,
			}}
			c := world(t, b)
			ctrl := newController(t, EvictionOptions{}, c, &recorded{})
			withQueues(t, ctrl)
			k := ctrl.kinds[0]
			// The eviction in flight, carrying the room it took on member2
			// as the handler holds it, and another binding's, which is
			// never touched. No summaries: nothing settles them.
			ledger := ctrl.Ledger()
			hold := ledger.Restore(now, "shop/web", "member1", prescheduling.Result{Feasible: true, Moves: []failover.TargetCluster{{Name: "member2", Replicas: 3}}}, karmada.SummariesOf(nil), nil, now)
			require.False(t, hold.IsZero())
			require.True(t, k.q.AddInFlightWith(webItem, flight{endsAtOnce: endsAtOnce(&b.Spec.GracefulEvictionTasks[0]), hold: hold}))
			ledger.Admit(now, "shop/other", "member1", prescheduling.Result{Feasible: true, Moves: []failover.TargetCluster{{Name: "member3", Replicas: 1}}}, karmada.SummariesOf(nil), nil)

			if tc.other {
				removeTask(t, c, key, "member1")
			} else {
				graceful, err := NewGracefulEvictionController(GracefulEvictionOptions{Clock: clocktesting.NewFakeClock(now)})
				require.NoError(t, err)
				graceful.client, graceful.reader = c, c
				_, err = graceful.assess(context.Background(), resourceBindings(), key)
				require.NoError(t, err)
			}
			_, err := ctrl.manageTaints(context.Background(), k, key)
			require.NoError(t, err)
			both := map[string]int64{"member2": 3, "member3": 1}
			assert.Equal(t, both, ledger.Held(now), "held until the summaries' next report")
			after := both
			if tc.given {
				after = map[string]int64{"member3": 1}
			}
			assert.Equal(t, after, ledger.Held(now.Add(ctrl.opts.ClusterStatusUpdateFrequency)))
		})
	}
	assert.True(t, gracefulevict.Task{SuppressDeletion: ptr.To(false)}.EndsAtOnce(), "suppressDeletion false ends it at once")
	assert.True(t, gracefulevict.Task{PurgeMode: "Immediately"}.EndsAtOnce(), "the legacy name of Directly")
	assert.False(t, gracefulevict.Task{PurgeMode: failover.PurgeModeGracefully, SuppressDeletion: ptr.To(true)}.EndsAtOnce())
}

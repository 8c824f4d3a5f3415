package controllers

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	karmadacluster "github.com/karmada-io/karmada/pkg/controllers/cluster"
	"github.com/karmada-io/karmada/pkg/features"
	"github.com/karmada-io/karmada/pkg/util/indexregistry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/prescheduling"
)

var evictNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// world is member1, NoExecute-tainted for a minute, member2 healthy, and
// the given bindings, as a fake API server.
func world(t *testing.T, bindings ...client.Object) client.WithWatch {
	t.Helper()
	return worldBuilder(t, bindings...).Build()
}

func worldBuilder(t *testing.T, bindings ...client.Object) *fake.ClientBuilder {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, AddToScheme(s))
	added := metav1.NewTime(evictNow.Add(-time.Minute))
	failed := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}, Spec: clusterv1alpha1.ClusterSpec{
		Taints: []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}},
	}}
	healthy := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member2"}}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(append([]client.Object{failed, healthy}, bindings...)...)
}

// newBinding is shop/web on member1 with three replicas, the placement
// Karmada applied to it (no tolerations) in its annotation.
func newBinding(failoverSpec *policyv1alpha1.FailoverBehavior, status ...workv1alpha2.AggregatedStatusItem) *workv1alpha2.ResourceBinding {
	return &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
			Annotations: map[string]string{karmada.AppliedPlacementAnnotation: `{"clusterAffinity":{"clusterNames":["member1","member2"]}}`}},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
			Replicas: 3,
			Clusters: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 3}},
			Failover: failoverSpec,
		},
		Status: workv1alpha2.ResourceBindingStatus{AggregatedStatus: status},
	}
}

func newController(t *testing.T, opts EvictionOptions, c client.WithWatch, events eventRecorder) *EvictionController {
	t.Helper()
	opts.EnableNoExecuteTaintEviction = true
	opts.Clock = clocktesting.NewFakeClock(evictNow)
	ctrl, err := NewEvictionController(opts)
	require.NoError(t, err)
	ctrl.client, ctrl.reader, ctrl.recorder = c, c, events
	syncFleet(t, ctrl, c)
	return ctrl
}

// syncFleet sets ctrl's Fleet to the clusters c lists, as the Cluster
// informer would have by now.
func syncFleet(t testing.TB, ctrl *EvictionController, c client.Reader) {
	t.Helper()
	var list clusterv1alpha1.ClusterList
	require.NoError(t, c.List(context.Background(), &list))
	for i := range list.Items {
		_, _ = ctrl.fleet.Set(&list.Items[i])
	}
}

// evictWithKarmada runs Karmada v1.18's own taint manager on the world: a
// reconcile of member1 queues its bindings, whose eviction worker then
// writes them. It runs in a synctest bubble, so the workers' queues move
// on the bubble's clock and the test waits for them without sleeping.
func evictWithKarmada(t *testing.T, purgeMode string, bindings ...client.Object) client.Client {
	t.Helper()
	c := forKarmada(worldBuilder(t, bindings...)).Build()
	synctest.Test(t, func(t *testing.T) {
		tm := &karmadacluster.NoExecuteTaintManager{
			Client:                             c,
			EventRecorder:                      record.NewFakeRecorder(100),
			ClusterTaintEvictionRetryFrequency: time.Hour,
			ConcurrentReconciles:               1,
			EnableNoExecuteTaintEviction:       true,
			NoExecuteTaintEvictionPurgeMode:    purgeMode,
			EvictionQueueOptions:               karmadacluster.EvictionQueueOptions{ResourceEvictionRate: 100},
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			_ = tm.Start(ctx)
		}()
		synctest.Wait() // the workers are waiting for items
		_, err := tm.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "member1"}})
		require.NoError(t, err)
		synctest.Wait() // every binding is written
		cancel()
		<-stopped
	})
	return c
}

// forKarmada readies a fake API server for Karmada's own taint manager: the
// bindings' indexes by cluster that it lists by, and the kinds set on what
// it lists.
func forKarmada(b *fake.ClientBuilder) *fake.ClientBuilder {
	return b.
		WithIndex(&workv1alpha2.ResourceBinding{}, indexregistry.ResourceBindingIndexByFieldCluster, func(o client.Object) []string {
			return clusterNames(&o.(*workv1alpha2.ResourceBinding).Spec)
		}).
		WithIndex(&workv1alpha2.ClusterResourceBinding{}, indexregistry.ClusterResourceBindingIndexByFieldCluster, func(o client.Object) []string {
			return clusterNames(&o.(*workv1alpha2.ClusterResourceBinding).Spec)
		}).
		// Karmada's taint manager keys the bindings it lists by their
		// kind, which the manager's cache sets on what it lists and the
		// fake client leaves empty.
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			return meta.EachListItem(list, func(o runtime.Object) error {
				gvks, _, err := c.Scheme().ObjectKinds(o)
				if err == nil {
					o.GetObjectKind().SetGroupVersionKind(gvks[0])
				}
				return err
			})
		}})
}

func clusterNames(spec *workv1alpha2.ResourceBindingSpec) []string {
	var out []string
	for _, c := range spec.Clusters {
		out = append(out, c.Name)
	}
	return out
}

// The eviction writes the binding as Karmada v1.18's own taint manager
// writes it: both run on the same binding in the same world, and the
// resulting spec.clusters and spec.gracefulEvictionTasks must agree, but
// for the two fields the library fills at once and Karmada leaves for later
// (the task's creation time, which its graceful eviction controller stamps,
// and its message, why).
func TestTaskAsKarmadaWritesIt(t *testing.T) {
	cluster := func(mode policyv1alpha1.PurgeMode, rules ...policyv1alpha1.StatePreservationRule) *policyv1alpha1.FailoverBehavior {
		fb := &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: mode}}
		if rules != nil {
			fb.Cluster.StatePreservation = &policyv1alpha1.StatePreservation{Rules: rules}
		}
		return fb
	}
	replicas := policyv1alpha1.StatePreservationRule{AliasLabelName: "example.com/replicas", JSONPath: "{ .replicas }"}
	collected := workv1alpha2.AggregatedStatusItem{ClusterName: "member1", Status: &runtime.RawExtension{Raw: []byte(`{"replicas":3}`)}}
	for _, tc := range []struct {
		name     string
		flag     failover.PurgeMode // --no-execute-taint-eviction-purge-mode
		stateful bool               // the StatefulFailoverInjection feature gate
		binding  *workv1alpha2.ResourceBinding
		wantMode policyv1alpha1.PurgeMode
	}{
		{"no spec.failover: the flag's Gracefully", failover.PurgeModeGracefully, false, newBinding(nil), policyv1alpha1.PurgeModeGracefully},
		{"no spec.failover: the flag's Directly", failover.PurgeModeDirectly, false, newBinding(nil), policyv1alpha1.PurgeModeDirectly},
		{"spec.failover.cluster without a mode: Gracefully whatever the flag", failover.PurgeModeDirectly, false, newBinding(cluster("")), policyv1alpha1.PurgeModeGracefully},
		{"spec.failover.cluster Directly", failover.PurgeModeGracefully, false, newBinding(cluster(policyv1alpha1.PurgeModeDirectly)), policyv1alpha1.PurgeModeDirectly},
		{"statePreservation with StatefulFailoverInjection: the state in the task", failover.PurgeModeGracefully, true,
			newBinding(cluster(policyv1alpha1.PurgeModeGracefully, replicas), collected), policyv1alpha1.PurgeModeGracefully},
		{"statePreservation without StatefulFailoverInjection: no state", failover.PurgeModeGracefully, false,
			newBinding(cluster(policyv1alpha1.PurgeModeGracefully, replicas), collected), policyv1alpha1.PurgeModeGracefully},
	} {
		t.Run(tc.name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, features.FeatureGate, features.StatefulFailoverInjection, tc.stateful)
			var theirs workv1alpha2.ResourceBinding
			require.NoError(t, evictWithKarmada(t, string(tc.flag), tc.binding.DeepCopy()).
				Get(context.Background(), client.ObjectKeyFromObject(tc.binding), &theirs))
			require.Len(t, theirs.Spec.GracefulEvictionTasks, 1, "Karmada's taint manager did not evict")

			c := world(t, tc.binding.DeepCopy())
			ctrl := newController(t, EvictionOptions{NoExecuteTaintEvictionPurgeMode: tc.flag, StatefulFailoverInjection: tc.stateful}, c, &recorded{})
			requireEvicted(t, ctrl.evictHandler(resourceBindings())(context.Background(),
				evictionqueue.Item{Cluster: "member1", Key: "shop/web"}))
			var ours workv1alpha2.ResourceBinding
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(tc.binding), &ours))
			require.Len(t, ours.Spec.GracefulEvictionTasks, 1)

			task := ours.Spec.GracefulEvictionTasks[0]
			require.NotNil(t, task.CreationTimestamp, "the library stamps the task")
			assert.True(t, task.CreationTimestamp.Time.Equal(evictNow))
			assert.NotEmpty(t, task.Message, "the library says why")
			ours.Spec.GracefulEvictionTasks[0].CreationTimestamp, ours.Spec.GracefulEvictionTasks[0].Message = nil, ""
			assert.Equal(t, theirs.Spec.Clusters, ours.Spec.Clusters)
			assert.Equal(t, theirs.Spec.GracefulEvictionTasks, ours.Spec.GracefulEvictionTasks)
			assert.Equal(t, tc.wantMode, task.PurgeMode)
			if tc.stateful {
				assert.Equal(t, map[string]string{"example.com/replicas": "3"}, task.PreservedLabelState)
			}
		})
	}
}

// As in Karmada's taint manager, an eviction whose state cannot be read
// yet (nothing collected from the cluster) waits: the item fails, to be
// retried, and the binding is not written.
func TestEvictStateNotCollectedWaits(t *testing.T) {
	rules := &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{StatePreservation: &policyv1alpha1.StatePreservation{
		Rules: []policyv1alpha1.StatePreservationRule{{AliasLabelName: "example.com/replicas", JSONPath: "{ .replicas }"}},
	}}}
	c := world(t, newBinding(rules))
	events := &recorded{}
	ctrl := newController(t, EvictionOptions{StatefulFailoverInjection: true}, c, events)
	err := ctrl.evictHandler(resourceBindings())(context.Background(), evictionqueue.Item{Cluster: "member1", Key: "shop/web"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "member1")
	assert.False(t, evictionqueue.IsAbandoned(err), "abandoned: never retried")
	var got workv1alpha2.ResourceBinding
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "web"}, &got))
	assert.Empty(t, got.Spec.GracefulEvictionTasks)
	assert.Equal(t, []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 3}}, got.Spec.Clusters)
	assert.Empty(t, *events)
}

// A task for the cluster that is already there is replaced by the new one
// (gracefulevict.Evict), where Karmada keeps the old one: that task had
// ended anyway (its cluster was back in the schedule result), and its old
// creation time would cut the new grace period short.
func TestEvictReplacesAnOldTask(t *testing.T) {
	b := newBinding(nil)
	old := metav1.NewTime(evictNow.Add(-time.Hour))
	b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1", Reason: "old", CreationTimestamp: &old}}
	c := world(t, b)
	ctrl := newController(t, EvictionOptions{}, c, &recorded{})
	requireEvicted(t, ctrl.evictHandler(resourceBindings())(context.Background(), evictionqueue.Item{Cluster: "member1", Key: "shop/web"}))
	var got workv1alpha2.ResourceBinding
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "web"}, &got))
	require.Len(t, got.Spec.GracefulEvictionTasks, 1)
	assert.Equal(t, karmada.TaintUntoleratedReason, got.Spec.GracefulEvictionTasks[0].Reason)
	assert.True(t, got.Spec.GracefulEvictionTasks[0].CreationTimestamp.Time.Equal(evictNow))
	assert.Equal(t, ptr.To[int32](3), got.Spec.GracefulEvictionTasks[0].Replicas)
}

// requireEvicted checks a handler's result for an eviction written: in
// flight until its task ends.
func requireEvicted(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	require.ErrorIs(t, err, evictionqueue.ErrInProgress, msgAndArgs...)
}

// recorded keeps the reasons of the Events the handler records.
type recorded []string

func (r *recorded) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	*r = append(*r, reason)
}

// The handler moves the binding into a graceful eviction task, and records
// no Event: the task's message says why. When another writer moves the
// binding off the cluster while the handler writes (a conflict), the
// handler writes no task and no Event either.
func TestEvictHandlerEvent(t *testing.T) {
	update := func(change func(*workv1alpha2.ResourceBinding)) otherWriter {
		return func(ctx context.Context, c client.Client, b *workv1alpha2.ResourceBinding) error {
			change(b)
			return c.Update(ctx, b)
		}
	}
	moved := update(func(b *workv1alpha2.ResourceBinding) {
		b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member2"}}
	})
	// Karmada's detector applies a new placement: the tolerations the
	// taint manager reads are in its annotation.
	tolerated := update(func(b *workv1alpha2.ResourceBinding) {
		b.Annotations[karmada.AppliedPlacementAnnotation] = `{"clusterTolerations":[{"key":"cluster.karmada.io/not-ready","operator":"Exists","effect":"NoExecute"}]}`
	})
	deleting := func(ctx context.Context, c client.Client, b *workv1alpha2.ResourceBinding) error {
		b.Finalizers = []string{"example.com/keep"} // so that Delete only marks it
		if err := c.Update(ctx, b); err != nil {
			return err
		}
		return c.Delete(ctx, b)
	}
	for _, tc := range []struct {
		name       string
		concurrent otherWriter // made first, so the handler's write conflicts
		wantTasks  int
	}{
		{"evicted: one task", nil, 1},
		{"moved by another writer meanwhile: no task", moved, 0},
		{"made to tolerate the taint meanwhile: no task", tolerated, 0},
		{"being deleted meanwhile: no task", deleting, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, events := runEvictHandler(t, tc.concurrent)
			if len(*events) != 0 {
				t.Errorf("events %q, want none", *events)
			}
			var got workv1alpha2.ResourceBinding
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "web"}, &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Spec.GracefulEvictionTasks) != tc.wantTasks {
				t.Errorf("tasks %+v, want %d", got.Spec.GracefulEvictionTasks, tc.wantTasks)
			}
		})
	}
}

// otherWriter is another controller's write to the binding b it read.
type otherWriter func(ctx context.Context, c client.Client, b *workv1alpha2.ResourceBinding) error

// runEvictHandler runs the handler for binding shop/web on the NoExecute
// tainted member1, member2 being healthy; concurrent, when set, writes the
// binding just before the handler does.
func runEvictHandler(t *testing.T, concurrent otherWriter) (client.Client, *recorded) {
	t.Helper()
	updates := 0
	c := worldBuilder(t, newBinding(nil)).
		WithInterceptorFuncs(interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if updates++; concurrent != nil && updates == 1 {
				var other workv1alpha2.ResourceBinding
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &other); err != nil {
					return err
				}
				if err := concurrent(ctx, c, &other); err != nil {
					return err
				}
			}
			return c.Update(ctx, obj, opts...) // a conflict after the other write
		}}).Build()
	events := &recorded{}
	ctrl := newController(t, EvictionOptions{}, c, events)
	if err := ctrl.evictHandler(resourceBindings())(context.Background(), evictionqueue.Item{Cluster: "member1", Key: "shop/web"}); !errors.Is(err, evictionqueue.ErrInProgress) && !evictionqueue.IsSkipped(err) {
		t.Fatalf("handler: %v, want an eviction in flight or nothing to do", err)
	}
	if updates != 1 {
		t.Fatalf("%d updates, want 1: one eviction, or one conflict and no write of a binding that should no longer leave member1", updates)
	}
	return c, events
}

// Karmada's scheduler tries the clusterAffinities terms from the one it
// last scheduled the binding under (status.schedulerObservedAffinityName),
// never one before it. Here the binding runs on member1 under "backup", the
// last term: with member1 gone the scheduler has nowhere to put it, though
// member2, in "primary", is healthy. The check starts where the scheduler
// does, so nothing is evicted and an Event says why; a binding scheduled
// under "primary", or before any term was observed, goes to member2.
func TestEvictHandlerResumesAtTheObservedAffinityTerm(t *testing.T) {
	for _, tc := range []struct {
		observed string
		evicted  bool
	}{
		{"backup", false},
		{"primary", true},
		{"", true},
	} {
		t.Run("observed "+tc.observed, func(t *testing.T) {
			b := newBinding(nil)
			b.Spec.Placement = &policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
				{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}}},
				{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}},
			}}
			b.Status.SchedulerObservedAffinityName = tc.observed
			c := world(t, b)
			events := &recorded{}
			ctrl := newController(t, EvictionOptions{}, c, events)
			err := ctrl.evictHandler(resourceBindings())(context.Background(), evictionqueue.Item{Cluster: "member1", Key: "shop/web"})
			var got workv1alpha2.ResourceBinding
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(b), &got))
			if tc.evicted {
				requireEvicted(t, err)
				assert.False(t, got.Spec.TargetContains("member1"), "moved off member1")
				assert.Len(t, got.Spec.GracefulEvictionTasks, 1)
				assert.Empty(t, *events)
				return
			}
			assert.True(t, isRefused(err), "refused: %v", err)
			assert.Equal(t, b.Spec.Clusters, got.Spec.Clusters, "still on member1")
			assert.Empty(t, got.Spec.GracefulEvictionTasks)
			assert.Equal(t, recorded{string(prescheduling.NoEligibleCluster)}, *events)
		})
	}
}

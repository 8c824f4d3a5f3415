package controllers

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/karmada/engine"
)

// removeTask is a writer (the GracefulEvictionController, Karmada's
// scheduler, an operator's kubectl edit, another controller) taking the
// graceful eviction task from cluster off the binding key: nobody tells the
// eviction controller.
func removeTask(t *testing.T, c client.Client, key types.NamespacedName, cluster string) {
	t.Helper()
	var rb workv1alpha2.ResourceBinding
	require.NoError(t, c.Get(context.Background(), key, &rb))
	n := len(rb.Spec.GracefulEvictionTasks)
	var kept []workv1alpha2.GracefulEvictionTask
	for _, task := range rb.Spec.GracefulEvictionTasks {
		if task.FromCluster != cluster {
			kept = append(kept, task)
		}
	}
	require.Len(t, kept, n-1, "no task from %s on %s", cluster, key)
	rb.Spec.GracefulEvictionTasks = kept
	require.NoError(t, c.Update(context.Background(), &rb))
}

// endEviction ends the eviction of the binding key from cluster as it ends in
// a manager: its task is taken off the binding (if the binding is there),
// and the eviction controller's reconcile of the binding sees it gone.
func endEviction(t *testing.T, ctrl *EvictionController, k *kind, c client.Client, key types.NamespacedName, cluster string) {
	t.Helper()
	var rb workv1alpha2.ResourceBinding
	if err := c.Get(context.Background(), key, &rb); err == nil {
		removeTask(t, c, key, cluster)
	}
	_, err := ctrl.manageTaints(context.Background(), k, key)
	require.NoError(t, err)
}

// runQueue runs k's queue, with cfg, over ctrl's handler until the test's
// bubble ends it; the returned func stops it and waits.
func runQueue(t *testing.T, ctrl *EvictionController, k *kind, cfg evictionqueue.Config) (*evictionqueue.Queue, func()) {
	t.Helper()
	cfg.Name, cfg.Clock = k.queue, ctrl.opts.Clock
	q, err := evictionqueue.New(cfg, ctrl.evictHandler(k))
	require.NoError(t, err)
	k.q, ctrl.kinds = q, []*kind{k}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = q.Run(ctx) })
	return q, func() { cancel(); wg.Wait() }
}

// An eviction in flight whose task another writer removes frees its slot
// (EvictionOptions.MaxInFlight) as soon as the taint manager sees the
// binding, not InFlightTTL (10m) later: the eviction waiting for the slot
// goes before the clock moves, and the room the Ledger held for the ended
// one is given back at the summaries' next report.
func TestRemovedTaskFreesItsInFlightSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, items := issue6518(t, 2)
		c := b.Build()
		ctrl := newController(t, EvictionOptions{MaxInFlight: 1}, c, &recorded{})
		clk := ctrl.opts.Clock.(*clocktesting.FakeClock)
		k := resourceBindings()
		q, stop := runQueue(t, ctrl, k, evictionqueue.Config{MaxInFlight: 1})
		defer stop()
		q.Add(items[0])
		synctest.Wait()
		q.Add(items[1])
		synctest.Wait()
		require.True(t, evicted(t, c, items[0]))
		require.False(t, evicted(t, c, items[1]), "evicted beyond MaxInFlight")
		require.Equal(t, 1, q.InFlight())
		first := items[0]
		require.True(t, holds(ctrl, clk.Now(), first))

		web00 := types.NamespacedName{Namespace: "shop", Name: "web-00"}
		removeTask(t, c, web00, "lost")
		_, err := ctrl.manageTaints(context.Background(), k, web00) // the binding's informer event
		require.NoError(t, err)
		synctest.Wait()
		assert.True(t, evicted(t, c, items[1]), "the slot of the eviction whose task was removed is still taken")
		assert.Equal(t, 1, q.InFlight(), "only web-01's eviction is in flight")
		assert.True(t, holds(ctrl, clk.Now(), first), "room given back before the summaries can show the replicas")

		clk.Step(ctrl.opts.ClusterStatusUpdateFrequency)
		synctest.Wait()
		assert.False(t, holds(ctrl, clk.Now(), first), "room still held for an eviction whose task was removed")
		assert.True(t, holds(ctrl, clk.Now(), items[1]))
	})
}

// An eviction waiting for its binding's budget of clusters in transit goes
// at once when another writer removes the task that used the budget up, as
// when the GracefulEvictionController ends it (Ended): not at its next look
// transitRetry later.
func TestRemovedTaskRetriesTheBudgetWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := transitWorld(t, "1")
		ctrl := newController(t, EvictionOptions{}, c, &recorded{})
		k := resourceBindings()
		q, stop := runQueue(t, ctrl, k, evictionqueue.Config{})
		defer stop()
		q.Add(item("member1"))
		synctest.Wait()
		q.Add(item("member3"))
		synctest.Wait()
		require.Equal(t, 1, q.InFlight())
		require.Equal(t, 1, q.Parked(engine.TransitGate("shop/web")), "member3 does not wait for the budget")

		web := types.NamespacedName{Namespace: "shop", Name: "web"}
		removeTask(t, c, web, "member1")
		_, err := ctrl.manageTaints(context.Background(), k, web)
		require.NoError(t, err)
		synctest.Wait()
		var tasks []string
		for _, task := range binding(t, c).Spec.GracefulEvictionTasks {
			tasks = append(tasks, task.FromCluster)
		}
		assert.Equal(t, []string{"member3"}, tasks, "the eviction waiting for the budget did not go at once")
		assert.Equal(t, 1, q.InFlight(), "member1's eviction still counts in flight")
	})
}

// A binding seen without a task is read again from the API server before
// anything ends: a cache that has not yet seen the task written ends
// nothing. A binding deleted ends all of its evictions in flight.
func TestRemovedTaskIsConfirmedOnTheAPIServer(t *testing.T) {
	c := transitWorld(t, "")
	ctrl := newController(t, EvictionOptions{}, c, &recorded{})
	withQueues(t, ctrl)
	k := ctrl.kinds[0]
	h := ctrl.evictHandler(k)
	ctx := context.Background()
	requireEvicted(t, h(ctx, item("member1")))
	requireEvicted(t, h(ctx, item("member3")))
	require.NoError(t, ctrl.takeOver(ctx, k)) // as a new leader: both count in flight
	require.Equal(t, 2, k.q.InFlight())

	stale := transitWorld(t, "") // the binding before any eviction
	ctrl.client = stale
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	_, err := ctrl.manageTaints(ctx, k, web)
	require.NoError(t, err)
	assert.Equal(t, 2, k.q.InFlight(), "ended on a stale cache")

	ctrl.client = c
	removeTask(t, c, web, "member3")
	_, err = ctrl.manageTaints(ctx, k, web)
	require.NoError(t, err)
	assert.Equal(t, 1, k.q.InFlight(), "member3's task is gone")

	require.NoError(t, c.Delete(ctx, binding(t, c)))
	_, err = ctrl.manageTaints(ctx, k, web)
	require.NoError(t, err)
	assert.Zero(t, k.q.InFlight(), "the binding is gone")
}

// An eviction whose task ends as soon as it is written (the graceful
// eviction controller, and the eviction controller's reconcile of the
// binding, both before the handler has returned) does not count in flight
// until InFlightTTL: the reconcile that saw the task gone while the
// handler ran asks to look again shortly (runningRecheck), and that look
// ends it. Before the first fix, the reconcile found no record and ended
// nothing. Found by the model test, seed 619563560066 (a race).
func TestATaskEndedWhileWrittenEndsItsEviction(t *testing.T) {
	var ctrl *EvictionController
	var during reconcile.Result
	done := false
	c := worldBuilder(t, newBinding(nil)).WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := c.Update(ctx, obj, opts...); err != nil || done {
				return err
			}
			done = true
			key := client.ObjectKeyFromObject(obj)
			removeTask(t, c, key, "member1")
			var err error
			during, err = ctrl.manageTaints(ctx, ctrl.kinds[0], key)
			return err
		},
	}).Build()
	ctrl = newController(t, EvictionOptions{}, c, &recorded{})
	withQueues(t, ctrl)
	k := ctrl.kinds[0]
	requireEvicted(t, decide(t, k, webItem))
	require.True(t, done)
	assert.Equal(t, runningRecheck, during.RequeueAfter, "seen while its handler ran: looked at again shortly")
	require.Equal(t, 1, k.q.InFlight())
	_, err := ctrl.manageTaints(context.Background(), k, types.NamespacedName{Namespace: "shop", Name: "web"})
	require.NoError(t, err)
	assert.Zero(t, k.q.InFlight(), "its task is gone: it is no longer in flight")
	assert.Empty(t, ctrl.Ledger().Held(evictNow.Add(ctrl.opts.ClusterStatusUpdateFrequency)), "its room goes back at the next report")
}

// holds reports whether ctrl's Ledger holds room at now for the eviction
// of it (engine.Ledger.Keys names each as its Hold does).
func holds(ctrl *EvictionController, now time.Time, it evictionqueue.Item) bool {
	return slices.Contains(ctrl.Ledger().Keys(now), it.Key+"@"+it.Cluster)
}

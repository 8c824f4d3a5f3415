package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/go-logr/logr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
)

// transitWorld is shop/web on member1, member3 and member5, all three
// NoExecute-tainted, with member2 and member4 healthy to move to; budget,
// when not empty, is its MaxClustersInTransitAnnotation.
func transitWorld(t *testing.T, budget string) client.WithWatch {
	t.Helper()
	b := newBinding(nil)
	b.Annotations[karmada.AppliedPlacementAnnotation] = `{"clusterAffinity":{"clusterNames":["member1","member2","member3","member4","member5"]}}`
	if budget != "" {
		b.Annotations[MaxClustersInTransitAnnotation] = budget
	}
	b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 1}, {Name: "member3", Replicas: 1}, {Name: "member5", Replicas: 1}}
	added := metav1.NewTime(evictNow.Add(-time.Minute))
	objs := []client.Object{b, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member4"}}}
	for _, name := range []string{"member3", "member5"} {
		objs = append(objs, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{
			Taints: []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}},
		}})
	}
	return world(t, objs...)
}

// requireWaits checks a handler's result for an eviction beyond the
// binding's budget of clusters in transit: deferred (kept, its permit
// back, no failure counted) by the short retry, no task written for it.
func requireWaits(t *testing.T, err error, c client.Client, cluster string) {
	t.Helper()
	var parked *evictionqueue.ParkError
	require.True(t, errors.As(err, &parked), "not parked: %v", err)
	assert.Equal(t, 10*time.Second, parked.Max)
	assert.Equal(t, engine.TransitGate("shop/web"), parked.Gate)
	assert.Contains(t, err.Error(), "clusters in transit")
	for _, task := range binding(t, c).Spec.GracefulEvictionTasks {
		assert.NotEqual(t, cluster, task.FromCluster, "evicted beyond the budget")
	}
}

// endTask removes the task from cluster, as Karmada's graceful eviction
// controller does once the workload runs elsewhere.
func endTask(t *testing.T, c client.Client, cluster string) {
	t.Helper()
	b := binding(t, c)
	var kept []workv1alpha2.GracefulEvictionTask
	for _, task := range b.Spec.GracefulEvictionTasks {
		if task.FromCluster != cluster {
			kept = append(kept, task)
		}
	}
	b.Spec.GracefulEvictionTasks = kept
	require.NoError(t, c.Update(context.Background(), b))
}

func item(cluster string) evictionqueue.Item {
	return evictionqueue.Item{Cluster: cluster, Key: "shop/web"}
}

// A binding on three failing clusters with a budget of 1 is evicted from
// one at a time: the others wait, with a ClustersInTransit Event and no
// task, until the open task ends, and then the next goes.
func TestBudgetOfClustersInTransit(t *testing.T) {
	c := transitWorld(t, "")
	events := &recorded{}
	ctrl := newController(t, EvictionOptions{MaxClustersInTransit: 1}, c, events)
	h := ctrl.evictHandler(resourceBindings())
	ctx := context.Background()

	requireEvicted(t, h(ctx, item("member1")))
	requireWaits(t, h(ctx, item("member3")), c, "member3")
	requireWaits(t, h(ctx, item("member5")), c, "member5")
	assert.Equal(t, []string{EventReasonClustersInTransit, EventReasonClustersInTransit}, []string(*events))
	assert.Len(t, binding(t, c).Spec.GracefulEvictionTasks, 1)

	endTask(t, c, "member1")
	requireEvicted(t, h(ctx, item("member3")))
	requireWaits(t, h(ctx, item("member5")), c, "member5")
	endTask(t, c, "member3")
	requireEvicted(t, h(ctx, item("member5")))
	for _, name := range []string{"member1", "member3", "member5"} {
		assert.False(t, binding(t, c).Spec.TargetContains(name), "still on %s", name)
	}
}

// The annotation on the binding overrides the option, both ways: 2 lets a
// second cluster go under an option of 1, 0 lifts an option's budget, and
// 1 holds a binding back without the option.
func TestBudgetAnnotationOverridesTheOption(t *testing.T) {
	for _, tc := range []struct {
		name       string
		option     int
		annotation string
		evicted    int // of member1, member3, member5 in turn, no task ending
	}{
		{"option", 1, "", 1},
		{"annotation above the option", 1, "2", 2},
		{"annotation lifts the option", 1, "0", 3},
		{"annotation without the option", 0, "1", 1},
		{"neither", 0, "", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := transitWorld(t, tc.annotation)
			ctrl := newController(t, EvictionOptions{MaxClustersInTransit: tc.option}, c, &recorded{})
			h := ctrl.evictHandler(resourceBindings())
			for i, cluster := range []string{"member1", "member3", "member5"} {
				err := h(context.Background(), item(cluster))
				if i < tc.evicted {
					requireEvicted(t, err, cluster)
				} else {
					requireWaits(t, err, c, cluster)
				}
			}
			assert.Len(t, binding(t, c).Spec.GracefulEvictionTasks, tc.evicted)
		})
	}
}

// An annotation that is not a non-negative integer is said in a Warning
// Event naming it and its value, and the option's budget applies: nothing
// panics, and the binding is not left without one.
func TestBadBudgetAnnotation(t *testing.T) {
	for _, bad := range []string{"one", "-1", "1.5", ""} {
		t.Run(bad, func(t *testing.T) {
			c := transitWorld(t, "")
			b := binding(t, c)
			b.Annotations[MaxClustersInTransitAnnotation] = bad
			require.NoError(t, c.Update(context.Background(), b))
			events := &recorded{}
			ctrl := newController(t, EvictionOptions{MaxClustersInTransit: 1}, c, events)
			_, err := ctrl.transitBudget(binding(t, c))
			require.Error(t, err)
			assert.Contains(t, err.Error(), MaxClustersInTransitAnnotation)
			assert.Contains(t, err.Error(), `"`+bad+`"`)
			h := ctrl.evictHandler(resourceBindings())
			requireEvicted(t, h(context.Background(), item("member1")))
			requireWaits(t, h(context.Background(), item("member3")), c, "member3")
			assert.Equal(t, []string{EventReasonInvalidTransitBudget, EventReasonInvalidTransitBudget, EventReasonClustersInTransit}, []string(*events))
		})
	}
}

// A task another producer wrote (Karmada's application failover, say) is a
// copy in transit too, and counts against the budget; the option is
// validated.
func TestBudgetCountsEveryTask(t *testing.T) {
	c := transitWorld(t, "1")
	b := binding(t, c)
	b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member9", Producer: "ResourceBindingController", Reason: "ApplicationFailure"}}
	require.NoError(t, c.Update(context.Background(), b))
	ctrl := newController(t, EvictionOptions{}, c, &recorded{})
	requireWaits(t, ctrl.evictHandler(resourceBindings())(context.Background(), item("member1")), c, "member1")

	_, err := NewEvictionController(EvictionOptions{MaxClustersInTransit: -1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MaxClustersInTransit (--max-clusters-in-transit) -1")
}

// The evictions waiting for their binding's budget park at its gate, to be
// decided again at once when a task of the binding ends (endRemoved), not
// another binding's; each counts once however often it parks; a freeze
// parks it at the freeze's gate instead, and its cluster's recovery ends it.
func TestEndedRetriesTheEvictionsWaitingForTheBudget(t *testing.T) {
	c := transitWorld(t, "1")
	ctrl := newController(t, EvictionOptions{Freeze: freezeName}, c, &recorded{})
	withQueues(t, ctrl)
	k := ctrl.kinds[0]
	waiting := func() int { return k.q.Parked(engine.TransitGate("shop/web")) }
	requireEvicted(t, decide(t, k, item("member1")))
	requireWaits(t, decide(t, k, item("member3")), c, "member3")
	requireWaits(t, decide(t, k, item("member5")), c, "member5")
	assert.Equal(t, 2, waiting())

	endEviction(t, ctrl, k, c, types.NamespacedName{Namespace: "shop", Name: "other"}, "member1")
	assert.Equal(t, 2, waiting(), "another binding's task ended")
	endEviction(t, ctrl, k, c, types.NamespacedName{Namespace: "shop", Name: "web"}, "member1")
	assert.Zero(t, waiting(), "decided again")
	assert.Equal(t, []string{"shop/web", "shop/web"}, keysOf(k.q.Pending()))

	requireEvicted(t, decide(t, k, item("member3")), "the budget has room again")
	requireWaits(t, decide(t, k, item("member5")), c, "member5")
	assert.Equal(t, 1, waiting(), "member3 evicted, member5 waits")
	k.q.CancelCluster("member5") // as the taint manager does when member5 recovers
	assert.Zero(t, waiting(), "its cluster recovered")
	assert.Zero(t, k.q.Len())

	k.q.Add(item("member5"))
	ctrl.freeze = newFreezeGate(freezeName, ctrl.opts.Clock, &frozenGauge{}, logr.Discard())
	ctrl.freeze.set(freezeMap(nil))
	assert.ErrorContains(t, decide(t, k, item("member5")), "frozen by ConfigMap")
	assert.Zero(t, waiting(), "held back by the freeze, not the budget")
	assert.Equal(t, 1, k.q.Parked(engine.FreezeGate))
}

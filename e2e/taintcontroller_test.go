//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/examples/taintcontroller/controller"
)

// slack is how late the controller may act after a window closes: an event
// round trip plus scheduling on a busy two-core CI machine.
const slack = 3 * time.Second

// notReady returns the policy's taint on c, or nil.
func notReady(c failover.Cluster) *corev1.Taint {
	return findTaint(c.Taints, notReadyKey, failover.TaintEffectPreferNoExecute)
}

// TestTaintFollowsReadyWithItsWindows walks one cluster through a whole
// outage: Ready goes False, the taint appears once the add window has
// passed, stamped with the time it was added; a user removing it by hand
// while the cluster is still down sees it come back; Ready returns True and
// the taint goes once the remove window has passed. The user's own taint is
// there after every step.
func TestTaintFollowsReadyWithItsWindows(t *testing.T) {
	noLeaks(t)
	const name, add, remove = "lifecycle", 3, 3
	createCluster(t, name, metav1.ConditionTrue, time.Now().Add(-time.Hour), userTaint)
	createPolicy(t, name+"-not-ready", name, add, remove)
	ctrl := startController(t, name, env.dynamic)

	// Ready -> False at down (whole seconds, as the API stores it).
	down := time.Now().Truncate(time.Second)
	setReady(t, name, metav1.ConditionFalse, down)
	var c failover.Cluster
	eventually(t, add*time.Second+2*slack, "the not-ready taint", func() bool {
		c, _ = getCluster(t, name)
		return notReady(c) != nil
	})
	added := notReady(c).TimeAdded
	require.NotNil(t, added, "an added taint carries TimeAdded")
	assert.False(t, added.Time.Before(down.Add(add*time.Second)), "added at %v, before the %ds window from %v closed", added, add, down)
	assert.True(t, added.Time.Before(down.Add(add*time.Second+slack)), "added at %v, long after the window from %v closed", added, down)
	requireUserTaint(t, c)

	// A user removes the taint while the cluster is still down: the edit is
	// an event, and the controller puts the taint back at once (the window
	// is long over), with a new TimeAdded.
	edited := time.Now().Truncate(time.Second)
	editTaints(t, name, func(ts []corev1.Taint) []corev1.Taint {
		out := ts[:0]
		for _, tt := range ts {
			if tt.Key != notReadyKey {
				out = append(out, tt)
			}
		}
		return out
	})
	eventually(t, 2*slack, "the not-ready taint to come back", func() bool {
		c, _ = getCluster(t, name)
		return notReady(c) != nil
	})
	assert.False(t, notReady(c).TimeAdded.Time.Before(edited), "the re-added taint keeps the old TimeAdded %v", notReady(c).TimeAdded)
	requireUserTaint(t, c)

	// Ready -> True at up: the taint goes after the remove window.
	up := time.Now().Truncate(time.Second)
	setReady(t, name, metav1.ConditionTrue, up)
	eventually(t, remove*time.Second+2*slack, "the not-ready taint to be removed", func() bool {
		c, _ = getCluster(t, name)
		return notReady(c) == nil
	})
	_, u := getCluster(t, name)
	removedAt := managers(u)["taintcontroller-"+name]
	assert.False(t, removedAt.Before(up.Add(remove*time.Second)), "removed at %v, before the %ds window from %v closed", removedAt, remove, up)
	requireUserTaint(t, c)
	assert.Positive(t, ctrl.metric(t, "taintcontroller_taint_changes_total", map[string]string{"change": "removed"}))
}

// TestConflictingWriterIsKept makes another writer update the cluster between
// the controller's read and its update. The API server rejects the stale
// write with a conflict; the controller reads again, evaluates again and
// writes a list that keeps the other writer's taint.
func TestConflictingWriterIsKept(t *testing.T) {
	noLeaks(t)
	const name = "conflict"
	other := corev1.Taint{Key: "example.com/other-writer", Value: "racing", Effect: corev1.TaintEffectNoSchedule}
	createCluster(t, name, metav1.ConditionFalse, time.Now().Add(-time.Minute), userTaint)
	injector := &conflictInjector{Interface: env.dynamic, t: t, cluster: name, other: other}
	ctrl := startController(t, name, injector)
	createPolicy(t, name+"-not-ready", name, 1, 1)

	var c failover.Cluster
	eventually(t, 2*slack, "the not-ready taint", func() bool {
		c, _ = getCluster(t, name)
		return notReady(c) != nil
	})
	require.True(t, injector.wasInjected(), "the controller wrote without passing through the injector")
	got := findTaint(c.Taints, other.Key, other.Effect)
	require.NotNil(t, got, "the other writer's taint was overwritten; taints now %v", c.Taints)
	assert.Equal(t, other.Value, got.Value)
	requireUserTaint(t, c)
	assert.GreaterOrEqual(t, ctrl.metric(t, "taintcontroller_update_conflicts_total", nil), 1.0)
}

// TestDeletedPolicyLeavesItsTaints deletes the policy that tainted a cluster.
// As documented, the controller then no longer touches that taint: it stays
// even after the cluster recovers and the old remove window has passed. A
// policy listing the same key and effect takes it over again and removes it.
func TestDeletedPolicyLeavesItsTaints(t *testing.T) {
	noLeaks(t)
	const name, remove = "orphan", 2
	createCluster(t, name, metav1.ConditionFalse, time.Now().Add(-time.Minute), userTaint)
	createPolicy(t, name+"-not-ready", name, 1, remove)
	ctrl := startController(t, name, env.dynamic)
	eventually(t, 2*slack, "the not-ready taint", func() bool {
		c, _ := getCluster(t, name)
		return notReady(c) != nil
	})

	// Other tests' policies may be loaded too; this one's must go. The count
	// is read before the delete, which the controller may handle at once.
	before := ctrl.metric(t, "taintcontroller_policies", map[string]string{"state": "valid"})
	require.GreaterOrEqual(t, before, 1.0)
	require.NoError(t, env.dynamic.Resource(controller.PolicyGVR).Delete(ctxFor(t), name+"-not-ready", metav1.DeleteOptions{}))
	eventually(t, 2*slack, "the controller to drop the deleted policy", func() bool {
		return ctrl.metric(t, "taintcontroller_policies", map[string]string{"state": "valid"}) == before-1
	})

	syncs := ctrl.syncs(t)
	setReady(t, name, metav1.ConditionTrue, time.Now().Truncate(time.Second))
	eventually(t, 2*slack, "the controller to evaluate the recovered cluster", func() bool { return ctrl.syncs(t) > syncs })
	never(t, remove*time.Second+time.Second, "the deleted policy's taint was removed", func() bool {
		c, _ := getCluster(t, name)
		return notReady(c) == nil
	})

	createPolicy(t, name+"-again", name, 1, remove)
	var c failover.Cluster
	eventually(t, 2*slack, "the re-created policy to remove the taint", func() bool {
		c, _ = getCluster(t, name)
		return notReady(c) == nil
	})
	requireUserTaint(t, c)
}

// TestRestartMidWindowKeepsTheWindow stops the controller halfway through an
// add window and starts a fresh one. The window is read from the condition's
// lastTransitionTime, not from when a controller first saw it, so the taint
// appears when the original window closes, not a whole window after the
// restart.
func TestRestartMidWindowKeepsTheWindow(t *testing.T) {
	noLeaks(t)
	const name, add = "restart", 6
	createCluster(t, name, metav1.ConditionTrue, time.Now().Add(-time.Hour), userTaint)
	createPolicy(t, name+"-not-ready", name, add, 60)
	first := startController(t, name+"-first", env.dynamic)
	eventually(t, 2*slack, "the first controller to see the healthy cluster", func() bool { return first.syncs(t) >= 1 })

	down := time.Now().Truncate(time.Second)
	setReady(t, name, metav1.ConditionFalse, down)
	eventually(t, 2*slack, "the first controller to see the outage", func() bool { return first.syncs(t) >= 2 })
	time.Sleep(time.Until(down.Add(add * time.Second / 2)))
	c, _ := getCluster(t, name)
	require.Nil(t, notReady(c), "tainted before the window closed")
	require.NoError(t, first.stop())

	restarted := time.Now()
	startController(t, name+"-second", env.dynamic)
	eventually(t, add*time.Second+2*slack, "the not-ready taint", func() bool {
		c, _ = getCluster(t, name)
		return notReady(c) != nil
	})
	added := notReady(c).TimeAdded.Time
	assert.False(t, added.Before(down.Add(add*time.Second)), "added at %v, before the window from %v closed", added, down)
	assert.True(t, added.Before(restarted.Add(add*time.Second)), "added at %v: the window restarted with the controller at %v", added, restarted)
	requireUserTaint(t, c)
}

// TestTwoReplicasOneLeader runs two replicas against one Lease. Only the
// holder evaluates and writes; when it shuts down it releases the Lease, the
// other takes over and its writes follow.
func TestTwoReplicasOneLeader(t *testing.T) {
	noLeaks(t)
	const name, lease = "leader", "e2e-two-replicas"
	createCluster(t, name, metav1.ConditionTrue, time.Now().Add(-time.Hour), userTaint)
	createPolicy(t, name+"-not-ready", name, 1, 1)

	replicas := map[string]*running{}
	for _, id := range []string{"replica-a", "replica-b"} {
		r, ctrl := newController(t, id, env.dynamic)
		r.stop = runUntilStopped(t, id, func(ctx context.Context) error {
			return controller.RunWithLeaderElection(ctx, controller.LeaderElection{
				Client:        env.kube,
				Namespace:     leaseNamespace,
				Name:          lease,
				Identity:      id,
				LeaseDuration: 4 * time.Second,
				RenewDeadline: 3 * time.Second,
				RetryPeriod:   250 * time.Millisecond,
			}, ctrl.Run)
		})
		replicas[id] = r
	}
	holder := func() string {
		l, err := env.kube.CoordinationV1().Leases(leaseNamespace).Get(ctxFor(t), lease, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	eventually(t, 2*slack, "a leader", func() bool { return holder() != "" })
	leaderID := holder()
	followerID := map[string]string{"replica-a": "replica-b", "replica-b": "replica-a"}[leaderID]
	require.NotEmpty(t, followerID, "unknown Lease holder %q", leaderID)
	leader, follower := replicas[leaderID], replicas[followerID]

	setReady(t, name, metav1.ConditionFalse, time.Now().Add(-time.Minute))
	var c failover.Cluster
	eventually(t, 2*slack, "the leader to taint the cluster", func() bool {
		c, _ = getCluster(t, name)
		return notReady(c) != nil
	})
	_, u := getCluster(t, name)
	m := managers(u)
	assert.Contains(t, m, "taintcontroller-"+leaderID)
	assert.NotContains(t, m, "taintcontroller-"+followerID, "the follower wrote")
	assert.Zero(t, follower.syncs(t), "the follower evaluated clusters while not leading")

	// Shut the leader down: it stops, then releases the Lease.
	require.NoError(t, leader.stop())
	leaderSyncs := leader.syncs(t)
	eventually(t, 2*slack, "the follower to take the Lease", func() bool { return holder() == followerID })

	setReady(t, name, metav1.ConditionTrue, time.Now().Add(-time.Minute))
	eventually(t, 2*slack, "the new leader to remove the taint", func() bool {
		c, _ = getCluster(t, name)
		return notReady(c) == nil
	})
	_, u = getCluster(t, name)
	assert.Contains(t, managers(u), "taintcontroller-"+followerID)
	assert.Equal(t, leaderSyncs, leader.syncs(t), "the old leader evaluated after it stopped")
	requireUserTaint(t, c)
}

// TestReleasedFormPolicy applies a policy in Karmada's released form
// (targetClusters, addOnConditions, removeOnConditions, taints; no windows)
// through the shipped CRD, which must store those fields, and checks that
// its taint follows Ready at once in both directions.
func TestReleasedFormPolicy(t *testing.T) {
	noLeaks(t)
	const name = "released"
	createCluster(t, name, metav1.ConditionTrue, time.Now().Add(-time.Hour), userTaint)
	startController(t, name, env.dynamic)
	_, err := env.dynamic.Resource(controller.PolicyGVR).Create(ctxFor(t), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterTaintPolicy",
		"metadata": map[string]any{"name": name + "-not-ready"},
		"spec": map[string]any{
			"targetClusters":     map[string]any{"clusterNames": []any{name}},
			"addOnConditions":    []any{map[string]any{"conditionType": "Ready", "operator": "In", "statusValues": []any{"False", "Unknown"}}},
			"removeOnConditions": []any{map[string]any{"conditionType": "Ready", "operator": "In", "statusValues": []any{"True"}}},
			"taints":             []any{map[string]any{"key": notReadyKey, "effect": "NoSchedule"}},
		},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	tainted := func() bool {
		c, _ := getCluster(t, name)
		return findTaint(c.Taints, notReadyKey, corev1.TaintEffectNoSchedule) != nil
	}
	setReady(t, name, metav1.ConditionFalse, time.Now())
	eventually(t, 2*slack, "the released-form taint", tainted)
	setReady(t, name, metav1.ConditionTrue, time.Now())
	eventually(t, 2*slack, "the released-form taint to be removed", func() bool { return !tainted() })
	c, _ := getCluster(t, name)
	requireUserTaint(t, c)
}

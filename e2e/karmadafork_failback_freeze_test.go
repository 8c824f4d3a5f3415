//go:build e2e

package e2e

import (
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/failoverkit/failover/karmada/controllers"
	"github.com/failoverkit/failover/metrics"
)

// testFailbackFrozen: nothing moves while an operator's freeze is set, a
// failback no more than an eviction (issue 38). A binding fails over from
// back-fz-a1 to back-fz-b1; the operator freezes (the ConfigMap
// karmada-system/failover-freeze, which deploy/rbac.yaml lets the
// controllers read); back-fz-a1 recovers and stays healthy for its window
// and well past it, and the binding stays where it is, counted in
// failback_waiting{reason="held_back"}. The thaw sends it back at once (the
// thaw wakes the bindings with a record), not at the 30 s recheck, and
// karmada-scheduler places it on its origin.
func testFailbackFrozen(t *testing.T) {
	s := newSuite(t, "backfrz")
	const a1, b1 = "back-fz-a1", "back-fz-b1"
	s.member(a1, "back-fz-r1", 60)
	s.member(b1, "back-fz-r2", 30)
	s.releasedPolicy(a1)
	s.scheduledBinding("frz-0", 2, policyv1alpha1.Placement{
		ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{a1, b1}}, ReplicaScheduling: aggregated}, a1)

	freeze := types.NamespacedName{Namespace: forkNamespace, Name: controllers.DefaultFreezeName}
	p := s.playCopies(backStartup)
	r := s.start("backfrz", forkOptions{Rate: rate(backRate, backRate), EnableNoExecuteTaintEviction: true,
		FailbackWindow: backWindow, Freeze: freeze}, nil)

	p.setDown(true, a1)
	s.notReady(a1)
	s.waitTaint(a1)
	settledOn := func(c string) func() bool {
		return func() bool {
			rb := s.getBinding("frz-0")
			return len(rb.Spec.GracefulEvictionTasks) == 0 && rb.Status.SchedulerObservedGeneration == rb.Generation &&
				allHealthy(rb) && whole(rb) && len(rb.Spec.Clusters) == 1 && rb.Spec.Clusters[0].Name == c
		}
	}
	eventually(t, 30*time.Second, "frz-0 failed over to "+b1+", Healthy there, its task cleared", settledOn(b1))
	failedOver := s.getBinding("frz-0")

	// The operator freezes; the controllers see it (eviction_frozen).
	ctx := ctxFor(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: freeze.Namespace, Name: freeze.Name},
		Data: map[string]string{controllers.FreezeReasonKey: "e2e: failback while frozen"}}
	require.NoError(t, s.c.Create(ctx, cm))
	t.Cleanup(func() {
		if err := s.c.Delete(ctxFor(t), cm); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the freeze: %v", err)
		}
	})
	eventually(t, 10*time.Second, "the controllers to see the freeze", func() bool {
		return r.metric(t, "eviction_frozen", nil) == 1
	})

	// a1 recovers and stays healthy for its window, and twice as long.
	recovered := s.backUp(p, a1)
	time.Sleep(time.Until(recovered.Add(3 * backWindow)))
	rb := s.getBinding("frz-0")
	assert.Nil(t, rb.Spec.RescheduleTriggeredAt, "frz-0 sent back while frozen")
	assert.Equal(t, failedOver.Spec.Clusters, rb.Spec.Clusters, "frz-0 moved while frozen")
	assert.Empty(t, rb.Spec.GracefulEvictionTasks, "a task opened while frozen")
	assert.Empty(t, eventsOf(s, "frz-0", controllers.EventReasonFailedBack), "a FailedBack Event while frozen")
	assert.Equal(t, 1.0, r.metric(t, "failback_waiting", map[string]string{"reason": metrics.FailbackWaitingHeldBack}),
		"failback_waiting{reason=held_back}: the binding the freeze holds")

	// The thaw: back at once, not a recheck later.
	require.NoError(t, s.c.Delete(ctx, cm))
	thawed := time.Now()
	var sent time.Time
	eventually(t, 10*time.Second, "frz-0 sent back after the thaw", func() bool {
		rb := s.getBinding("frz-0")
		if rb.Spec.RescheduleTriggeredAt == nil {
			return false
		}
		sent = time.Now()
		return true
	})
	t.Logf("measured: frz-0 held %s past its window while frozen; sent back %s after the thaw", ms(thawed.Sub(recovered.Add(backWindow))), ms(sent.Sub(thawed)))
	eventually(t, 30*time.Second, "frz-0 back on "+a1+", Healthy, its failback task cleared", settledOn(a1))
	assert.Len(t, eventsOf(s, "frz-0", controllers.EventReasonFailedBack), 1)
}

package controllers

import (
	"context"
	"testing"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The controller writes back the tasks the Assessor keeps: a task whose
// cluster is back in the schedule result ends at once (where Karmada's
// controller would keep it until its timeout), a new task is stamped, and
// the binding is reconciled again when the earliest grace period left ends.
// A binding whose tasks all stay as they are is not written.
func TestGracefulEvictionAssess(t *testing.T) {
	now := evictNow
	created := metav1.NewTime(now.Add(-4 * time.Minute))
	b := newBinding(nil)
	b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 1}, {Name: "member2", Replicas: 2}}
	b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{
		{FromCluster: "member1", CreationTimestamp: &created},                              // back in the result: done
		{FromCluster: "member3", CreationTimestamp: &created},                              // waiting: 6 of its 10 minutes left
		{FromCluster: "member4", GracePeriodSeconds: ptr.To[int32](60), Reason: "new one"}, // no timestamp yet: stamped now
	}
	c := world(t, b)
	ctrl, err := NewGracefulEvictionController(GracefulEvictionOptions{Clock: clocktesting.NewFakeClock(now)})
	require.NoError(t, err)
	ctrl.client, ctrl.reader = c, c
	res, err := ctrl.assess(context.Background(), resourceBindings(), client.ObjectKeyFromObject(b))
	require.NoError(t, err)
	assert.Equal(t, time.Minute, res.RequeueAfter, "the stamped task's 60 s grace period ends first")

	var got workv1alpha2.ResourceBinding
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(b), &got))
	require.Len(t, got.Spec.GracefulEvictionTasks, 2)
	assert.Equal(t, "member3", got.Spec.GracefulEvictionTasks[0].FromCluster)
	assert.Equal(t, "member4", got.Spec.GracefulEvictionTasks[1].FromCluster)
	require.NotNil(t, got.Spec.GracefulEvictionTasks[1].CreationTimestamp)
	assert.True(t, got.Spec.GracefulEvictionTasks[1].CreationTimestamp.Time.Equal(now))
	assert.Equal(t, b.Spec.Clusters, got.Spec.Clusters, "the schedule result is the scheduler's")

	// Assessed again with nothing to change: no write.
	rv := got.ResourceVersion
	res, err = ctrl.assess(context.Background(), resourceBindings(), client.ObjectKeyFromObject(b))
	require.NoError(t, err)
	assert.Equal(t, time.Minute, res.RequeueAfter)
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(b), &got))
	assert.Equal(t, rv, got.ResourceVersion, "written although nothing changed")
}

package controllers

import (
	"context"
	"encoding/json"
	"k8s.io/apimachinery/pkg/runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
)

// noScheduleWorld is shop/web on member1, allowed on member1 and member2
// only, with member2 under a NoSchedule taint: its eviction has nowhere to
// go. It returns member2 as written.
func noScheduleWorld(t *testing.T) (client.WithWatch, *clusterv1alpha1.Cluster) {
	t.Helper()
	return taintedWorld(t, corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule})
}

// taintedWorld is shop/web on member1, allowed on member1 and member2
// only, with member2 under taint. It returns member2 as written.
func taintedWorld(t *testing.T, taint corev1.Taint) (client.WithWatch, *clusterv1alpha1.Cluster) {
	t.Helper()
	b := newBinding(nil)
	b.Spec.Placement = &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}}}
	c := world(t, b)
	var m2 clusterv1alpha1.Cluster
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "member2"}, &m2))
	m2.Spec.Taints = []corev1.Taint{taint}
	require.NoError(t, c.Update(context.Background(), &m2))
	return c, &m2
}

// An eviction refused because its only other cluster has a NoSchedule
// taint is decided again as soon as that cluster loses it, though the
// cluster was never faulty: not at the next room recheck (at most one per
// ClusterStatusUpdateFrequency) nor RefusalRecheck later. Found by the
// model test, seed 21.
func TestLosingANoScheduleTaintDecidesTheRefusalsAgain(t *testing.T) {
	c, m2 := noScheduleWorld(t)
	ctx := context.Background()

	ctrl := newController(t, EvictionOptions{}, c, &recorded{})
	withQueues(t, ctrl)
	rb := ctrl.kinds[0]
	_, err := ctrl.clusterChanged(ctx, "member2") // tainted: its room recheck is used up
	require.NoError(t, err)
	err = decide(t, rb, webItem)
	require.True(t, isRefused(err), "%v: member2 takes nothing new", err)
	require.Equal(t, 1, rb.q.Parked(engine.RefusedGate))

	m2.Spec.Taints = nil
	require.NoError(t, c.Update(ctx, m2))
	syncFleet(t, ctrl, c)
	_, err = ctrl.clusterChanged(ctx, "member2")
	require.NoError(t, err)
	assert.Equal(t, []string{"shop/web"}, keysOf(rb.q.Pending()), "the refusal waits for the next room recheck")
	requireEvicted(t, decide(t, rb, webItem))
}

// The change that wakes the refusals reaches the Fleet before they are
// decided again, though the Fleet's own informer handler (a goroutine of
// its own) has not applied it yet: decided on the Fleet's older copy, the
// refusal would be parked again and wait for a wake-up that had already
// come. Found by the model test (TestModelFailback, seed 317223411076: a
// summary that brought room, a refusal decided again at the same instant
// on the summary before it).
func TestAWakingChangeReachesTheFleetFirst(t *testing.T) {
	c, m2 := noScheduleWorld(t)
	ctx := context.Background()
	ctrl := newController(t, EvictionOptions{}, c, &recorded{})
	withQueues(t, ctrl)
	rb := ctrl.kinds[0]
	_, err := ctrl.clusterChanged(ctx, "member2")
	require.NoError(t, err)
	require.True(t, isRefused(decide(t, rb, webItem)), "member2 takes nothing new")

	m2.Spec.Taints = nil
	require.NoError(t, c.Update(ctx, m2))
	// No syncFleet here: the Fleet's handler lags.
	_, err = ctrl.clusterChanged(ctx, "member2")
	require.NoError(t, err)
	have, ok := ctrl.fleet.Cluster("member2")
	require.True(t, ok)
	assert.Empty(t, have.Spec.Taints, "the Fleet holds the change that woke the refusal")
	requireEvicted(t, decide(t, rb, webItem))
}

// A change of room that the once-per-report throttle lets pass is not
// dropped: the refusals are decided again at the end of that
// ClusterStatusUpdateFrequency, not RefusalRecheck (a minute) later. Before,
// a summary that brought the room a refusal lacked, arriving within the
// period of an earlier recheck, went unseen until RefusalRecheck. Found by
// the model test, seed 407114763643 (after a leader change, whose first
// reconciles use the period up).
func TestARoomChangeLetPassIsDecidedAtThePeriodsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := noScheduleWorld(t)
		ctrl := newController(t, EvictionOptions{RefusalRecheck: time.Hour}, c, &recorded{})
		withQueues(t, ctrl)
		rb := ctrl.kinds[0]
		clk := ctrl.opts.Clock.(*clocktesting.FakeClock)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = ctrl.recheckRefusals(ctx) })
		defer func() { cancel(); wg.Wait() }()

		_, err := ctrl.clusterChanged(ctx, "member2") // uses the period up
		require.NoError(t, err)
		requireRefused(t, decide(t, rb, webItem), time.Hour) // member2 takes nothing new
		_, err = ctrl.clusterChanged(ctx, "member2")
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, 1, rb.q.Parked(engine.RefusedGate), "a second report within the period decides the refusals again")

		clk.Step(ctrl.opts.ClusterStatusUpdateFrequency)
		synctest.Wait()
		assert.Zero(t, rb.q.Parked(engine.RefusedGate), "the change let pass is never decided")
		assert.Equal(t, []evictionqueue.Item{webItem}, rb.q.Pending())

		// No change let pass: the period's end queues nothing.
		rb.q.CancelCluster(webItem.Cluster)
		clk.Step(ctrl.opts.ClusterStatusUpdateFrequency)
		synctest.Wait()
		assert.Zero(t, rb.q.Len(), "the period's end rechecks with no change let pass")
	})
}

// untaintOnEvent is an event recorder that, at its first Event, takes the
// NoSchedule taint off cluster and tells the controller, as the Cluster
// reconcile would: the change lands after the check refused, before the
// refusal is recorded.
type untaintOnEvent struct {
	t     *testing.T
	ctrl  *EvictionController
	c     client.Client
	name  string
	fired bool
}

func (u *untaintOnEvent) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {
	if u.fired {
		return
	}
	u.fired = true
	ctx := context.Background()
	var cl clusterv1alpha1.Cluster
	require.NoError(u.t, u.c.Get(ctx, client.ObjectKey{Name: u.name}, &cl))
	cl.Spec.Taints = nil
	require.NoError(u.t, u.c.Update(ctx, &cl))
	syncFleet(u.t, u.ctrl, u.c)
	_, err := u.ctrl.clusterChanged(ctx, u.name)
	require.NoError(u.t, err)
}

// Issue 37, defect 3: a refusal whose last NoSchedule taint goes away
// between the check and the refusal being recorded is decided again at
// once, as one recorded before the change is, not RefusalRecheck (a
// minute) later.
func TestAChangeWhileARefusalIsRecordedDecidesItAgain(t *testing.T) {
	c, _ := noScheduleWorld(t)
	ctx := context.Background()

	events := &untaintOnEvent{t: t, c: c, name: "member2"}
	ctrl := newController(t, EvictionOptions{}, c, events)
	events.ctrl = ctrl
	withQueues(t, ctrl)
	rb := ctrl.kinds[0]
	_, err := ctrl.clusterChanged(ctx, "member2")
	require.NoError(t, err)
	err = decide(t, rb, webItem)
	require.True(t, isRefused(err), "%v: member2 took nothing new when checked", err)
	require.True(t, events.fired)
	assert.Equal(t, []string{"shop/web"}, keysOf(rb.q.Pending()), "the refusal waits for RefusalRecheck")
	requireEvicted(t, decide(t, rb, webItem))
}

// A faulty cluster's room steers the scheduler too: an Aggregated eviction
// refused because the scheduler would put its replicas on a faulty cluster
// with the most room is decided again when that cluster reports less room,
// and goes to the healthy one. Before, a faulty cluster's report rechecked
// nothing, and the refusal waited RefusalRecheck. Found by the model test,
// seed 570895671704.
func TestAFaultyClustersRoomDecidesTheRefusalsAgain(t *testing.T) {
	// It tolerates the not-ready taint for 20s: the scheduler may still
	// pick a cluster under it, as it ignores tolerationSeconds.
	b := newBinding(nil)
	placement := `{"clusterTolerations":[{"key":"cluster.karmada.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":20}],` +
		`"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Aggregated"}}`
	b.Spec.Placement = &policyv1alpha1.Placement{}
	require.NoError(t, json.Unmarshal([]byte(placement), b.Spec.Placement))
	b.Annotations[karmada.AppliedPlacementAnnotation] = placement
	down := withRoom(&clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member3"}, Spec: clusterv1alpha1.ClusterSpec{
		Taints: []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}}}}, 50)
	c := worldBuilder(t, b, down).Build()
	ctx := context.Background()
	var m2 clusterv1alpha1.Cluster
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "member2"}, &m2))
	require.NoError(t, c.Update(ctx, withRoom(&m2, 10)))

	ctrl := newController(t, EvictionOptions{RefusalRecheck: time.Hour}, c, &recorded{})
	withQueues(t, ctrl)
	rb := ctrl.kinds[0]
	err := decide(t, rb, webItem)
	require.True(t, isRefused(err), "%v: the scheduler would pick member3, faulty, with the most room", err)

	var m3 clusterv1alpha1.Cluster
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "member3"}, &m3))
	require.NoError(t, c.Update(ctx, withRoom(&m3, 1)))
	syncFleet(t, ctrl, c)
	_, err = ctrl.clusterChanged(ctx, "member3")
	require.NoError(t, err)
	assert.Equal(t, []string{"shop/web"}, keysOf(rb.q.Pending()), "the refusal waits for RefusalRecheck")
	requireEvicted(t, decide(t, rb, webItem))
}

package engine_test

import (
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover/failback"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/karmada/scheduling"
)

var backNow = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)

// readySince makes c Ready since at.
func readySince(at time.Time) func(*clusterv1alpha1.Cluster) {
	return func(c *clusterv1alpha1.Cluster) {
		c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
	}
}

// room is a Ready cluster with cpus CPUs free (for replicas of one CPU),
// changed by opts.
func room(name string, cpus int64, opts ...func(*clusterv1alpha1.Cluster)) *clusterv1alpha1.Cluster {
	c := survivor(name, cpus, 0)
	for _, o := range opts {
		o(c)
	}
	return c
}

// backWorld is a Fleet and a Scheduler on clusters, and the options to plan
// failbacks on them with a ten-minute window.
func backWorld(t *testing.T, clusters ...*clusterv1alpha1.Cluster) engine.FailbackOptions {
	t.Helper()
	f := &engine.Fleet{}
	for _, c := range clusters {
		_, err := f.Set(c)
		require.NoError(t, err)
	}
	return engine.FailbackOptions{Fleet: f, Scheduler: scheduling.NewScheduler(clusters), Window: 10 * time.Minute}
}

// failedOver is a three-replica Deployment allowed on a1 and b1, Divided
// as strategy, which failed over from a1 at 12:00 and runs on b1, with
// the record the eviction wrote.
func failedOver(t *testing.T, strategy *policyv1alpha1.ReplicaSchedulingStrategy, on ...workv1alpha2.TargetCluster) *workv1alpha2.ResourceBinding {
	t.Helper()
	rb := webBinding("web")
	rb.Spec.Replicas = 3
	rb.Spec.Placement = &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a1", "b1"}}, ReplicaScheduling: strategy}
	rb.Spec.Clusters = on
	rec := failback.Record{}.Add(failback.Origin{Cluster: "a1", At: metav1.NewTime(backNow.Add(-time.Hour)), Placement: karmada.PlacementFingerprint(rb.Spec.Placement)})
	rb.Annotations[karmada.FailedOverFromAnnotation] = rec.String()
	return rb
}

// A binding goes back once its origin has been healthy for the window and
// a fresh placement puts it there: the copies on the cluster it leaves wait
// in a graceful eviction task, the scheduler is asked to place it afresh,
// and the origin leaves the record.
func TestPlanFailbackGoesBackOnceTheWindowHasPassed(t *testing.T) {
	opts := backWorld(t, room("a1", 100, readySince(backNow.Add(-15*time.Minute))), room("b1", 10))
	rb := failedOver(t, aggregated, workv1alpha2.TargetCluster{Name: "b1", Replicas: 3})

	step, err := engine.PlanFailback(opts, backNow, rb)
	require.NoError(t, err)
	require.Equal(t, engine.FailbackGo, step.Action, step.Why)
	assert.Equal(t, "a1", step.Origin.Cluster)
	assert.Equal(t, []workv1alpha2.TargetCluster{{Name: "a1", Replicas: 3}}, step.Placement)
	assert.Equal(t, []string{"b1"}, step.Leaving)
	assert.Equal(t, "cluster a1 has been healthy for the 10m0s window, and a fresh placement puts 3 replicas there (a1:3)", step.Why)
	assert.True(t, step.RecordChanged)

	assert.Empty(t, rb.Spec.Clusters)
	require.Len(t, rb.Spec.GracefulEvictionTasks, 1)
	task := rb.Spec.GracefulEvictionTasks[0]
	assert.Equal(t, "b1", task.FromCluster)
	assert.Equal(t, engine.FailbackProducer, task.Producer)
	assert.Equal(t, engine.FailbackReason, task.Reason)
	assert.Equal(t, policyv1alpha1.PurgeModeGracefully, task.PurgeMode)
	require.NotNil(t, task.Replicas)
	assert.Equal(t, int32(3), *task.Replicas, "b1's three replicas run until a1's are healthy")
	require.NotNil(t, rb.Spec.RescheduleTriggeredAt)
	assert.True(t, rb.Spec.RescheduleTriggeredAt.Time.Equal(backNow))
	assert.NotContains(t, rb.Annotations, karmada.FailedOverFromAnnotation)
}

func TestPlanFailbackWaits(t *testing.T) {
	// Ready for 4 minutes of 10.
	opts := backWorld(t, room("a1", 100, readySince(backNow.Add(-4*time.Minute))), room("b1", 10))
	rb := failedOver(t, aggregated, workv1alpha2.TargetCluster{Name: "b1", Replicas: 3})
	step, err := engine.PlanFailback(opts, backNow, rb)
	require.NoError(t, err)
	assert.Equal(t, engine.FailbackWait, step.Action)
	assert.Equal(t, 6*time.Minute, step.After)
	assert.Equal(t, "a1", step.Origin.Cluster)
	assert.Contains(t, step.Why, "6m0s of the 10m0s window left")
	assert.Equal(t, []workv1alpha2.TargetCluster{{Name: "b1", Replicas: 3}}, rb.Spec.Clusters, "nothing changes")

	// Still failed.
	a1 := room("a1", 100)
	fail(a1)
	opts = backWorld(t, a1, room("b1", 10))
	step, err = engine.PlanFailback(opts, backNow, rb)
	require.NoError(t, err)
	assert.Equal(t, engine.FailbackWait, step.Action)
	assert.Zero(t, step.After, "only a change of a1 can help")
	assert.Contains(t, step.Why, "cluster a1 has the taint cluster.karmada.io/not-ready")

	// Copies still moving.
	opts = backWorld(t, room("a1", 100, readySince(backNow.Add(-time.Hour))), room("b1", 10))
	moving := rb.DeepCopy()
	moving.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "a1", Producer: karmada.TaintManagerProducer}}
	step, err = engine.PlanFailback(opts, backNow, moving)
	require.NoError(t, err)
	assert.Equal(t, engine.FailbackWait, step.Action)
	assert.Equal(t, "its copies are still moving: graceful eviction tasks from a1 are open", step.Why)
}

// Healthy long enough is not enough: the scheduler must put replicas back
// on the origin, and must not shrink a cluster the binding keeps.
func TestPlanFailbackGoesOnlyWhereTheSchedulerWould(t *testing.T) {
	// b1 has more room than a1: Aggregated stays on b1.
	opts := backWorld(t, room("a1", 5, readySince(backNow.Add(-time.Hour))), room("b1", 100))
	rb := failedOver(t, aggregated, workv1alpha2.TargetCluster{Name: "b1", Replicas: 3})
	step, err := engine.PlanFailback(opts, backNow, rb)
	require.NoError(t, err)
	assert.Equal(t, engine.FailbackNotPlaced, step.Action)
	assert.Equal(t, "a fresh placement would not put it back on a1: Karmada's scheduler would place it as b1:3", step.Why)
	assert.Empty(t, rb.Spec.GracefulEvictionTasks)
	assert.Nil(t, rb.Spec.RescheduleTriggeredAt)

	// Static weights 1:1 on four replicas: b1 would shrink from 4 to 2.
	opts = backWorld(t, room("a1", 100, readySince(backNow.Add(-time.Hour))), room("b1", 100))
	static := &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
		WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
			{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a1"}}, Weight: 1},
			{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"b1"}}, Weight: 1}}}}
	rb = failedOver(t, static, workv1alpha2.TargetCluster{Name: "b1", Replicas: 4})
	rb.Spec.Replicas = 4
	step, err = engine.PlanFailback(opts, backNow, rb)
	require.NoError(t, err)
	assert.Equal(t, engine.FailbackNotPlaced, step.Action)
	assert.Equal(t, "a fresh placement (a1:2, b1:2) would shrink b1 from 4 to 2 replicas while the copies on a1 start: a failback moves whole copies only", step.Why)
}

// A Duplicated binding goes back to its origin beside the copies it keeps:
// nothing leaves.
func TestPlanFailbackDuplicated(t *testing.T) {
	opts := backWorld(t, room("a1", 100, readySince(backNow.Add(-time.Hour))), room("b1", 100))
	dup := &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}
	rb := failedOver(t, dup, workv1alpha2.TargetCluster{Name: "b1", Replicas: 3})
	step, err := engine.PlanFailback(opts, backNow, rb)
	require.NoError(t, err)
	require.Equal(t, engine.FailbackGo, step.Action, step.Why)
	assert.Empty(t, step.Leaving)
	assert.Equal(t, []workv1alpha2.TargetCluster{{Name: "a1", Replicas: 3}, {Name: "b1", Replicas: 3}}, step.Placement)
	assert.Equal(t, []workv1alpha2.TargetCluster{{Name: "b1", Replicas: 3}}, rb.Spec.Clusters, "b1 keeps its copy")
	assert.Empty(t, rb.Spec.GracefulEvictionTasks)
	assert.NotNil(t, rb.Spec.RescheduleTriggeredAt)
}

// The record's origins that are moot go; failback is off without a window,
// or where a binding's annotation turns it off; a bad annotation is an
// error naming it.
func TestPlanFailbackRecordAndWindow(t *testing.T) {
	opts := backWorld(t, room("a1", 100, readySince(backNow.Add(-time.Hour))), room("b1", 10))

	back := failedOver(t, aggregated, workv1alpha2.TargetCluster{Name: "a1", Replicas: 3})
	step, err := engine.PlanFailback(opts, backNow, back)
	require.NoError(t, err)
	assert.Equal(t, engine.FailbackNone, step.Action)
	assert.True(t, step.RecordChanged, "it runs on a1 again: the origin is moot")
	assert.NotContains(t, back.Annotations, karmada.FailedOverFromAnnotation)

	moved := failedOver(t, aggregated, workv1alpha2.TargetCluster{Name: "b1", Replicas: 3})
	moved.Spec.Placement.ClusterAffinity.ClusterNames = []string{"a1", "b1", "c1"}
	step, err = engine.PlanFailback(opts, backNow, moved)
	require.NoError(t, err)
	assert.Equal(t, engine.FailbackNone, step.Action, "its placement changed since")
	assert.True(t, step.RecordChanged)

	off := opts
	off.Window = 0
	rb := failedOver(t, aggregated, workv1alpha2.TargetCluster{Name: "b1", Replicas: 3})
	step, err = engine.PlanFailback(off, backNow, rb)
	require.NoError(t, err)
	assert.Equal(t, engine.FailbackNone, step.Action)
	assert.Equal(t, "failback is off (stabilization window 0s)", step.Why)
	assert.False(t, step.RecordChanged)

	rb.Annotations[karmada.FailbackWindowAnnotation] = "5m"
	step, err = engine.PlanFailback(off, backNow, rb)
	require.NoError(t, err)
	assert.Equal(t, engine.FailbackGo, step.Action, "the binding's own window turns it on")

	rb = failedOver(t, aggregated, workv1alpha2.TargetCluster{Name: "b1", Replicas: 3})
	rb.Annotations[karmada.FailbackWindowAnnotation] = "soon"
	step, err = engine.PlanFailback(opts, backNow, rb)
	require.NoError(t, err)
	assert.EqualError(t, step.WindowErr, `karmada: annotation failover.karmada.io/failback-stabilization-window: "soon" is not a non-negative duration`)
	assert.Equal(t, engine.FailbackGo, step.Action, "the options' window applies")
	assert.Equal(t, "soon", rb.Annotations[karmada.FailbackWindowAnnotation], "left as it is")

	rb.Annotations[karmada.FailedOverFromAnnotation] = "[{"
	_, err = engine.PlanFailback(opts, backNow, rb)
	assert.ErrorContains(t, err, "karmada: annotation failover.karmada.io/failed-over-from: failback: record")

	_, err = engine.PlanFailback(engine.FailbackOptions{}, backNow, rb)
	assert.EqualError(t, err, "karmada: PlanFailback: FailbackOptions.Fleet and .Scheduler are required")
}

// With a Ledger, a failback holds the room its replicas take where they go
// back, as an eviction does, and a second one that would find too little
// room left there waits.
func TestPlanFailbackHoldsRoom(t *testing.T) {
	ready := readySince(backNow.Add(-time.Hour))
	opts := backWorld(t, room("a1", 5, ready), room("b1", 1)) // b1 counts its own 3 back: 4 against 5
	ledger, err := engine.NewLedger()
	require.NoError(t, err)
	opts.Ledger = ledger

	web := failedOver(t, aggregated, workv1alpha2.TargetCluster{Name: "b1", Replicas: 3})
	step, err := engine.PlanFailback(opts, backNow, web)
	require.NoError(t, err)
	require.Equal(t, engine.FailbackGo, step.Action, step.Why)
	assert.Equal(t, "default/web@back:a1", step.Hold.String())
	assert.Equal(t, map[string]int64{"a1": 3}, ledger.Held(backNow))

	api := failedOver(t, aggregated, workv1alpha2.TargetCluster{Name: "b1", Replicas: 3})
	api.Name = "api"
	step, err = engine.PlanFailback(opts, backNow, api)
	require.NoError(t, err)
	assert.Equal(t, engine.FailbackNotPlaced, step.Action)
	assert.Equal(t, "waiting for room: a1 has room for 2 of 3 after the 3 replicas of an eviction in flight", step.Why)
	assert.True(t, step.Hold.IsZero())
	assert.Empty(t, api.Spec.GracefulEvictionTasks, "nothing changes")
}

// A binding that fell back to a later clusterAffinities term goes back to
// the first: Karmada's scheduler places afresh from the term it observes,
// so the status's term is cleared (FirstTerm), the placement predicted is
// the first term's (a1, roomier, not the origin a2), and the record has
// served. Without clearing it, the fresh placement stays in the fallback.
func TestPlanFailbackReturnsToTheFirstTerm(t *testing.T) {
	ready := readySince(backNow.Add(-15 * time.Minute))
	opts := backWorld(t, room("a1", 100, ready), room("a2", 10, ready), room("b1", 10))
	rb := failedOver(t, aggregated, workv1alpha2.TargetCluster{Name: "b1", Replicas: 3})
	rb.Spec.Placement = &policyv1alpha1.Placement{
		ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
			{AffinityName: "home", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a1", "a2"}}},
			{AffinityName: "fallback", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"b1"}}},
		},
		ReplicaScheduling: aggregated,
	}
	rec := failback.Record{}.Add(failback.Origin{Cluster: "a2", At: metav1.NewTime(backNow.Add(-time.Hour)), Placement: karmada.PlacementFingerprint(rb.Spec.Placement)})
	rb.Annotations[karmada.FailedOverFromAnnotation] = rec.String()
	rb.Status.SchedulerObservedAffinityName = "fallback"

	step, err := engine.PlanFailback(opts, backNow, rb)
	require.NoError(t, err)
	require.Equal(t, engine.FailbackGo, step.Action, step.Why)
	assert.True(t, step.FirstTerm)
	assert.Equal(t, []workv1alpha2.TargetCluster{{Name: "a1", Replicas: 3}}, step.Placement)
	assert.Equal(t, []string{"b1"}, step.Leaving)
	assert.Empty(t, rb.Status.SchedulerObservedAffinityName, "cleared, so that the scheduler starts from the first term")
	assert.NotContains(t, rb.Annotations, karmada.FailedOverFromAnnotation)
	assert.Equal(t, `cluster a2 has been healthy for the 10m0s window, and a fresh placement from the first clusterAffinities term "home" puts it back there (a1:3)`, step.Why)

	// The scheduler, asked afresh with the status the planner leaves,
	// places it as predicted.
	got, term, err := opts.Scheduler.Schedule(&rb.Spec, &rb.Status)
	require.NoError(t, err)
	assert.Equal(t, "home", term)
	assert.Equal(t, step.Placement, got)
}

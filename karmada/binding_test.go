package karmada_test

import (
	"fmt"
	"testing"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
)

// The binding of the "configurable cluster failover" proposal after member1
// was evicted: the replacement runs on member2, member1's copy waits in a
// graceful eviction task. Status as Karmada aggregates it.
const evictedBinding = `
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata:
  name: nginx-deployment
  namespace: default
  generation: 4
spec:
  resource:
    apiVersion: apps/v1
    kind: Deployment
    name: nginx
    namespace: default
  replicas: 2
  clusters:
  - name: member2
    replicas: 2
  failover:
    cluster:
      purgeMode: Gracefully
  gracefulEvictionTasks:
  - creationTimestamp: "2023-06-05T11:33:31Z"
    fromCluster: member1
    producer: TaintManager
    reason: TaintUntolerated
    message: cluster member1 is not ready
    purgeMode: Gracefully
    replicas: 2
    gracePeriodSeconds: 600
    preservedLabelState:
      failover.karmada.io/replicas: "2"
    clustersBeforeFailover: [member1]
status:
  schedulerObservedGeneration: 4
  aggregatedStatus:
  - clusterName: member2
    applied: true
    health: Healthy
  - clusterName: member1
    applied: true
`

func TestFromResourceBinding(t *testing.T) {
	rb := decode[workv1alpha2.ResourceBinding](t, evictedBinding)
	got, err := karmada.FromResourceBinding(rb)
	require.NoError(t, err)

	created := metav1.NewTime(time.Date(2023, 6, 5, 11, 33, 31, 0, time.UTC).Local()) // as metav1.Time decodes
	want := gracefulevict.Binding{
		Generation: 4, ObservedGeneration: 4,
		Clusters: []failover.TargetCluster{{Name: "member2", Replicas: 2}},
		Health:   map[string]gracefulevict.ResourceHealth{"member2": gracefulevict.Healthy, "member1": gracefulevict.Unknown},
		Tasks: []gracefulevict.Task{{
			FromCluster: "member1", Producer: "TaintManager", Reason: "TaintUntolerated", Message: "cluster member1 is not ready",
			PurgeMode: failover.PurgeModeGracefully, Replicas: ptr.To(int32(2)), GracePeriodSeconds: ptr.To(int32(600)),
			PreservedLabelState: map[string]string{"failover.karmada.io/replicas": "2"}, ClustersBeforeFailover: []string{"member1"},
			CreationTimestamp: &created,
		}},
	}
	assert.Equal(t, want, got)

	// What the graceful eviction controller decides from it: member2 is
	// healthy and scheduled, so member1's copy can go.
	assessor, err := gracefulevict.NewAssessor()
	require.NoError(t, err)
	a := assessor.Assess(got, created.Add(time.Minute))
	assert.Len(t, a.Done, 1)

	crb := &workv1alpha2.ClusterResourceBinding{ObjectMeta: rb.ObjectMeta, Spec: rb.Spec, Status: rb.Status}
	crb.Namespace = ""
	gotC, err := karmada.FromClusterResourceBinding(crb)
	require.NoError(t, err)
	assert.Equal(t, want, gotC)
}

func TestFromResourceBindingRefusesInconsistentStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*workv1alpha2.ResourceBindingStatus)
		want   string
	}{
		{"a health Karmada does not define", func(s *workv1alpha2.ResourceBindingStatus) { s.AggregatedStatus[0].Health = "Degraded" },
			`status.aggregatedStatus[0].health: unknown value "Degraded" (cluster "member2"): want Healthy, Unhealthy or Unknown`},
		{"two items for one cluster", func(s *workv1alpha2.ResourceBindingStatus) { s.AggregatedStatus[1].ClusterName = "member2" },
			`status.aggregatedStatus[1].clusterName: duplicate value "member2" (first at [0])`},
		{"an item without a cluster", func(s *workv1alpha2.ResourceBindingStatus) { s.AggregatedStatus[1].ClusterName = "" },
			`status.aggregatedStatus[1].clusterName is empty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rb := decode[workv1alpha2.ResourceBinding](t, evictedBinding)
			tc.mutate(&rb.Status)
			b, err := karmada.FromResourceBinding(rb)
			assert.Zero(t, b)
			assert.EqualError(t, err, "karmada: resource binding default/nginx-deployment: "+tc.want)
			crb := &workv1alpha2.ClusterResourceBinding{ObjectMeta: rb.ObjectMeta, Spec: rb.Spec, Status: rb.Status}
			_, err = karmada.FromClusterResourceBinding(crb)
			assert.EqualError(t, err, "karmada: cluster resource binding nginx-deployment: "+tc.want)
		})
	}
}

// A task gracefulevict's own validation rejects is refused, named by its
// place in spec.gracefulEvictionTasks (issue #22's probe), with the zero
// Binding.
func TestFromResourceBindingRefusesInvalidTasks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*workv1alpha2.GracefulEvictionTask)
		want   string
	}{
		{"no cluster", func(t *workv1alpha2.GracefulEvictionTask) { t.FromCluster = "" }, "gracefulevict: task.fromCluster is empty"},
		{"an unknown purge mode", func(t *workv1alpha2.GracefulEvictionTask) { t.PurgeMode = "Eventually" },
			`gracefulevict: task "member1": purgeMode: unknown value "Eventually"`},
		{"a grace period below 1", func(t *workv1alpha2.GracefulEvictionTask) { t.GracePeriodSeconds = ptr.To[int32](0) },
			`gracefulevict: task "member1": gracePeriodSeconds: 0: must be at least 1`},
		{"a grace period with suppressDeletion", func(t *workv1alpha2.GracefulEvictionTask) {
			t.GracePeriodSeconds, t.SuppressDeletion = ptr.To[int32](60), ptr.To(true)
		}, `gracefulevict: task "member1": gracePeriodSeconds and suppressDeletion cannot both be set`},
		{"negative replicas", func(t *workv1alpha2.GracefulEvictionTask) { t.Replicas = ptr.To[int32](-1) },
			`gracefulevict: task "member1": replicas: -1: must not be negative`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rb := decode[workv1alpha2.ResourceBinding](t, evictedBinding)
			rb.Spec.GracefulEvictionTasks = append(rb.Spec.GracefulEvictionTasks, workv1alpha2.GracefulEvictionTask{FromCluster: "member1", Reason: "TaintUntolerated"})
			i := len(rb.Spec.GracefulEvictionTasks) - 1
			tc.mutate(&rb.Spec.GracefulEvictionTasks[i])
			b, err := karmada.FromResourceBinding(rb)
			assert.Zero(t, b)
			assert.ErrorContains(t, err, fmt.Sprintf("karmada: resource binding default/nginx-deployment: spec.gracefulEvictionTasks[%d]: %s", i, tc.want))
			crb := &workv1alpha2.ClusterResourceBinding{ObjectMeta: rb.ObjectMeta, Spec: rb.Spec, Status: rb.Status}
			_, err = karmada.FromClusterResourceBinding(crb)
			assert.ErrorContains(t, err, fmt.Sprintf("karmada: cluster resource binding nginx-deployment: spec.gracefulEvictionTasks[%d]: %s", i, tc.want))
		})
	}
}

func TestApplyBindingRoundTrips(t *testing.T) {
	rb := decode[workv1alpha2.ResourceBinding](t, evictedBinding)
	b, err := karmada.FromResourceBinding(rb)
	require.NoError(t, err)
	out := rb.DeepCopy()
	out.Spec.Clusters, out.Spec.GracefulEvictionTasks = nil, nil
	karmada.ApplyBinding(&out.Spec, b)
	assert.Equal(t, rb, out, "every field of the schedule result and the tasks survives the round trip")

	b.Tasks[0].Replicas = ptr.To(int32(7))
	b.Tasks[0].PreservedLabelState["x"] = "y"
	assert.Equal(t, int32(2), *out.Spec.GracefulEvictionTasks[0].Replicas, "the binding keeps its own copy")
	assert.NotContains(t, out.Spec.GracefulEvictionTasks[0].PreservedLabelState, "x")
}

// An eviction written back: member2 fails in turn. The cluster moves from
// spec.clusters into a task, the older task stays, everything else is
// untouched.
func TestApplyBindingAfterEvict(t *testing.T) {
	rb := decode[workv1alpha2.ResourceBinding](t, evictedBinding)
	b, err := karmada.FromResourceBinding(rb)
	require.NoError(t, err)
	b = gracefulevict.Evict(b, "member2", gracefulevict.Task{Reason: "TaintUntolerated", Producer: "EvictionQueue", PurgeMode: failover.PurgeModeDirectly})

	out := rb.DeepCopy()
	karmada.ApplyBinding(&out.Spec, b)
	assert.Nil(t, out.Spec.Clusters, "an empty schedule result clears spec.clusters")
	require.Len(t, out.Spec.GracefulEvictionTasks, 2)
	assert.Equal(t, rb.Spec.GracefulEvictionTasks[0], out.Spec.GracefulEvictionTasks[0])
	assert.Equal(t, workv1alpha2.GracefulEvictionTask{
		FromCluster: "member2", Reason: "TaintUntolerated", Producer: "EvictionQueue", PurgeMode: "Directly", Replicas: ptr.To(int32(2)),
	}, out.Spec.GracefulEvictionTasks[1])

	rest := out.DeepCopy()
	rest.Spec.Clusters, rest.Spec.GracefulEvictionTasks = rb.Spec.Clusters, rb.Spec.GracefulEvictionTasks
	assert.Equal(t, rb, rest, "nothing but spec.clusters and spec.gracefulEvictionTasks changed")

	back, err := karmada.FromResourceBinding(out)
	require.NoError(t, err)
	assert.Equal(t, b.Tasks, back.Tasks)
}

package gracefulevict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover"
)

func TestEvict(t *testing.T) {
	base := func() Binding {
		return Binding{
			Generation: 4, ObservedGeneration: 4,
			Clusters: []failover.TargetCluster{{Name: "member1", Replicas: 1}, {Name: "member2", Replicas: 2}, {Name: "member3"}},
			Health:   map[string]ResourceHealth{"member1": Healthy, "member2": Healthy, "member3": Healthy},
			Tasks:    []Task{{FromCluster: "member9", CreationTimestamp: at(0)}},
		}
	}
	cases := []struct {
		name         string
		cluster      string
		task         Task
		wantClusters []string
		wantTasks    []Task
		wantGen      int64
	}{
		{"moves the cluster into a task carrying its replicas", "member2",
			Task{Reason: "TaintUntolerated", Producer: "TaintManager", PurgeMode: failover.PurgeModeGracefully},
			[]string{"member1", "member3"},
			[]Task{{FromCluster: "member9", CreationTimestamp: at(0)},
				{FromCluster: "member2", Replicas: ptr.To[int32](2), Reason: "TaintUntolerated", Producer: "TaintManager", PurgeMode: failover.PurgeModeGracefully}},
			5},
		{"replicas given by the caller win", "member2",
			Task{Replicas: ptr.To[int32](1)},
			[]string{"member1", "member3"},
			[]Task{{FromCluster: "member9", CreationTimestamp: at(0)}, {FromCluster: "member2", Replicas: ptr.To[int32](1)}},
			5},
		{"a cluster without replicas gives a task without replicas", "member3",
			Task{},
			[]string{"member1", "member2"},
			[]Task{{FromCluster: "member9", CreationTimestamp: at(0)}, {FromCluster: "member3"}},
			5},
		{"FromCluster is the evicted cluster whatever the task said", "member1",
			Task{FromCluster: "elsewhere"},
			[]string{"member2", "member3"},
			[]Task{{FromCluster: "member9", CreationTimestamp: at(0)}, {FromCluster: "member1", Replicas: ptr.To[int32](1)}},
			5},
		{"unknown cluster is a no-op", "member7",
			Task{Reason: "TaintUntolerated"},
			[]string{"member1", "member2", "member3"},
			[]Task{{FromCluster: "member9", CreationTimestamp: at(0)}},
			4},
		{"a cluster already in eviction is no cluster of the result: no-op", "member9",
			Task{},
			[]string{"member1", "member2", "member3"},
			[]Task{{FromCluster: "member9", CreationTimestamp: at(0)}},
			4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			before := cloneBinding(in)
			got := Evict(in, tc.cluster, tc.task)
			var names []string
			for _, c := range got.Clusters {
				names = append(names, c.Name)
			}
			assert.Equal(t, tc.wantClusters, names)
			assert.Equal(t, tc.wantTasks, got.Tasks)
			assert.Equal(t, tc.wantGen, got.Generation)
			assert.Equal(t, int64(4), got.ObservedGeneration)
			assert.Equal(t, before, in, "the input binding is untouched")
		})
	}
}

// A cluster that came back into the result while its old task was still
// listed, and is evicted again, gets one fresh task in the old one's place.
func TestEvictReplacesStaleTaskForTheSameCluster(t *testing.T) {
	in := Binding{
		Clusters: []failover.TargetCluster{{Name: "member1", Replicas: 3}},
		Tasks: []Task{
			{FromCluster: "member1", CreationTimestamp: at(0), Reason: "Old"},
			{FromCluster: "member2", CreationTimestamp: at(0)},
			{FromCluster: "member1", CreationTimestamp: at(0), Reason: "OlderDuplicate"},
		},
	}
	got := Evict(in, "member1", Task{Reason: "TaintUntolerated"})
	require.Len(t, got.Tasks, 2)
	assert.Equal(t, Task{FromCluster: "member1", Replicas: ptr.To[int32](3), Reason: "TaintUntolerated"}, got.Tasks[0])
	assert.Equal(t, "member2", got.Tasks[1].FromCluster)
	assert.Empty(t, got.Clusters)
	assert.Len(t, in.Tasks, 3)
}

// Writing to the result must not reach the input: Evict's copy is its own.
func TestEvictResultSharesNothingWritable(t *testing.T) {
	in := Binding{
		Clusters: []failover.TargetCluster{{Name: "member1"}, {Name: "member2"}},
		Health:   map[string]ResourceHealth{"member1": Healthy},
		Tasks:    make([]Task, 0, 8), // spare capacity an append could share
	}
	got := Evict(in, "member1", Task{})
	got.Clusters[0].Name = "changed"
	got.Health["member1"] = Unhealthy
	got.Tasks[0].Reason = "changed"
	assert.Equal(t, "member1", in.Clusters[0].Name)
	assert.Equal(t, Healthy, in.Health["member1"])
	assert.Empty(t, in.Tasks)
	assert.Equal(t, "changed", got.Tasks[0].Reason)
	in.Tasks = append(in.Tasks, Task{FromCluster: "x"})
	assert.Equal(t, "member1", got.Tasks[0].FromCluster, "appending to the input does not overwrite the result")
}

// After an eviction the remaining copies are healthy, but the old copy must
// stay until the scheduler has answered: Evict bumps the generation.
func TestEvictThenAssessWaitsForTheScheduler(t *testing.T) {
	b := healthyBinding()
	b.Clusters = append(b.Clusters, failover.TargetCluster{Name: "member1", Replicas: 1})
	b.Health["member1"] = Unhealthy
	b = Evict(b, "member1", Task{})
	a := mustAssessor()
	first := a.Assess(b, t0) // stamps
	b.Tasks = first.Keep
	assert.Empty(t, a.Assess(b, t0).Done, "not scheduled yet")
	b.ObservedGeneration = b.Generation
	assert.Len(t, a.Assess(b, t0).Done, 1, "scheduled and healthy")
}

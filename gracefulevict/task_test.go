package gracefulevict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/failoverkit/failover"
)

// The spec of the ResourceBinding in "Configurable cluster failover" (003).
const bindingSpecYAML = `
clusters:
- name: member2
  replicas: 2
gracefulEvictionTasks:
- creationTimestamp: "2023-06-05T11:33:31Z"
  fromCluster: member1
  producer: TaintManager
  reason: TaintUntolerated
  replicas: 1
  gracePeriodSeconds: 100
`

func TestTaskDecodesKarmadaYAMLStrictly(t *testing.T) {
	var spec struct {
		Clusters []failover.TargetCluster `json:"clusters"`
		Tasks    []Task                   `json:"gracefulEvictionTasks"`
	}
	require.NoError(t, yaml.UnmarshalStrict([]byte(bindingSpecYAML), &spec))
	require.Len(t, spec.Tasks, 1)
	want := Task{
		FromCluster: "member1", Producer: "TaintManager", Reason: "TaintUntolerated",
		Replicas: ptr.To[int32](1), GracePeriodSeconds: ptr.To[int32](100), CreationTimestamp: at(0),
	}
	assert.Equal(t, want.CreationTimestamp.UTC(), spec.Tasks[0].CreationTimestamp.UTC())
	spec.Tasks[0].CreationTimestamp = want.CreationTimestamp
	assert.Equal(t, want, spec.Tasks[0])
	assert.NoError(t, spec.Tasks[0].Validate())

	// The task is done 100s after its creation while member2 is not healthy.
	b := Binding{Generation: 1, ObservedGeneration: 1, Clusters: spec.Clusters, Tasks: spec.Tasks}
	assert.Len(t, mustAssessor().Assess(b, t0.Add(99e9)).Keep, 1)
	assert.Len(t, mustAssessor().Assess(b, t0.Add(100e9)).Done, 1)
}

func TestTaskRoundTripsEveryField(t *testing.T) {
	in := Task{
		FromCluster: "member1", PurgeMode: failover.PurgeModeDirectly, Replicas: ptr.To[int32](2),
		Reason: "TaintUntolerated", Message: "cluster member1 is not ready", Producer: "TaintManager",
		SuppressDeletion: ptr.To(true), PreservedLabelState: map[string]string{"app.state/jobid": "42"},
		ClustersBeforeFailover: []string{"member1", "member2"}, CreationTimestamp: at(0),
	}
	data, err := yaml.Marshal(in)
	require.NoError(t, err)
	for _, key := range []string{"fromCluster:", "purgeMode:", "replicas:", "reason:", "message:", "producer:",
		"suppressDeletion:", "preservedLabelState:", "clustersBeforeFailover:", "creationTimestamp:"} {
		assert.Contains(t, string(data), key)
	}
	var out Task
	require.NoError(t, yaml.UnmarshalStrict(data, &out))
	assert.True(t, in.CreationTimestamp.Equal(out.CreationTimestamp))
	out.CreationTimestamp = in.CreationTimestamp
	assert.Equal(t, in, out)
}

func TestTaskRejectsUnknownFieldStrictly(t *testing.T) {
	var task Task
	err := yaml.UnmarshalStrict([]byte("fromCluster: member1\npureMode: Directly\n"), &task)
	assert.ErrorContains(t, err, "pureMode")
}

func TestTaskValidate(t *testing.T) {
	cases := []struct {
		name    string
		task    Task
		wantErr string
	}{
		{"valid", Task{FromCluster: "m1", PurgeMode: failover.PurgeModeGraciously, GracePeriodSeconds: ptr.To[int32](1)}, ""},
		{"empty fromCluster", Task{}, "gracefulevict: task.fromCluster is empty"},
		{"unknown purge mode", Task{FromCluster: "m1", PurgeMode: "Sometimes"}, `purgeMode: unknown value "Sometimes"`},
		{"grace period below 1", Task{FromCluster: "m1", GracePeriodSeconds: ptr.To[int32](0)}, "gracePeriodSeconds: 0: must be at least 1"},
		{"grace period with suppressDeletion", Task{FromCluster: "m1", GracePeriodSeconds: ptr.To[int32](5), SuppressDeletion: ptr.To(true)}, "cannot both be set"},
		{"negative replicas", Task{FromCluster: "m1", Replicas: ptr.To[int32](-1)}, "replicas: -1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.task.Validate()
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// Scheduled has a value receiver, so it can be called on Evict's result
// directly: Evict bumps Generation, so the binding is not scheduled again
// until the scheduler observes it.
func TestScheduledOnTheReturnedBinding(t *testing.T) {
	b := healthyBinding()
	if !b.Scheduled() {
		t.Fatal("healthyBinding is scheduled")
	}
	if Evict(b, "member2", Task{}).Scheduled() {
		t.Error("a binding Evict just changed is not scheduled yet")
	}
}

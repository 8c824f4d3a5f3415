package prescheduling

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/failoverkit/failover"
)

// The placements of 002_2a143d6793629e23.txt ("Failover Analysis"), as a
// PropagationPolicy spec.placement.
const duplicatedPlacementYAML = `
clusterAffinity:
  clusterNames:
  - member1
  - member2
  - member3
  - member5
spreadConstraints:
- maxGroups: 2
  minGroups: 2
replicaScheduling:
  replicaSchedulingType: Duplicated
`

const dividedPlacementYAML = `
clusterAffinity:
  clusterNames:
  - member1
  - member2
replicaScheduling:
  replicaDivisionPreference: Weighted
  replicaSchedulingType: Divided
  weightPreference:
    staticWeightList:
    - targetCluster:
        clusterNames:
        - member1
      weight: 1
    - targetCluster:
        clusterNames:
        - member2
      weight: 2
`

func decodePlacement(t *testing.T, doc string) Placement {
	t.Helper()
	var p Placement
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &p))
	require.NoError(t, p.Validate())
	return p
}

func fleetOf(names ...string) []failover.Cluster {
	out := make([]failover.Cluster, len(names))
	for i, n := range names {
		out[i] = failover.Cluster{Name: n}
	}
	return out
}

var notReady = corev1.Taint{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}

func TestDocumentDuplicatedExample(t *testing.T) {
	p := decodePlacement(t, duplicatedPlacementYAML)
	assert.Equal(t, ReplicaSchedulingTypeDuplicated, p.ReplicaScheduling.ReplicaSchedulingType)
	assert.Equal(t, []SpreadConstraint{{MaxGroups: 2, MinGroups: 2}}, p.SpreadConstraints)

	fleet := fleetOf("member1", "member2", "member3", "member4", "member5")
	fleet[1].Taints = []corev1.Taint{notReady}
	req := Request{
		Placement: p,
		Scheduled: []failover.TargetCluster{{Name: "member1"}, {Name: "member2"}},
		Evicting:  []string{"member2"},
	}
	got := mustChecker().Check(req, fleet)
	assert.True(t, got.Feasible, got.Reason)
	assert.Equal(t, []string{"member3", "member5"}, got.Candidates, "member4 does not match clusterAffinity")
	assert.Equal(t, "feasible: member3 can replace the copy on member2", got.Reason)

	t.Run("member3 and member5 faulty too: nowhere to go", func(t *testing.T) {
		fleet := fleetOf("member1", "member2", "member3", "member4", "member5")
		for _, i := range []int{1, 2, 4} {
			fleet[i].Taints = []corev1.Taint{notReady}
		}
		got := mustChecker().Check(req, fleet)
		assert.False(t, got.Feasible)
		assert.Empty(t, got.Candidates)
		assert.Equal(t, "no eligible cluster outside member1 and member2 to replace the copy on member2: of 5 clusters, "+
			"member2 is being evicted from; member1 already runs it; "+
			"member3 (taint cluster.karmada.io/not-ready:NoExecute) and member5 (taint cluster.karmada.io/not-ready:NoExecute) are faulty; "+
			"member4 does not match clusterAffinity", got.Reason)
	})
}

func TestDocumentDividedExample(t *testing.T) {
	p := decodePlacement(t, dividedPlacementYAML)
	require.Len(t, p.ReplicaScheduling.WeightPreference.StaticWeightList, 2)
	assert.Equal(t, int64(2), p.ReplicaScheduling.WeightPreference.StaticWeightList[1].Weight)
	assert.Equal(t, []string{"member2"}, p.ReplicaScheduling.WeightPreference.StaticWeightList[1].TargetCluster.ClusterNames)

	fleet := fleetOf("member1", "member2", "member3")
	fleet[0].Taints = []corev1.Taint{notReady}
	req := Request{
		Placement: p,
		Scheduled: []failover.TargetCluster{{Name: "member1", Replicas: 1}, {Name: "member2", Replicas: 2}},
		Evicting:  []string{"member1"},
	}
	got := mustChecker().Check(req, fleet)
	assert.True(t, got.Feasible, got.Reason)
	assert.Equal(t, []string{"member2"}, got.Candidates, "member2 already runs it and counts")
	assert.Equal(t, "feasible: member2 can take the 1 replica evicted from member1", got.Reason)

	// Karmada's static weights give member2 all three replicas whatever its
	// room: the scheduler places the replica, and it waits pending there.
	t.Run("member2 has no room for the replica", func(t *testing.T) {
		c := mustChecker(WithCapacity(func(string) (int32, bool) { return 0, true }))
		got := c.Check(req, fleet)
		assert.True(t, got.Feasible)
		assert.Equal(t, "feasible: member2 can take the 1 replica evicted from member1 (the static weights share whatever the room, and member2 (room for 0) may get more replicas than it has room for, which would wait pending)", got.Reason)
	})
}

// Every field of a Karmada placement decodes strictly into Placement, the
// inline fields of clusterAffinities terms included.
func TestPlacementDecodesEveryKarmadaField(t *testing.T) {
	const doc = `
clusterAffinities:
- affinityName: primary
  labelSelector:
    matchLabels:
      location: dc
  fieldSelector:
    matchExpressions:
    - key: region
      operator: In
      values: [eu-west]
  clusterNames: [dc-1, dc-2]
  exclude: [dc-3]
- affinityName: backup
  clusterNames: [cloud-1]
clusterTolerations:
- key: cluster.karmada.io/not-ready
  operator: Exists
  effect: NoExecute
  tolerationSeconds: 300
spreadConstraints:
- spreadByField: region
  maxGroups: 2
  minGroups: 1
- spreadByLabel: rack
  minGroups: 1
replicaScheduling:
  replicaSchedulingType: Divided
  replicaDivisionPreference: Weighted
  weightPreference:
    dynamicWeight: AvailableReplicas
`
	p := decodePlacement(t, doc)
	require.Len(t, p.ClusterAffinities, 2)
	primary := p.ClusterAffinities[0]
	assert.Equal(t, "primary", primary.AffinityName)
	assert.Equal(t, map[string]string{"location": "dc"}, primary.LabelSelector.MatchLabels)
	assert.Equal(t, "region", primary.FieldSelector.MatchExpressions[0].Key)
	assert.Equal(t, []string{"dc-1", "dc-2"}, primary.ClusterNames)
	assert.Equal(t, []string{"dc-3"}, primary.ExcludeClusters)
	assert.Equal(t, int64(300), *p.ClusterTolerations[0].TolerationSeconds)
	assert.Equal(t, []SpreadConstraint{{SpreadByField: SpreadByFieldRegion, MaxGroups: 2, MinGroups: 1}, {SpreadByLabel: "rack", MinGroups: 1}}, p.SpreadConstraints)
	assert.Equal(t, DynamicWeightByAvailableReplicas, p.ReplicaScheduling.WeightPreference.DynamicWeight)

	back, err := yaml.Marshal(p)
	require.NoError(t, err)
	var again Placement
	require.NoError(t, yaml.UnmarshalStrict(back, &again))
	assert.Equal(t, p, again)

	var bad Placement
	assert.ErrorContains(t, yaml.UnmarshalStrict([]byte("spreadConstraints:\n- minGroup: 2\n"), &bad), "minGroup")
}

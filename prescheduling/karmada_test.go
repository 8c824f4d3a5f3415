package prescheduling

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/failoverkit/failover"
)

// The tables of Karmada v1.18's pkg/scheduler/core/spreadconstraint and of
// its SpreadConstraint filter plugin, translated: the clusters a table
// offers the scheduler are the fleet, the workload was on one cluster that is
// being evicted ("gone", which the fleet no longer lists) and the replicas to
// place are the evicted ones. A table that expects clusters expects a
// feasible answer, one that expects an error an infeasible one. Which of
// several feasible choices the scheduler makes (by its scores) is the
// scheduler's business, not the check's.

// fromGone is a request whose only copy, with replicas, is on an evicted
// cluster the fleet does not list.
func fromGone(p Placement, replicas int32) Request {
	return Request{Placement: p, Scheduled: []failover.TargetCluster{{Name: "gone", Replicas: replicas}}, Evicting: []string{"gone"}}
}

func topo(name, provider, region, zone string) failover.Cluster {
	return failover.Cluster{Name: name, Provider: provider, Region: region, Zones: []string{zone}}
}

// TestKarmadaSelectBestClusters is TestSelectBestClusters
// (select_clusters_test.go): spread by cluster [1,2] over four clusters
// whose available replicas are 50, 60, 80 and 40.
func TestKarmadaSelectBestClusters(t *testing.T) {
	fleet := []failover.Cluster{
		topo("member4", "P2", "R2", "Z2"), topo("member2", "P1", "R1", "Z2"),
		topo("member3", "P2", "R1", "Z1"), topo("member1", "P1", "R1", "Z1"),
	}
	available := map[string]int32{"member4": 50, "member2": 60, "member3": 80, "member1": 40}
	capacity := WithCapacity(func(c string) (int32, bool) { n, ok := available[c]; return n, ok })
	byCluster := []SpreadConstraint{{SpreadByField: SpreadByFieldCluster, MaxGroups: 2, MinGroups: 1}}
	// The table's Divided placements name no division preference, which
	// Karmada's admission webhook makes Weighted, and Weighted without
	// weights ignores the spread constraints. The selection the table tests
	// is the one an Aggregated (or dynamically weighted) division goes
	// through.
	for _, tc := range []struct {
		name     string
		p        Placement
		replicas int32
		opts     []Option
		feasible bool
		reason   string
	}{
		{"select clusters by cluster score", Placement{SpreadConstraints: byCluster}, 100, []Option{capacity}, true, "feasible"},
		{"ignore available resources when scheduling strategy is duplicated", Placement{SpreadConstraints: byCluster,
			ReplicaScheduling: &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDuplicated}}, 120, []Option{capacity}, true, "feasible"},
		// Karmada ignores the spread constraints of a static weight list
		// (and divides by weight without reading capacity).
		{"ignore spread constraints when scheduling strategy is static weight", Placement{SpreadConstraints: []SpreadConstraint{{MaxGroups: 1, MinGroups: 1}},
			ReplicaScheduling: &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: ReplicaDivisionPreferenceWeighted,
				WeightPreference: &ClusterPreferences{StaticWeightList: []StaticClusterWeight{
					{TargetCluster: failover.ClusterAffinity{ClusterNames: []string{"member1", "member2"}}, Weight: 2}}}}}, 120, nil, true, "feasible: member1 and member2"},
		{"satisfy available resources", Placement{SpreadConstraints: byCluster, ReplicaScheduling: aggregated}, 120, []Option{capacity}, true, "feasible"},
		{"insufficient resources", Placement{SpreadConstraints: byCluster, ReplicaScheduling: aggregated}, 200, []Option{capacity}, false,
			"spreadConstraints[0] allows at most 2 clusters; the scheduler picks those the workload keeps, then those with the most room, and the 2 it picks (member2 and member3) have room for 140 of its 200 replicas"},
		{"exceeded the number of available clusters", Placement{SpreadConstraints: []SpreadConstraint{{SpreadByField: SpreadByFieldCluster, MaxGroups: 7, MinGroups: 7}}}, 30, nil, false,
			"spreadConstraints[0] needs at least 7 clusters, but the remaining and eligible clusters span only 4 clusters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustChecker(tc.opts...).Check(fromGone(tc.p, tc.replicas), fleet)
			require.NoError(t, got.Err)
			assert.Equal(t, tc.feasible, got.Feasible, got.Reason)
			assert.Contains(t, got.Reason, tc.reason)
		})
	}
}

// regionFleet makes sizes[i] clusters in region R<i+1>, named member1 on.
func regionFleet(sizes ...int) []failover.Cluster {
	var fleet []failover.Cluster
	for r, n := range sizes {
		for range n {
			fleet = append(fleet, topo(fmt.Sprintf("member%d", len(fleet)+1), "P1", fmt.Sprintf("R%d", r+1), "Z1"))
		}
	}
	return fleet
}

func byRegionAndCluster(rmin, rmax, cmin, cmax int) Placement {
	return Placement{SpreadConstraints: []SpreadConstraint{
		{SpreadByField: SpreadByFieldRegion, MinGroups: rmin, MaxGroups: rmax},
		{SpreadByField: SpreadByFieldCluster, MinGroups: cmin, MaxGroups: cmax},
	}}
}

// TestKarmadaSelectBestClustersByRegion is Test_selectBestClustersByRegion
// (select_clusters_by_region_test.go).
func TestKarmadaSelectBestClustersByRegion(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        Placement
		fleet    []failover.Cluster
		feasible bool
		reason   string
	}{
		{"select cluster from the region with the higher score", byRegionAndCluster(1, 1, 2, 2), regionFleet(2, 3), true, "feasible"},
		{"select cluster from the region with enough clusters", byRegionAndCluster(1, 1, 3, 3), regionFleet(2, 3), true, "feasible"},
		{"select cluster from the region with enough clusters and higher score", byRegionAndCluster(2, 2, 4, 5), regionFleet(1, 3, 2, 4), true, "feasible"},
		{"select cluster from more than minGroups regions with enough clusters and higher score", byRegionAndCluster(1, 3, 6, 8), regionFleet(1, 3, 2, 1, 1), true, "feasible"},
		{"no enough region", byRegionAndCluster(3, 3, 3, 3), regionFleet(2, 3), false,
			"spreadConstraints[0] needs at least 3 regions, but the remaining and eligible clusters span only 2 regions"},
		{"no enough clusters", byRegionAndCluster(1, 1, 4, 4), regionFleet(2, 3), false,
			"spreadConstraints[0] (at most 1 region) with spreadConstraints[1] (at least 4 clusters) needs 4 clusters in one region; the best region has 3"},
		{"no more regions to replace", byRegionAndCluster(1, 1, 3, 4), regionFleet(2), false,
			"spreadConstraints[0] (at most 1 region) with spreadConstraints[1] (at least 3 clusters) needs 3 clusters in one region; the best region has 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustChecker().Check(fromGone(tc.p, 0), tc.fleet)
			require.NoError(t, got.Err)
			assert.Equal(t, tc.feasible, got.Feasible, got.Reason)
			assert.Contains(t, got.Reason, tc.reason)
		})
	}
}

// TestKarmadaSelectGroups is TestSelectGroups (select_groups_test.go): a
// group's value is the number of clusters of a region, the constraints bound
// the regions, the target is the cluster constraint's minGroups.
func TestKarmadaSelectGroups(t *testing.T) {
	for _, tc := range []struct {
		name               string
		values             []int
		minGroups, maxGrps int
		target             int
		feasible           bool
	}{
		{"empty groups", nil, 2, 3, 1, false},
		{"no enough groups", []int{1}, 2, 3, 1, false},
		{"no enough value", []int{1, 2}, 2, 3, 4, false},
		{"select one group", []int{1}, 1, 3, 1, true},
		{"prioritize one path", []int{1, 1, 1, 2, 5, 3}, 1, 3, 10, true},
		{"select groups with less total number", []int{1, 4, 1, 3, 3, 5}, 2, 6, 5, true},
		{"select groups with the highest score", []int{1, 1, 1, 3, 3, 3}, 1, 3, 6, true},
		{"select groups that are chosen earlier", []int{1, 2, 3, 4}, 1, 2, 5, true},
		{"select groups with greater value", []int{1, 3, 3, 4}, 1, 2, 5, true},
		// Beyond Karmada's table: the target out of reach of the most
		// regions allowed, though the fleet has enough clusters.
		{"the target needs more regions than allowed", []int{1, 2, 3, 4}, 1, 2, 8, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustChecker().Check(fromGone(byRegionAndCluster(tc.minGroups, tc.maxGrps, tc.target, 100), 0), regionFleet(tc.values...))
			require.NoError(t, got.Err)
			assert.Equal(t, tc.feasible, got.Feasible, got.Reason)
		})
	}
}

// TestKarmadaSpreadConstraintFilter is TestSpreadConstraint_Filter
// (pkg/scheduler/framework/plugins/spreadconstraint): a cluster without the
// field a constraint spreads by is not eligible; by zone, Zones counts. A
// cluster constraint beside it, as Karmada's validation requires, lets the
// scheduler select.
func TestKarmadaSpreadConstraintFilter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		field    SpreadFieldValue
		cluster  failover.Cluster
		eligible bool
	}{
		{"no spread constraints", "", failover.Cluster{Name: "m"}, true},
		{"spread by provider - provider present", SpreadByFieldProvider, failover.Cluster{Name: "m", Provider: "aws"}, true},
		{"spread by provider - provider missing", SpreadByFieldProvider, failover.Cluster{Name: "m"}, false},
		{"spread by region - region present", SpreadByFieldRegion, failover.Cluster{Name: "m", Region: "us-west-2"}, true},
		{"spread by region - region missing", SpreadByFieldRegion, failover.Cluster{Name: "m"}, false},
		{"spread by zone - zones present", SpreadByFieldZone, failover.Cluster{Name: "m", Zones: []string{"us-west-2a"}}, true},
		{"spread by zone - zones missing", SpreadByFieldZone, failover.Cluster{Name: "m"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Placement
			if tc.field != "" {
				p.SpreadConstraints = []SpreadConstraint{{SpreadByField: tc.field, MinGroups: 1, MaxGroups: 1}, {SpreadByField: SpreadByFieldCluster, MinGroups: 1, MaxGroups: 1}}
			}
			got := mustChecker().Check(fromGone(p, 0), []failover.Cluster{tc.cluster})
			assert.Equal(t, tc.eligible, got.Feasible, got.Reason)
			if !tc.eligible {
				assert.Contains(t, got.Reason, "m (no "+string(tc.field)+" for spreadConstraints[0]) cannot be put in a spread group")
			}
		})
	}
}

// Karmada v1.18 groups clusters by zone (each zone a cluster spans) only to
// score them; its selection reads the region and cluster constraints, so a
// zone constraint rules out the clusters without zones and counts nothing.
func TestSpreadByZoneOnlyNeedsZones(t *testing.T) {
	fleet := []failover.Cluster{
		{Name: "wide", Region: "R1", Zones: []string{"Z1", "Z2"}},
		{Name: "narrow", Region: "R1", Zones: []string{"Z3"}},
		{Name: "zoneless", Region: "R1"},
	}
	atLeast := func(n int) Placement {
		return Placement{SpreadConstraints: []SpreadConstraint{{SpreadByField: SpreadByFieldZone, MinGroups: n}, {SpreadByField: SpreadByFieldCluster, MinGroups: 1, MaxGroups: 2}}}
	}
	for _, n := range []int{1, 4, 10} {
		got := mustChecker().Check(fromGone(atLeast(n), 0), fleet)
		assert.True(t, got.Feasible, got.Reason)
		assert.Equal(t, []string{"narrow", "wide"}, got.Candidates, "zoneless has no zone")
		assert.Contains(t, got.Reason, "(Karmada v1.18's scheduler does not count the groups of spreadConstraints[0] (by zone))")
	}
}

// Spread constraints as Karmada v1.18's scheduler selects by them: regions
// first, then clusters within them; the cluster constraint's maxGroups bounds
// the clusters whose room counts.
func TestSpreadConstraintsHoldAtOnce(t *testing.T) {
	t.Run("one region with four clusters", func(t *testing.T) {
		fleet := regionFleet(2, 3)
		got := mustChecker().Check(fromGone(byRegionAndCluster(1, 1, 4, 4), 0), fleet)
		assert.False(t, got.Feasible)
		assert.Contains(t, got.Reason, "needs 4 clusters in one region; the best region has 3")
	})
	spare := map[string]int32{"member1": 80, "member2": 60, "member3": 50, "member4": 40}
	c := mustChecker(WithCapacity(func(name string) (int32, bool) { return spare[name], true }))
	t.Run("Divided capacity counts only the clusters MaxGroups allows", func(t *testing.T) {
		fleet := regionFleet(4)
		p := Placement{ReplicaScheduling: aggregated, SpreadConstraints: []SpreadConstraint{{MinGroups: 1, MaxGroups: 2}}}
		got := c.Check(fromGone(p, 200), fleet)
		assert.False(t, got.Feasible)
		assert.Contains(t, got.Reason, "spreadConstraints[0] allows at most 2 clusters; the scheduler picks those the workload keeps, then those with the most room, and the 2 it picks (member1 and member2) have room for 140 of its 200 replicas")
		p.SpreadConstraints[0].MaxGroups = 4
		assert.True(t, c.Check(fromGone(p, 200), fleet).Feasible, "all four clusters hold 230")
	})
	t.Run("a cluster the workload keeps takes its share first", func(t *testing.T) {
		fleet := regionFleet(4)
		p := Placement{ReplicaScheduling: aggregated, SpreadConstraints: []SpreadConstraint{{MinGroups: 1, MaxGroups: 2}}}
		req := Request{Placement: p, Scheduled: []failover.TargetCluster{{Name: "member4", Replicas: 10}, {Name: "gone", Replicas: 100}}, Evicting: []string{"gone"}}
		got := c.Check(req, fleet)
		assert.True(t, got.Feasible, "member4 (40 more) and member1 (80) hold the 100: %s", got.Reason)
		assert.Contains(t, got.Reason, "feasible: member1 and member4 can take the 100 replicas evicted from gone")
	})
	// selectClustersByAvailableResource: when the clusters it would pick
	// lack room, the scheduler swaps them, the one it keeps included, for
	// clusters with more: member4's 10 replicas move too.
	t.Run("the scheduler gives up a cluster the workload keeps for room", func(t *testing.T) {
		fleet := regionFleet(4)
		p := Placement{ReplicaScheduling: aggregated, SpreadConstraints: []SpreadConstraint{{MinGroups: 1, MaxGroups: 2}}}
		req := Request{Placement: p, Scheduled: []failover.TargetCluster{{Name: "member4", Replicas: 10}, {Name: "gone", Replicas: 130}}, Evicting: []string{"gone"}}
		got := c.Check(req, fleet)
		assert.True(t, got.Feasible, "member2 (60) and member1 (80) hold all 140: %s", got.Reason)
		assert.Contains(t, got.Reason, "feasible: member1 and member2 can take the 130 replicas evicted from gone")
	})
	t.Run("one constraint per field, as Karmada validates", func(t *testing.T) {
		p := Placement{SpreadConstraints: []SpreadConstraint{{SpreadByField: SpreadByFieldRegion, MinGroups: 3}, {SpreadByField: SpreadByFieldRegion, MaxGroups: 2}}}
		got := mustChecker().Check(fromGone(p, 0), regionFleet(1, 1, 1))
		require.Error(t, got.Err)
		assert.Contains(t, got.Reason, "prescheduling: placement.spreadConstraints[1]: a second constraint by region (the first is spreadConstraints[0]): Karmada allows one per field")
	})
	t.Run("several kinds: Reason says which the scheduler does not count", func(t *testing.T) {
		p := Placement{SpreadConstraints: []SpreadConstraint{
			{SpreadByField: SpreadByFieldRegion, MinGroups: 1, MaxGroups: 2}, {SpreadByField: SpreadByFieldProvider, MinGroups: 3}, {MinGroups: 2, MaxGroups: 3}}}
		got := mustChecker().Check(fromGone(p, 0), regionFleet(2, 2))
		assert.True(t, got.Feasible, got.Reason)
		assert.Contains(t, got.Reason, "does not count the groups of spreadConstraints[1] (by provider)")
	})
}

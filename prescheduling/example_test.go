package prescheduling_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/prescheduling"
)

// The Duplicated example of Karmada's failover analysis: member2 fails, and
// of the clusters that do not run nginx yet only member3 and member5 match
// its clusterAffinity. Its spread constraint keeps two clusters: member1,
// which runs it, and member3, first by name when nothing else tells the two
// apart, as Karmada's scheduler picks.
func Example() {
	var p prescheduling.Placement
	err := yaml.UnmarshalStrict([]byte(`
clusterAffinity:
  clusterNames: [member1, member2, member3, member5]
spreadConstraints:
- maxGroups: 2
  minGroups: 2
replicaScheduling:
  replicaSchedulingType: Duplicated
`), &p)
	if err != nil {
		panic(err)
	}
	fleet := []failover.Cluster{{Name: "member1"}, {Name: "member2"}, {Name: "member3"}, {Name: "member4"}, {Name: "member5"}}
	fleet[1].Taints = []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}}

	checker, err := prescheduling.NewChecker()
	if err != nil {
		panic(err)
	}
	r := checker.Check(prescheduling.Request{
		Placement: p,
		Scheduled: []failover.TargetCluster{{Name: "member1"}, {Name: "member2"}},
		Evicting:  []string{"member2"},
	}, fleet)
	fmt.Println(r.Feasible, r.Candidates)
	fmt.Println(r.Reason)
	// Output:
	// true [member3 member5]
	// feasible: member3 can replace the copy on member2
}

// When nothing can take the workload, Reason says which clusters were ruled
// out and why, so an operator knows what to fix.
func ExampleChecker_Check_infeasible() {
	p := prescheduling.Placement{ClusterAffinity: &failover.ClusterAffinity{ClusterNames: []string{"member1", "member2", "member3"}}}
	fleet := []failover.Cluster{
		{Name: "member1"},
		{Name: "member2"},
		{Name: "member3", Taints: []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}},
		{Name: "member4"},
	}
	checker, err := prescheduling.NewChecker()
	if err != nil {
		panic(err)
	}
	r := checker.Check(prescheduling.Request{
		Placement: p,
		Scheduled: []failover.TargetCluster{{Name: "member1"}, {Name: "member2"}},
		Evicting:  []string{"member2"},
	}, fleet)
	fmt.Println(r.Feasible)
	fmt.Println(r.Reason)
	// Output:
	// false
	// no eligible cluster outside member1 and member2 to replace the copy on member2: of 4 clusters, member2 is being evicted from; member1 already runs it; member3 (maintenance:NoSchedule) has a NoSchedule taint the placement does not tolerate; member4 does not match clusterAffinity
}

// The Divided example of Karmada's failover analysis: member1 fails and its
// replica can go to member2, which already runs two. With WithCapacity the
// check also reads member2's room: the static weights give it all three
// replicas whatever its room (Reason says so), and an Aggregated division
// only what fits.
func ExampleWithCapacity() {
	p := prescheduling.Placement{
		ClusterAffinity: &failover.ClusterAffinity{ClusterNames: []string{"member1", "member2"}},
		ReplicaScheduling: &prescheduling.ReplicaSchedulingStrategy{
			ReplicaSchedulingType:     prescheduling.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: prescheduling.ReplicaDivisionPreferenceWeighted,
			WeightPreference: &prescheduling.ClusterPreferences{StaticWeightList: []prescheduling.StaticClusterWeight{
				{TargetCluster: failover.ClusterAffinity{ClusterNames: []string{"member1"}}, Weight: 1},
				{TargetCluster: failover.ClusterAffinity{ClusterNames: []string{"member2"}}, Weight: 2},
			}},
		},
	}
	req := prescheduling.Request{
		Placement: p,
		Scheduled: []failover.TargetCluster{{Name: "member1", Replicas: 1}, {Name: "member2", Replicas: 2}},
		Evicting:  []string{"member1"},
	}
	fleet := []failover.Cluster{{Name: "member1"}, {Name: "member2"}}

	full, err := prescheduling.NewChecker(prescheduling.WithCapacity(func(c string) (int32, bool) {
		return 0, c == "member2" // no room on member2
	}))
	if err != nil {
		panic(err)
	}
	fmt.Println(full.Check(req, fleet).Reason)

	req.Placement.ReplicaScheduling = &prescheduling.ReplicaSchedulingStrategy{
		ReplicaSchedulingType:     prescheduling.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: prescheduling.ReplicaDivisionPreferenceAggregated,
	}
	fmt.Println(full.Check(req, fleet).Reason)
	// Output:
	// feasible: member2 can take the 1 replica evicted from member1 (the static weights share whatever the room, and member2 (room for 0) may get more replicas than it has room for, which would wait pending)
	// the eligible clusters (member2) have spare capacity for 0 of the 1 replica evicted from member1
}

// Ordered clusterAffinities: the scheduler tries the group it last used (the
// binding's status.schedulerObservedAffinityName) and the ones after it.
// Here the primary group has no other healthy cluster, so the scheduler
// falls back to the backup group.
func ExampleChecker_Check_affinityTerms() {
	p := prescheduling.Placement{ClusterAffinities: []prescheduling.ClusterAffinityTerm{
		{AffinityName: "primary", ClusterAffinity: failover.ClusterAffinity{ClusterNames: []string{"dc-1", "dc-2"}}},
		{AffinityName: "backup", ClusterAffinity: failover.ClusterAffinity{ClusterNames: []string{"cloud-1"}}},
	}}
	fleet := []failover.Cluster{
		{Name: "dc-1"},
		{Name: "dc-2", Taints: []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}}},
		{Name: "cloud-1"},
	}
	checker, err := prescheduling.NewChecker()
	if err != nil {
		panic(err)
	}
	r := checker.Check(prescheduling.Request{
		Placement:            p,
		Scheduled:            []failover.TargetCluster{{Name: "dc-1"}},
		Evicting:             []string{"dc-1"},
		ObservedAffinityName: "primary",
	}, fleet)
	fmt.Println(r.Feasible, r.AffinityName, r.Candidates)
	// Output:
	// true backup [cloud-1]
}

// Validate names every field that is wrong.
func ExamplePlacement_Validate() {
	p := prescheduling.Placement{
		SpreadConstraints: []prescheduling.SpreadConstraint{{SpreadByField: prescheduling.SpreadByFieldRegion, MinGroups: 3, MaxGroups: 2}},
		ReplicaScheduling: &prescheduling.ReplicaSchedulingStrategy{ReplicaSchedulingType: "Triplicated"},
	}
	fmt.Println(p.Validate())
	// Output:
	// prescheduling: placement.spreadConstraints[0]: minGroups 3 is greater than maxGroups 2
	// prescheduling: placement.replicaScheduling.replicaSchedulingType: unknown value "Triplicated": want Duplicated or Divided
}

// Spread constraints hold at once, as Karmada's scheduler selects: one
// region with four clusters. Each constraint alone could be met (a region,
// four clusters), but no region has four eligible clusters.
func ExampleChecker_Check_spreadAtOnce() {
	var p prescheduling.Placement
	err := yaml.UnmarshalStrict([]byte(`
spreadConstraints:
- {spreadByField: region, minGroups: 1, maxGroups: 1}
- {spreadByField: cluster, minGroups: 4, maxGroups: 4}
`), &p)
	if err != nil {
		panic(err)
	}
	fleet := []failover.Cluster{
		{Name: "eu-1", Region: "eu"}, {Name: "eu-2", Region: "eu"},
		{Name: "us-1", Region: "us"}, {Name: "us-2", Region: "us"}, {Name: "us-3", Region: "us"},
		{Name: "ap-1", Region: "ap", Taints: []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}}},
	}
	checker, err := prescheduling.NewChecker()
	if err != nil {
		panic(err)
	}
	r := checker.Check(prescheduling.Request{
		Placement: p,
		Scheduled: []failover.TargetCluster{{Name: "ap-1"}},
		Evicting:  []string{"ap-1"},
	}, fleet)
	fmt.Println(r.Feasible)
	fmt.Println(r.Reason)
	// Output:
	// false
	// spreadConstraints[0] (at most 1 region) with spreadConstraints[1] (at least 4 clusters) needs 4 clusters in one region; the best region has 3 when replacing the copy on ap-1
}

package prescheduling

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

// TestIndexCutsAsCheck holds the checks Index.Check answers on the few
// clusters the scheduler's choice can reach (reduce) to Checker.Check on
// the whole fleet: placements that select by a cluster spread constraint
// (Duplicated and Divided) or by region, or divide by dynamic or static
// weights, on
// fleets of 10 to 80 clusters whose room ties often, with clusters
// changing, reporting room and leaving between checks, and overrides.
func TestIndexCutsAsCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 7))
	cut, feasible := map[string]int{}, 0
	for run := range 400 {
		if !t.Run(fmt.Sprint(run), func(t *testing.T) {
			f, c := cutCase(t, rng)
			feasible += f
			for k, n := range c {
				cut[k] += n
			}
		}) {
			return
		}
	}
	t.Logf("checks by kind of placement: %v; %d feasible", cut, feasible)
	for _, kind := range []string{"duplicated by cluster", "divided by cluster", "dynamic weights", "by region", "static weights", "no weights"} {
		assert.Greater(t, cut[kind], 200, "too few checks of %s to prove the cut", kind)
	}
	assert.Greater(t, feasible, 1000)
}

func cutCase(t *testing.T, rng *rand.Rand) (feasible int, kinds map[string]int) {
	kinds = map[string]int{}
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	// Half the fleets have every cluster's room known, as a fleet whose
	// clusters all report summaries does: a check then cuts on the order
	// of room alone.
	allKnown := rng.IntN(2) == 0
	room := func() indexRoom {
		if allKnown {
			return indexRoom([]int32{0, 1, 2, 3, 5, 8}[rng.IntN(6)])
		}
		switch rng.IntN(10) {
		case 0:
			return -1 // unknown
		case 1:
			return math.MaxInt32
		case 2:
			return 0
		}
		return indexRoom([]int32{1, 2, 3, 5, 8}[rng.IntN(5)])
	}
	n := 10 + rng.IntN(70)
	cluster := func(i int) failover.Cluster {
		c := failover.Cluster{
			Name:   fmt.Sprintf("m%02d", i),
			Region: pick("eu", "us", "ap", "eu", "us"),
			Zones:  []string{pick("z1", "z2", "z3")},
			Labels: map[string]string{"tier": pick("gold", "silver", "bronze"), "team": pick("a", "b")},
		}
		switch rng.IntN(10) {
		case 0:
			c.Taints = []corev1.Taint{notReady}
		case 1:
			c.Taints = []corev1.Taint{preferNoExec}
		case 2:
			c.Taints = []corev1.Taint{noSchedule}
		}
		return c
	}
	var x Index[indexRoom]
	fleet := map[string]member{}
	for i := range n {
		c := cluster(i)
		rm := room()
		if err := x.Set(c, rm); err != nil {
			t.Fatal(err)
		}
		fleet[c.Name] = member{c, rm}
	}
	name := func() string { return fmt.Sprintf("m%02d", rng.IntN(n+2)) }

	placement := func() (Placement, string) {
		p := Placement{ClusterAffinity: &failover.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": pick("a", "b")}}}}
		if rng.IntN(3) == 0 {
			p.ClusterAffinity = nil
		}
		if rng.IntN(4) == 0 {
			p.ClusterTolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}
		divided := func(pref ReplicaDivisionPreference, w *ClusterPreferences) *ReplicaSchedulingStrategy {
			return &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: pref, WeightPreference: w}
		}
		switch rng.IntN(5) {
		case 0, 1:
			lo := 1 + rng.IntN(3)
			p.SpreadConstraints = []SpreadConstraint{{SpreadByField: SpreadByFieldCluster, MinGroups: lo, MaxGroups: lo + rng.IntN(3)}}
			if rng.IntN(3) == 0 {
				p.SpreadConstraints = append(p.SpreadConstraints, SpreadConstraint{SpreadByField: SpreadByFieldZone, MinGroups: 1, MaxGroups: 2})
			}
			if rng.IntN(2) == 0 {
				return p, "duplicated by cluster"
			}
			p.ReplicaScheduling = divided(ReplicaDivisionPreference(pick(string(ReplicaDivisionPreferenceAggregated), string(ReplicaDivisionPreferenceWeighted))),
				&ClusterPreferences{DynamicWeight: DynamicWeightByAvailableReplicas})
			if p.ReplicaScheduling.ReplicaDivisionPreference == ReplicaDivisionPreferenceAggregated {
				p.ReplicaScheduling.WeightPreference = nil
			}
			return p, "divided by cluster"
		case 2:
			p.ReplicaScheduling = divided(ReplicaDivisionPreferenceWeighted, &ClusterPreferences{DynamicWeight: DynamicWeightByAvailableReplicas})
			if rng.IntN(2) == 0 {
				return p, "dynamic weights"
			}
			lo := 1 + rng.IntN(2)
			p.SpreadConstraints = []SpreadConstraint{{SpreadByField: SpreadByFieldRegion, MinGroups: lo, MaxGroups: lo + rng.IntN(2)}}
			if rng.IntN(4) != 0 {
				clo := 1 + rng.IntN(3)
				p.SpreadConstraints = append(p.SpreadConstraints, SpreadConstraint{SpreadByField: SpreadByFieldCluster, MinGroups: clo, MaxGroups: clo + rng.IntN(3)})
			}
			switch rng.IntN(3) {
			case 0:
				p.ReplicaScheduling = nil
			case 1:
				p.ReplicaScheduling = divided(ReplicaDivisionPreferenceAggregated, nil)
			}
			return p, "by region"
		case 3:
			var list []StaticClusterWeight
			for range 1 + rng.IntN(3) {
				w := StaticClusterWeight{Weight: int64(1 + rng.IntN(3))}
				if rng.IntN(2) == 0 {
					w.TargetCluster.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": pick("gold", "silver", "none")}}
				} else {
					w.TargetCluster.ClusterNames = []string{name(), name()}
				}
				list = append(list, w)
			}
			p.ReplicaScheduling = divided(ReplicaDivisionPreferenceWeighted, &ClusterPreferences{StaticWeightList: list})
			return p, "static weights"
		}
		p.ReplicaScheduling = divided(ReplicaDivisionPreferenceWeighted, nil)
		return p, "no weights"
	}

	for step := range 30 {
		switch rng.IntN(6) {
		case 0:
			c := cluster(rng.IntN(n + 2))
			rm := room()
			if err := x.Set(c, rm); err != nil {
				t.Fatal(err)
			}
			fleet[c.Name] = member{c, rm}
		case 1, 2:
			nm, rm := name(), room()
			if _, ok := fleet[nm]; ok {
				x.SetRoom(nm, rm)
				fleet[nm] = member{fleet[nm].c, rm}
			}
		case 3:
			nm := name()
			x.Delete(nm)
			delete(fleet, nm)
		}
		p, kind := placement()
		req := Request{Placement: p, ResourceUID: pick("", "uid-1", "uid-2")}
		for i := range 1 + rng.IntN(4) {
			nm := name()
			if slices.ContainsFunc(req.Scheduled, func(tc failover.TargetCluster) bool { return tc.Name == nm }) {
				continue
			}
			replicas := int32(1 + rng.IntN(6))
			if i == 0 {
				// Often more than a few clusters have room for, so that a
				// selection by cluster swaps for room.
				replicas = int32(1 + rng.IntN(20))
			}
			req.Scheduled = append(req.Scheduled, failover.TargetCluster{Name: nm, Replicas: replicas})
			if i == 0 || rng.IntN(3) == 0 {
				req.Evicting = append(req.Evicting, nm)
			}
		}
		var overrides []Override[indexRoom]
		for range rng.IntN(3) {
			o := Override[indexRoom]{Name: name(), Room: room()}
			if slices.ContainsFunc(overrides, func(q Override[indexRoom]) bool { return q.Name == o.Name }) {
				continue
			}
			if rng.IntN(4) != 0 {
				c := cluster(0)
				c.Name = o.Name
				o.Cluster = &c
			}
			overrides = append(overrides, o)
		}
		list, rooms := withOverrides(fleet, overrides)
		checker, capacity := mustChecker(), Capacity[indexRoom]{}
		if rng.IntN(5) != 0 {
			capacity = byRoom
			checker = mustChecker(WithCapacity(func(nm string) (int32, bool) {
				r, ok := rooms[nm]
				if !ok {
					return 0, false
				}
				return indexCapacity(r)
			}))
		}
		want := checker.Check(req, list)
		sameResult(t, want, x.Check(req, capacity, overrides...), fmt.Sprintf("step %d (%s), request %+v, overrides %v", step, kind, req, overrides))
		kinds[kind]++
		if want.Feasible {
			feasible++
		}
	}
	return feasible, kinds
}

// A selection by region scores each region by reading its clusters, those
// the workload keeps first, until their room reaches its share: a cut that
// reads less than that scores the region wrong. Here, with no cluster
// constraint, the cut keeps one cluster of each region but for how far
// the score reads.
func TestIndexCutByRegionReadsAsFarAsTheScore(t *testing.T) {
	var x Index[indexRoom]
	var list []failover.Cluster
	rooms := map[string]indexRoom{}
	for i := range 60 {
		c := failover.Cluster{Name: fmt.Sprintf("m%02d", i), Region: []string{"eu", "us", "ap"}[i%3]}
		rooms[c.Name] = indexRoom(1 + i%2)
		if err := x.Set(c, rooms[c.Name]); err != nil {
			t.Fatal(err)
		}
		list = append(list, c)
	}
	checker := mustChecker(WithCapacity(func(n string) (int32, bool) { return indexCapacity(rooms[n]) }))
	for _, rs := range []*ReplicaSchedulingStrategy{
		{ReplicaSchedulingType: ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: ReplicaDivisionPreferenceAggregated},
		{ReplicaSchedulingType: ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: ReplicaDivisionPreferenceWeighted,
			WeightPreference: &ClusterPreferences{DynamicWeight: DynamicWeightByAvailableReplicas}},
	} {
		req := Request{
			Placement: Placement{ReplicaScheduling: rs, SpreadConstraints: []SpreadConstraint{{SpreadByField: SpreadByFieldRegion, MinGroups: 1, MaxGroups: 2}}},
			Scheduled: []failover.TargetCluster{{Name: "m00", Replicas: 9}, {Name: "m03", Replicas: 1}, {Name: "m04", Replicas: 1}},
			Evicting:  []string{"m00"},
		}
		sameResult(t, checker.Check(req, list), x.Check(req, byRoom), string(rs.ReplicaDivisionPreference))
	}
}

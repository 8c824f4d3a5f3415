package prescheduling

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/failoverkit/failover"
)

// groupsOf counts the groups a schedule result spans when remaining keep
// their copies and picked are added, the plain way: a cluster counts in each
// of its zones, and a remaining cluster the fleet does not list counts only
// as a cluster.
func groupsOf(k *spreadKey, remaining []string, remainingClusters []*failover.Cluster, picked []*failover.Cluster) int {
	seen := map[string]bool{}
	add := func(c *failover.Cluster) {
		if k.field == SpreadByFieldZone {
			for _, z := range zonesOf(c) {
				seen[z] = true
			}
		} else if g := k.of(c); g != "" {
			seen[g] = true
		}
	}
	for i, n := range remaining {
		switch {
		case k.field == SpreadByFieldCluster:
			seen[n] = true
		case remainingClusters[i] != nil:
			add(remainingClusters[i])
		}
	}
	for _, c := range picked {
		add(c)
	}
	return len(seen)
}

// jointly is the joint rule stated plainly: some choice of at least need of
// fresh makes every spread constraint hold at once.
func jointly(keys []spreadKey, sc *spreadCase) bool {
	for mask := range 1 << len(sc.fresh) {
		var picked []*failover.Cluster
		for i, c := range sc.fresh {
			if mask&(1<<i) != 0 {
				picked = append(picked, c)
			}
		}
		if len(picked) < sc.need {
			continue
		}
		ok := true
		for i := range keys {
			n := groupsOf(&keys[i], sc.remaining, sc.remainingClusters, picked)
			ok = ok && n >= keys[i].min && (keys[i].max == 0 || n <= keys[i].max)
		}
		if ok {
			return true
		}
	}
	return false
}

// The spread check must agree with trying every choice of clusters: exactly
// with one kind of group besides the number of clusters; with more kinds, or
// clusters that span zones, "not ok" must be certain and "ok" without a note
// must be true.
func TestSpreadCheckMatchesEveryChoiceOfCandidates(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 2026))
	regions := []string{"eu", "us", "ap", "sa"}
	zones := []string{"z1", "z2", "z3", "z4", "z5"}
	fields := []spreadKey{{field: SpreadByFieldCluster}, {field: SpreadByFieldRegion}, {field: SpreadByFieldZone}, {label: "team"}}
	cluster := func(name string, multiZone bool) *failover.Cluster {
		g := regions[rng.IntN(len(regions))]
		c := &failover.Cluster{Name: name, Region: g, Zone: zones[rng.IntN(len(zones))], Labels: map[string]string{"team": regions[rng.IntN(len(regions))]}}
		if multiZone && rng.IntN(3) == 0 {
			c.Zones = []string{zones[rng.IntN(len(zones))], zones[rng.IntN(len(zones))]}
		}
		return c
	}
	for iter := range 20000 {
		multiZone := iter%4 == 0
		var keys []spreadKey
		for i := range 1 + rng.IntN(3) {
			k := fields[rng.IntN(len(fields))]
			k.min, k.index = rng.IntN(5), i
			if rng.IntN(3) > 0 {
				k.max = k.min + rng.IntN(3)
				if k.max == 0 {
					k.max = 1
				}
			}
			keys = append(keys, k)
		}
		plan, err := newSpreadPlan(keys, false)
		if err != nil {
			continue // two constraints of one kind that cannot both hold
		}
		sc := &spreadCase{need: rng.IntN(3)}
		for i := range rng.IntN(4) {
			sc.remaining = append(sc.remaining, fmt.Sprintf("r%d", i))
			var c *failover.Cluster
			if rng.IntN(5) > 0 { // else not in the fleet
				c = cluster(sc.remaining[i], multiZone)
			}
			sc.remainingClusters = append(sc.remainingClusters, c)
		}
		for i := range rng.IntN(9) {
			sc.fresh = append(sc.fresh, cluster(fmt.Sprintf("c%d", i), multiZone))
		}
		if sc.need > len(sc.fresh) {
			sc.need = len(sc.fresh)
		}

		want := jointly(keys, sc)
		got := plan.check(sc)
		exact := len(plan.kinds) <= 1 && !(len(plan.kinds) == 1 && multiZoneCase(&plan.kinds[0].key, sc))
		switch {
		case exact && got.ok != want:
			t.Fatalf("iteration %d: keys %+v, case %s: check %v (%s), every choice %v", iter, keys, describe(sc), got.ok, got.reason, want)
		case !got.ok && want:
			t.Fatalf("iteration %d: keys %+v, case %s: check says no (%s), but some choice works", iter, keys, describe(sc), got.reason)
		case got.ok && !want && got.note == "":
			t.Fatalf("iteration %d: keys %+v, case %s: check says yes without a note, but no choice works", iter, keys, describe(sc))
		}
		if !got.ok && got.reason == "" {
			t.Fatalf("iteration %d: no reason", iter)
		}
	}
}

func multiZoneCase(k *spreadKey, sc *spreadCase) bool { return multiZone(k, sc) }

func describe(sc *spreadCase) string {
	s := fmt.Sprintf("need %d; remaining", sc.need)
	for i, n := range sc.remaining {
		if c := sc.remainingClusters[i]; c != nil {
			s += fmt.Sprintf(" %s(%s %s%v %s)", n, c.Region, c.Zone, c.Zones, c.Labels["team"])
		} else {
			s += " " + n + "(?)"
		}
	}
	s += "; fresh"
	for _, c := range sc.fresh {
		s += fmt.Sprintf(" %s(%s %s%v %s)", c.Name, c.Region, c.Zone, c.Zones, c.Labels["team"])
	}
	return s
}

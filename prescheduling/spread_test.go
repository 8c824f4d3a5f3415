package prescheduling

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/failoverkit/failover"
)

// groupsOf counts the groups a schedule result spans when remaining keep
// their copies and picked are added, the plain way.
func groupsOf(k *spreadKey, remaining []string, remainingClusters []*failover.Cluster, picked []*failover.Cluster) int {
	seen := map[string]bool{}
	for i, n := range remaining {
		switch {
		case k.field == SpreadByFieldCluster:
			seen[n] = true
		case remainingClusters[i] != nil && k.of(remainingClusters[i]) != "":
			seen[k.of(remainingClusters[i])] = true
		}
	}
	for _, c := range picked {
		seen[k.of(c)] = true
	}
	return len(seen)
}

// The MinGroups and MaxGroups checks rest on reachOf's range of group
// counts; it must equal the range found by trying every set of at least need
// candidates, whatever the remaining clusters (some unknown to the fleet, some
// without the field) and candidates.
func TestReachOfMatchesEveryChoiceOfCandidates(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 2026))
	regions := []string{"eu", "us", "ap", "sa"}
	keys := []spreadKey{{field: SpreadByFieldCluster}, {field: SpreadByFieldRegion}, {label: "team"}}
	for range 5000 {
		k := keys[rng.IntN(len(keys))]
		var remaining []string
		var remainingClusters []*failover.Cluster
		for i := range rng.IntN(4) {
			remaining = append(remaining, fmt.Sprintf("r%d", i))
			var c *failover.Cluster
			switch rng.IntN(5) {
			case 0: // not in the fleet
			case 1: // in the fleet without the field
				c = &failover.Cluster{Name: remaining[i]}
			default:
				g := regions[rng.IntN(len(regions))]
				c = &failover.Cluster{Name: remaining[i], Region: g, Labels: map[string]string{"team": g}}
			}
			remainingClusters = append(remainingClusters, c)
		}
		var cands []*failover.Cluster
		for i := range rng.IntN(8) {
			g := regions[rng.IntN(len(regions))]
			cands = append(cands, &failover.Cluster{Name: fmt.Sprintf("c%d", i), Region: g, Labels: map[string]string{"team": g}})
		}
		need := rng.IntN(len(cands) + 1)

		lo, hi := -1, -1
		for mask := range 1 << len(cands) {
			var picked []*failover.Cluster
			for i, c := range cands {
				if mask&(1<<i) != 0 {
					picked = append(picked, c)
				}
			}
			if len(picked) < need {
				continue
			}
			n := groupsOf(&k, remaining, remainingClusters, picked)
			if lo < 0 || n < lo {
				lo = n
			}
			hi = max(hi, n)
		}
		got := k.reachOf(remaining, remainingClusters, cands, need)
		if got.lo != lo || got.hi != hi {
			t.Fatalf("spread by %s%s, remaining %v, %d candidates, need %d: reachOf gives [%d, %d], every choice gives [%d, %d]",
				k.field, k.label, remaining, len(cands), need, got.lo, got.hi, lo, hi)
		}
	}
}

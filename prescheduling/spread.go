package prescheduling

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/internal/nameset"
)

// spreadKey is a spread constraint ready to group clusters.
type spreadKey struct {
	field    SpreadFieldValue // empty when label is set
	label    string
	min, max int
	index    int // position in placement.spreadConstraints
}

func newSpreadKey(sc SpreadConstraint, path string) (spreadKey, error) {
	if sc.SpreadByLabel != "" {
		if sc.SpreadByField != "" {
			return spreadKey{}, fmt.Errorf("prescheduling: placement.%s: spreadByField %q and spreadByLabel %q cannot both be set", path, sc.SpreadByField, sc.SpreadByLabel)
		}
		if msgs := validation.IsQualifiedName(sc.SpreadByLabel); len(msgs) > 0 {
			return spreadKey{}, fmt.Errorf("prescheduling: placement.%s.spreadByLabel: %q: %s", path, sc.SpreadByLabel, strings.Join(msgs, "; "))
		}
		return spreadKey{label: sc.SpreadByLabel}, nil
	}
	switch sc.SpreadByField {
	case "":
		return spreadKey{field: SpreadByFieldCluster}, nil
	case SpreadByFieldCluster, SpreadByFieldRegion, SpreadByFieldZone, SpreadByFieldProvider:
		return spreadKey{field: sc.SpreadByField}, nil
	}
	return spreadKey{}, fmt.Errorf("prescheduling: placement.%s.spreadByField: unknown value %q: want cluster, region, zone or provider", path, sc.SpreadByField)
}

// of returns the group of c; empty when c has none (no such field or label).
func (k *spreadKey) of(c *failover.Cluster) string {
	switch k.field {
	case SpreadByFieldCluster:
		return c.Name
	case SpreadByFieldRegion:
		return c.Region
	case SpreadByFieldZone:
		return c.Zone
	case SpreadByFieldProvider:
		return c.Provider
	}
	return c.Labels[k.label]
}

// noun names n groups in a Reason: "1 region", "3 values of label team".
func (k *spreadKey) noun(n int) string {
	switch {
	case k.field == "" && n == 1:
		return "1 value of label " + k.label
	case k.field == "":
		return fmt.Sprintf("%d values of label %s", n, k.label)
	case n == 1:
		return "1 " + string(k.field)
	}
	return fmt.Sprintf("%d %ss", n, k.field)
}

// reach is the range of group counts a new schedule result can have: the
// remaining clusters keep their copies, and at least need of the candidates
// are added. Adding one candidate raises the count by at most one, so every
// count between lo and hi is reachable.
type reach struct {
	lo, hi int
	// have are the groups of the remaining clusters, in order of first
	// appearance.
	have []string
}

// reachOf computes the reach of k: remaining are the clusters that keep the
// workload (nil entries are clusters the fleet does not know; they count as a
// group of their own only when spreading by cluster), candidates the fleet
// clusters that may be added.
func (k *spreadKey) reachOf(remaining []string, remainingClusters []*failover.Cluster, candidates []*failover.Cluster, need int) reach {
	if k.field == SpreadByFieldCluster {
		// Candidates are distinct from the remaining clusters and from
		// each other: each is a new group.
		n := len(remaining)
		return reach{lo: n + min(need, len(candidates)), hi: n + len(candidates), have: remaining}
	}
	var r reach
	for _, c := range remainingClusters {
		if c == nil {
			continue
		}
		if g := k.of(c); g != "" && !containsName(r.have, g) {
			r.have = append(r.have, g)
		}
	}
	// Count the candidates per group: those in a group the workload already
	// runs in add nothing; the others add their group.
	covered := 0
	var fresh groupCounter
	for _, c := range candidates {
		g := k.of(c)
		if containsName(r.have, g) {
			covered++
			continue
		}
		fresh.add(g)
	}
	r.hi = len(r.have) + fresh.len()
	r.lo = len(r.have)
	if need > covered {
		// Fill from the largest new groups to add as few as possible.
		bySize := slices.Clone(fresh.sizes())
		slices.Sort(bySize)
		left := need - covered
		for i := len(bySize) - 1; i >= 0 && left > 0; i-- {
			left -= bySize[i]
			r.lo++
		}
	}
	return r
}

func containsName(xs []string, x string) bool {
	for _, y := range xs {
		if nameset.Equal(y, x) {
			return true
		}
	}
	return false
}

package prescheduling

import "github.com/failoverkit/failover/internal/nameset"

// nameSet is a set of cluster names Check asks once per fleet cluster: the
// schedule result, the evicting clusters. It is nameset.Set, which the root's
// affinity matcher also uses, under the package's own method names; index
// returns where a name was first listed, or -1.
type nameSet struct{ s nameset.Set }

func newNameSet(names []string) nameSet { return nameSet{nameset.New(names)} }

func (n *nameSet) index(name string) int { return n.s.Index(name) }

func (n *nameSet) has(name string) bool { return n.s.Has(name) }

// sameName is a == b, faster on the names of one fleet; see nameset.Equal.
func sameName(a, b string) bool { return nameset.Equal(a, b) }

// maxGroupList is the number of groups up to which groupCounter searches a
// slice rather than hashing.
const maxGroupList = 32

// groupCounter counts clusters per spread group. Groups (regions, zones,
// providers) are few, so a slice searched from the last hit is cheaper than a
// map until there are many.
type groupCounter struct {
	groups []string
	counts []int
	last   int
	big    map[string]int
}

func (g *groupCounter) add(group string) {
	if g.big != nil {
		g.big[group]++
		return
	}
	if g.last < len(g.groups) && sameName(g.groups[g.last], group) {
		g.counts[g.last]++
		return
	}
	for i, x := range g.groups {
		if sameName(x, group) {
			g.counts[i]++
			g.last = i
			return
		}
	}
	if len(g.groups) == maxGroupList {
		g.big = make(map[string]int, 2*len(g.groups))
		for i, x := range g.groups {
			g.big[x] = g.counts[i]
		}
		g.big[group]++
		return
	}
	g.groups = append(g.groups, group)
	g.counts = append(g.counts, 1)
	g.last = len(g.groups) - 1
}

func (g *groupCounter) len() int {
	if g.big != nil {
		return len(g.big)
	}
	return len(g.groups)
}

// sizes returns the count of every group.
func (g *groupCounter) sizes() []int {
	if g.big == nil {
		return g.counts
	}
	out := make([]int, 0, len(g.big))
	for _, n := range g.big {
		out = append(out, n)
	}
	return out
}

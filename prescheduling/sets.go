package prescheduling

import (
	"slices"

	"github.com/failoverkit/failover/internal/nameset"
)

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
	if g.last < len(g.groups) && nameset.Equal(g.groups[g.last], group) {
		g.counts[g.last]++
		return
	}
	for i, x := range g.groups {
		if nameset.Equal(x, group) {
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

// has reports whether group has been counted.
func (g *groupCounter) has(group string) bool {
	if g.big != nil {
		_, ok := g.big[group]
		return ok
	}
	if g.last < len(g.groups) && nameset.Equal(g.groups[g.last], group) {
		return true
	}
	for i, x := range g.groups {
		if nameset.Equal(x, group) {
			g.last = i
			return true
		}
	}
	return false
}

// names returns the groups counted, for a Reason: in order of first count
// while they are few, in no particular order after.
func (g *groupCounter) names() []string {
	if g.big == nil {
		return g.groups
	}
	out := make([]string, 0, len(g.big))
	for n := range g.big {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

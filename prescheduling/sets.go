package prescheduling

import "slices"

// maxGroupList is the number of groups up to which groupCounter searches a
// slice rather than hashing.
const maxGroupList = 32

// groupCounter counts clusters per spread group. Groups (regions, zones,
// providers) are few, so a slice indexed by a cheap signature of the name is
// cheaper than a map until there are many.
type groupCounter struct {
	groups []string
	counts []int
	// bySig[s] is 1 + the index of the first group whose signature is s, 0
	// when there is none: most lookups compare one string, and most misses
	// none.
	bySig [64]uint8
	big   map[string]int
}

// groupSig folds a group's length, middle and last byte, where the groups of
// one fleet ("region-7", "eu-west-1b") usually differ, into 0..63.
func groupSig(s string) uint {
	n := len(s)
	if n == 0 {
		return 0
	}
	return (uint(s[n-1])*31 + uint(s[n/2])*7 + uint(n)) & 63
}

// find returns the index of group in groups, or -1.
func (g *groupCounter) find(group string) int {
	i := int(g.bySig[groupSig(group)]) - 1
	if i < 0 {
		return -1
	}
	// Groups that share the signature come at i or later.
	for ; i < len(g.groups); i++ {
		if g.groups[i] == group {
			return i
		}
	}
	return -1
}

func (g *groupCounter) add(group string) {
	if g.big != nil {
		g.big[group]++
		return
	}
	if i := g.find(group); i >= 0 {
		g.counts[i]++
		return
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
	if s := groupSig(group); g.bySig[s] == 0 {
		g.bySig[s] = uint8(len(g.groups))
	}
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
	return g.find(group) >= 0
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

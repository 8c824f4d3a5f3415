package prescheduling

// smallLimit is the size up to which a linear scan of a slice beats hashing a
// string, measured on cluster names (see BenchmarkCheck).
const smallLimit = 8

// nameSet is a set of cluster names: a slice while small, a map beyond. Check
// asks it once per fleet cluster, and most sets (the evicting clusters, the
// schedule result, an exclude list) hold a handful of names.
type nameSet struct {
	small []string
	// mask has the bit sig(n) set for every n in small, so that most names
	// outside the set are rejected without comparing strings.
	mask uint64
	big  map[string]int
}

// sig folds a name's length and last two bytes, where names of one fleet
// usually differ, into 0..63.
func sig(name string) uint {
	n := len(name)
	if n < 2 {
		return uint(n)
	}
	return (uint(name[n-1])*31 + uint(name[n-2])*7 + uint(n)) & 63
}

// newNameSet indexes names; index returns a name's position in names.
func newNameSet(names []string) nameSet {
	if len(names) <= smallLimit {
		s := nameSet{small: names}
		for _, n := range names {
			s.mask |= 1 << sig(n)
		}
		return s
	}
	m := make(map[string]int, len(names))
	for i, n := range names {
		if _, dup := m[n]; !dup {
			m[n] = i
		}
	}
	return nameSet{big: m}
}

func (s *nameSet) index(name string) int {
	if s.big != nil {
		if i, ok := s.big[name]; ok {
			return i
		}
		return -1
	}
	if s.mask&(1<<sig(name)) == 0 {
		return -1
	}
	for i, n := range s.small {
		if sameName(n, name) {
			return i
		}
	}
	return -1
}

// sameName is n == name, but rejects most unequal names of equal length by
// their last byte first: cluster names of one fleet often have one length
// and differ at the end ("member-00042"), where == would compare them whole.
func sameName(n, name string) bool {
	return len(n) == len(name) && (len(n) == 0 || n[len(n)-1] == name[len(n)-1]) && n == name
}

func (s *nameSet) has(name string) bool { return s.index(name) >= 0 }

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
	if len(g.groups) == 4*smallLimit {
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

// Package nameset holds sets of cluster names, tuned for how this module asks
// them: once for every cluster of a fleet, against sets (an exclude list, the
// clusters being evicted from, a schedule result) that mostly hold a few
// names. The root package's affinity matcher and prescheduling share it.
package nameset

import "slices"

// short is the size up to which a scan of a slice beats hashing a name,
// measured on cluster names (see BenchmarkHas).
const short = 8

// Set is an immutable set of names that remembers where each was first
// listed. Its zero value is empty.
type Set struct {
	short []string
	// mask has bit sig(n) set for every n in short, so that most names
	// outside a short set are rejected without comparing strings.
	mask uint64
	big  map[string]int
}

// New returns the set of names. A short set keeps names, which must then not
// change while it is in use: a caller whose names may change passes a copy.
func New(names []string) Set {
	if len(names) <= short {
		s := Set{short: names}
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
	return Set{big: m}
}

// sig folds a name's length and last two bytes, where the names of one fleet
// usually differ ("member-00042"), into 0..63.
func sig(name string) uint {
	n := len(name)
	if n < 2 {
		return uint(n)
	}
	return (uint(name[n-1])*31 + uint(name[n-2])*7 + uint(n)) & 63
}

// Index returns the position in New's names where name was first listed, or
// -1.
func (s *Set) Index(name string) int {
	if s.big != nil {
		if i, ok := s.big[name]; ok {
			return i
		}
		return -1
	}
	if s.mask&(1<<sig(name)) == 0 {
		return -1
	}
	for i, n := range s.short {
		if Equal(n, name) {
			return i
		}
	}
	return -1
}

// Has reports whether name is in s.
func (s *Set) Has(name string) bool { return s.Index(name) >= 0 }

// Len returns the number of distinct names in s.
func (s *Set) Len() int {
	if s.big != nil {
		return len(s.big)
	}
	n := 0
	for i, x := range s.short {
		if !slices.Contains(s.short[:i], x) {
			n++
		}
	}
	return n
}

// Empty reports whether s holds no name.
func (s *Set) Empty() bool { return len(s.short) == 0 && s.big == nil }

// Equal is a == b, but rejects most unequal names of one length by their last
// byte first: the cluster names of a fleet often share their length and
// differ at the end, which == reaches last.
func Equal(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || a[len(a)-1] == b[len(a)-1]) && a == b
}

// Package nameset holds sets of cluster names, asked once for every cluster
// of a fleet against sets (an exclude list, the clusters being evicted from,
// a schedule result) that remember where each name was listed. The root
// package's affinity matcher and prescheduling share it.
package nameset

// smallSet is the most names a Set scans rather than hashes: a schedule
// result or the clusters being evicted from, made for every check, then
// cost no map.
const smallSet = 8

// Set is an immutable set of names that remembers where each was first
// listed. Its zero value is empty.
type Set struct {
	small []string // a few names, as New was given them
	n     int      // distinct names in small
	index map[string]int
}

// New returns the set of names. A set of a few names keeps names itself:
// do not modify it afterwards.
func New(names []string) Set {
	if len(names) == 0 {
		return Set{}
	}
	if len(names) <= smallSet {
		s := Set{small: names}
		for i, n := range names {
			if s.first(n) == i {
				s.n++
			}
		}
		return s
	}
	m := make(map[string]int, len(names))
	for i, n := range names {
		if _, dup := m[n]; !dup {
			m[n] = i
		}
	}
	return Set{index: m}
}

// first is the first position of name in small, or -1.
func (s *Set) first(name string) int {
	for i, n := range s.small {
		if n == name {
			return i
		}
	}
	return -1
}

// Index returns the position in New's names where name was first listed, or
// -1.
func (s *Set) Index(name string) int {
	if s.small != nil {
		return s.first(name)
	}
	if i, ok := s.index[name]; ok {
		return i
	}
	return -1
}

// Has reports whether name is in s.
func (s *Set) Has(name string) bool { return s.Index(name) >= 0 }

// Len returns the number of distinct names in s.
func (s *Set) Len() int {
	if s.small != nil {
		return s.n
	}
	return len(s.index)
}

// Empty reports whether s holds no name.
func (s *Set) Empty() bool { return s.Len() == 0 }

// Package nameset holds sets of cluster names, asked once for every cluster
// of a fleet against sets (an exclude list, the clusters being evicted from,
// a schedule result) that remember where each name was listed. The root
// package's affinity matcher and prescheduling share it.
package nameset

// Set is an immutable set of names that remembers where each was first
// listed. Its zero value is empty.
type Set struct {
	index map[string]int
}

// New returns the set of names.
func New(names []string) Set {
	if len(names) == 0 {
		return Set{}
	}
	m := make(map[string]int, len(names))
	for i, n := range names {
		if _, dup := m[n]; !dup {
			m[n] = i
		}
	}
	return Set{index: m}
}

// Index returns the position in New's names where name was first listed, or
// -1.
func (s *Set) Index(name string) int {
	if i, ok := s.index[name]; ok {
		return i
	}
	return -1
}

// Has reports whether name is in s.
func (s *Set) Has(name string) bool {
	_, ok := s.index[name]
	return ok
}

// Len returns the number of distinct names in s.
func (s *Set) Len() int { return len(s.index) }

// Empty reports whether s holds no name.
func (s *Set) Empty() bool { return len(s.index) == 0 }

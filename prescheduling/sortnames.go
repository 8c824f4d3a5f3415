package prescheduling

import (
	"slices"
	"strings"
)

// sortedOrder returns the indexes 0 … n-1 ordered as slices.Sort orders
// the names name(i), ties in index order; faster when there are many. Fleet
// names tend to share a long prefix ("member-0…") that every string
// comparison walks again; instead, the eight bytes after the common prefix
// become an integer key, the keys are radix-sorted (one pass per byte that
// varies, which keeps ties in order), and only names whose keys tie are
// compared as strings (see BenchmarkSortNames). It stays because
// slices.Sort in its place made a Check miss DESIGN.md's 1 ms for 5,000
// clusters: BenchmarkCheck/Divided/5000 on one core took 0.97-1.68 ms (3 of
// 5 runs over 1 ms) against 0.77-0.84 ms, Duplicated 30% more CPU time.
func sortedOrder(n int, name func(i int) string) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	if n < 64 {
		slices.SortStableFunc(out, func(a, b int) int { return strings.Compare(name(a), name(b)) })
		return out
	}
	// A fleet kept sorted (engine.Fleet's view) needs one pass, not a sort.
	sorted := true
	for i := 1; i < n && sorted; i++ {
		sorted = name(i-1) <= name(i)
	}
	if sorted {
		return out
	}
	first := name(0)
	p := len(first)
	for i := 1; i < n; i++ {
		p = commonPrefix(first[:p], name(i))
	}
	keys := make([]keyedIndex, 2*n)
	a, b := keys[:n], keys[n:]
	var varies uint64 // the bits in which some key differs from the first
	for i := range a {
		a[i] = keyedIndex{key: pack8(name(i)[p:]), index: uint32(i)}
		varies |= a[i].key ^ a[0].key
	}
	for shift := uint(0); shift < 64; shift += 8 {
		if byte(varies>>shift) == 0 {
			continue
		}
		var count [256]int
		for i := range a {
			count[byte(a[i].key>>shift)]++
		}
		pos := 0
		for i, c := range count {
			count[i] = pos
			pos += c
		}
		for i := range a {
			d := byte(a[i].key >> shift)
			b[count[d]] = a[i]
			count[d]++
		}
		a, b = b, a
	}
	for i := range a {
		out[i] = int(a[i].index)
	}
	for i := 0; i < n; {
		j := i + 1
		for j < n && a[j].key == a[i].key {
			j++
		}
		if j-i > 1 {
			// The keys tie: the names decide.
			slices.SortStableFunc(out[i:j], func(x, y int) int { return strings.Compare(name(x), name(y)) })
		}
		i = j
	}
	return out
}

type keyedIndex struct {
	key   uint64
	index uint32
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// pack8 reads up to eight bytes of s big-endian, padding with zeros: keys
// compare as the strings do, except that a tie needs the full comparison.
func pack8(s string) uint64 {
	var k uint64
	for i := range 8 {
		k <<= 8
		if i < len(s) {
			k |= uint64(s[i])
		}
	}
	return k
}

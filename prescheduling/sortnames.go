package prescheduling

import (
	"slices"
	"strings"
)

// sortNames sorts cluster names as slices.Sort does, faster on many names.
// Fleet names tend to share a long prefix ("member-0…") that every string
// comparison walks again; instead, the eight bytes after the common prefix
// become an integer key, the keys are radix-sorted (one pass per byte that
// varies), and only names whose keys tie are compared as strings (see
// BenchmarkSortNames).
func sortNames(xs []string) {
	if len(xs) < 64 {
		slices.Sort(xs)
		return
	}
	p := len(xs[0])
	for _, x := range xs[1:] {
		p = min(p, commonPrefix(xs[0][:p], x))
	}
	keys := make([]keyedName, 2*len(xs))
	a, b := keys[:len(xs)], keys[len(xs):]
	for i, x := range xs {
		a[i] = keyedName{key: pack8(x[p:]), name: x}
	}
	for shift := uint(0); shift < 64; shift += 8 {
		var count [256]int
		for i := range a {
			count[byte(a[i].key>>shift)]++
		}
		if count[byte(a[0].key>>shift)] == len(a) {
			continue // every key has the same byte here
		}
		pos := 0
		for i, n := range count {
			count[i] = pos
			pos += n
		}
		for i := range a {
			d := byte(a[i].key >> shift)
			b[count[d]] = a[i]
			count[d]++
		}
		a, b = b, a
	}
	for i := 0; i < len(a); {
		j := i + 1
		for j < len(a) && a[j].key == a[i].key {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(a[i:j], func(x, y keyedName) int { return strings.Compare(x.name, y.name) })
		}
		i = j
	}
	for i := range a {
		xs[i] = a[i].name
	}
}

type keyedName struct {
	key  uint64
	name string
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

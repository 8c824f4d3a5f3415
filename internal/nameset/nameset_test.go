package nameset

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Index is the first position of a name listed twice.
func TestIndexIsTheFirstPosition(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 100} {
		t.Run(fmt.Sprintf("%d names", n), func(t *testing.T) {
			var names []string
			for i := range n {
				names = append(names, fmt.Sprintf("member-%03d", i))
			}
			names = append(names, "member-000") // listed twice
			s := New(names)
			for i := range n {
				assert.Equal(t, i, s.Index(fmt.Sprintf("member-%03d", i)))
			}
			assert.Equal(t, -1, s.Index("member-999"))
			assert.Equal(t, -1, s.Index(""))
			assert.False(t, s.Has("other"))
			assert.False(t, s.Empty())
		})
	}
}

// Names differing in one byte, empty and one-byte names are told apart
// exactly at every size.
func TestEverySizeAgreesWithAList(t *testing.T) {
	pool := []string{"", "a", "b", "ab", "xa1", "ya1", "member-00001", "xember-00001", "member-00011", "member-10001", "m"}
	probes := append(slices.Clone(pool), "c", "zz", "member-00002", "member-0001")
	for n := range len(pool) + 1 {
		s := New(pool[:n])
		assert.Equal(t, n == 0, s.Empty())
		for _, p := range probes {
			assert.Equal(t, slices.Index(pool[:n], p), s.Index(p), "%q in %q", p, pool[:n])
		}
	}
}

func TestZeroValueIsEmpty(t *testing.T) {
	var s Set
	assert.True(t, s.Empty())
	assert.False(t, s.Has(""))
}

func TestLenCountsDistinctNames(t *testing.T) {
	for _, names := range [][]string{nil, {"a"}, {"a", "a"}, {"a", "b", "a", "c"}, slices.Repeat([]string{"x", "y"}, 10), {"1", "2", "3", "4", "5", "6", "7", "8", "9"}} {
		s := New(names)
		want := len(slices.Compact(slices.Sorted(slices.Values(names))))
		assert.Equal(t, want, s.Len(), "%q", names)
	}
}

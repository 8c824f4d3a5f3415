package nameset

import (
	"fmt"
	"slices"
	"testing"
)

// sink keeps the benchmarked lookups from being optimised away.
var sink int

// BenchmarkHas asks whether each of 5,000 fleet names is among a few
// excluded or evicting clusters, as an affinity matcher and prescheduling do
// for every cluster: Set against a plain slice scan and a map.
func BenchmarkHas(b *testing.B) {
	fleet := make([]string, 5000)
	for i := range fleet {
		fleet[i] = fmt.Sprintf("member-%05d", i)
	}
	for _, n := range []int{2, 4, 8, 50} {
		listed := make([]string, n)
		for i := range listed {
			listed[i] = fleet[i*97%len(fleet)]
		}
		s := New(listed)
		m := make(map[string]struct{}, n)
		for _, x := range listed {
			m[x] = struct{}{}
		}
		for _, bc := range []struct {
			name string
			has  func(string) bool
		}{
			{"Set", s.Has},
			{"slices.Contains", func(f string) bool { return slices.Contains(listed, f) }},
			{"map", func(f string) bool { _, ok := m[f]; return ok }},
		} {
			// Each answers through a func value, so all pay the same call.
			b.Run(fmt.Sprintf("%s/%d", bc.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					hits := 0
					for _, f := range fleet {
						if bc.has(f) {
							hits++
						}
					}
					sink = hits
				}
			})
		}
	}
}

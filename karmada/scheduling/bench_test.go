package scheduling_test

import (
	"fmt"
	"testing"

	"github.com/failoverkit/failover/karmada/scheduling"
)

// BenchmarkSchedule is one binding scheduled on 100, 1,000 and 5,000
// clusters, for each of scalePlacements, by the package's Schedule, which
// loads the fleet and has Karmada's cache copy it at each call.
func BenchmarkSchedule(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		fleet := scaleFleet(n)
		for _, p := range scalePlacements() {
			b.Run(fmt.Sprintf("%s/clusters=%d/reload", p.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := scheduling.Schedule(fleet, p.spec, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

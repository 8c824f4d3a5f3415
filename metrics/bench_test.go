package metrics_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/failoverkit/failover/metrics"
)

// BenchmarkAddedRemoved prices exact queue gauges against the running Inc/Dec
// on GaugeVecs that a queue would otherwise use (and that drifts when a
// removal is double-counted). One op is one Added and one Removed.
func BenchmarkAddedRemoved(b *testing.B) {
	clusters := make([]string, 64)
	for i := range clusters {
		clusters[i] = fmt.Sprintf("member%d", i)
	}
	const kind = "apps/v1/Deployment"

	for _, bc := range []struct {
		name string
		opts []metrics.Option
	}{
		{"metrics.Metrics", nil},
		// WithKarmadaNames sets Karmada's GaugeVecs from the counts on every
		// change and deletes a kind series at 0; here every op creates and
		// deletes one, the worst case (a few µs and allocations, against
		// queues that evict a few items per second).
		{"metrics.Metrics/WithKarmadaNames", []metrics.Option{metrics.WithKarmadaNames()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m, err := metrics.New(prometheus.NewRegistry(), bc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c := clusters[i%len(clusters)]
				m.Added("resource-binding", c, kind)
				m.Removed("resource-binding", c, kind)
				i++
			}
		})
	}
	b.Run("GaugeVec.Inc/Dec", func(b *testing.B) {
		depth := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "eviction_total"}, []string{"queue_name"})
		byKind := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "evict_kind_total"}, []string{"cluster_name", "resource_kind"})
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			c := clusters[i%len(clusters)]
			depth.WithLabelValues("resource-binding").Inc()
			byKind.WithLabelValues(c, kind).Inc()
			depth.WithLabelValues("resource-binding").Dec()
			byKind.WithLabelValues(c, kind).Dec()
			i++
		}
	})
}

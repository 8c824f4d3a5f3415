package metrics_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/failoverkit/failover/metrics"
)

// One Metrics on the registry a process serves, shared by the Limiter (fleet
// health, rate) and every eviction queue (depths, attempts, latency).
func ExampleNew() {
	reg := prometheus.NewRegistry() // serve it with promhttp.HandlerFor(reg, ...)
	m, err := metrics.New(reg, metrics.WithNamespace("karmada"))
	if err != nil {
		fmt.Println(err)
		return
	}

	m.FleetHealth(20, 3)
	m.EvictionRate(0.5)
	m.Added("resource-binding", "member1", "apps/v1/Deployment")
	m.Added("resource-binding", "member1", "apps/v1/Deployment")
	m.Removed("resource-binding", "member1", "apps/v1/Deployment")
	m.Processed("resource-binding", "success", 4*time.Second)

	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			switch {
			case s.Gauge != nil:
				fmt.Println(mf.GetName(), s.GetGauge().GetValue())
			case s.Counter != nil:
				fmt.Println(mf.GetName(), s.GetCounter().GetValue())
			case s.Histogram != nil:
				fmt.Println(mf.GetName(), "count", s.GetHistogram().GetSampleCount())
			}
		}
	}
	// Output:
	// karmada_cluster_failure_rate 0.15
	// karmada_cluster_fault_num 3
	// karmada_evict_kind_total 1
	// karmada_eviction_frozen 0
	// karmada_eviction_processing_latency_seconds count 1
	// karmada_eviction_processing_total 1
	// karmada_eviction_rate 0.5
	// karmada_eviction_storm_hold 0
	// karmada_eviction_total 1
	// karmada_failback_in_flight 0
}

// Registering twice on one registry is an error, not a panic.
func ExampleNew_alreadyRegistered() {
	reg := prometheus.NewRegistry()
	_, _ = metrics.New(reg)
	_, err := metrics.New(reg)
	fmt.Println(err)
	// Output:
	// metrics: registering eviction_total: duplicate metrics collector registration attempted
}

// When a cluster's last queued item leaves, its evict_kind_total series goes
// away instead of staying at 0.
func ExampleMetrics_Removed() {
	reg := prometheus.NewRegistry()
	m, _ := metrics.New(reg)
	m.Added("resource-binding", "member2", "apps/v1/Deployment")
	fmt.Println(count(reg, "evict_kind_total"))
	m.Removed("resource-binding", "member2", "apps/v1/Deployment") // cancelled: member2 recovered
	fmt.Println(count(reg, "evict_kind_total"))
	// Output:
	// 1
	// 0
}

func count(g prometheus.Gatherer, name string) int {
	mfs, _ := g.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}

// Inside karmada-controller-manager, whose Run has registered Karmada's
// eviction series on controller-runtime's metrics.Registry (reg here; two of
// the four are shown): WithKarmadaNames records into Karmada's own
// collectors, so its dashboards keep working. (Without it, New would fail
// with an error that says to pass WithKarmadaNames.)
func ExampleWithKarmadaNames() {
	reg := prometheus.NewRegistry() // in a manager: ctrlmetrics.Registry
	karmadaDepth := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "eviction_queue_depth", Help: "Current depth of the eviction queue",
	}, []string{"name"})
	karmadaProcessed := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "eviction_processing_total", Help: "Total number of evictions processed",
	}, []string{"name", "result"})
	reg.MustRegister(karmadaDepth, karmadaProcessed) // as Karmada does at start-up

	m, err := metrics.New(reg, metrics.WithKarmadaNames())
	if err != nil {
		fmt.Println(err)
		return
	}
	m.Added("resource-binding", "member1", "apps/v1/Deployment")
	m.Added("resource-binding", "member1", "apps/v1/Service")
	m.Processed("resource-binding", "success", time.Second)
	fmt.Println(testutil.ToFloat64(karmadaDepth.WithLabelValues("resource-binding")))
	fmt.Println(testutil.ToFloat64(karmadaProcessed.WithLabelValues("resource-binding", "success")))
	// Output:
	// 2
	// 1
}

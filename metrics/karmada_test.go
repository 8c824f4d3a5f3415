package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/metrics"
)

// karmadaCollectors are built as Karmada v1.18's pkg/metrics (cluster.go)
// builds its eviction series: same names, help, label names, types and
// buckets. The core module does not import Karmada.
type karmadaCollectors struct {
	depth     *prometheus.GaugeVec
	kind      *prometheus.GaugeVec
	latency   *prometheus.HistogramVec
	processed *prometheus.CounterVec
}

func newKarmadaCollectors() karmadaCollectors {
	return karmadaCollectors{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eviction_queue_depth",
			Help: "Current depth of the eviction queue",
		}, []string{"name"}),
		kind: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eviction_kind_total",
			Help: "Number of resources in the eviction queue by resource kind",
		}, []string{"member_cluster", "resource_kind"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "eviction_processing_latency_seconds",
			Help:    "Latency of processing an eviction task in seconds",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"name"}),
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eviction_processing_total",
			Help: "Total number of evictions processed",
		}, []string{"name", "result"}),
	}
}

func (k karmadaCollectors) all() []prometheus.Collector {
	return []prometheus.Collector{k.depth, k.kind, k.latency, k.processed}
}

// karmadaRegistry is what karmada-controller-manager's Run leaves on
// controller-runtime's metrics.Registry before its controllers start.
func karmadaRegistry(t *testing.T) (*prometheus.Registry, karmadaCollectors) {
	t.Helper()
	reg := prometheus.NewRegistry()
	k := newKarmadaCollectors()
	reg.MustRegister(k.all()...)
	return reg, k
}

func TestDefaultNamesClashWithKarmadaNamesTheFix(t *testing.T) {
	reg, _ := karmadaRegistry(t)
	m, err := metrics.New(reg)
	require.Error(t, err)
	assert.Nil(t, m)
	assert.Contains(t, err.Error(), "metrics: registering eviction_processing_latency_seconds")
	assert.Contains(t, err.Error(), "pass metrics.WithKarmadaNames()")

	// All or nothing: nothing of ours is left behind, so the right call works.
	_, err = metrics.New(reg, metrics.WithKarmadaNames())
	require.NoError(t, err)

	// A second Metrics is not Karmada: the hint is not given.
	reg2 := prometheus.NewRegistry()
	_, err = metrics.New(reg2)
	require.NoError(t, err)
	_, err = metrics.New(reg2)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "WithKarmadaNames")
}

func TestWithKarmadaNamesRecordsIntoKarmadasCollectors(t *testing.T) {
	reg, k := karmadaRegistry(t)
	m, err := metrics.New(reg, metrics.WithKarmadaNames())
	require.NoError(t, err)

	const rb, dep = "resource-binding", "apps/v1/Deployment"
	m.Added(rb, "member1", dep)
	m.Added(rb, "member1", dep)
	m.Added(rb, "member2", dep)
	assert.Equal(t, 3.0, testutil.ToFloat64(k.depth.WithLabelValues(rb)))
	assert.Equal(t, 2.0, testutil.ToFloat64(k.kind.WithLabelValues("member1", dep)))
	assert.Equal(t, 1.0, testutil.ToFloat64(k.kind.WithLabelValues("member2", dep)))

	m.Removed(rb, "member2", dep)
	m.Processed(rb, "success", 3*time.Second)
	m.Processed(rb, "error", time.Second)
	assert.Equal(t, 2.0, testutil.ToFloat64(k.depth.WithLabelValues(rb)))
	assert.Equal(t, 1, testutil.CollectAndCount(k.kind), "member2's series is deleted at 0")
	assert.Equal(t, 1.0, testutil.ToFloat64(k.processed.WithLabelValues(rb, "success")))
	assert.Equal(t, 1.0, testutil.ToFloat64(k.processed.WithLabelValues(rb, "error")))
	require.NoError(t, testutil.CollectAndCompare(k.latency, strings.NewReader(`
# HELP eviction_processing_latency_seconds Latency of processing an eviction task in seconds
# TYPE eviction_processing_latency_seconds histogram
eviction_processing_latency_seconds_bucket{name="resource-binding",le="0.001"} 0
eviction_processing_latency_seconds_bucket{name="resource-binding",le="0.002"} 0
eviction_processing_latency_seconds_bucket{name="resource-binding",le="0.004"} 0
eviction_processing_latency_seconds_bucket{name="resource-binding",le="0.008"} 0
eviction_processing_latency_seconds_bucket{name="resource-binding",le="0.016"} 0
eviction_processing_latency_seconds_bucket{name="resource-binding",le="0.032"} 0
eviction_processing_latency_seconds_bucket{name="resource-binding",le="0.064"} 0
eviction_processing_latency_seconds_bucket{name="resource-binding",le="0.128"} 0
eviction_processing_latency_seconds_bucket{name="resource-binding",le="0.256"} 0
eviction_processing_latency_seconds_bucket{name="resource-binding",le="0.512"} 0
eviction_processing_latency_seconds_bucket{name="resource-binding",le="1.024"} 1
eviction_processing_latency_seconds_bucket{name="resource-binding",le="2.048"} 1
eviction_processing_latency_seconds_bucket{name="resource-binding",le="4.096"} 2
eviction_processing_latency_seconds_bucket{name="resource-binding",le="8.192"} 2
eviction_processing_latency_seconds_bucket{name="resource-binding",le="16.384"} 2
eviction_processing_latency_seconds_bucket{name="resource-binding",le="+Inf"} 2
eviction_processing_latency_seconds_sum{name="resource-binding"} 4
eviction_processing_latency_seconds_count{name="resource-binding"} 2
`)))

	// The series Karmada does not ship keep the library's names, on the
	// same registry.
	m.FleetHealth(10, 4)
	m.Cancelled(rb, 2)
	assert.Equal(t, map[string]float64{
		"cluster_fault_num": 4,
		`eviction_cancelled_total{queue_name="resource-binding"}`: 2,
	}, samples(t, reg, "cluster_fault_num", "eviction_cancelled_total"))
	assert.Empty(t, samples(t, reg, "eviction_total", "evict_kind_total"), "no library-named copies of Karmada's series")
}

// A queue wired as in a Karmada fork: its depth, kinds and attempts show in
// Karmada's own collectors.
func TestWithKarmadaNamesThroughAQueue(t *testing.T) {
	reg, k := karmadaRegistry(t)
	m, err := metrics.New(reg, metrics.WithKarmadaNames())
	require.NoError(t, err)

	left := make(chan evictionqueue.Outcome, 10)
	q, err := evictionqueue.New(evictionqueue.Config{
		Name:    "resource-binding",
		Metrics: m,
		Clock:   clocktesting.NewFakeClock(testEpoch),
		OnOutcome: func(o evictionqueue.Outcome) {
			if o.Kind == evictionqueue.Succeeded || o.Kind == evictionqueue.Abandoned {
				left <- o
			}
		},
	}, func(_ context.Context, it evictionqueue.Item) error {
		if it.Key == "ns/nowhere" {
			return evictionqueue.Abandon(errors.New("no feasible cluster"))
		}
		return nil
	})
	require.NoError(t, err)

	const dep = "apps/v1/Deployment"
	q.Add(evictionqueue.Item{Cluster: "member1", Key: "ns/web", ResourceKind: dep})
	q.Add(evictionqueue.Item{Cluster: "member1", Key: "ns/nowhere", ResourceKind: dep})
	q.Add(evictionqueue.Item{Cluster: "member2", Key: "ns/web", ResourceKind: "v1/Service"})
	assert.Equal(t, 3.0, testutil.ToFloat64(k.depth.WithLabelValues("resource-binding")))
	assert.Equal(t, 2.0, testutil.ToFloat64(k.kind.WithLabelValues("member1", dep)))
	assert.Equal(t, 1, q.CancelCluster("member2"))
	assert.Equal(t, 1, testutil.CollectAndCount(k.kind))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	<-left
	<-left
	cancel()
	require.NoError(t, <-done)

	assert.Equal(t, 0.0, testutil.ToFloat64(k.depth.WithLabelValues("resource-binding")))
	assert.Equal(t, 0, testutil.CollectAndCount(k.kind), "nothing queued, no kind series")
	assert.Equal(t, 1.0, testutil.ToFloat64(k.processed.WithLabelValues("resource-binding", "success")))
	assert.Equal(t, 1.0, testutil.ToFloat64(k.processed.WithLabelValues("resource-binding", "abandoned")))
	assert.Equal(t, 2, int(histogramCount(t, k.latency)))
}

func histogramCount(t *testing.T, h *prometheus.HistogramVec) uint64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(h))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var n uint64
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			n += s.GetHistogram().GetSampleCount()
		}
	}
	return n
}

// Without Karmada's collectors, WithKarmadaNames registers its own, built as
// Karmada's are, so the series are the same whoever registered them.
func TestWithKarmadaNamesOnAnEmptyRegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg, metrics.WithKarmadaNames(), metrics.WithNamespace("failover"))
	require.NoError(t, err)
	m.Added("rb", "member1", "v1/ConfigMap")
	m.FleetHealth(2, 1)
	assert.Equal(t, map[string]float64{
		`eviction_queue_depth{name="rb"}`:                                            1,
		`eviction_kind_total{member_cluster="member1",resource_kind="v1/ConfigMap"}`: 1,
		"failover_cluster_fault_num":                                                 1,
	}, samples(t, reg, "eviction_queue_depth", "eviction_kind_total", "failover_cluster_fault_num"),
		"Karmada's four never take the namespace; the library's series do")

	// Karmada's collectors are the same series: registering them after New
	// is refused as already registered, not as a different series.
	k := newKarmadaCollectors()
	for _, c := range k.all() {
		var already prometheus.AlreadyRegisteredError
		assert.True(t, errors.As(reg.Register(c), &already))
	}
}

func TestWithKarmadaNamesRefusals(t *testing.T) {
	t.Run("buckets cannot change an adopted histogram", func(t *testing.T) {
		reg, _ := karmadaRegistry(t)
		_, err := metrics.New(reg, metrics.WithKarmadaNames(), metrics.WithLatencyBuckets([]float64{1, 10}))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "metrics: eviction_processing_latency_seconds is already registered")
		assert.Contains(t, err.Error(), "WithLatencyBuckets")
		_, err = metrics.New(reg, metrics.WithKarmadaNames())
		require.NoError(t, err, "the failed New left nothing behind and adopted nothing for good")
	})
	t.Run("a series of that name with other labels", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eviction_processing_total", Help: "Total number of evictions processed",
		}, []string{"queue", "result"}))
		_, err := metrics.New(reg, metrics.WithKarmadaNames())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "metrics: registering eviction_processing_total with Karmada v1.18's labels and help")
	})
	t.Run("the same label names in another order", func(t *testing.T) {
		// The registry takes it for the same series (AlreadyRegisteredError),
		// but writing by position would put each cluster under
		// resource_kind and each kind under member_cluster.
		reg := prometheus.NewRegistry()
		swapped := prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eviction_kind_total",
			Help: "Number of resources in the eviction queue by resource kind",
		}, []string{"resource_kind", "member_cluster"})
		reg.MustRegister(swapped)
		m, err := metrics.New(reg, metrics.WithKarmadaNames())
		require.Error(t, err)
		assert.Nil(t, m)
		assert.Contains(t, err.Error(), "metrics: eviction_kind_total is already registered as")
		assert.Regexp(t, `registered as .*resource_kind.*member_cluster.*, not as Karmada v1.18 registers it`, err.Error())
		assert.Contains(t, err.Error(), "cannot adopt it")
	})
	t.Run("an identical series of another type", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		// Same descriptor as Karmada's GaugeVec, but a custom collector.
		desc := prometheus.NewDesc("eviction_queue_depth", "Current depth of the eviction queue", []string{"name"}, nil)
		reg.MustRegister(descOnly{desc})
		_, err := metrics.New(reg, metrics.WithKarmadaNames())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "metrics: eviction_queue_depth is already registered as a metrics_test.descOnly")
	})
}

type descOnly struct{ d *prometheus.Desc }

func (c descOnly) Describe(ch chan<- *prometheus.Desc) { ch <- c.d }
func (descOnly) Collect(chan<- prometheus.Metric)      {}

package karmada_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	kmetrics "github.com/karmada-io/karmada/pkg/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/metrics"
)

// karmadaCollector finds one of the collectors Karmada v1.18's pkg/metrics
// registers on controller-runtime's registry. They are package globals in
// Karmada, so tests read differences, never absolute values.
func karmadaCollector[T prometheus.Collector](t *testing.T, name string) T {
	t.Helper()
	for _, c := range kmetrics.ClusterCollectors() {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		if strings.Contains((<-ch).String(), `fqName: "`+name+`"`) {
			return c.(T)
		}
	}
	t.Fatalf("Karmada registers no collector %q", name)
	panic("unreachable")
}

// Inside karmada-controller-manager: Karmada's real collectors are
// registered first, metrics.New(reg, metrics.WithKarmadaNames()) adopts
// them, and what an eviction queue records is read back from Karmada's own
// collectors, where Karmada's dashboards read it.
func TestWithKarmadaNamesRecordsIntoKarmadasRealCollectors(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	reg := prometheus.NewRegistry()
	reg.MustRegister(kmetrics.ClusterCollectors()...) // as karmada-controller-manager registers them

	_, err := metrics.New(reg)
	require.ErrorContains(t, err, "WithKarmadaNames", "the library's default names clash, and the error says what to do")
	m, err := metrics.New(reg, metrics.WithKarmadaNames())
	require.NoError(t, err)

	depth := karmadaCollector[*prometheus.GaugeVec](t, "eviction_queue_depth")
	kind := karmadaCollector[*prometheus.GaugeVec](t, "eviction_kind_total")
	total := karmadaCollector[*prometheus.CounterVec](t, "eviction_processing_total")
	latency := karmadaCollector[*prometheus.HistogramVec](t, "eviction_processing_latency_seconds")

	// Karmada's taint manager names its queue "binding-eviction".
	const queue, dep = "binding-eviction", "apps/v1/Deployment"
	succeeded := testutil.ToFloat64(total.WithLabelValues(queue, "success"))
	abandoned := testutil.ToFloat64(total.WithLabelValues(queue, "abandoned"))
	observed := histogram(t, latency, queue)

	clock := clocktesting.NewFakeClock(time.Date(2025, 1, 17, 3, 0, 0, 0, time.UTC))
	left := make(chan struct{}, 2)
	q, err := evictionqueue.New(evictionqueue.Config{
		Name: queue, Metrics: m, Clock: clock,
		OnOutcome: func(o evictionqueue.Outcome) {
			if o.Kind == evictionqueue.Succeeded || o.Kind == evictionqueue.Abandoned {
				left <- struct{}{}
			}
		},
	}, func(_ context.Context, it evictionqueue.Item) error {
		if it.Key == "default/nowhere" {
			return evictionqueue.Abandon(errors.New("no feasible cluster"))
		}
		return nil
	})
	require.NoError(t, err)
	q.Add(evictionqueue.Item{Cluster: "member1", Key: "default/nginx", ResourceKind: dep})
	q.Add(evictionqueue.Item{Cluster: "member1", Key: "default/nowhere", ResourceKind: dep})
	assert.Equal(t, 2.0, testutil.ToFloat64(depth.WithLabelValues(queue)))
	assert.Equal(t, 2.0, testutil.ToFloat64(kind.WithLabelValues("member1", dep)))

	clock.Step(2 * time.Second) // both waited 2s before a worker took them
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	<-left
	<-left
	cancel()
	require.NoError(t, <-done)

	assert.Equal(t, 0.0, testutil.ToFloat64(depth.WithLabelValues(queue)))
	assert.Equal(t, 1.0, testutil.ToFloat64(total.WithLabelValues(queue, "success"))-succeeded)
	assert.Equal(t, 1.0, testutil.ToFloat64(total.WithLabelValues(queue, "abandoned"))-abandoned)
	after := histogram(t, latency, queue)
	assert.Equal(t, uint64(2), after.count-observed.count)
	assert.InDelta(t, 4.0, after.sum-observed.sum, 1e-9, "2s each, from first enqueue")

	// Karmada's own recording functions write the very same series.
	kmetrics.RecordEvictionProcessingMetrics(queue, nil, clock.Now())
	assert.Equal(t, 2.0, testutil.ToFloat64(total.WithLabelValues(queue, "success"))-succeeded)
}

type histogramSample struct {
	count uint64
	sum   float64
}

// histogram reads the series of one queue name from h.
func histogram(t *testing.T, h *prometheus.HistogramVec, name string) histogramSample {
	t.Helper()
	ch := make(chan prometheus.Metric, 16)
	h.Collect(ch)
	close(ch)
	for m := range ch {
		pb := new(dto.Metric)
		require.NoError(t, m.Write(pb))
		for _, l := range pb.GetLabel() {
			if l.GetName() == "name" && l.GetValue() == name {
				return histogramSample{count: pb.GetHistogram().GetSampleCount(), sum: pb.GetHistogram().GetSampleSum()}
			}
		}
	}
	return histogramSample{}
}

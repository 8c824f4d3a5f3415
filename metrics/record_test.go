package metrics_test

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/failoverkit/failover/metrics"
)

func TestQueueGaugesBalanceUnderConcurrentCallsAndScrapesAgree(t *testing.T) {
	m, reg := newMetrics(t)
	const workers, perWorker = 8, 200
	queues := []string{"resource-binding", "cluster-resource-binding"}
	kinds := []string{"apps/v1/Deployment", "v1/ConfigMap", "v1/Namespace"}

	// Every worker adds its items, all wait, then every worker removes them,
	// with scrapes running throughout: the counts in the middle and at the
	// end must be exact, not merely eventually close.
	var added, scraping sync.WaitGroup
	added.Add(workers)
	stopScrape := make(chan struct{})
	scraping.Go(func() {
		for {
			select {
			case <-stopScrape:
				return
			default:
				// Every item counts once in each gauge, and a scrape reads
				// both at one moment: their sums agree in every scrape.
				mfs, err := reg.Gather()
				if !assert.NoError(t, err) {
					return
				}
				sums := map[string]float64{}
				for _, mf := range mfs {
					for _, mt := range mf.GetMetric() {
						sums[mf.GetName()] += mt.GetGauge().GetValue()
					}
				}
				if !assert.Equal(t, sums["eviction_total"], sums["evict_kind_total"], "one scrape saw the two gauges at different moments") {
					return
				}
			}
		}
	})
	proceed := make(chan struct{})
	var done sync.WaitGroup
	for w := range workers {
		done.Go(func() {
			for i := range perWorker {
				m.Added(queues[i%2], fmt.Sprintf("member%d", w%4), kinds[i%3])
			}
			added.Done()
			<-proceed
			for i := range perWorker {
				m.Removed(queues[i%2], fmt.Sprintf("member%d", w%4), kinds[i%3])
			}
		})
	}
	added.Wait()
	mid := samples(t, reg, "eviction_total", "evict_kind_total")
	assert.Equal(t, float64(workers*perWorker/2), mid[`eviction_total{queue_name="resource-binding"}`])
	assert.Equal(t, float64(workers*perWorker/2), mid[`eviction_total{queue_name="cluster-resource-binding"}`])
	var kindSum float64
	for k, v := range mid {
		if strings.HasPrefix(k, "evict_kind_total") {
			kindSum += v
		}
	}
	assert.Equal(t, float64(workers*perWorker), kindSum)
	assert.Len(t, mid, 2+4*3, "want one series per queue and per (cluster, kind)")

	close(proceed)
	done.Wait()
	close(stopScrape)
	scraping.Wait()
	assert.Equal(t, map[string]float64{
		`eviction_total{queue_name="resource-binding"}`:         0,
		`eviction_total{queue_name="cluster-resource-binding"}`: 0,
	}, samples(t, reg, "eviction_total", "evict_kind_total", "eviction_unmatched_removals_total"))
}

func TestFleetHealth(t *testing.T) {
	tests := []struct {
		name          string
		total, faulty int
		wantNum       float64
		wantRate      float64
	}{
		{"failure rate is faulty over total", 20, 5, 5, 0.25},
		{"an empty fleet has failure rate 0, not NaN", 0, 0, 0, 0},
		{"every cluster faulty", 3, 3, 3, 1},
		{"negative counts are recorded as 0", -1, -2, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, reg := newMetrics(t)
			m.FleetHealth(7, 7) // a previous value the call must overwrite
			m.FleetHealth(tt.total, tt.faulty)
			assert.Equal(t, map[string]float64{
				"cluster_fault_num":    tt.wantNum,
				"cluster_failure_rate": tt.wantRate,
			}, samples(t, reg, "cluster_fault_num", "cluster_failure_rate"))
		})
	}
}

func TestEvictionRate(t *testing.T) {
	tests := []struct {
		name string
		in   float64
		want float64
	}{
		{"the primary rate", 0.5, 0.5},
		{"paused", 0, 0},
		{"NaN is recorded as 0", math.NaN(), 0},
		{"negative is recorded as 0", -1, 0},
		{"unlimited stays +Inf", math.Inf(1), math.Inf(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, reg := newMetrics(t)
			m.EvictionRate(0.1)
			m.EvictionRate(tt.in)
			assert.Equal(t, map[string]float64{"eviction_rate": tt.want}, samples(t, reg, "eviction_rate"))
		})
	}
}

func TestProcessedCountsAttemptsByResultAndObservesLatency(t *testing.T) {
	m, reg := newMetrics(t)
	m.Processed("rb", "success", 30*time.Millisecond)
	m.Processed("rb", "success", 90*time.Second)
	m.Processed("rb", "error", 10*time.Minute)
	m.Processed("rb", "abandoned", -time.Second) // clock stepped back
	m.Processed("crb", "success", time.Second)

	assert.Equal(t, map[string]float64{
		`eviction_processing_total{queue_name="rb",result="success"}`:   2,
		`eviction_processing_total{queue_name="rb",result="error"}`:     1,
		`eviction_processing_total{queue_name="rb",result="abandoned"}`: 1,
		`eviction_processing_total{queue_name="crb",result="success"}`:  1,
	}, samples(t, reg, "eviction_processing_total"))

	rb := histogram(t, reg, "rb")
	assert.Equal(t, uint64(4), rb.GetSampleCount())
	assert.InDelta(t, 0.03+90+600+0, rb.GetSampleSum(), 1e-9, "a negative latency must count as 0")
	assert.Equal(t, uint64(1), histogram(t, reg, "crb").GetSampleCount())
}

func TestDefaultLatencyBucketsSpanMillisecondsToAnHour(t *testing.T) {
	b := metrics.DefaultLatencyBuckets()
	require.NotEmpty(t, b)
	assert.InDelta(t, 0.001, b[0], 1e-12, "first bucket")
	assert.InDelta(t, 3600, b[len(b)-1], 1e-6, "last bucket")
	for i := 1; i < len(b); i++ {
		assert.Greater(t, b[i], b[i-1], "bucket %d", i)
		// No gap wider than a factor of 3, so a latency is never placed
		// more coarsely than that anywhere in the range.
		assert.LessOrEqual(t, b[i]/b[i-1], 3.0, "bucket %d", i)
	}

	// The histogram New registers uses them: a 50-minute wait (the 300th item
	// at 0.1/s) lands in a finite bucket, not only in +Inf.
	m, reg := newMetrics(t)
	m.Processed("rb", "success", 50*time.Minute)
	h := histogram(t, reg, "rb")
	var bounds []float64
	firstHit := math.Inf(1)
	for _, bk := range h.GetBucket() {
		bounds = append(bounds, bk.GetUpperBound())
		if bk.GetCumulativeCount() == 1 && math.IsInf(firstHit, 1) {
			firstHit = bk.GetUpperBound()
		}
	}
	assert.Equal(t, b, bounds)
	assert.InDelta(t, 3600, firstHit, 1e-6)
}

func TestWithLatencyBucketsIsCopied(t *testing.T) {
	in := []float64{1, 2}
	opt := metrics.WithLatencyBuckets(in)
	in[1] = 0 // a caller reusing its slice must not corrupt the option
	m, reg := newMetrics(t, opt)
	m.Processed("rb", "success", time.Second)
	var bounds []float64
	for _, bk := range histogram(t, reg, "rb").GetBucket() {
		bounds = append(bounds, bk.GetUpperBound())
	}
	assert.Equal(t, []float64{1, 2}, bounds)
}

func TestCancelledAndInFlight(t *testing.T) {
	m, reg := newMetrics(t)
	m.Cancelled("rb", 3)
	m.Cancelled("rb", 0)  // nothing cancelled
	m.Cancelled("rb", -1) // a counter cannot go down; must not panic
	m.Cancelled("rb", 2)
	m.InFlight("rb", 4)
	m.InFlight("crb", 1)
	m.InFlight("crb", -1)
	assert.Equal(t, map[string]float64{
		`eviction_cancelled_total{queue_name="rb"}`: 5,
		`eviction_in_flight{queue_name="rb"}`:       4,
		`eviction_in_flight{queue_name="crb"}`:      0,
	}, samples(t, reg, "eviction_cancelled_total", "eviction_in_flight"))
}

func TestInvalidUTF8LabelsAreRepairedNotFatal(t *testing.T) {
	m, reg := newMetrics(t)
	m.Added("rb", "bad\xffname", "v1/ConfigMap")
	m.Processed("q\xfe", "success", time.Second)
	got := samples(t, reg, "evict_kind_total")
	assert.Equal(t, map[string]float64{"evict_kind_total{cluster_name=\"bad\uFFFDname\",resource_kind=\"v1/ConfigMap\"}": 1}, got)
	// The repaired name matches on removal too.
	m.Removed("rb", "bad\xffname", "v1/ConfigMap")
	assert.Empty(t, samples(t, reg, "evict_kind_total"))
}

func TestNilMetricsRecordsNothing(t *testing.T) {
	var m *metrics.Metrics
	assert.NotPanics(t, func() {
		m.Added("q", "c", "k")
		m.Removed("q", "c", "k")
		m.Processed("q", "success", time.Second)
		m.Cancelled("q", 1)
		m.InFlight("q", 1)
		m.FleetHealth(1, 1)
		m.EvictionRate(1)
	})
}

func histogram(t *testing.T, reg prometheus.Gatherer, queue string) *dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "eviction_processing_latency_seconds" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if lp.GetName() == "queue_name" && lp.GetValue() == queue {
					return mt.GetHistogram()
				}
			}
		}
	}
	t.Fatalf("no latency histogram for queue %q", queue)
	return nil
}

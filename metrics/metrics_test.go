package metrics_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/failoverkit/failover/metrics"
)

func newMetrics(t *testing.T, opts ...metrics.Option) (*metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, opts...)
	require.NoError(t, err)
	return m, reg
}

// recordOneOfEach touches every series so that every vector has a child.
func recordOneOfEach(m *metrics.Metrics) {
	m.FleetHealth(4, 1)
	m.EvictionRate(0.5)
	m.EvictionsFrozen(true)
	m.Added("resource-binding", "member1", "apps/v1/Deployment")
	m.Processed("resource-binding", "success", 2*time.Second)
	m.Cancelled("resource-binding", 3)
	m.InFlight("resource-binding", 2)
	m.InFlightExpired("resource-binding")
	m.WaitingForTransitBudget("resource-binding", 2)
	m.APIRequests("resource-binding", "get", 3)
	m.Removed("resource-binding", "member1", "apps/v1/Secret") // unmatched
	m.Failback(metrics.FailbackFailedBack)
	m.FailbackWaiting(metrics.FailbackWaitingStabilizing, 4)
	m.FailbacksInFlight(1)
	m.ApplicationFailover(metrics.AppFailoverFailedOver)
	m.AppFailoverHeld(metrics.AppFailoverHeldBadRollout).Set("shop/web", true)
}

func TestNewRegistersEverySeriesOnTheGivenRegistryOnly(t *testing.T) {
	m, reg := newMetrics(t, metrics.WithLatencyBuckets([]float64{1, 10}))
	recordOneOfEach(m)

	want := `
# HELP application_failover_held Number of bindings whose application failovers are held now, by reason (bad_rollout: unhealthy on more than the threshold of their clusters at once).
# TYPE application_failover_held gauge
application_failover_held{reason="bad_rollout"} 1
# HELP application_failover_total Number of decisions to fail a workload over from a cluster where it was unhealthy for its window, by result (failed_over, held_back, refused, waiting, error).
# TYPE application_failover_total counter
application_failover_total{result="failed_over"} 1
# HELP cluster_failure_rate Faulty member clusters divided by all member clusters; 0 when there are none.
# TYPE cluster_failure_rate gauge
cluster_failure_rate 0.25
# HELP cluster_fault_num Number of faulty member clusters.
# TYPE cluster_fault_num gauge
cluster_fault_num 1
# HELP evict_kind_total Number of items in the eviction queues now by the cluster evicted from and the resource's APIVersion/Kind.
# TYPE evict_kind_total gauge
evict_kind_total{cluster_name="member1",resource_kind="apps/v1/Deployment"} 1
# HELP eviction_api_requests_total Number of requests the eviction handlers sent the API server, by verb (get, update).
# TYPE eviction_api_requests_total counter
eviction_api_requests_total{queue_name="resource-binding",verb="get"} 3
# HELP eviction_cancelled_total Number of queued items dropped because their cluster recovered.
# TYPE eviction_cancelled_total counter
eviction_cancelled_total{queue_name="resource-binding"} 3
# HELP eviction_frozen 1 while an operator's freeze holds every automatic eviction back, 0 otherwise.
# TYPE eviction_frozen gauge
eviction_frozen 1
# HELP eviction_in_flight Number of evictions accepted and finishing in the background, not yet confirmed.
# TYPE eviction_in_flight gauge
eviction_in_flight{queue_name="resource-binding"} 2
# HELP eviction_in_flight_expired_total Number of background evictions not confirmed within the queue's InFlightTTL (and retried or dropped).
# TYPE eviction_in_flight_expired_total counter
eviction_in_flight_expired_total{queue_name="resource-binding"} 1
# HELP eviction_processing_latency_seconds Time from an item's first enqueue to its processing.
# TYPE eviction_processing_latency_seconds histogram
eviction_processing_latency_seconds_bucket{queue_name="resource-binding",le="1"} 0
eviction_processing_latency_seconds_bucket{queue_name="resource-binding",le="10"} 1
eviction_processing_latency_seconds_bucket{queue_name="resource-binding",le="+Inf"} 1
eviction_processing_latency_seconds_sum{queue_name="resource-binding"} 2
eviction_processing_latency_seconds_count{queue_name="resource-binding"} 1
# HELP eviction_processing_total Number of eviction processing attempts by result (success, error, abandoned, deferred).
# TYPE eviction_processing_total counter
eviction_processing_total{queue_name="resource-binding",result="success"} 1
# HELP eviction_rate Evictions per second the fleet-wide rate limiter allows now; 0 while paused.
# TYPE eviction_rate gauge
eviction_rate 0.5
# HELP eviction_storm_hold 1 while a failure storm (much of the fleet faulty at once) holds every eviction back, 0 otherwise.
# TYPE eviction_storm_hold gauge
eviction_storm_hold 0
# HELP eviction_total Number of items in the eviction queue now, pending or backing off.
# TYPE eviction_total gauge
eviction_total{queue_name="resource-binding"} 1
# HELP eviction_waiting_for_transit_budget Number of evictions waiting because their binding's budget of clusters in transit is used up.
# TYPE eviction_waiting_for_transit_budget gauge
eviction_waiting_for_transit_budget{queue_name="resource-binding"} 2
# HELP eviction_unmatched_removals_total Number of removals reported for items never reported added; ignored, non-zero means a caller bug.
# TYPE eviction_unmatched_removals_total counter
eviction_unmatched_removals_total{queue_name="resource-binding"} 1
# HELP failback_in_flight Number of bindings going back to their origin now: their failback's graceful eviction tasks open.
# TYPE failback_in_flight gauge
failback_in_flight 1
# HELP failback_total Number of failback decisions of bindings whose origin had been healthy for the window, by result (failed_back, not_placed, held_back, error).
# TYPE failback_total counter
failback_total{result="failed_back"} 1
# HELP failback_waiting Number of failed-over bindings not gone back to their origin yet, by reason (stabilizing, not_placed, held_back).
# TYPE failback_waiting gauge
failback_waiting{reason="stabilizing"} 4
`
	// No name filter: the registry must hold exactly these series, no more.
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want)))

	// Nothing leaked onto the global registry.
	global, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, mf := range global {
		assert.NotContains(t, mf.GetName(), "evict", "series registered globally")
		assert.NotContains(t, mf.GetName(), "cluster_f", "series registered globally")
	}
}

func TestWithNamespacePrefixesEveryName(t *testing.T) {
	m, reg := newMetrics(t, metrics.WithNamespace("karmada"))
	recordOneOfEach(m)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	assert.ElementsMatch(t, []string{
		"karmada_cluster_failure_rate", "karmada_cluster_fault_num", "karmada_evict_kind_total", "karmada_eviction_api_requests_total",
		"karmada_eviction_cancelled_total", "karmada_eviction_frozen", "karmada_eviction_in_flight", "karmada_eviction_in_flight_expired_total",
		"karmada_eviction_processing_latency_seconds", "karmada_eviction_processing_total",
		"karmada_eviction_rate", "karmada_eviction_storm_hold", "karmada_eviction_total", "karmada_eviction_unmatched_removals_total",
		"karmada_eviction_waiting_for_transit_budget",
		"karmada_failback_in_flight", "karmada_failback_total", "karmada_failback_waiting",
		"karmada_application_failover_total", "karmada_application_failover_held",
	}, names)
}

func TestNewRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		reg     prometheus.Registerer
		opts    []metrics.Option
		wantErr string
	}{
		{"nil registerer", nil, nil, "registerer is nil"},
		{"namespace with a dash", prometheus.NewRegistry(), []metrics.Option{metrics.WithNamespace("my-ctl")}, `namespace "my-ctl"`},
		{"namespace starting with a digit", prometheus.NewRegistry(), []metrics.Option{metrics.WithNamespace("1ctl")}, `namespace "1ctl"`},
		{"no buckets", prometheus.NewRegistry(), []metrics.Option{metrics.WithLatencyBuckets(nil)}, "latency buckets are empty"},
		{"decreasing buckets", prometheus.NewRegistry(), []metrics.Option{metrics.WithLatencyBuckets([]float64{1, 0.5})}, "bucket 1 (0.5) is not above bucket 0 (1)"},
		{"equal buckets", prometheus.NewRegistry(), []metrics.Option{metrics.WithLatencyBuckets([]float64{1, 1})}, "bucket 1 (1) is not above"},
		{"NaN bucket", prometheus.NewRegistry(), []metrics.Option{metrics.WithLatencyBuckets([]float64{math.NaN()})}, "bucket 0 is NaN"},
		{"infinite bucket", prometheus.NewRegistry(), []metrics.Option{metrics.WithLatencyBuckets([]float64{1, math.Inf(1)})}, "bucket 1 is +Inf"},
		{"zero bucket", prometheus.NewRegistry(), []metrics.Option{metrics.WithLatencyBuckets([]float64{0, 1})}, "bucket 0 is 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := metrics.New(tt.reg, tt.opts...)
			require.Error(t, err)
			assert.Nil(t, m)
			assert.True(t, strings.HasPrefix(err.Error(), "metrics: "), "error %q lacks the package prefix", err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestNewTwiceOnOneRegistryIsAnErrorNotAPanic(t *testing.T) {
	first, reg := newMetrics(t)

	second, err := metrics.New(reg)
	require.Error(t, err)
	assert.Nil(t, second)
	var already prometheus.AlreadyRegisteredError
	assert.True(t, errors.As(err, &already), "want an AlreadyRegisteredError in the chain, got %v", err)

	// The first instance is untouched and still reported.
	first.FleetHealth(10, 5)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP cluster_fault_num Number of faulty member clusters.
# TYPE cluster_fault_num gauge
cluster_fault_num 5
`), "cluster_fault_num"))

	// A distinct namespace is the way to have two on one registry.
	_, err = metrics.New(reg, metrics.WithNamespace("second"))
	require.NoError(t, err)
}

func TestFailedNewUnregistersWhatItRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	// A series identical to the one New registers last makes New fail after
	// it has registered everything else. (Identical, because a registry
	// remembers the help and labels of a name even after Unregister.)
	foreign := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "eviction_rate",
		Help: "Evictions per second the fleet-wide rate limiter allows now; 0 while paused.",
	})
	require.NoError(t, reg.Register(foreign))

	_, err := metrics.New(reg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "registering eviction_rate")

	// Had New left its other series behind, this second attempt would fail
	// on the first of them.
	require.True(t, reg.Unregister(foreign))
	_, err = metrics.New(reg)
	require.NoError(t, err)
}

func TestQueueGaugesCountItemsExactly(t *testing.T) {
	type call struct {
		removed              bool
		queue, cluster, kind string
	}
	add := func(q, c, k string) call { return call{false, q, c, k} }
	remove := func(q, c, k string) call { return call{true, q, c, k} }
	const rb, crb, dep, ns = "resource-binding", "cluster-resource-binding", "apps/v1/Deployment", "v1/Namespace"

	tests := []struct {
		name  string
		calls []call
		want  map[string]float64
	}{
		{
			name:  "items of one cluster and kind add up",
			calls: []call{add(rb, "m1", dep), add(rb, "m1", dep), add(rb, "m2", dep), add(crb, "m1", ns)},
			want: map[string]float64{
				`eviction_total{queue_name="resource-binding"}`:                          3,
				`eviction_total{queue_name="cluster-resource-binding"}`:                  1,
				`evict_kind_total{cluster_name="m1",resource_kind="apps/v1/Deployment"}`: 2,
				`evict_kind_total{cluster_name="m2",resource_kind="apps/v1/Deployment"}`: 1,
				`evict_kind_total{cluster_name="m1",resource_kind="v1/Namespace"}`:       1,
			},
		},
		{
			name:  "a drained cluster leaves no evict_kind_total series but the queue shows 0",
			calls: []call{add(rb, "m1", dep), add(rb, "m1", dep), add(rb, "m2", dep), remove(rb, "m1", dep), remove(rb, "m1", dep), remove(rb, "m2", dep)},
			want: map[string]float64{
				`eviction_total{queue_name="resource-binding"}`: 0,
			},
		},
		{
			name:  "a removal never added is ignored and counted, not a negative gauge",
			calls: []call{remove(rb, "m1", dep), add(rb, "m1", dep), remove(rb, "m1", dep), remove(rb, "m1", dep)},
			want: map[string]float64{
				`eviction_total{queue_name="resource-binding"}`:                    0,
				`eviction_unmatched_removals_total{queue_name="resource-binding"}`: 2,
			},
		},
		{
			name:  "a removal for another queue does not consume this queue's item",
			calls: []call{add(rb, "m1", dep), remove(crb, "m1", dep)},
			want: map[string]float64{
				`eviction_total{queue_name="resource-binding"}`:                            1,
				`evict_kind_total{cluster_name="m1",resource_kind="apps/v1/Deployment"}`:   1,
				`eviction_unmatched_removals_total{queue_name="cluster-resource-binding"}`: 1,
			},
		},
		{
			name:  "a removal of another kind does not consume this kind's item",
			calls: []call{add(rb, "m1", dep), remove(rb, "m1", "apps/v1/StatefulSet")},
			want: map[string]float64{
				`eviction_total{queue_name="resource-binding"}`:                          1,
				`evict_kind_total{cluster_name="m1",resource_kind="apps/v1/Deployment"}`: 1,
				`eviction_unmatched_removals_total{queue_name="resource-binding"}`:       1,
			},
		},
		{
			name:  "a cluster that fails again after draining gets its series back",
			calls: []call{add(rb, "m1", dep), remove(rb, "m1", dep), add(rb, "m1", dep)},
			want: map[string]float64{
				`eviction_total{queue_name="resource-binding"}`:                          1,
				`evict_kind_total{cluster_name="m1",resource_kind="apps/v1/Deployment"}`: 1,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, reg := newMetrics(t)
			for _, c := range tt.calls {
				if c.removed {
					m.Removed(c.queue, c.cluster, c.kind)
				} else {
					m.Added(c.queue, c.cluster, c.kind)
				}
			}
			assert.Equal(t, tt.want, samples(t, reg, "eviction_total", "evict_kind_total", "eviction_unmatched_removals_total"))
		})
	}
}

// samples gathers reg and returns the value of every gauge and counter sample
// of the named families, keyed as in the text format: name{l1="v1",l2="v2"}.
func samples(t *testing.T, reg prometheus.Gatherer, names ...string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if !slices.Contains(names, mf.GetName()) {
			continue
		}
		for _, mt := range mf.GetMetric() {
			var ls []string
			for _, lp := range mt.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			key := mf.GetName()
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case mt.Gauge != nil:
				out[key] = mt.GetGauge().GetValue()
			case mt.Counter != nil:
				out[key] = mt.GetCounter().GetValue()
			default:
				t.Fatalf("samples: %s is neither gauge nor counter", key)
			}
		}
	}
	return out
}

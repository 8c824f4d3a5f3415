package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/metrics"
	"github.com/failoverkit/failover/ratelimit"
)

var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var (
	_ ratelimit.Metrics           = (*metrics.Metrics)(nil)
	_ ratelimit.DomainMetrics     = (*metrics.Metrics)(nil)
	_ evictionqueue.Metrics       = (*metrics.Metrics)(nil)
	_ evictionqueue.ExpiryMetrics = (*metrics.Metrics)(nil)
	_ evictionqueue.GateMetrics   = (*metrics.Metrics)(nil)
)

// The wiring a controller does: one Metrics given to a Limiter reports the
// fleet's health and the rate in force as health changes.
func TestLimiterReportsThroughMetrics(t *testing.T) {
	m, reg := newMetrics(t)
	tr := ratelimit.NewTracker()
	for _, c := range []string{"m1", "m2", "m3", "m4"} {
		tr.Set(c, false)
	}
	l, err := ratelimit.NewLimiter(ratelimit.DefaultConfig(), tr,
		ratelimit.WithMetrics(m), ratelimit.WithClock(clocktesting.NewFakeClock(testEpoch)))
	require.NoError(t, err)

	l.Rate()
	assert.Equal(t, map[string]float64{"cluster_fault_num": 0, "cluster_failure_rate": 0, "eviction_rate": 0.5},
		samples(t, reg, "cluster_fault_num", "cluster_failure_rate", "eviction_rate"))

	// 3 of 4 faulty: above 0.55 in a small fleet, so evictions pause.
	tr.Set("m1", true)
	tr.Set("m2", true)
	tr.Set("m3", true)
	l.Rate()
	assert.Equal(t, map[string]float64{"cluster_fault_num": 3, "cluster_failure_rate": 0.75, "eviction_rate": 0},
		samples(t, reg, "cluster_fault_num", "cluster_failure_rate", "eviction_rate"))
}

// The queue's Added/Removed calls keep both gauges equal to its Len, and a
// recovered cluster's items leave no series behind.
func TestQueueReportsThroughMetrics(t *testing.T) {
	m, reg := newMetrics(t)
	q, err := evictionqueue.New(evictionqueue.Config{
		Name:    "resource-binding",
		Metrics: m,
		Clock:   clocktesting.NewFakeClock(testEpoch),
	}, func(context.Context, evictionqueue.Item) error { return nil })
	require.NoError(t, err)

	const dep = "apps/v1/Deployment"
	q.Add(evictionqueue.Item{Cluster: "m1", Key: "ns/a", ResourceKind: dep})
	q.Add(evictionqueue.Item{Cluster: "m1", Key: "ns/a", ResourceKind: dep}) // duplicate: not counted
	q.Add(evictionqueue.Item{Cluster: "m1", Key: "ns/b", ResourceKind: dep})
	q.Add(evictionqueue.Item{Cluster: "m2", Key: "ns/a", ResourceKind: dep})
	require.Equal(t, 3, q.Len())
	assert.Equal(t, map[string]float64{
		`eviction_total{queue_name="resource-binding"}`:                          3,
		`evict_kind_total{cluster_name="m1",resource_kind="apps/v1/Deployment"}`: 2,
		`evict_kind_total{cluster_name="m2",resource_kind="apps/v1/Deployment"}`: 1,
	}, samples(t, reg, "eviction_total", "evict_kind_total", "eviction_unmatched_removals_total"))

	require.Equal(t, 2, q.CancelCluster("m1"))
	assert.Equal(t, map[string]float64{
		`eviction_total{queue_name="resource-binding"}`:                          1,
		`evict_kind_total{cluster_name="m2",resource_kind="apps/v1/Deployment"}`: 1,
		`eviction_cancelled_total{queue_name="resource-binding"}`:                2,
	}, samples(t, reg, "eviction_total", "evict_kind_total", "eviction_cancelled_total", "eviction_unmatched_removals_total"))
}

// Under the region rule, the Limiter reports each region's state and rate,
// with the domain label, and drops a region's series when it has no
// cluster left.
func TestLimiterReportsDomainsThroughMetrics(t *testing.T) {
	m, reg := newMetrics(t)
	tr := ratelimit.NewTracker()
	tr.SetInDomains("asia-1", true, "asia")
	tr.SetInDomains("asia-2", true, "asia")
	tr.SetInDomains("eu-1", false, "eu")
	cfg := ratelimit.DefaultConfig()
	cfg.DisruptionDomain = ratelimit.DomainRegion
	l, err := ratelimit.NewLimiter(cfg, tr, ratelimit.WithMetrics(m), ratelimit.WithClock(clocktesting.NewFakeClock(testEpoch)))
	require.NoError(t, err)

	l.Rate()
	names := []string{"domain_disruption_state", "domain_eviction_rate", "eviction_rate"}
	assert.Equal(t, map[string]float64{
		`domain_disruption_state{domain="asia",state="FullDisruption"}`: 1,
		`domain_disruption_state{domain="eu",state="Normal"}`:           1,
		`domain_eviction_rate{domain="asia"}`:                           0.5,
		`domain_eviction_rate{domain="eu"}`:                             0.5,
		"eviction_rate":                                                 0.5,
	}, samples(t, reg, names...))

	tr.Delete("eu-1") // asia alone, fully disrupted: everything pauses
	l.Rate()
	assert.Equal(t, map[string]float64{
		`domain_disruption_state{domain="asia",state="FullDisruption"}`: 1,
		`domain_eviction_rate{domain="asia"}`:                           0,
		"eviction_rate":                                                 0,
	}, samples(t, reg, names...))
}

package metrics_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/metrics"
)

// A queue's expiry counter exists at 0 from its first in-flight count, so a
// rule's increase() sees the first expiry.
func TestInFlightCreatesTheExpiryCounterAtZero(t *testing.T) {
	m, reg := newMetrics(t)
	assert.Empty(t, samples(t, reg, "eviction_in_flight_expired_total"))
	m.InFlight("rb", 1)
	assert.Equal(t, map[string]float64{`eviction_in_flight_expired_total{queue_name="rb"}`: 0},
		samples(t, reg, "eviction_in_flight_expired_total"))
	m.InFlightExpired("rb")
	m.InFlightExpired("crb")
	assert.Equal(t, map[string]float64{
		`eviction_in_flight_expired_total{queue_name="rb"}`:  1,
		`eviction_in_flight_expired_total{queue_name="crb"}`: 1,
	}, samples(t, reg, "eviction_in_flight_expired_total"))

	var none *metrics.Metrics
	assert.NotPanics(t, func() { none.InFlightExpired("rb") })
}

// A queue given the Metrics counts each background eviction it gave up
// waiting for, and nothing else, with no wiring by the caller.
func TestInFlightExpiredCountsTheQueuesExpiries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, reg := newMetrics(t)
		const ttl = time.Minute
		q, err := evictionqueue.New(evictionqueue.Config{
			Name:        "resource-binding",
			Metrics:     m,
			InFlightTTL: ttl,
			MaxRetries:  1,
		}, func(context.Context, evictionqueue.Item) error { return evictionqueue.ErrInProgress })
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- q.Run(ctx) }()

		expired := func() float64 {
			return samples(t, reg, "eviction_in_flight_expired_total")[`eviction_in_flight_expired_total{queue_name="resource-binding"}`]
		}
		confirmed := evictionqueue.Item{Cluster: "member1", Key: "ns/confirmed", ResourceKind: "apps/v1/Deployment"}
		q.Add(confirmed)
		q.Add(evictionqueue.Item{Cluster: "member1", Key: "ns/never-confirmed", ResourceKind: "apps/v1/Deployment"})
		synctest.Wait()
		require.True(t, q.Complete(confirmed))
		assert.Equal(t, 0.0, expired(), "nothing has expired yet")

		time.Sleep(ttl + time.Second) // the first TTL passes: expiry, retried
		synctest.Wait()
		assert.Equal(t, 1.0, expired())
		time.Sleep(ttl + time.Second) // the second: expiry, dropped as failed (MaxRetries 1)
		synctest.Wait()
		assert.Equal(t, 2.0, expired())
		assert.Equal(t, 0, q.Len())

		cancel()
		require.NoError(t, <-done)
	})
}

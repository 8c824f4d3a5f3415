package metrics_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/failoverkit/failover/metrics"
)

// The application failover series follow each call, under the same names
// in both namings; the held set counts each binding once, and a nil
// Metrics records nothing.
func TestAppFailoverSeries(t *testing.T) {
	for _, opts := range [][]metrics.Option{nil, {metrics.WithKarmadaNames()}} {
		m, reg := newMetrics(t, opts...)
		assert.Empty(t, samples(t, reg, "application_failover_total", "application_failover_held"))

		m.ApplicationFailover(metrics.AppFailoverFailedOver)
		m.ApplicationFailover(metrics.AppFailoverRefused)
		m.ApplicationFailover(metrics.AppFailoverRefused)
		held := m.AppFailoverHeld(metrics.AppFailoverHeldBadRollout)
		held.Set("shop/web", true)
		held.Set("shop/web", true)
		held.Set("shop/api", true)
		held.Set("shop/web", false)
		got := samples(t, reg, "application_failover_total", "application_failover_held")
		assert.Equal(t, map[string]float64{
			`application_failover_total{result="failed_over"}`: 1,
			`application_failover_total{result="refused"}`:     2,
			`application_failover_held{reason="bad_rollout"}`:  1,
		}, got)
		assert.Equal(t, 1, held.Len())
	}
	var none *metrics.Metrics
	none.ApplicationFailover(metrics.AppFailoverError)
	h := none.AppFailoverHeld(metrics.AppFailoverHeldBadRollout)
	h.Set("shop/web", true)
	assert.Equal(t, 1, h.Len())
}

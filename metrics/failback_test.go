package metrics_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/failoverkit/failover/metrics"
)

// failback_in_flight exists at 0 from the start; the failback series
// follow each call, under the same names in both namings.
func TestFailbackSeries(t *testing.T) {
	for _, opts := range [][]metrics.Option{nil, {metrics.WithKarmadaNames()}} {
		m, reg := newMetrics(t, opts...)
		assert.Equal(t, map[string]float64{"failback_in_flight": 0},
			samples(t, reg, "failback_total", "failback_waiting", "failback_in_flight"))

		m.Failback(metrics.FailbackFailedBack)
		m.Failback(metrics.FailbackFailedBack)
		m.Failback(metrics.FailbackNotPlaced)
		m.FailbackWaiting(metrics.FailbackWaitingStabilizing, 7)
		m.FailbackWaiting(metrics.FailbackWaitingNotPlaced, -1)
		m.FailbacksInFlight(3)
		got := samples(t, reg, "failback_total", "failback_waiting", "failback_in_flight")
		assert.Equal(t, 2.0, got[`failback_total{result="failed_back"}`])
		assert.Equal(t, 1.0, got[`failback_total{result="not_placed"}`])
		assert.NotContains(t, got, `failback_total{result="held_back"}`)
		assert.Equal(t, 7.0, got[`failback_waiting{reason="stabilizing"}`])
		assert.Equal(t, 0.0, got[`failback_waiting{reason="not_placed"}`], "a negative count is 0")
		assert.Equal(t, 3.0, got["failback_in_flight"])
	}

	var none *metrics.Metrics
	assert.NotPanics(t, func() {
		none.Failback(metrics.FailbackError)
		none.FailbackWaiting(metrics.FailbackWaitingHeldBack, 1)
		none.FailbacksInFlight(1)
	})
}

// FailbackWaiters counts each binding under its one reason: a binding
// moving between reasons leaves the old one's count, one that waits no
// more leaves them all.
func TestFailbackWaiters(t *testing.T) {
	m, reg := newMetrics(t)
	w := m.FailbackWaiters()
	waiting := func() map[string]float64 {
		t.Helper()
		return samples(t, reg, "failback_waiting")
	}
	w.Set("shop/web", metrics.FailbackWaitingStabilizing)
	w.Set("shop/api", metrics.FailbackWaitingStabilizing)
	w.Set("shop/api", metrics.FailbackWaitingStabilizing) // no change
	assert.Equal(t, map[string]float64{`failback_waiting{reason="stabilizing"}`: 2}, waiting())
	w.Set("shop/web", metrics.FailbackWaitingNotPlaced)
	w.Set("shop/api", "")
	assert.Equal(t, map[string]float64{`failback_waiting{reason="stabilizing"}`: 0, `failback_waiting{reason="not_placed"}`: 1}, waiting())
	assert.Equal(t, map[string]int{metrics.FailbackWaitingNotPlaced: 1}, w.Counts())

	var none *metrics.Metrics
	assert.NotPanics(t, func() { none.FailbackWaiters().Set("shop/web", metrics.FailbackWaitingHeldBack) })
}

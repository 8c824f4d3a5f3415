package metrics_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/failoverkit/failover/metrics"
	"github.com/failoverkit/failover/ratelimit"
)

var _ ratelimit.StormMetrics = (*metrics.Metrics)(nil)

// eviction_storm_hold exists at 0 from the start, so an alert on it has a
// series to read before the first storm, and follows each call, under the
// same name in both namings.
func TestStormHoldFollowsTheLimiter(t *testing.T) {
	for _, opts := range [][]metrics.Option{nil, {metrics.WithKarmadaNames()}} {
		m, reg := newMetrics(t, opts...)
		assert.Equal(t, map[string]float64{"eviction_storm_hold": 0}, samples(t, reg, "eviction_storm_hold"))
		m.StormHold(true)
		assert.Equal(t, map[string]float64{"eviction_storm_hold": 1}, samples(t, reg, "eviction_storm_hold"))
		m.StormHold(false)
		assert.Equal(t, map[string]float64{"eviction_storm_hold": 0}, samples(t, reg, "eviction_storm_hold"))
	}

	var none *metrics.Metrics
	assert.NotPanics(t, func() { none.StormHold(true) })
}

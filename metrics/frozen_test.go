package metrics_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/failoverkit/failover/metrics"
)

// eviction_frozen exists at 0 from the start, so an alert on it has a
// series to read before the first freeze, and follows each call, under the
// same name in both namings.
func TestEvictionsFrozenFollowsTheFreeze(t *testing.T) {
	for _, opts := range [][]metrics.Option{nil, {metrics.WithKarmadaNames()}} {
		m, reg := newMetrics(t, opts...)
		assert.Equal(t, map[string]float64{"eviction_frozen": 0}, samples(t, reg, "eviction_frozen"))
		m.EvictionsFrozen(true)
		assert.Equal(t, map[string]float64{"eviction_frozen": 1}, samples(t, reg, "eviction_frozen"))
		m.EvictionsFrozen(false)
		assert.Equal(t, map[string]float64{"eviction_frozen": 0}, samples(t, reg, "eviction_frozen"))
	}

	var none *metrics.Metrics
	assert.NotPanics(t, func() { none.EvictionsFrozen(true) })
}

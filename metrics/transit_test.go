package metrics_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/failoverkit/failover/metrics"
)

// eviction_waiting_for_transit_budget is each queue's count as last
// reported: it goes down as well as up (an item tried again stops
// counting), never below 0, and is named alike in both namings.
func TestWaitingForTransitBudgetFollowsTheCount(t *testing.T) {
	for _, opts := range [][]metrics.Option{nil, {metrics.WithKarmadaNames()}} {
		m, reg := newMetrics(t, opts...)
		const name = "eviction_waiting_for_transit_budget"
		m.WaitingForTransitBudget("resource-binding", 0)
		m.WaitingForTransitBudget("cluster-resource-binding", 0)
		assert.Equal(t, map[string]float64{
			name + `{queue_name="resource-binding"}`:         0,
			name + `{queue_name="cluster-resource-binding"}`: 0,
		}, samples(t, reg, name))
		m.WaitingForTransitBudget("resource-binding", 2)
		assert.Equal(t, 2.0, samples(t, reg, name)[name+`{queue_name="resource-binding"}`])
		m.WaitingForTransitBudget("resource-binding", 1)
		assert.Equal(t, 1.0, samples(t, reg, name)[name+`{queue_name="resource-binding"}`])
		m.WaitingForTransitBudget("resource-binding", -3)
		assert.Equal(t, 0.0, samples(t, reg, name)[name+`{queue_name="resource-binding"}`])
	}

	var none *metrics.Metrics
	assert.NotPanics(t, func() { none.WaitingForTransitBudget("resource-binding", 1) })
}

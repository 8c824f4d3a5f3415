package metrics_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/failoverkit/failover/evictionqueue"
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

// The parked gauge follows the count the queue reports for each gate's
// reason, from a queue that parks an item and opens its gate.
func TestParkedFollowsTheQueue(t *testing.T) {
	m, reg := newMetrics(t)
	const name = "eviction_queue_parked"
	st, err := evictionqueue.NewStore(evictionqueue.Config{Name: "resource-binding", Metrics: m})
	require.NoError(t, err)
	now := time.Now()
	gate := evictionqueue.Gate{Reason: "refused"}
	it := evictionqueue.Item{Cluster: "m1", Key: "ns/a"}
	st.Add(it, now)
	st.Take(now)
	st.Done(it, evictionqueue.Park(gate, time.Minute, errors.New("nowhere to go")), now)
	assert.Equal(t, map[string]float64{name + `{gate="refused",queue_name="resource-binding"}`: 1}, samples(t, reg, name))
	st.Open(gate)
	assert.Equal(t, map[string]float64{name + `{gate="refused",queue_name="resource-binding"}`: 0}, samples(t, reg, name))
	m.Parked("resource-binding", "refused", -1)
	assert.Equal(t, 0.0, samples(t, reg, name)[name+`{gate="refused",queue_name="resource-binding"}`])

	var none *metrics.Metrics
	assert.NotPanics(t, func() { none.Parked("resource-binding", "refused", 1) })
}

// The items parked at the budgets' gates (TransitBudgetGate) are also
// eviction_waiting_for_transit_budget; the other gates leave it alone.
func TestWaitingForTransitBudgetIsTheTransitGatesParkedCount(t *testing.T) {
	m, reg := newMetrics(t)
	const name = "eviction_waiting_for_transit_budget"
	m.Parked("resource-binding", metrics.TransitBudgetGate, 2)
	m.Parked("resource-binding", "refused", 5)
	assert.Equal(t, map[string]float64{name + `{queue_name="resource-binding"}`: 2}, samples(t, reg, name))
	m.Parked("resource-binding", metrics.TransitBudgetGate, 0)
	assert.Equal(t, map[string]float64{name + `{queue_name="resource-binding"}`: 0}, samples(t, reg, name))
}

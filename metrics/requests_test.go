package metrics_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/failoverkit/failover/metrics"
)

// eviction_api_requests_total adds up what each handler reports, by queue
// and verb, alike in both namings; nothing below one request counts.
func TestAPIRequestsAddUp(t *testing.T) {
	for _, opts := range [][]metrics.Option{nil, {metrics.WithKarmadaNames()}} {
		m, reg := newMetrics(t, opts...)
		const name = "eviction_api_requests_total"
		m.APIRequests("binding-eviction", "get", 2)
		m.APIRequests("binding-eviction", "get", 1)
		m.APIRequests("binding-eviction", "update", 1)
		m.APIRequests("binding-eviction", "update", 0)
		m.APIRequests("cluster-binding-eviction", "get", -1)
		assert.Equal(t, map[string]float64{
			name + `{queue_name="binding-eviction",verb="get"}`:    3,
			name + `{queue_name="binding-eviction",verb="update"}`: 1,
		}, samples(t, reg, name))
	}

	var none *metrics.Metrics
	assert.NotPanics(t, func() { none.APIRequests("binding-eviction", "get", 1) })
}

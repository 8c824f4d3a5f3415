package metrics

// APIRequests adds n to eviction_api_requests_total{queue, verb}: the
// requests an eviction handler of queue sent the API server, verb "get" for
// a read and "update" for a write. Divided by the evictions written
// (eviction_processing_total), it is what one eviction costs the API server.
// n below 1 records nothing.
func (m *Metrics) APIRequests(queue, verb string, n int) {
	if m == nil || n < 1 {
		return
	}
	m.apiRequests.WithLabelValues(label(queue), verb).Add(float64(n))
}

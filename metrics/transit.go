package metrics

// WaitingForTransitBudget sets eviction_waiting_for_transit_budget{queue} to
// n, the evictions of queue that wait now because their binding's budget of
// clusters in transit is used up (its graceful eviction tasks open already).
// Each such item is deferred (no permit, no failure) and tried again when a
// task of its binding ends; it stops counting as soon as it is tried again,
// evicted, dropped, or its binding or cluster is gone, so the caller reports
// the size of its set of waiting items on every change. A negative n is
// recorded as 0.
func (m *Metrics) WaitingForTransitBudget(queue string, n int) {
	if m == nil {
		return
	}
	m.transitWaiting.WithLabelValues(label(queue)).Set(float64(max(n, 0)))
}

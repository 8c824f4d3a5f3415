package metrics

// InFlightExpired records that a background eviction of queue (a handler
// call that returned evictionqueue.ErrInProgress) was not confirmed by
// Complete within the queue's InFlightTTL: eviction_in_flight_expired_total
// {queue} goes up by one. The queue then retries the item, or drops it when
// out of retries, so an expiry usually means a second eviction of the same
// binding, and a steady stream of them means whatever confirms evictions
// (the caller's Complete) has stopped.
//
// A queue whose Config.Metrics is a *Metrics calls it itself at each expiry
// (it is evictionqueue.ExpiryMetrics).
func (m *Metrics) InFlightExpired(queue string) {
	if m == nil {
		return
	}
	m.expired.WithLabelValues(label(queue)).Inc()
}

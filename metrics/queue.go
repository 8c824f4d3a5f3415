package metrics

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// Added records that an item of the given cluster and resource kind became
// queued in queue: eviction_total{queue} and evict_kind_total{cluster, kind}
// (with WithKarmadaNames, eviction_queue_depth{name} and
// eviction_kind_total{member_cluster, resource_kind}) each go up by one. The queue calls it once per item however many times the
// item is offered, so the gauges count items, not calls.
func (m *Metrics) Added(queue, cluster, kind string) {
	if m == nil {
		return
	}
	queue, cluster, kind = label(queue), label(cluster), label(kind)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items[itemKey{queue, cluster, kind}]++
	m.byQueue[queue]++
	k := kindKey{cluster, kind}
	m.byKind[k]++
	m.setVecsLocked(queue, k)
}

// setVecsLocked copies the counts of queue and k into the GaugeVecs of
// WithKarmadaNames. Under mu, so the last Set of a series is always its
// current count: gauges set from counts cannot drift as Inc and Dec can.
func (m *Metrics) setVecsLocked(queue string, k kindKey) {
	if m.depthVec == nil {
		return
	}
	m.depthVec.WithLabelValues(queue).Set(float64(m.byQueue[queue]))
	if n, ok := m.byKind[k]; ok {
		m.kindVec.WithLabelValues(k.cluster, k.kind).Set(float64(n))
	} else {
		m.kindVec.DeleteLabelValues(k.cluster, k.kind)
	}
}

// Removed records that an item stopped being queued: taken by a worker,
// cancelled or dropped. It undoes one Added with the same queue, cluster and
// kind. When the (cluster, kind) count reaches zero its evict_kind_total
// series disappears rather than stay at 0, so a fleet whose clusters come and
// go does not accumulate one dead series per cluster and kind. A queue's
// eviction_total stays, at 0.
//
// A Removed with no matching Added would drive a gauge below the number of
// items really queued. It is ignored instead, and counted in
// eviction_unmatched_removals_total{queue}: a non-zero value there points at
// a bug in the caller, never at a wrong gauge.
func (m *Metrics) Removed(queue, cluster, kind string) {
	if m == nil {
		return
	}
	queue, cluster, kind = label(queue), label(cluster), label(kind)
	m.mu.Lock()
	defer m.mu.Unlock()
	ik := itemKey{queue, cluster, kind}
	n := m.items[ik]
	if n == 0 {
		m.unmatched.WithLabelValues(queue).Inc()
		return
	}
	if n == 1 {
		delete(m.items, ik)
	} else {
		m.items[ik] = n - 1
	}
	m.byQueue[queue]--
	// Every Added of ik also counted toward its kindKey, so this count is at
	// least n ≥ 1 here and cannot go negative.
	k := kindKey{cluster, kind}
	if m.byKind[k] == 1 {
		delete(m.byKind, k)
	} else {
		m.byKind[k]--
	}
	m.setVecsLocked(queue, k)
}

// Processed records one processing attempt of an item of queue:
// eviction_processing_total{queue, result} goes up by one and latency, the
// time since the item was first enqueued, is observed in
// eviction_processing_latency_seconds{queue}. result is "success", "error",
// "abandoned", "deferred" or "skipped" as the queue reports it. A negative
// latency (a clock stepped back) is observed as 0.
func (m *Metrics) Processed(queue, result string, latency time.Duration) {
	if m == nil {
		return
	}
	queue = label(queue)
	m.processed.WithLabelValues(queue, label(result)).Inc()
	m.latency.WithLabelValues(queue).Observe(max(latency, 0).Seconds())
}

// Cancelled records that n queued items of queue were dropped because their
// cluster recovered. n ≤ 0 records nothing (a counter cannot go down).
func (m *Metrics) Cancelled(queue string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.cancelled.WithLabelValues(label(queue)).Add(float64(n))
}

// InFlight sets eviction_in_flight{queue} to n, the background evictions of
// queue awaiting confirmation now. A negative n is recorded as 0. It also
// creates eviction_in_flight_expired_total{queue} at 0, so the first expiry
// is an increase a rule can see rather than a new series.
func (m *Metrics) InFlight(queue string, n int) {
	if m == nil {
		return
	}
	queue = label(queue)
	m.inFlight.WithLabelValues(queue).Set(float64(max(n, 0)))
	m.expired.WithLabelValues(queue)
}

// queueGauges exposes eviction_total and evict_kind_total from the counts,
// read under the same lock that Added and Removed hold.
type queueGauges struct{ m *Metrics }

func (g queueGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.m.queueDepth
	ch <- g.m.kindDepth
}

func (g queueGauges) Collect(ch chan<- prometheus.Metric) {
	// Build the samples under the lock and send them after it: the registry
	// reads ch concurrently, and a slow reader must not stall the queues.
	g.m.mu.Lock()
	out := make([]prometheus.Metric, 0, len(g.m.byQueue)+len(g.m.byKind))
	for q, n := range g.m.byQueue {
		out = append(out, prometheus.MustNewConstMetric(g.m.queueDepth, prometheus.GaugeValue, float64(n), q))
	}
	for k, n := range g.m.byKind {
		out = append(out, prometheus.MustNewConstMetric(g.m.kindDepth, prometheus.GaugeValue, float64(n), k.cluster, k.kind))
	}
	g.m.mu.Unlock()
	for _, s := range out {
		ch <- s
	}
}

// label makes v a valid label value. Prometheus refuses (and its helpers
// panic on) label values that are not UTF-8; names from the API server always
// are, so this costs one scan of a short string and changes nothing in
// practice, but a caller passing raw bytes gets a series, not a crash.
func label(v string) string {
	if utf8.ValidString(v) {
		return v
	}
	return strings.ToValidUTF8(v, "\uFFFD")
}

// Parked sets eviction_queue_parked{queue_name, gate} to n, the items of
// queue parked now at a gate whose reason is gate (evictionqueue.Park): an
// eviction with nowhere to go waiting for the fleet to change, one held by
// an operator's freeze, one waiting for its binding's budget of clusters in
// transit. The queue reports the number on every change. A negative n is
// recorded as 0.
func (m *Metrics) Parked(queue, gate string, n int) {
	if m == nil {
		return
	}
	m.parked.WithLabelValues(label(queue), label(gate)).Set(float64(max(n, 0)))
	if gate == TransitBudgetGate {
		m.WaitingForTransitBudget(queue, n)
	}
}

// TransitBudgetGate is the reason of the gates where evictions wait for
// their binding's budget of clusters in transit: the items parked there are
// also eviction_waiting_for_transit_budget.
const TransitBudgetGate = "transit-budget"

package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// The results of failback_total: what one decision of a failback ended in.
const (
	// FailbackFailedBack: the binding was sent back to its origin (its
	// graceful eviction tasks and its fresh placement written).
	FailbackFailedBack = "failed_back"
	// FailbackNotPlaced: the origin has been healthy for the window, but a
	// fresh placement would not put the binding back there now (or not
	// without shrinking a cluster it keeps, or not within its budget of
	// clusters in transit, or not with the room the Ledger leaves).
	FailbackNotPlaced = "not_placed"
	// FailbackHeldBack: it would go, but something an eviction also waits
	// for holds it back: the freeze, a storm's hold, an eviction of the
	// binding, the fleet-wide cap on failbacks in flight, the rate.
	FailbackHeldBack = "held_back"
	// FailbackError: the write failed (a conflict, the API server); it is
	// decided again.
	FailbackError = "error"
)

// The reasons of failback_waiting: why a binding that failed over has not
// gone back yet.
const (
	// FailbackWaitingStabilizing: its origin has not been healthy for the
	// stabilisation window yet, or a graceful eviction task of the binding
	// is still open.
	FailbackWaitingStabilizing = "stabilizing"
	// FailbackWaitingNotPlaced: as FailbackNotPlaced.
	FailbackWaitingNotPlaced = "not_placed"
	// FailbackWaitingHeldBack: as FailbackHeldBack.
	FailbackWaitingHeldBack = "held_back"
)

func newFailbackSeries(ns string) (total *prometheus.CounterVec, waiting *prometheus.GaugeVec, inFlight prometheus.Gauge) {
	total = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "failback_total",
		Help: "Number of failback decisions of bindings whose origin had been healthy for the window, by result (failed_back, not_placed, held_back, error).",
	}, []string{labelResult})
	waiting = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "failback_waiting",
		Help: "Number of failed-over bindings not gone back to their origin yet, by reason (stabilizing, not_placed, held_back).",
	}, []string{labelReason})
	inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: ns, Name: "failback_in_flight",
		Help: "Number of bindings going back to their origin now: their failback's graceful eviction tasks open.",
	})
	return total, waiting, inFlight
}

// Failback counts one failback decision by its result (FailbackFailedBack,
// FailbackNotPlaced, FailbackHeldBack, FailbackError) in
// failback_total{result}. Only decisions of a binding whose origin has
// been healthy for the window count: one still stabilising is waiting, not
// decided.
func (m *Metrics) Failback(result string) {
	if m == nil {
		return
	}
	m.failbacks.WithLabelValues(label(result)).Inc()
}

// FailbackWaiting sets failback_waiting{reason} to n: the failed-over
// bindings that wait now for that reason (FailbackWaitingStabilizing,
// FailbackWaitingNotPlaced, FailbackWaitingHeldBack). The caller keeps the
// set of waiting bindings and reports its size on every change. A negative
// n is recorded as 0.
func (m *Metrics) FailbackWaiting(reason string, n int) {
	if m == nil {
		return
	}
	m.failbackWaiting.WithLabelValues(label(reason)).Set(float64(max(n, 0)))
}

// FailbackWaiters keeps why each failed-over binding waits to go back (a
// FailbackWaiting reason) and sets failback_waiting from it: the caller
// reports a binding's reason at each of its decisions, "" once it waits no
// more (it went back, has nothing to go back to, is gone). Create it with
// Metrics.FailbackWaiters; it is safe for concurrent use.
type FailbackWaiters struct {
	m       *Metrics
	mu      sync.Mutex
	reasons map[string]string // by binding
	counts  map[string]int    // by reason
}

// FailbackWaiters returns an empty set of waiting bindings that records on
// m (nothing, for a nil m).
func (m *Metrics) FailbackWaiters() *FailbackWaiters {
	return &FailbackWaiters{m: m, reasons: map[string]string{}, counts: map[string]int{}}
}

// Set records that the binding key waits for reason ("": it does not),
// and sets failback_waiting for the reasons whose count changed.
func (w *FailbackWaiters) Set(key, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	was, ok := w.reasons[key]
	if ok && was == reason {
		return
	}
	if ok {
		delete(w.reasons, key)
		w.counts[was]--
		w.m.FailbackWaiting(was, w.counts[was])
	}
	if reason != "" {
		w.reasons[key] = reason
		w.counts[reason]++
		w.m.FailbackWaiting(reason, w.counts[reason])
	}
}

// Counts are the bindings waiting now, by reason.
func (w *FailbackWaiters) Counts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for r, n := range w.counts {
		if n > 0 {
			out[r] = n
		}
	}
	return out
}

// FailbacksInFlight sets failback_in_flight to n: the bindings whose
// failback's graceful eviction tasks are open. A negative n is recorded as
// 0.
func (m *Metrics) FailbacksInFlight(n int) {
	if m == nil {
		return
	}
	m.failbackInFlight.Set(float64(max(n, 0)))
}

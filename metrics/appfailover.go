package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// The results of application_failover_total: what one decision to fail a
// workload over from a cluster where it is unhealthy ended in.
const (
	// AppFailoverFailedOver: the graceful eviction task is written.
	AppFailoverFailedOver = "failed_over"
	// AppFailoverHeldBack: the freeze, a failure storm, the bad-rollout
	// hold or the rate holds it back.
	AppFailoverHeldBack = "held_back"
	// AppFailoverRefused: the pre-scheduling check finds nowhere to go.
	AppFailoverRefused = "refused"
	// AppFailoverWaiting: it waits for the binding's budget of clusters in
	// transit, for room the Ledger holds, or for fresh reads to confirm
	// the check.
	AppFailoverWaiting = "waiting"
	// AppFailoverError: a read or the write failed; it is decided again.
	AppFailoverError = "error"
)

// AppFailoverHeldBadRollout is the reason of application_failover_held for
// the bindings the bad-rollout hold holds.
const AppFailoverHeldBadRollout = "bad_rollout"

func newAppFailoverSeries(ns string) (total *prometheus.CounterVec, held *prometheus.GaugeVec) {
	total = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "application_failover_total",
		Help: "Number of decisions to fail a workload over from a cluster where it was unhealthy for its window, by result (failed_over, held_back, refused, waiting, error).",
	}, []string{labelResult})
	held = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "application_failover_held",
		Help: "Number of bindings whose application failovers are held now, by reason (bad_rollout: unhealthy on more than the threshold of their clusters at once).",
	}, []string{labelReason})
	return total, held
}

// ApplicationFailover counts one decision to fail a workload over from a
// cluster, by its result (AppFailoverFailedOver, AppFailoverHeldBack,
// AppFailoverRefused, AppFailoverWaiting, AppFailoverError), in
// application_failover_total{result}.
func (m *Metrics) ApplicationFailover(result string) {
	if m == nil {
		return
	}
	m.appFailovers.WithLabelValues(label(result)).Inc()
}

// AppFailoverHeld keeps the bindings whose application failovers a hold
// (AppFailoverHeldBadRollout) holds now, and sets
// application_failover_held{reason} to their number on every change.
// Create it with Metrics.AppFailoverHeld; it is safe for concurrent use.
type AppFailoverHeld struct {
	m      *Metrics
	reason string
	mu     sync.Mutex
	held   map[string]bool
}

// AppFailoverHeld returns an empty set of bindings held for reason, which
// records on m (nothing, for a nil m).
func (m *Metrics) AppFailoverHeld(reason string) *AppFailoverHeld {
	return &AppFailoverHeld{m: m, reason: reason, held: map[string]bool{}}
}

// Set records whether the binding key is held now.
func (h *AppFailoverHeld) Set(key string, held bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held[key] == held {
		return
	}
	if held {
		h.held[key] = true
	} else {
		delete(h.held, key)
	}
	if h.m != nil {
		h.m.appFailoverHeld.WithLabelValues(label(h.reason)).Set(float64(len(h.held)))
	}
}

// Len is the number of bindings held now.
func (h *AppFailoverHeld) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held)
}

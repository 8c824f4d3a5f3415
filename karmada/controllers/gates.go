package controllers

import (
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/metrics"
)

// The gates at which the eviction queues park what waits for something
// other than a permit (evictionqueue.Park): the queue holds them, in their
// place in line, until the controllers open the gate or the wait ends.
var (
	// refusedGate holds the evictions the check refused (nowhere to go),
	// until the fleet changes so that the answer may (a cluster recovers,
	// gains room, loses a taint: EvictionController.recheck) and
	// EvictionOptions.RefusalRecheck at the latest.
	refusedGate = evictionqueue.Gate{Reason: "refused"}
	// roomGate holds the evictions waiting for room that evictions
	// already approved hold (the Ledger), until a summary changes or a
	// cluster recovers (EvictionController.recheck) and at most until the
	// first hold in the way may end.
	roomGate = evictionqueue.Gate{Reason: "room"}
	// frozenGate holds the evictions an operator's freeze held back, until
	// it thaws (EvictionController.thawed) or may have lapsed.
	frozenGate = evictionqueue.Gate{Reason: "freeze"}
)

// transitReason is the reason of the gates of the bindings' budgets of
// clusters in transit.
const transitReason = "transit-budget"

// transitGate holds the evictions of the binding key waiting for its budget
// of clusters in transit, until a task of the binding ends
// (EvictionController.ended).
func transitGate(key string) evictionqueue.Gate {
	return evictionqueue.Gate{Reason: transitReason, Key: key}
}

// queueMetrics is the metrics of the eviction queues: the items parked at
// the transit gates are also eviction_waiting_for_transit_budget.
type queueMetrics struct{ *metrics.Metrics }

// Parked records the items of queue parked at the gates of reason.
func (m queueMetrics) Parked(queue, reason string, n int) {
	m.Metrics.Parked(queue, reason, n)
	if reason == transitReason {
		m.WaitingForTransitBudget(queue, n)
	}
}

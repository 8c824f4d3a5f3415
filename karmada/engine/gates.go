package engine

import (
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/metrics"
)

// The gates at which an eviction queue parks what the decision path says
// waits for something other than a permit (evictionqueue.Park): the queue
// holds each item, in its place in line, with no permit and no failure,
// until its gate opens (evictionqueue.Queue.Open) or its wait ends. The
// fork's controllers, fleetsim and the what-if planner park at these and
// open them on the same news.
var (
	// RefusedGate holds the evictions the check refused (EvictionRefused:
	// nowhere to go) until the fleet changes so that the answer may: a
	// cluster recovers, gains room or loses a taint.
	RefusedGate = evictionqueue.Gate{Reason: "refused"}
	// RoomGate holds the evictions waiting for room that evictions already
	// approved hold (EvictionWaitForRoom, the Ledger) until a resource
	// summary changes, and at most until the first hold in the way may
	// end.
	RoomGate = evictionqueue.Gate{Reason: "room"}
	// FreezeGate holds the evictions an operator's freeze held back until
	// it thaws, or may have lapsed.
	FreezeGate = evictionqueue.Gate{Reason: "freeze"}
)

// TransitGate holds the evictions of the binding key waiting for its budget
// of clusters in transit (EvictionWaitForBudget) until one of its graceful
// eviction tasks ends. The items parked at it count in
// eviction_waiting_for_transit_budget (metrics.TransitBudgetGate).
func TransitGate(key string) evictionqueue.Gate {
	return evictionqueue.Gate{Reason: metrics.TransitBudgetGate, Key: key}
}

// Package evictionqueue is the in-memory queue of resources to evict from
// faulty clusters, one queue per kind (ResourceBinding,
// ClusterResourceBinding), paced by a Pacer that queues may share.
//
// Guarantees:
//   - One item per (Cluster, Key), whatever its state; Add of a held identity
//     returns false.
//   - Highest Priority first, first-in-first-out by first enqueue among equals.
//   - One Pacer permit per handler call, taken before the item is chosen: an
//     item cancelled while workers wait is never handled and takes no permit.
//   - Permits pay for evictions started, not decisions: a permit for which no
//     item is left, and the permit of an item the handler abandons, go back
//     to a DomainPacer (*ratelimit.Limiter). None is kept for later, so a
//     pause of the Pacer holds back every item.
//   - With Config.DomainOf and a DomainPacer with a disruption domain, the
//     permit is for a domain with pending items and the worker takes that
//     domain's head item, each cluster's domain read at that moment: one
//     domain's pause does not hold back another's items, a cluster that
//     moved takes its items along, and the order above holds per domain.
//   - CancelCluster removes a recovered cluster's waiting items in time
//     proportional to that cluster's items.
//   - Handler errors and panics retry with per-item exponential backoff up to
//     MaxRetries; Abandon drops without retry; ErrInProgress keeps the item in
//     flight, within MaxInFlight, until Complete or InFlightTTL.
//   - Metrics gauges built from Added and Removed equal Len at every moment.
//   - Run leaves every unhandled item queued when it returns; nothing queued is
//     lost, and no goroutine outlives Run.
//   - All time, including backoff and TTL, comes from Config.Clock.
//
// The code is in two layers, as client-go's workqueue is. store.go holds the
// items and every rule about them (identity, backoff, TTL, cancel,
// MaxInFlight) and pending.go their order; both take the time as a
// parameter and never block, and are exported as Store for callers that
// move time themselves, such as a simulation. Queue (queue.go) puts them
// behind a lock, and run.go, the only code that waits, adds Run's workers
// and scheduler. How a worker takes a permit and an item is Queue.next, in
// run.go.
//
// Run has the shape of controller-runtime's manager.Runnable: in a manager,
// mgr.Add(manager.RunnableFunc(q.Run)) runs a queue on the elected leader and
// stops it, nothing lost, when the manager stops (see Example_queueAsRunnable
// in the module examples/controllerruntime).
package evictionqueue

// Package evictionqueue is the in-memory queue of resources to evict from
// faulty clusters, one queue per kind (ResourceBinding,
// ClusterResourceBinding), paced by a Pacer that queues may share.
//
// Guarantees:
//   - One item per (Cluster, Key); highest Priority first, first-in-first-out
//     by first enqueue among equals.
//   - One Pacer permit per handler call, taken before the item is chosen: an
//     item cancelled while workers wait takes no permit. A permit with no
//     item left, or whose item the handler skips, abandons or defers, goes
//     back to a DomainPacer (*ratelimit.Limiter): permits pay for evictions
//     started, not decisions, and none is kept, so a pause holds back every
//     item.
//   - With Config.DomainOf and a DomainPacer, a worker reserves a permit for
//     one of the domains with pending items, a list it reads from the store
//     before it asks (nothing of the queue runs under the pacer's lock), then
//     takes that domain's head item: a paused domain holds back no other.
//     A cluster's domain is read once, when the queue first has a pending
//     item of it, and again at Queue.DomainChanged, which moves its pending
//     items along: never per permit.
//   - CancelCluster costs in proportion to that cluster's items.
//   - An item added while its handler runs is handled again when that call
//     lets it leave (client-go's dirty items): no decision is lost.
//   - Errors and panics retry with backoff up to MaxRetries; RetryAfter
//     waits without counting a failure; ErrInProgress keeps the item in
//     flight, within MaxInFlight, until Complete or TTL.
//   - An eviction in flight belongs to its item: InProgressWith attaches
//     what the caller keeps with it (the room held for it), Queue.Flights
//     finds a key's evictions in flight, and those whose call runs, in
//     time proportional to them, and Queue.EndFlight ends one once: of the
//     callers that see it end, exactly one acts on what it carried.
//   - Park holds an item at a Gate, in its place, without a permit or a
//     failure, until Queue.Open of that gate, an Add of the item, or its
//     longest wait: a gate opened, or an Add, while the call that parks it
//     decides makes it pending at once, so the change it waits for is not
//     missed.
//   - Gauges built from Metrics' Added and Removed equal Len at every moment.
//   - Run leaves every unhandled item queued; no goroutine outlives it; all
//     time comes from Config.Clock.
//
// Two layers, as in client-go's workqueue: store.go (the items and their
// rules) and pending.go (the pending items, one line per domain) take the
// time and never block, and are exported as Store for a caller that moves
// time itself; queue.go puts them behind a lock, and run.go, the only code
// that waits, adds the workers. The order is stated once, by orderKey.compare
// in entry.go (priority, then first enqueue; a retry keeps its place), and
// the delayed heap's by compareDue beside it: to change the order, change
// that. How a worker takes a permit and an item is Queue.next, in run.go.
//
// Run has the shape of controller-runtime's manager.Runnable: in a manager,
// mgr.Add(manager.RunnableFunc(q.Run)) runs a queue on the elected leader and
// stops it, nothing lost, when the manager stops (see Example_queueAsRunnable
// in the module examples/controllerruntime).
package evictionqueue

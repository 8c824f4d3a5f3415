// Package engine is the runtime side of the karmada module: the state an
// eviction controller keeps between evictions, and the one path that
// decides each of them on it. The karmada package converts Karmada's
// objects and decides on them; this package holds what changes as the
// fleet does.
//
//   - [Fleet] is the fleet snapshot the pre-scheduling check reads, kept
//     from a Cluster informer one cluster at a time ([Fleet.Set],
//     [Fleet.Delete]): each cluster is converted once per change, not once
//     per eviction, and [Fleet.Check] costs what the scheduler itself looks
//     at, not a pass over the fleet.
//   - [Evictor] is the one decision path of an eviction, made once with its
//     options ([NewEvictor]): decide again, wait for the binding's budget of
//     clusters in transit, check that the replicas have somewhere to go,
//     hold their room in the Ledger, and write the graceful eviction task
//     into the binding's spec. The controllers call it on what they read
//     fresh from the API server, a simulation or a what-if planner on what
//     it holds. A taint's eviction ([Evictor.Evict]) and an application's
//     failover ([Evictor.EvictApplication]) go through the same steps;
//     they differ only in the first ("is it time?") and the task written.
//   - [Ledger] holds the room approved evictions will take until the
//     clusters' resource summaries show their replicas placed (Karmada issue
//     6518): a run of checks against summaries that lag behind then
//     approves at most what the clusters can take. It is
//     reservation.Ledger, which holds the room with no Karmada type, read
//     through the summaries. An eviction's room is given back through its
//     [Hold], which [Evictor.Evict] and [Ledger.Restore] return.
//   - The gates ([RefusedGate], [RoomGate], [FreezeGate], [TransitGate]) are
//     where an eviction queue parks what a step says waits for something
//     other than a permit (evictionqueue.Park): the controllers, fleetsim
//     and the what-if planner park at them and open them on the same news.
//
// Guarantees:
//
//   - The Evictor writes nothing to an API server: the caller reads the
//     binding and the cluster, and writes the binding back when told to
//     evict. With any action but EvictionEvict, nothing is changed.
//   - With a Confirm, a feasible check is confirmed on fresh reads before an
//     eviction relies on it, so that a Fleet that lags never sends replicas
//     to a cluster already tainted; whatever the fleet and the placement, an
//     eviction sends the API server at most [MaxConfirmReads] reads more.
//   - Options are validated once, by NewEvictor: an option it cannot take is
//     an error naming the field and the value. Bad input to Evict is an
//     error, never a panic.
//   - The Ledger reads no clock: every method that depends on time takes
//     now.
//
// A Fleet and a Ledger are safe for concurrent use, and an Evictor as far
// as its Fleet and Ledger are (both are). A Fleet's zero value is empty and
// ready; a Ledger's is not usable (use [NewLedger]), nor is an Evictor's
// (use NewEvictor).
package engine

// Package reservation holds the room that evictions a pre-scheduling check
// approved will take, until the clusters show their replicas placed: the
// [Ledger]. Reports of a cluster's room lag behind the scheduler, so checks
// run one after another against them all see the same room (Karmada issue
// 6518); the Ledger makes such a run approve at most what the clusters can
// take.
//
// It reads a prescheduling.Result (its Moves and PlacedByRoom) and the
// clusters through [Rooms], the caller's record of their room (their pods,
// and how many replicas fit once what is held is deducted), and knows no
// Karmada type: the karmada module's engine.Ledger is it over Karmada's
// resource summaries, and a controller that is not Karmada's uses it with
// its own record of the clusters.
//
// Guarantees:
//
//   - A run of admissions against unchanged reports approves at most what
//     the clusters the scheduler picks can take; the rest are held back
//     (Code prescheduling.AwaitingCapacity, with a RetryAfter) until the
//     reports catch up.
//   - Room is held until the clusters show the replicas placed, the caller
//     releases it, or a hold passes ([WithHold], default [DefaultHold]):
//     nothing is held for ever.
//   - An Admit costs the same with 10,000 evictions in flight as with 10,
//     and on 1,000 clusters held as on one (BenchmarkLedgerAdmit).
//   - A Ledger is safe for concurrent use, and reads no clock: every method
//     that depends on time takes now.
package reservation

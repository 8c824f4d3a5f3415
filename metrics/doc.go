// Package metrics reports the failover primitives to Prometheus.
//
// The other packages never import Prometheus: they report through small
// interfaces declared where they are used (ratelimit.Metrics,
// evictionqueue.Metrics). A *Metrics created by New implements all of them,
// so one value can be handed to every Limiter and every queue of a process.
//
// Guarantees:
//   - New registers its series on the Registerer it is given and nowhere else;
//     nothing is registered globally and no goroutine is started.
//   - Registering a second Metrics with the same names on one Registerer
//     returns an error and leaves the registry as it was; it never panics.
//   - The queue gauges (eviction_total, evict_kind_total) are exact at every
//     scrape: they are counts kept under one lock, not running sums of
//     increments that can drift. A (cluster, kind) series whose count falls to
//     zero is deleted, so recovered clusters leave no stale series behind.
//   - A gauge never goes negative: a Removed with no matching Added is a
//     caller bug, is ignored, and is counted in
//     eviction_unmatched_removals_total so the bug is visible.
//   - Inside karmada-controller-manager, New with WithKarmadaNames records
//     the four queue series Karmada ships under Karmada's names and labels,
//     into Karmada's own collectors when they are registered already, so
//     Karmada's dashboards keep working. Without it, a name Karmada has
//     registered differently is an error that says to use WithKarmadaNames.
//   - Every method is safe for concurrent use, and a nil *Metrics records
//     nothing.
package metrics

// Package appfailover decides when a workload fails over from a cluster
// where the workload itself is unhealthy, and keeps the timers that decision
// rests on where a restart finds them.
//
// Karmada's application failover (a PropagationPolicy's
// spec.failover.application, [Behavior] here) moves a workload off a cluster
// once its copy there has been Unhealthy for decisionConditions.tolerationSeconds.
// [Policy.Decide] asks that question as [failover.DecideEviction] asks the
// taint manager's: a pure function of what a controller sees (the copy's
// health and generation, an [Observation]), what it remembers (a [Timer])
// and the time. Guarantees:
//
//   - Healthy resets the timer; Unhealthy counts; Unknown, by default,
//     neither starts nor resets it, so a copy flapping between Unhealthy
//     and Unknown fails over once its Unhealthy time reaches the window
//     (karmada#7431). [Options] may count a long Unknown as Unhealthy, or
//     keep Karmada's reset.
//   - With a start-up grace, a copy that is starting (first seen, or first
//     seen at a new generation) is not judged until it has been Healthy once
//     or the grace has passed (karmada#6233).
//   - The timers are a [Record], bounded by [MaxClusters], that the
//     controller stores on the workload (for Karmada, an annotation on the
//     binding) and [ParseRecord] reads back: a controller restarted or newly
//     elected mid-window fails over at the same instant as one that ran all
//     along (karmada#7171, #7181). A timer lost or unreadable can only make
//     a failover later, never earlier.
//   - Every answer says when to look again (Decision.After), so a caller
//     needs no polling, and why, in words an operator can act on.
//   - [New] and the Validate methods reject bad input with errors naming the
//     field and the value; Decide never panics, whatever it is given.
//
// Whether the workload has somewhere to go, at what rate, within which
// budget, is for the caller's one decision path: this package decides only
// that the time has come.
package appfailover

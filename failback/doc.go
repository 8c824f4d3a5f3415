// Package failback decides when a workload that failed over from a
// cluster may go back to it, and keeps the record of where it came from.
//
// Failover moves workloads off a failed cluster, and nothing brings them
// back: after a regional outage the survivors stay loaded and the recovered
// region stays empty (karmada#7441). Failback is the way back, opt-in and
// slow to trust: a workload is a candidate to return to its origin only once
// the origin has been healthy (Ready, with no NoExecute or PreferNoExecute
// taint) for a stabilisation window without a break. [Decide] asks that
// question as [failover.DecideEviction] asks the taint manager's: a pure
// function of the cluster as it is now, the record and the window. It reads
// when the health began from the cluster's conditions (their
// lastTransitionTime), never from memory, so that a controller restarted or
// newly elected decides at the same moment as one that ran all along; a
// cluster that flaps changes a condition and starts its window again.
//
// A [Record] is where a workload failed over from and when: a short list,
// bounded by [MaxOrigins], that a controller keeps on the workload (for
// Karmada, an annotation on the binding) so that it survives restarts and
// the end of the eviction's task. [ParseRecord] reads one back and names
// what is wrong with a bad one.
//
// Whether the scheduler would actually put replicas back on the origin, and
// whether it has room, is for the caller to ask (for Karmada,
// karmada/scheduling and the reservation Ledger): this package decides only
// when to ask.
package failback

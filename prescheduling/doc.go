// Package prescheduling answers, before a workload is evicted from a faulty
// cluster, whether it has anywhere to go: the pre-scheduling check of the
// cluster failover proposal, which avoids evictions the scheduler could never
// place.
//
// A [Checker] reads a [Placement] (Karmada's policy/v1alpha1 Placement: its
// JSON decodes into it), the current schedule result, the clusters being
// evicted from and the fleet. Guarantees:
//
//   - Check is pure and safe for concurrent use: it reads its arguments and
//     the capacity function, and nothing else.
//   - Bad input (an invalid placement or request) is an infeasible Result
//     whose Reason names the field and the value; nothing panics.
//   - Reason is a sentence an operator can act on: which clusters were
//     considered, which were ruled out and why.
//   - Selectors are parsed once per Check, not per cluster, and the fleet is
//     read in one pass: a 5,000-cluster fleet takes about a millisecond or
//     two (BenchmarkCheck), some ten times less than re-parsing the
//     selectors for every cluster.
//   - An [Index] keeps the fleet one cluster at a time and answers as Check
//     does on it: what does not depend on the request is remembered per
//     placement and kept up to date as clusters change, so that a check
//     reads the clusters the scheduler looks at, and for a Divided,
//     Aggregated placement only the few with the most room: microseconds
//     whatever the fleet (BenchmarkIndexCheck).
//
// The room the evictions a check approved will take, until the clusters
// show their replicas placed, is held by the reservation package's Ledger
// (github.com/failoverkit/failover/reservation), which reads a [Result]'s
// Moves and PlacedByRoom: this package knows nothing of it.
//
// # Soundness against the scheduler
//
// A feasible answer is a promise that Karmada v1.18's scheduler, rescheduling
// the binding as the eviction leaves it, places what the eviction removes: a
// replacement for every Duplicated copy, every Divided replica. The check
// does not search for some choice of clusters that would work: it follows the
// scheduler's own algorithm (pkg/scheduler/core with its default in-tree
// plugins), whose choice is fixed by inputs the library has: its filters,
// its ClusterLocality score (the clusters that keep the workload first), the
// room its general estimator sees (WithCapacity; karmada.Capacity counts it
// from the resource summaries as that estimator does), the names, and its
// selection by the region and cluster spread constraints. The karmada
// module's differential test runs the check and the scheduler itself on
// generated fleets and failovers and holds the check to that promise.
//
// The promise rests on what the check is given. It does not hold where the
// scheduler reads what the check does not: room counted by
// karmada-scheduler-estimator, by cluster resource models (reported
// allocatable modelings, which Karmada's estimator prefers to the summary),
// or net of the scheduler's own in-flight assumptions
// (SchedulingOvercommitProtection, alpha and off by default); a cluster
// being deleted, or missing the workload's API; overflow affinities, workload
// affinity and multi-component workloads (the karmada module reports these
// as losses); a rescheduling the user triggered (Fresh mode); a binding whose
// replicas are being scaled (the check reads them from the schedule result).
// A capacity the function does not know is taken as the scheduler takes a
// missing estimate, the workload's replicas, and Reason says so.
//
// # Where the check refuses what the scheduler would do
//
// Infeasible where the scheduler would place the workload, by design, in one
// case, which the differential test counts apart: a faulty cluster (a
// NoExecute or PreferNoExecute taint) that does not run the workload yet
// would take some of it. The scheduler filters only untolerated NoSchedule
// and NoExecute taints, so it places the workload on a failing cluster whose
// NoExecute taint the placement tolerates, or whose taint is PreferNoExecute;
// replicas sent there would not run, or would be evicted again. A faulty
// cluster that already runs the workload may take more (the scheduler
// favours the clusters it keeps): it is being evicted from too, and refusing
// would leave two faulty clusters each waiting for the other.
//
// A cluster that is not Ready rarely falls in this case with Karmada v1.18:
// its cluster controller taints it cluster.karmada.io/not-ready:NoSchedule
// (unreachable, when Ready is Unknown) beside the NoExecute taint a
// ClusterTaintPolicy adds, and a placement that tolerates only the NoExecute
// one does not tolerate that. The case comes from placements that tolerate
// every taint (operator Exists without a key), and from NoExecute taints
// that are not about readiness, a drain for maintenance say, that the
// placement tolerates. In the differential test's generated failovers
// (Karmada's own fault taints, drains, and some placements tolerating
// everything) it is the only disagreement left, in about 1.3% of the cases.
//
// A static weight division (Weighted with a static weight list, or without
// weights: the default of a Divided placement) shares the replicas by weight
// whatever the room, so the scheduler places them where some wait pending;
// the check answers feasible, as the scheduler places them, and with
// WithCapacity a Reason names the clusters without room. Holding such
// evictions back would keep every evicted replica where it is, on the faulty
// cluster, instead of only those beyond the room.
//
// The check also reads the placement as Karmada's API server and admission
// webhook leave it: a replicaScheduling without a type is Divided, a Divided
// placement without a division preference is Weighted, a spread constraint
// without a field or label is by cluster and one without minGroups has 1.
// Karmada's scheduler, and so the check, takes a missing maxGroups as 0 (a
// cluster constraint then selects no cluster, a region constraint no
// region), selects only by the region and cluster constraints (one by zone
// or provider only rules out clusters without that field; one by label is
// not read), and places nothing when neither is there.
package prescheduling

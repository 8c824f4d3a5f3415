// Package karmada converts Karmada v1.18 API objects into the failover
// library's types, and back where a controller writes.
//
// It lives in a module of its own, github.com/failoverkit/failover/karmada,
// so that users of the library who do not use Karmada's Go types never
// inherit Karmada's dependencies.
//
// From Karmada to the library:
//
//   - cluster.karmada.io/v1alpha1 Cluster: [FromCluster] (name, labels,
//     provider, region, zone and zones, taints, conditions) and, for
//     prescheduling.WithCapacity, [Capacity] and [MaxReplicas], which read
//     status.resourceSummary as Karmada's general estimator does;
//   - policy.karmada.io/v1alpha1 Placement, ClusterFailoverBehavior and
//     ClusterTaintPolicy: [FromPlacement], [FromClusterFailoverBehavior],
//     [FromClusterTaintPolicy], and [FromUnstructuredClusterTaintPolicy],
//     which keeps the condition windows Karmada's Go type has no place for;
//   - work.karmada.io/v1alpha2 ResourceBinding and ClusterResourceBinding:
//     [FromResourceBinding] and [FromClusterResourceBinding] (schedule
//     result, graceful eviction tasks, aggregated health), and
//     [PreschedulingRequest] for the pre-scheduling check.
//
// What the decision path needs of Karmada's objects, pure, with no state
// of their own: [MaxReplicas] and [RoomOf] over a resource summary, [Summaries],
// [DecideBindingEviction] (Karmada v1.18's taint manager's decision for one
// binding on one cluster) and [MaxClustersInTransitAnnotation]. The runtime
// state (the fleet as the check reads it, the room held for evictions in
// flight, and the one decision path that uses both) is the engine
// package's (github.com/failoverkit/failover/karmada/engine), which
// imports this one and never the reverse.
//
// What Karmada v1.18's taint manager reads and writes when it evicts:
// [AppliedTolerations] (the tolerations of the applied placement),
// [EvictionPurgeMode] (the task's purge mode) and [PreservedLabelState]
// (the state spec.failover.cluster.statePreservation carries to the new
// cluster).
//
// Condition windows on Karmada's own ClusterTaintPolicy: Karmada v1.18's
// CRD has no addOnMatchSeconds or removeOnMismatchSeconds, and the API
// server prunes them. The module's crds/ directory holds the fork's
// extension, a kustomize patch of that CRD that adds both on each entry of
// spec.taints (unset: no window, as Karmada behaves); controllers'
// ClusterTaintPolicyController reads them.
//
// Back to Karmada: [ApplyClusterTaints] writes a cluster's spec.taints and
// [ApplyBinding] a binding's spec.clusters and spec.gracefulEvictionTasks.
// [FromUnstructuredCluster] and [ApplyUnstructuredTaints] do the same for a
// dynamic client's objects.
//
// Guarantees:
//
//   - Nothing is dropped silently. A field the library cannot represent is a
//     [*LossError] naming it: the conversion of everything else comes with
//     it, for a caller that accepts the loss. Malformed input (an unknown
//     taint effect, a selector that does not parse, a condition operator the
//     library does not know) is an error naming the field and the value, and
//     the zero value. Nothing panics.
//   - Conversions never share memory with their input: a converted value may
//     be kept after the Karmada object is changed or reused.
package karmada

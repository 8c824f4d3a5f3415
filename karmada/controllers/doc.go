// Package fork is the failover loop as a Karmada fork wires it into a
// controller-runtime manager, on Karmada v1.18's own objects. Each of its
// four reconcilers is a thin wrapper over library calls, through the
// github.com/failoverkit/failover/karmada conversions:
//
//  1. cluster taints: Karmada ClusterTaintPolicy objects and each Cluster's
//     conditions go through taintpolicy.Evaluator; the taints it decides are
//     written back with optimistic concurrency (a resourceVersion conflict
//     re-reads the cluster and decides again).
//  2. the taint manager: for each ResourceBinding and ClusterResourceBinding
//     scheduled on a faulty cluster, failover.DecideEviction (tolerations
//     from the applied placement, spec.failover.cluster for PreferNoExecute)
//     says now, later (the binding is reconciled again then) or never. Now
//     puts the binding into one of two evictionqueue.Queues, one per kind,
//     both paced by one ratelimit.Limiter whose rate follows fleet health (a
//     ratelimit.Tracker fed by the manager's Cluster informer). A cluster
//     that is no longer faulty cancels its queued items. With
//     --disruption-domain=region (zone, provider) the Tracker counts each
//     Cluster in its region and the queues pace each item by its cluster's
//     region (evictionqueue.Config.DomainOf), so a region that is down
//     entirely is evacuated at the primary rate while the others keep theirs.
//  3. the eviction handler, run by the queues: the item is decided again on
//     fresh reads (a cluster that recovered while the item waited is not
//     evicted from), then prescheduling.Checker.Check with the binding's
//     placement and the fleet (capacity from the clusters' resource
//     summaries). Infeasible: the item is abandoned and a Warning Event on
//     the binding says why. Feasible: the cluster moves from spec.clusters
//     into spec.gracefulEvictionTasks, written with optimistic concurrency.
//  4. graceful eviction: gracefulevict.Assessor on every binding change and
//     at the RequeueAfter it gives; finished tasks leave
//     spec.gracefulEvictionTasks.
//
// The queues run as manager Runnables that need leader election, as do the
// controllers: only the leader taints and evicts.
package fork

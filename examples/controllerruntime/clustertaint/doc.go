// Package clustertaint is a cluster-taint controller for a control plane of
// one's own, on controller-runtime and without Karmada: it keeps the taints
// of the fleet.example.com/v1alpha1 MemberCluster objects (package
// ../api/v1alpha1) as ClusterTaintPolicies decide, with the library's
// taintpolicy and ratelimit packages.
//
// What it does, per cluster, in Reconcile:
//
//   - The cluster's health, as stored, goes into a ratelimit.Tracker (faulty:
//     it has a NoExecute or PreferNoExecute taint).
//   - taintpolicy's Evaluator decides the cluster's whole taint list from its
//     conditions at the clock's now, with the policies' add and remove
//     windows; only the taints a policy lists are ever touched.
//   - A taint that would make a healthy cluster faulty, and so start the
//     eviction of its workloads, first takes a permit from a
//     ratelimit.Limiter whose rate follows the fleet's failure rate: as the
//     Kubernetes node lifecycle controller rate-limits tainting nodes
//     NoExecute, a wide outage (or a control plane cut off from its fleet)
//     taints clusters at --resource-eviction-rate, then at the secondary
//     rate, and stops tainting a small fleet above
//     --unhealthy-cluster-threshold. Removals and NoSchedule taints never
//     wait. One Reconcile waits at most Config.PermitWait for a permit.
//   - The new list is written with Update, whose resourceVersion makes a
//     concurrent writer's change a 409 and a retry from their object.
//
// # When MarkSynced is called, and why
//
// The Tracker is fed by hand from Reconcile and starts unsynced
// (ratelimit.NewUnsyncedTracker), which pauses the Limiter. SetupWithManager
// adds a Runnable beside the controller that waits for the manager's cache,
// lists the MemberClusters in it, and calls MarkSynced once every one of
// them has been through Reconcile: only then has the Tracker counted the
// whole fleet.
//
// The Limiter's rate follows the failure rate, faulty clusters over all
// clusters, and the Tracker knows only the clusters Reconcile has told it
// about. A restarted manager reconciles its initial list one cluster at a
// time, so for a while the Tracker holds part of the fleet: two faulty
// clusters out of the two seen so far read as 100% (a pause, or the
// secondary rate, for no reason), and healthy clusters seen first hide an
// outage (the primary rate while most of the fleet is down). Marking it
// synced when the cache syncs would be too early: the cache then holds every
// cluster, but the Reconciles of the initial list have not run yet. Clusters
// created later are counted as they come and never hold it back; a cluster
// deleted before its first Reconcile counts as reconciled, since Reconcile of
// a missing cluster removes it from the Tracker. Until then NoSchedule taints
// and removals are written as usual; only the taints that start evictions
// wait. (A Tracker fed by an informer, ratelimit.NewInformerSource, syncs with
// the informer and needs none of this: this example feeds its Tracker from
// Reconcile to show the other way.)
//
// cmd/clustertaint is the manager that runs it; the e2e module runs it on a
// real kube-apiserver.
package clustertaint

// Package controller is a cluster-taint controller built on package
// taintpolicy: it watches Karmada Cluster and ClusterTaintPolicy objects
// through the dynamic client and keeps each cluster's spec.taints as the
// taintpolicy Evaluator decides.
//
// Guarantees:
//   - Writes are optimistic: an Update carries the resourceVersion that was
//     evaluated. On a conflict the cluster is read again from the API server
//     (not from the informer cache), evaluated again and written again, so a
//     taint another writer added in between is kept.
//   - Only taints whose key and effect a ClusterTaintPolicy targeting the
//     cluster lists are ever added or removed. A user's own taints, and the
//     taints of a policy that has been deleted, are left exactly as they are.
//   - A cluster is evaluated again when its conditions, taints, labels or
//     location change, when any policy is added, changed or deleted, and when
//     the Evaluator's Result.RequeueAfter says a window is due to close.
//   - A policy that fails validation is ignored (logged and counted), never
//     half applied; the others keep working.
//   - With RunWithLeaderElection only the holder of a Lease runs the
//     controller, so two replicas never both write.
package controller

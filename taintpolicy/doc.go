// Package taintpolicy decides a member cluster's taints from its status
// conditions, following Karmada's ClusterTaintPolicy (policy.karmada.io/v1alpha1).
//
// It holds the API types (decoded from Karmada YAML as written, in both the
// proposal's windowed form and the released form), their validation,
// [LoadPolicies] for multi-document YAML, and the [Evaluator], which a custom
// cluster-taint controller calls for each cluster it reconciles.
//
// Guarantees:
//   - Evaluate is a function of (policies, cluster, now) whenever the
//     conditions the policies read carry a lastTransitionTime, so a
//     restarted controller decides exactly as a long-running one.
//   - Only taints whose key and effect a policy targeting the cluster lists
//     are ever added, changed or removed; every other taint is returned
//     untouched and in its place.
//   - The result is deterministic: kept taints keep their positions, new
//     taints follow in policy-name order.
//   - An Evaluator is safe for concurrent use, starts no goroutines, and its
//     policies can be replaced while it runs.
//
// Where to change what: a taint's add and remove windows are computed in
// evaluate.go (each policy's vote, then the combination of the votes of the
// policies that list a taint); the policies are parsed once in evaluator.go;
// the memory that stands in for a missing lastTransitionTime is memory.go.
package taintpolicy

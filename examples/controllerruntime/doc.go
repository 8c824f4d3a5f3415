// Package controllerruntime shows the library inside a controller-runtime
// manager, for the library's second user: a control plane of one's own,
// with its own cluster CRD, and no Karmada. It is a module of its own so that
// the library's own modules never require controller-runtime; a user who
// already runs a manager has it.
//
// The whole controller (see README.md):
//
//   - api/v1alpha1: MemberCluster, the example's own cluster CRD
//     (fleet.example.com/v1alpha1; crds/ is generated from it);
//   - clustertaint: a Reconciler that keeps MemberClusters' taints as
//     ClusterTaintPolicies decide (taintpolicy), pacing the taints that start
//     evictions by the fleet's health (ratelimit), with MarkSynced called once
//     the whole fleet is counted;
//   - cmd/clustertaint: the manager that runs it, with policies.yaml (in the
//     controller's own group, read by taintpolicy.LoadPoliciesWith) and
//     deploy/rbac.yaml.
//
// And, as tests and examples of this package:
//
//   - Example_pacedReconciler: a Reconciler that calls Limiter.Wait before
//     each eviction, so every worker of every controller sharing the Limiter
//     gets the one rate, and a pause holds them all.
//   - Example_queueAsRunnable: an eviction queue added to a manager as a
//     Runnable.
//   - TestInformerSourceControllerRuntime: a manager's cache.Informer feeds
//     ratelimit.NewInformerSource as a client-go informer does.
package controllerruntime

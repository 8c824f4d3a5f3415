// Package failover holds the vocabulary shared by the failover primitives: a
// member [Cluster] as the primitives see it, [ClusterAffinity] (Karmada's
// cluster selector), [TargetCluster] (one entry of a schedule result),
// [PurgeMode], the PreferNoExecute taint effect and [IsFaulty]; and
// [DecideEviction], the taint manager's question of whether a workload must
// leave a tainted cluster now, later or never.
//
// The primitives live in sub-packages, each with one job, and are wired
// together by the caller's own controllers:
//
//   - ratelimit: the fleet-wide eviction rate, which follows fleet health
//     (0.5/s normally, 0.1/s when more than 55% of a large fleet is faulty, a
//     full pause for a small one). It is a blocking Limiter.Wait and a client-go
//     workqueue rate limiter, fed by a HealthSource such as the incremental
//     Tracker or an informer-fed source.
//   - evictionqueue: one eviction queue per kind (ResourceBinding,
//     ClusterResourceBinding) paced by that shared rate: priority then
//     first-in-first-out, de-duplication, cancel-on-recovery, retries with
//     backoff and evictions that finish in the background.
//   - taintpolicy: ClusterTaintPolicy with condition windows, validation, YAML
//     loading in Karmada's format and an Evaluator that decides a cluster's
//     taints.
//   - prescheduling: before evicting, is there anywhere to go?
//   - gracefulevict: when a graceful eviction task is finished.
//   - reservation: the room evictions in flight will take, held until the
//     clusters show it.
//   - failback: when a workload that failed over may go back to its origin.
//   - appfailover: when a workload unhealthy on a cluster fails over from
//     it, with timers that survive restarts.
//   - metrics: the Prometheus series of the eviction proposals, on a registry
//     the caller gives.
//
// Nothing in this module registers global state or starts goroutines from a
// constructor; everything that reads time takes a clock or a `now`.
package failover

//go:generate go run k8s.io/code-generator/cmd/deepcopy-gen@v0.37.2 --go-header-file ./hack/boilerplate.go.txt --output-file zz_generated.deepcopy.go .

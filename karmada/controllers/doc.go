// Package controllers holds the failover library's controllers for Karmada
// v1.18's own objects, ready to add to a controller-runtime manager: the one
// karmada-controller-manager runs (a fork registers them in its controller
// table through package controllermanager) or one of your own.
//
//   - [ClusterTaintPolicyController] replaces Karmada's clustertaintpolicy
//     controller: Cluster taints from ClusterTaintPolicies
//     (taintpolicy.Evaluator), PreferNoExecute among their effects, and
//     condition windows where the fork has applied the CRD extension in
//     the module's crds/ (Karmada v1.18's CRD has no window fields; without
//     it taints come and go at once, as with Karmada, and the controller
//     says so at start-up).
//   - [EvictionController] replaces Karmada's taint manager:
//     failover.DecideEviction per binding and cluster, with
//     tolerationSeconds, Karmada's --enable-no-execute-taint-eviction and
//     the applied placement's tolerations; one evictionqueue.Queue per
//     binding kind on one ratelimit.Limiter whose rate follows fleet health;
//     the pre-scheduling check, and an engine.Ledger of the room evictions
//     in flight will take; the graceful eviction task written as Karmada
//     writes it.
//   - [GracefulEvictionController] replaces Karmada's gracefulEviction
//     controllers: gracefulevict.Assessor on ResourceBindings and
//     ClusterResourceBindings; a task that ends gives its room back to the
//     Ledger.
//   - [FailbackController] (opt-in) sends bindings back to the clusters
//     they failed over from once those have been healthy for a window.
//   - [ApplicationFailoverController] (opt-in) replaces Karmada's
//     applicationFailover controllers: appfailover's decision on timers
//     kept in the binding's annotation, then the freeze, a bad-rollout
//     hold, the shared rate and the eviction's own decision path
//     (engine.Evictor.EvictApplication).
//
// Each is built by its New function from options whose zero values are
// Karmada's defaults, and added with SetupWithManager; [Setup] builds and
// adds all three, the graceful eviction controller with the eviction
// controller's Ledger. The glue they share is exported for a fork's own
// controllers: [ClusterFaulty] and [ClusterDomains] (fleet health from
// Cluster taints through the manager's informer,
// ratelimit.NewInformerSource) and [AddToScheme].
//
// Guarantees:
//
//   - Every write is an Update with optimistic concurrency; on a conflict the
//     controller reads the object again from the API server and decides
//     again on what the other writer left. An eviction starts again from
//     the top: every eviction written was decided and checked on exactly
//     the object it overwrites.
//   - Nothing is evicted without a fresh decision: a queued item is decided
//     again, on reads from the API server, when its permit comes, and a
//     cluster that is no longer faulty cancels its queued items. A binding
//     queued again while its item runs is decided again after that call.
//   - Nothing is evicted where the pre-scheduling check finds no target,
//     and the check holds on clusters read fresh before the write: those
//     it sends the replicas to, at most engine.MaxConfirmReads, whatever
//     the fleet and the placement (engine.Evictor.Evict); the binding
//     gets a Warning Event saying why not. One eviction costs the API
//     server the Cluster it leaves, those reads (one, for the placements
//     a benchmark of each shape runs), the binding after a conflict, and
//     the write (eviction_api_requests_total). A
//     refusal waits parked in its queue, in its place, and is decided
//     again when a cluster recovers, within one
//     ClusterStatusUpdateFrequency of a cluster reporting room, and at
//     least every EvictionOptions.RefusalRecheck.
//   - Permits pay for evictions written: a call that finds nothing to do,
//     or nowhere to go, gives its permit back.
//   - An eviction counts in flight until its graceful eviction task ends
//     (eviction_in_flight, EvictionOptions.MaxInFlight), and belongs to its
//     item in the queue with the room it holds
//     (evictionqueue.InProgressWith): it ends once, when the binding's
//     reconcile sees the task gone, whoever removed it; a new leader
//     takes over its predecessor's open tasks, and the room they hold,
//     before its first eviction, and an item handled again whose eviction
//     is already written (its task open) takes that eviction over the same
//     way rather than decide it again.
//   - Evictions checked one after another do not all count the same room:
//     one the scheduler would put where evictions already approved will
//     take the room waits (a Warning Event AwaitingCapacity) and is tried
//     again until the resource summaries catch up (EvictionOptions.Ledger).
//   - An operator's freeze stops every automatic eviction: while the
//     ConfigMap EvictionOptions.Freeze names exists (until its optional
//     until), a queued item parks before anything is read, keeping its
//     place and giving its permit back, and no failure is counted;
//     taints, graceful eviction tasks and cancellations go on.
//     eviction_frozen is 1. Every replica reads the freeze, and the queues
//     start only once it is read, so a new leader honours it before its
//     first eviction; a freeze that cannot be read freezes and says why.
//     Thawed, items go on within 10s at the rate in force, with no burst
//     beyond the bucket's one permit.
//   - No binding has more clusters in graceful eviction at once than its
//     budget of clusters in transit (its MaxClustersInTransitAnnotation,
//     else EvictionOptions.MaxClustersInTransit; 0, the default, is
//     unlimited): an eviction beyond it, counted on the binding read fresh
//     (every open task, whoever wrote it), parks in its queue at the
//     binding's gate, keeping its place and giving its permit back with no
//     failure counted, and a Warning Event ClustersInTransit says the
//     budget, the clusters in transit and the cluster that waits.
//     eviction_waiting_for_transit_budget{queue_name} is the number of
//     evictions waiting so, exact at every change. It is decided again at
//     once when a task of the binding ends, and at least every
//     min(ClusterStatusUpdateFrequency, 10s). The count is the binding's, so a new leader honours
//     it; an annotation that is not a non-negative integer is said in a
//     Warning Event InvalidMaxClustersInTransit and the option applies.
//   - Only the leader acts: the queues and controllers run under the
//     manager's leader election.
package controllers

// Package ratelimit paces evictions for the whole fleet by the fleet's health.
//
// Config holds the rule of karmada-controller-manager's four flags: evict at
// --resource-eviction-rate while the share of faulty clusters is at most
// --unhealthy-cluster-threshold; above it, slow to
// --secondary-resource-eviction-rate in a fleet of more than
// --large-cluster-num-threshold clusters, and stop in a smaller one.
//
// With --disruption-domain=region (or zone, provider), health is judged per
// region instead: a region that is down entirely evicts at the primary rate,
// one partly down slows or stops as the fleet would, every region down
// pauses everything, and a total keeps the sum at the primary rate
// (Config.DomainRates states the rule). The fleet rule is the same with one
// domain, the whole fleet.
//
// Guarantees:
//   - Health is incremental: a Tracker (fed by hand or by an informer through
//     NewInformerSource) answers in O(1), whatever the fleet size, and tells a
//     Limiter the moment health changes.
//   - A Limiter's buckets fill at the rate in force and hold at most one
//     permit; a pause adds nothing. Over any window the permits handed out
//     are at most 1 + ∫ rate dt, for each domain and in total, however the
//     rate changed or paused inside it and whatever the number of callers:
//     workers never multiply the rate, and flapping health adds nothing.
//   - A rate change re-times blocked callers at once; resuming lets a caller
//     through at once only if the bucket held a permit before the pause.
//   - A permit not used can be given back, as x/time/rate's Cancel does.
//   - A health-source error pauses until the source answers again.
//   - No goroutine is started, nothing global is registered; time comes from
//     an injected clock, or from the caller of Limiter.TakeAt, which a
//     simulation steps instead of blocking in Wait.
//
// Where to change what: the rule is rule.go (Config.RateFor, DomainRates);
// the rates in force over time (recovery hold, pause on a source error) are
// decide.go; the buckets are bucket.go; limiter.go only locks, reads the
// clock and blocks.
//
// DynamicRateLimiter puts the same buckets behind client-go's
// workqueue.TypedRateLimiter.
//
// # Inside karmada-controller-manager
//
// Config.AddFlags joins a flag set that already defines some of its flags:
// Karmada v1.18 defines --resource-eviction-rate (a float32). The existing
// flag stays as it is, the missing three are added, and after fs.Parse the
// Config and Karmada's own field hold the same rate. Call it after Karmada's
// options have added their flags.
//
// # controller-runtime
//
// NewInformerSource takes an Informer, the one method it uses, so the
// informer a manager's cache returns (cache.Informer, from
// mgr.GetCache().GetInformer) feeds a Tracker as a client-go
// SharedIndexInformer does. A Tracker fed by hand from a Cluster
// controller's Reconcile starts with NewUnsyncedTracker and pauses every
// Limiter reading it until MarkSynced, so a restarted manager does not
// compute the failure rate from the few clusters it has seen so far.
//
// There are two ways to pace a controller-runtime controller. Either its
// Reconcile calls Limiter.Wait before each eviction (see
// Example_pacedReconciler in the module examples/controllerruntime): every
// worker of every controller sharing the Limiter then gets the one rate,
// and a pause holds them all, since a Reconcile that is waiting has not
// evicted yet. Or Reconcile only adds items to evictionqueue queues paced
// by the Limiter, and each queue runs as a manager.Runnable
// (mgr.Add(manager.RunnableFunc(q.Run))), which also gives cancel-by-cluster,
// retries and permits given back for abandoned items. Do not rely on
// DynamicRateLimiter as the controller's RateLimiter: a workqueue asks it
// only for rate-limited adds (AddRateLimited, a Reconcile error or Requeue),
// while the adds that watch events make run at once.
package ratelimit

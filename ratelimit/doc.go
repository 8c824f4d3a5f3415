// Package ratelimit paces evictions for the whole fleet by the fleet's health.
//
// Config holds the rule of karmada-controller-manager's four flags: evict at
// --resource-eviction-rate while the share of faulty clusters is at most
// --unhealthy-cluster-threshold; above it, slow to
// --secondary-resource-eviction-rate in a fleet of more than
// --large-cluster-num-threshold clusters, and stop in a smaller one. With
// --disruption-domain=region (or zone, provider) health is judged per region
// instead, and a total keeps the sum at the primary rate
// (Config.DomainRates); the fleet rule is the same with one domain. A
// failure storm (more than --storm-threshold of the fleet faulty within
// --storm-window) holds every rate at 0 for --storm-confirm first, as a
// control plane cut off from its members sees them all fail at once.
//
// Guarantees:
//   - A Tracker (fed by hand, or by an informer through NewInformerSource)
//     answers in O(1) whatever the fleet size, and tells a Limiter the moment
//     health changes.
//   - Over any window, a Limiter hands out at most 1 + ∫ rate dt permits per
//     domain and in total, however the rate changed or paused inside it,
//     whatever the number of callers: workers never multiply the rate, and
//     flapping health adds nothing (see Limiter).
//   - A permit is a reservation, as x/time/rate's Reserve/Cancel: the caller
//     names the domains it wants as a plain list (Limiter.WaitDomain,
//     TakeDomainAt), then chooses its work, then uses the permit or gives it
//     back. The Limiter calls nothing of its callers, and holds its lock for
//     time proportional to the domains listed, whatever the number of
//     clusters or items behind them. A health-source error pauses, and so
//     does a failure storm until it passes, recovers or Limiter.ConfirmStorm.
//   - No goroutine is started, nothing global is registered; time comes from
//     an injected clock, or from the caller of Limiter.TakeAt.
//
// Where to change what: the rule is rule.go; the rates in force over time
// (recovery hold, pause on a source error) are decide.go, the storm's hold
// storm.go; the buckets are
// bucket.go; limiter.go only locks, reads the clock and blocks.
// DynamicRateLimiter puts the same buckets behind client-go's
// workqueue.TypedRateLimiter.
//
// Inside karmada-controller-manager, Config.AddFlags joins a flag set that
// already defines some of its flags (Karmada v1.18 defines
// --resource-eviction-rate): call it after Karmada's options have added
// theirs.
//
// In a controller-runtime manager, NewInformerSource takes the informer the
// manager's cache returns, and a Tracker fed by hand from a Reconcile starts
// with NewUnsyncedTracker. Pace the controller either with Limiter.Wait in
// Reconcile before each eviction, or by adding items to evictionqueue queues
// run as manager.Runnables (see the module examples/controllerruntime). A
// workqueue asks DynamicRateLimiter only for rate-limited adds, not for the
// adds watch events make: do not rely on it as a controller's RateLimiter.
package ratelimit

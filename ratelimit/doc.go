// Package ratelimit paces evictions for the whole fleet by the fleet's health.
//
// Config holds the rule of karmada-controller-manager's four flags: evict at
// --resource-eviction-rate while the share of faulty clusters is at most
// --unhealthy-cluster-threshold; above it, slow to
// --secondary-resource-eviction-rate in a fleet of more than
// --large-cluster-num-threshold clusters, and stop in a smaller one.
//
// Guarantees:
//   - Health is incremental: a Tracker (fed by hand or by an informer through
//     NewInformerSource) answers in O(1), whatever the fleet size, and tells a
//     Limiter the moment health changes.
//   - One Limiter is one token bucket of burst 1: every goroutine and queue
//     sharing it gets at most rate×t + 1 permits in any window t over which the
//     rate is constant. Workers never multiply the rate.
//   - A rate change re-times blocked callers at once. Rate 0 pauses: no permit,
//     no debt; on resume the first caller goes through at once.
//   - A health-source error pauses until the source answers again.
//   - A caller whose context ends gives its place back.
//   - No goroutine is started, nothing global is registered; time comes from
//     an injected clock, or from the caller of Limiter.TakeAt, which a
//     simulation steps instead of blocking in Wait.
//
// Where to change what: the rate rule is Config.RateFor in config.go; how its
// answers become the rate in force over time (recovery hold, pause on a source
// error) is decide.go; slots, re-timing and When's promises are bucket.go;
// limiter.go only locks, reads the clock and blocks.
//
// DynamicRateLimiter puts the same bucket behind client-go's
// workqueue.TypedRateLimiter.
package ratelimit

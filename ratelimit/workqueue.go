package ratelimit

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// DynamicRateLimiter adapts a shared Limiter to client-go's workqueue: use it
// as (or inside) the rate limiter of a workqueue.TypedRateLimitingInterface.
//
// When promises the item the Limiter's next free slot and returns how long
// until it, drawing from the same bucket as Limiter.Wait: N items added
// together get 0, 1/r, 2/r, … and a Wait caller queues behind them. While the
// Limiter is paused When reserves nothing and returns the Limiter's re-check
// delay (WithRecheckDelay, default 30s), so the item comes back and asks
// again.
//
// A delay handed to a workqueue cannot be taken back: if the fleet gets worse
// or pauses after When returned, the item is still released at its time. So
// pick one pacing point per item, never both (each would take a slot, and the
// queue would run at half the rate):
//
//   - Paced at enqueue: AddRateLimited through this limiter. Simple, and the
//     rate holds, but a pause only stops new reservations; items already
//     delayed still come out.
//   - Paced at processing (strict): Add new items with the plain Add and call
//     Limiter.Wait in the worker before evicting. A pause then holds every
//     item, however long it has been queued. Package evictionqueue works this
//     way; examples/workqueue shows it in a plain workqueue.
//
// For per-item exponential backoff of failed items, combine it with
// client-go's:
//
//	workqueue.NewTypedMaxOfRateLimiter[T](
//	    workqueue.NewTypedItemExponentialFailureRateLimiter[T](5*time.Millisecond, 1000*time.Second),
//	    ratelimit.NewDynamicRateLimiter[T](limiter),
//	)
//
// MaxOf asks every limiter, so each retry also takes a slot of the bucket: a
// retry never jumps the fleet-wide rate, it only waits longer when its backoff
// is the larger delay. Paced at processing, such a retry pays a second slot in
// Wait; use the exponential limiter alone for retries if that matters.
//
// NumRequeues counts When calls per item until Forget. A DynamicRateLimiter is
// safe for concurrent use.
type DynamicRateLimiter[T comparable] struct {
	l *Limiter

	mu       sync.Mutex
	requeues map[T]int
}

var _ workqueue.TypedRateLimiter[string] = (*DynamicRateLimiter[string])(nil)

// NewDynamicRateLimiter returns a workqueue rate limiter drawing from l. A nil
// l is a Limiter that is always paused, re-checked after DefaultRecheckDelay.
func NewDynamicRateLimiter[T comparable](l *Limiter) *DynamicRateLimiter[T] {
	return &DynamicRateLimiter[T]{l: l, requeues: make(map[T]int)}
}

// When returns how long item must wait: until the bucket's next free slot,
// which it takes, or the re-check delay while paused.
func (d *DynamicRateLimiter[T]) When(item T) time.Duration {
	d.mu.Lock()
	d.requeues[item]++
	d.mu.Unlock()
	if delay, ok := d.l.promise(); ok {
		return delay
	}
	if d.l == nil || d.l.recheck <= 0 { // nil or not made by NewLimiter
		return DefaultRecheckDelay
	}
	return d.l.recheck
}

// NumRequeues returns how many times When was called for item since Forget.
func (d *DynamicRateLimiter[T]) NumRequeues(item T) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.requeues[item]
}

// Forget resets item's count; its slots already promised stay taken.
func (d *DynamicRateLimiter[T]) Forget(item T) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.requeues, item)
}

package ratelimit

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// DynamicRateLimiter adapts a shared Limiter to client-go's workqueue: use it
// as (or inside) the rate limiter of a workqueue.TypedRateLimitingInterface.
// When takes the fleet bucket's next permit ahead of time and returns how
// long until it is due: N items added together get 0, 1/r, 2/r, … While
// paused it takes nothing and returns the re-check delay (WithRecheckDelay).
//
// A delay handed to a workqueue cannot be taken back: after a pause the item
// is still released at its time. So pace each item at one point, never both
// (each would take a permit): at enqueue, AddRateLimited through this
// limiter; or, strictly, at processing: Add, then Limiter.Wait in the worker,
// which a pause holds, as package evictionqueue does (examples/workqueue).
// For per-item backoff of failed items, combine it with client-go's:
//
//	workqueue.NewTypedMaxOfRateLimiter[T](
//	    workqueue.NewTypedItemExponentialFailureRateLimiter[T](5*time.Millisecond, 1000*time.Second),
//	    ratelimit.NewDynamicRateLimiter[T](limiter),
//	)
//
// MaxOf asks both, so a retry also takes a permit (and pays a second one in
// Wait, paced at processing). NumRequeues counts When calls per item until
// Forget. A DynamicRateLimiter is safe for concurrent use.
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

// When returns how long item must wait: until the permit it takes is due,
// or the re-check delay while paused.
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

// Forget resets item's count; its permits already taken stay taken.
func (d *DynamicRateLimiter[T]) Forget(item T) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.requeues, item)
}

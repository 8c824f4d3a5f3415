package evictionqueue

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Run starts the workers and the scheduler that ends backoffs and in-flight
// TTLs, and blocks until ctx ends. Then it stops taking items, waits for the
// running handlers (their context has ended too) and returns nil, leaving
// every item not handled in the queue; calling Run again resumes. Run returns
// an error at once if another Run of this queue is running, and stops early
// with an error if the Pacer fails for a reason other than ctx ending.
func (q *Queue) Run(ctx context.Context) error {
	q.mu.Lock()
	if q.active {
		q.mu.Unlock()
		return fmt.Errorf("evictionqueue: queue %q is already running", q.cfg.Name)
	}
	q.active = true
	q.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var pacerErr error
	var errOnce sync.Once
	var worker func()
	worker = func() {
		// A handler that ends its goroutine (runtime.Goexit) ends this
		// worker too; respawn starts another in its place.
		respawn := func() { wg.Go(worker) }
		if err := q.work(ctx, respawn); err != nil {
			errOnce.Do(func() { pacerErr = err })
			cancel()
		}
	}
	for range q.cfg.Workers {
		wg.Go(worker)
	}
	wg.Go(func() { q.schedule(ctx) })

	<-ctx.Done()
	q.mu.Lock()
	q.stopping = true
	q.claimWaiters, q.holdWaiters = 0, 0
	q.claimCond.Broadcast()
	q.holdCond.Broadcast()
	q.mu.Unlock()
	wg.Wait()

	q.mu.Lock()
	q.active, q.stopping = false, false
	q.armed = time.Time{}
	q.mu.Unlock()
	return pacerErr
}

// work is one worker: claim, take a permit, take the head item, handle it.
// respawn starts a replacement worker; see handle.
func (q *Queue) work(ctx context.Context, respawn func()) error {
	for {
		q.mu.Lock()
		for !q.stopping && !(q.pending.Len() > q.claims && q.slotFreeLocked()) {
			q.claimWaiters++ // the waker decrements: see kickLocked
			q.claimCond.Wait()
		}
		// ctx ends before Run sets stopping; without this check a worker
		// whose handler fails on the ended ctx would take the requeued item
		// again and again until it does.
		if q.stopping || ctx.Err() != nil {
			q.mu.Unlock()
			return nil
		}
		q.claims++
		var pw *pacerWait
		waitCtx := ctx
		if q.cfg.Pacer != nil {
			pw = &pacerWait{}
			waitCtx, pw.cancel = context.WithCancel(ctx)
			q.pacing = append(q.pacing, pw)
		}
		q.kickLocked()
		q.mu.Unlock()

		if pw != nil {
			err := q.cfg.Pacer.Wait(waitCtx)
			pw.cancel()
			q.mu.Lock()
			q.donePacingLocked(pw)
			if err != nil {
				q.claims--
				q.kickLocked()
				q.mu.Unlock()
				if ctx.Err() != nil {
					return nil
				}
				if pw.withdrawn {
					continue // the items it came for were cancelled
				}
				return fmt.Errorf("evictionqueue: queue %q: pacer: %w", q.cfg.Name, err)
			}
		} else {
			q.mu.Lock()
		}

		// Holding a permit: take the head item, or keep the permit until one
		// is pending (the item this worker claimed for may have been
		// cancelled after the permit was granted).
		for !q.stopping && q.pending.Len() == 0 {
			q.holdWaiters++ // the waker decrements: see kickLocked
			q.holdCond.Wait()
		}
		if q.stopping || ctx.Err() != nil {
			q.claims--
			q.kickLocked()
			q.mu.Unlock()
			return nil
		}
		e := q.pending.pop()
		q.claims--
		q.running++ // the claim's slot passes to the handler call
		e.state = stateRunning
		e.calls++
		q.metrics.Removed(q.cfg.Name, e.item.Cluster, e.item.ResourceKind)
		var latency time.Duration
		if q.cfg.Metrics != nil {
			latency = q.clock.Since(e.enqueued)
		}
		q.kickLocked()
		q.mu.Unlock()

		q.handle(ctx, e, latency, respawn)
	}
}

// pacerWait is a worker's claim while it waits in Pacer.Wait.
type pacerWait struct {
	cancel    context.CancelFunc
	withdrawn bool // withdrawLocked cancelled the wait
}

// withdrawLocked cancels the Pacer waits of claims that no pending item
// backs any more (CancelCluster removed them), newest first. A worker that
// kept waiting would take a permit for nothing: a shared Limiter would hand
// it a slot another queue's worker is waiting for, and the worker would bank
// it and evict a later item at once, even while the Limiter is paused. A
// permit granted before the cancel lands is still kept (see work).
func (q *Queue) withdrawLocked() {
	for len(q.pacing) > 0 && q.claims-q.withdrawn > q.pending.Len() {
		pw := q.pacing[len(q.pacing)-1]
		q.pacing[len(q.pacing)-1] = nil
		q.pacing = q.pacing[:len(q.pacing)-1]
		pw.withdrawn = true
		q.withdrawn++
		pw.cancel()
	}
}

// donePacingLocked forgets pw once its Pacer.Wait has returned.
func (q *Queue) donePacingLocked(pw *pacerWait) {
	if pw.withdrawn {
		q.withdrawn--
		return
	}
	if i := slices.Index(q.pacing, pw); i >= 0 {
		q.pacing = slices.Delete(q.pacing, i, i+1)
	}
}

// slotFreeLocked reports whether MaxInFlight lets one more worker claim.
func (q *Queue) slotFreeLocked() bool {
	return q.cfg.MaxInFlight == 0 || q.running+q.inFlight+q.claims < q.cfg.MaxInFlight
}

// kickLocked wakes one worker that can make progress, if any: a worker that
// holds a permit first, else one that may claim. Every worker that wakes and
// acts calls it again, so a burst of changes wakes as many workers as it
// needs, one after another, without waking them all each time. The waiter
// counts are decremented here, not by the woken worker, so they count only
// workers not yet woken (sync.Cond has no spurious wake-ups): a second change
// before the first woken worker runs wakes another worker instead of
// signalling one that is already awake.
func (q *Queue) kickLocked() {
	n := q.pending.Len()
	if n == 0 || q.stopping {
		return
	}
	if q.holdWaiters > 0 {
		q.holdWaiters--
		q.holdCond.Signal()
		return
	}
	if q.claimWaiters > 0 && n > q.claims && q.slotFreeLocked() {
		q.claimWaiters--
		q.claimCond.Signal()
	}
}

// handle calls the handler for e and acts on its result. A handler that
// calls runtime.Goexit (as testing's t.FailNow does) ends the worker's
// goroutine whatever handle does; the deferred settle still counts the call
// as failed with ErrHandlerExited, so the item is retried and its in-flight
// slot is freed, and respawn puts a new worker in the ended one's place.
func (q *Queue) handle(ctx context.Context, e *entry, latency time.Duration, respawn func()) {
	returned := false
	defer func() {
		if !returned {
			q.settle(ctx, e, latency, ErrHandlerExited)
			respawn()
		}
	}()
	err := q.call(ctx, e.item)
	returned = true
	q.settle(ctx, e, latency, err)
}

// settle acts on the result of one handler call for e.
func (q *Queue) settle(ctx context.Context, e *entry, latency time.Duration, err error) {
	q.mu.Lock()
	q.running--
	result := ResultError
	switch {
	case err == nil:
		result = ResultSuccess
		q.leaveLocked(e, Succeeded, nil)
	case IsAbandoned(err):
		result = ResultAbandoned
		q.leaveLocked(e, Abandoned, err)
	case errors.Is(err, ErrInProgress):
		result = ResultSuccess
		if e.completed {
			q.noteLocked(e, InProgress, nil)
			q.leaveLocked(e, Completed, nil)
			break
		}
		e.state = stateInFlight
		e.due = q.clock.Now().Add(q.cfg.InFlightTTL)
		q.delayLocked(e)
		q.setInFlightLocked(q.inFlight + 1)
		q.noteLocked(e, InProgress, nil)
	case e.completed:
		// Complete confirmed the eviction while the handler was failing:
		// the eviction is done, retrying it would evict again.
		q.leaveLocked(e, Completed, nil)
	case e.cancelled:
		q.metrics.Cancelled(q.cfg.Name, 1)
		q.leaveLocked(e, Cancelled, err)
	case ctx.Err() != nil:
		// Run ended under the handler; its failure says nothing about the
		// item, so it is pending again without a failure counted.
		e.state = statePending
		q.pending.push(e)
		q.metrics.Added(q.cfg.Name, e.item.Cluster, e.item.ResourceKind)
		q.noteLocked(e, Requeued, err)
	default:
		q.failLocked(e, err)
	}
	q.metrics.Processed(q.cfg.Name, result, latency)
	q.kickLocked() // the call's slot is free
	q.unlockAndDeliverOwn()
}

// failLocked counts a handler failure of e: e backs off before its next
// attempt, or is dropped when out of retries.
func (q *Queue) failLocked(e *entry, err error) {
	e.failures++
	if int(e.failures) > q.cfg.MaxRetries {
		q.leaveLocked(e, Failed, err)
		return
	}
	e.state = stateBackingOff
	e.due = q.clock.Now().Add(q.cfg.backoff(int(e.failures)))
	q.delayLocked(e)
	q.backingOff++
	q.metrics.Added(q.cfg.Name, e.item.Cluster, e.item.ResourceKind)
	q.noteLocked(e, Retrying, err)
}

// delayLocked puts e in the delayed heap and tells the scheduler when e is
// now the earliest deadline.
func (q *Queue) delayLocked(e *entry) {
	q.delayed.push(e)
	if e.index == 0 {
		select {
		case q.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// call runs the handler, turning a panic into a *PanicError.
func (q *Queue) call(ctx context.Context, it Item) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return q.handler(ctx, it)
}

// schedule acts on backoffs and in-flight TTLs as they fall due, with one
// clock timer set for the earliest deadline.
func (q *Queue) schedule(ctx context.Context) {
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		q.mu.Lock()
		q.fireDueLocked()
		var tc <-chan time.Time
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		q.armed = time.Time{}
		if next := q.delayed.peek(); next != nil {
			// Created under the lock so that q.armed, which tests wait on
			// before moving a fake clock, is set only once the timer exists.
			timer = q.clock.NewTimer(next.due.Sub(q.clock.Now()))
			tc = timer.C()
			q.armed = next.due
		}
		q.unlockAndDeliverOwn()

		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		case <-tc:
		}
	}
}

// fireDueLocked moves every entry whose deadline has passed: a backoff that
// ended makes its entry pending; an in-flight TTL that passed frees the slot
// and counts a failure: the entry is pending again at once (its eviction may
// be under way, so there is nothing to back off from), or dropped as failed
// when out of retries, or as cancelled when its cluster was cancelled.
func (q *Queue) fireDueLocked() {
	now := q.clock.Now()
	for {
		e := q.delayed.peek()
		if e == nil || e.due.After(now) {
			return
		}
		q.delayed.pop()
		switch e.state {
		case stateBackingOff:
			// Still counted by Added since it began backing off.
			q.backingOff--
			e.state = statePending
			q.pending.push(e)
		case stateInFlight:
			q.setInFlightLocked(q.inFlight - 1)
			q.noteLocked(e, Expired, ErrInFlightExpired)
			if e.cancelled {
				q.metrics.Cancelled(q.cfg.Name, 1)
				q.leaveLocked(e, Cancelled, ErrInFlightExpired)
				break
			}
			e.failures++
			if int(e.failures) > q.cfg.MaxRetries {
				q.leaveLocked(e, Failed, ErrInFlightExpired)
				break
			}
			e.state = statePending
			q.pending.push(e)
			q.metrics.Added(q.cfg.Name, e.item.Cluster, e.item.ResourceKind)
		}
		q.kickLocked()
	}
}

package evictionqueue

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// This file is the queue's only blocking layer: Run, its workers and its
// scheduler. How a worker takes an item is next; what then happens to the
// item is the store's (store.go).

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
	// Workers check ctx under the lock before they wait, so none misses this.
	q.mu.Lock()
	q.ready.Broadcast()
	q.mu.Unlock()
	wg.Wait()

	q.mu.Lock()
	q.active = false
	q.mu.Unlock()
	return pacerErr
}

// work is one worker: a permit, then the head item, then the handler, until
// ctx ends. respawn starts a replacement worker; see handle.
func (q *Queue) work(ctx context.Context, respawn func()) error {
	for {
		e, giveBack, err := q.next(ctx)
		if e == nil {
			return err
		}
		q.handle(ctx, e, giveBack, respawn)
	}
}

// next is how a worker takes a permit and an item. It waits until more
// items are pending than workers already wait for permits for, and
// MaxInFlight has a slot; then it takes a permit from the Pacer, holding
// the slot while it waits, and only then the head item (of the permit's
// domain, each cluster's domain read at that moment). So permits are taken
// for items that exist, not banked by idle workers, and an item cancelled
// while its worker waits for a permit is never handled: kickLocked
// withdraws the waits when the pending items change under them. A permit
// with no item left to take goes back to a DomainPacer at once; a plain
// Pacer's is lost.
//
// next returns nil when ctx ends, with an error if the Pacer failed;
// otherwise the item and the function that gives its permit back (nil
// without a DomainPacer).
func (q *Queue) next(ctx context.Context) (*entry, func(), error) {
	q.mu.Lock()
	for {
		for ctx.Err() == nil && !q.mayGoLocked() {
			q.ready.Wait()
		}
		if ctx.Err() != nil {
			q.mu.Unlock()
			return nil, nil, nil
		}
		if q.cfg.Pacer == nil {
			return q.takeLocked("", true), nil, nil
		}
		waitCtx, cancel := context.WithCancel(ctx)
		pw := &pacerWait{cancel: cancel}
		q.waits = append(q.waits, pw)
		q.kickLocked() // more items may be pending than workers now wait for
		q.mu.Unlock()
		domain, giveBack, err := q.pace(waitCtx)
		cancel()
		q.mu.Lock()
		if !pw.withdrawn {
			q.waits = slices.DeleteFunc(q.waits, func(w *pacerWait) bool { return w == pw })
		}
		switch {
		case err != nil && (pw.withdrawn || ctx.Err() != nil):
			q.kickLocked() // its slot is free: wait again, or return
			continue
		case err != nil:
			q.kickLocked()
			q.mu.Unlock()
			return nil, nil, fmt.Errorf("evictionqueue: queue %q: pacer: %w", q.cfg.Name, err)
		case ctx.Err() == nil:
			// Withdrawn or not, the permit is for an item of its domain
			// if one is left.
			if e := q.takeLocked(domain, q.domains == nil); e != nil {
				return e, giveBack, nil
			}
		}
		q.kickLocked()
		if giveBack != nil {
			q.mu.Unlock()
			giveBack() // outside q.mu: the Limiter calls back into the queue under its own lock
			q.mu.Lock()
		}
	}
}

// pace takes a permit from the Pacer: with a DomainPacer, for one of the
// domains with pending items.
func (q *Queue) pace(ctx context.Context) (string, func(), error) {
	if q.domains != nil {
		return q.domains.WaitDomain(ctx, q.pendingDomains)
	}
	return "", nil, q.cfg.Pacer.Wait(ctx)
}

// pendingDomains is what a worker asks a DomainPacer for.
func (q *Queue) pendingDomains() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.s.domains()
}

// pacerWait is a worker's wait for a permit.
type pacerWait struct {
	cancel    context.CancelFunc
	withdrawn bool // kickLocked cancelled it and took it out of q.waits
}

// mayGoLocked reports whether one more worker may go for an item: more items
// are pending than workers wait for permits for, and MaxInFlight counts
// those waits, the handler calls and the background evictions.
func (q *Queue) mayGoLocked() bool {
	waits := len(q.waits)
	if q.s.pending.Len() <= waits {
		return false
	}
	return q.cfg.MaxInFlight == 0 || q.s.running+q.s.inFlight+waits < q.cfg.MaxInFlight
}

// kickLocked withdraws the waits for permits when the pending items no
// longer match them, and wakes one waiting worker if one may go. Every
// worker that goes kicks again, so a burst of changes wakes as many workers
// as it needs, one after another, without waking them all each time.
//
// The waits are withdrawn, their workers to wait again for what is pending
// then, when more workers wait than items are pending (CancelCluster
// removed some: a worker waiting on would take a permit for nothing, one
// another queue's worker is waiting for) or when a domain gained its first
// pending item or lost its last (the waits are for other domains).
func (q *Queue) kickLocked() {
	if len(q.waits) > q.s.pending.Len() || q.s.pending.epoch != q.seenEpoch {
		q.seenEpoch = q.s.pending.epoch
		for _, pw := range q.waits {
			pw.withdrawn = true
			pw.cancel()
		}
		clear(q.waits)
		q.waits = q.waits[:0]
	}
	if q.mayGoLocked() {
		q.ready.Signal()
	}
}

// takeLocked takes the head item of domain, or of all when any is set,
// for a worker, and unlocks if it found one.
func (q *Queue) takeLocked(domain string, any bool) *entry {
	e := q.s.take(domain, any, q.latencyNow())
	if e != nil {
		q.kickLocked()
		q.mu.Unlock()
	}
	return e
}

// handle calls the handler for e and settles its result. A handler that
// calls runtime.Goexit (as testing's t.FailNow does) ends the worker's
// goroutine whatever handle does; the deferred settle still counts the call
// as failed with ErrHandlerExited, so the item is retried and its in-flight
// slot is freed, and respawn puts a new worker in the ended one's place.
func (q *Queue) handle(ctx context.Context, e *entry, giveBack func(), respawn func()) {
	returned := false
	defer func() {
		if !returned {
			q.settle(ctx, e, ErrHandlerExited)
			respawn()
		}
	}()
	err := q.call(ctx, e.item)
	returned = true
	q.settle(ctx, e, err)
	if giveBack != nil && IsAbandoned(err) {
		giveBack() // nothing was evicted: the permit was not used
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

// settle hands the result of a handler call to the store. A failure after
// ctx ended says nothing about the item: it is pending again, not retried.
func (q *Queue) settle(ctx context.Context, e *entry, err error) {
	var now time.Time // only a failure or ErrInProgress sets a deadline from it
	if err != nil {
		now = q.clock.Now()
	}
	q.mu.Lock()
	if q.s.done(e, err, now, ctx.Err() != nil) {
		select {
		case q.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	q.kickLocked() // the call's slot is free
	q.unlockAndDeliverOwn()
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
		q.s.advance(q.clock.Now())
		q.kickLocked()
		next, ok := q.s.nextDue()
		q.unlockAndDeliverOwn()

		if timer != nil {
			timer.Stop()
			timer = nil
		}
		var tc <-chan time.Time
		if ok {
			d := next.Sub(q.clock.Now())
			if d <= 0 {
				continue // the clock passed it meanwhile
			}
			timer = q.clock.NewTimer(d)
			tc = timer.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		case <-tc:
		}
	}
}

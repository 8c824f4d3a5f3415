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

// Run starts the workers and the scheduler that ends backoffs and in-flight
// TTLs, and blocks until ctx ends; then it waits for the running handlers
// and returns nil, every item not handled still queued. It fails at once if
// the queue is running already, and stops early with an error if the Pacer
// fails for a reason other than ctx ending.
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
		respawn := func() { wg.Go(worker) } // after a handler's Goexit
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

// work is one worker, until ctx ends.
func (q *Queue) work(ctx context.Context, respawn func()) error {
	for {
		e, p, err := q.next(ctx)
		if e == nil {
			return err
		}
		hctx := ctx
		if q.domains != nil {
			hctx = context.WithValue(ctx, permitDomainKey{}, p.domain)
		}
		q.handle(hctx, e, p.giveBack, respawn)
	}
}

// next is how a worker takes a permit and an item. It waits until more
// items are pending than workers wait for permits, and MaxInFlight has a
// slot; then it reserves a permit for one of the domains with pending items
// (a list read from the store before it asks), holding the slot, and only
// then takes the head item of the permit's domain. So an item cancelled
// while a worker waits is never handled (kickLocked withdraws the waits, as
// it does when the domains with pending items change), and a permit with no
// item left goes back to a DomainPacer (a plain Pacer's is lost): none is
// kept. next returns nil when
// ctx ends, with an error if the Pacer failed; else the item and what gives
// its permit (giveBack nil without a DomainPacer).
func (q *Queue) next(ctx context.Context) (*entry, permit, error) {
	q.mu.Lock()
	for {
		for ctx.Err() == nil && !q.mayGoLocked() {
			q.ready.Wait()
		}
		if ctx.Err() != nil {
			q.mu.Unlock()
			return nil, permit{}, nil
		}
		if q.cfg.Pacer == nil {
			return q.takeLocked("", true), permit{}, nil
		}
		var err error
		var domains []string
		if q.domains != nil {
			// Read now, under q.mu, in time proportional to the domains:
			// the pacer gets a plain list and calls nothing of the queue.
			domains = q.s.domains()
		}
		waitCtx, cancel := context.WithCancel(ctx)
		pw := &pacerWait{cancel: cancel}
		q.waits = append(q.waits, pw)
		q.kickLocked() // more items may be pending than workers now wait for
		q.mu.Unlock()
		var domain string
		var giveBack func()
		if q.domains != nil {
			domain, giveBack, err = q.domains.WaitDomain(waitCtx, domains)
		} else {
			err = q.cfg.Pacer.Wait(waitCtx)
		}
		cancel()
		q.mu.Lock()
		if !pw.withdrawn {
			q.waits = slices.DeleteFunc(q.waits, func(w *pacerWait) bool { return w == pw })
		}
		switch {
		case err == nil && ctx.Err() == nil: // withdrawn or not, if an item is left
			if e := q.takeLocked(domain, q.domains == nil); e != nil {
				return e, permit{domain: domain, giveBack: giveBack}, nil
			}
		case err != nil && !pw.withdrawn && ctx.Err() == nil:
			q.kickLocked()
			q.mu.Unlock()
			return nil, permit{}, fmt.Errorf("evictionqueue: queue %q: pacer: %w", q.cfg.Name, err)
		}
		q.kickLocked() // the wait's slot is free: wait again, or return
		if giveBack != nil {
			q.mu.Unlock()
			giveBack() // outside q.mu: the pacer's lock is never taken under the queue's
			q.mu.Lock()
		}
	}
}

// permit is what a worker holds for a handler call: the domain of a
// DomainPacer's permit and what gives it back.
type permit struct {
	domain   string
	giveBack func()
}

// permitDomainKey is the context key of PermitDomain.
type permitDomainKey struct{}

// PermitDomain returns the disruption domain whose permit the handler call
// given ctx holds: the domain its item was filed under (Config.DomainOf)
// when the worker reserved it, which a caller that attributes evictions to
// domains should use, as the pacer charged that domain's bucket. ok is false
// outside a handler call, or when the queue's Pacer is not a DomainPacer.
func PermitDomain(ctx context.Context) (domain string, ok bool) {
	domain, ok = ctx.Value(permitDomainKey{}).(string)
	return domain, ok
}

// pacerWait is a worker's wait for a permit.
type pacerWait struct {
	cancel    context.CancelFunc
	withdrawn bool // kickLocked cancelled it and took it out of q.waits
}

// mayGoLocked reports whether one more worker may go for an item: more items
// are pending than workers waiting for permits, and MaxInFlight, counting
// those waits, the handler calls and the background evictions, has room.
func (q *Queue) mayGoLocked() bool { return q.s.mayWait(len(q.waits)) }

// kickLocked wakes one waiting worker if one may go; each worker that goes
// kicks again, so a burst wakes as many as it needs, one after another. It
// first withdraws the waits for permits that no pending item backs, newest
// first (a wait on would take a permit another queue's worker waits for);
// and with a DomainPacer every wait, to be made again for what is pending
// then, when a domain gained its first pending item or lost its last. A
// plain Pacer ignores domains: its waits need no renewing.
func (q *Queue) kickLocked() {
	keep := min(len(q.waits), q.s.pending.Len())
	if q.domains != nil && q.s.pending.epoch != q.seenEpoch {
		q.seenEpoch = q.s.pending.epoch
		keep = 0
	}
	for _, pw := range q.waits[keep:] {
		pw.withdrawn = true
		pw.cancel()
	}
	clear(q.waits[keep:])
	q.waits = q.waits[:keep]
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

// handle calls the handler for e, settles its result and gives the permit
// back when the handler skipped, abandoned or deferred the item. A handler that calls
// runtime.Goexit (as t.FailNow does) ends the worker's goroutine; the
// deferred settle counts the call as failed (ErrHandlerExited) and respawn
// puts a new worker in its place.
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
	if q.settle(ctx, e, err) && giveBack != nil {
		giveBack()
	}
}

// call runs the handler, turning a panic into a *PanicError.
func (q *Queue) call(ctx context.Context, it Item) error { return callHandler(ctx, q.handler, it) }

// callHandler runs h, turning a panic into a *PanicError: one handler call
// of a Queue's worker or of Workers.
func callHandler(ctx context.Context, h Handler, it Item) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return h(ctx, it)
}

// settle hands the result of a handler call to the store, and reports
// whether the call left its permit unused (see store.done).
func (q *Queue) settle(ctx context.Context, e *entry, err error) bool {
	var now time.Time // only a failure or ErrInProgress sets a deadline from it
	if err != nil {
		now = q.clock.Now()
	}
	q.mu.Lock()
	earliest, unused := q.s.done(e, err, now, ctx.Err() != nil)
	if earliest {
		select {
		case q.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	q.kickLocked() // the call's slot is free
	q.unlockAndDeliverOwn()
	return unused
}

// schedule acts on backoffs and in-flight TTLs as they fall due, with one
// timer for the earliest.
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

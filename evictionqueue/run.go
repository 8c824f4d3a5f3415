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
		e, err := q.next(ctx)
		if e == nil {
			return err
		}
		q.handle(ctx, e, respawn)
	}
}

// next is how a worker takes an item. It waits until more items are pending
// than workers already wait for permits for, and MaxInFlight has a slot;
// then it takes a permit from the Pacer (or one kept from before), holding
// the slot while it waits, and only then the head item. So permits are
// taken for items that exist, not banked by idle workers, and an item
// cancelled while its worker waits for a permit is never handled:
// CancelCluster withdraws that wait (withdrawLocked). A permit granted all
// the same, or for an item that is gone, is kept for the next item.
//
// next returns nil when ctx ends, with an error if the Pacer failed.
func (q *Queue) next(ctx context.Context) (*entry, error) {
	q.mu.Lock()
	for {
		for ctx.Err() == nil && !q.mayGoLocked() {
			q.ready.Wait()
		}
		if ctx.Err() != nil {
			q.mu.Unlock()
			return nil, nil
		}
		if q.cfg.Pacer == nil {
			return q.takeLocked("")
		}
		if d, ok := q.keptLocked(); ok {
			return q.takeLocked(d)
		}

		// With a DomainPacer, the permit is for one of the domains that
		// have pending items, the domain of the oldest head first.
		var domains []string
		if q.domains != nil {
			domains = q.s.pending.domains()
		}
		waitCtx, cancel := context.WithCancel(ctx)
		pw := &pacerWait{cancel: cancel, domains: sortedSet(domains)}
		q.waits = append(q.waits, pw)
		q.kickLocked() // more items may be pending than workers now wait for
		q.mu.Unlock()
		var got string
		var err error
		if q.domains != nil {
			got, err = q.domains.WaitDomain(waitCtx, domains)
		} else {
			err = q.cfg.Pacer.Wait(waitCtx)
		}
		cancel()
		q.mu.Lock()
		if !pw.withdrawn {
			i := slices.Index(q.waits, pw)
			q.waits = slices.Delete(q.waits, i, i+1)
		}
		switch {
		case err != nil && (pw.withdrawn || ctx.Err() != nil):
			// Its item was cancelled, its domains changed, or Run ends:
			// wait again, or return.
		case err != nil:
			q.kickLocked() // its slot is free
			q.mu.Unlock()
			return nil, fmt.Errorf("evictionqueue: queue %q: pacer: %w", q.cfg.Name, err)
		case pw.withdrawn || ctx.Err() != nil || !q.s.pending.has(got):
			// Granted all the same: kept for the next item (of its domain).
			if q.permits == nil {
				q.permits = make(map[string]int)
			}
			q.permits[got]++
		default:
			return q.takeLocked(got) // the wait's slot passes to the handler call
		}
		q.kickLocked()
	}
}

// keptLocked finds a permit kept from before that an item pending now can
// use: any, under one pacer; one for a domain with pending items, with a
// DomainPacer. It returns the domain it was granted for.
func (q *Queue) keptLocked() (string, bool) {
	for d, n := range q.permits {
		if n == 0 || (q.domains != nil && !q.s.pending.has(d)) {
			continue
		}
		if q.permits[d]--; q.permits[d] == 0 {
			delete(q.permits, d)
		}
		return d, true
	}
	return "", false
}

// pacerWait is a worker's wait in Pacer.Wait.
type pacerWait struct {
	cancel    context.CancelFunc
	withdrawn bool     // withdrawLocked cancelled it and took it out of q.waits
	domains   []string // with a DomainPacer: the domains it waits for, sorted
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

// kickLocked wakes one waiting worker if one may go. Every worker that goes
// kicks again, so a burst of changes wakes as many workers as it needs, one
// after another, without waking them all each time.
func (q *Queue) kickLocked() {
	if q.domains != nil && q.s.pending.epoch != q.seenEpoch {
		q.rewaitLocked()
	}
	if q.mayGoLocked() {
		q.ready.Signal()
	}
}

// takeLocked takes the head item for a worker, with a DomainPacer the head
// of domain (the permit's), and unlocks.
func (q *Queue) takeLocked(domain string) (*entry, error) {
	var e *entry
	if q.domains != nil {
		e = q.s.takeFrom(domain, q.latencyNow())
	} else {
		e = q.s.take(q.latencyNow())
	}
	q.kickLocked()
	q.mu.Unlock()
	return e, nil
}

// withdrawLocked cancels the Pacer waits that no pending item backs any more
// (CancelCluster removed them), newest first. A worker that kept waiting
// would take a permit for nothing: a shared Limiter would hand it a slot
// another queue's worker is waiting for, and the worker would evict a later
// item at once with it, even while the Limiter is paused.
func (q *Queue) withdrawLocked() {
	for len(q.waits) > q.s.pending.Len() {
		last := len(q.waits) - 1
		pw := q.waits[last]
		q.waits[last] = nil
		q.waits = q.waits[:last]
		pw.withdrawn = true
		pw.cancel()
	}
	if q.domains != nil {
		q.rewaitLocked()
	}
}

// rewaitLocked withdraws, with a DomainPacer, the waits for a set of
// domains other than the domains now pending: a domain that gained items
// would otherwise wait behind workers waiting for a paused domain, and one
// that lost them would take a permit for nothing. Their workers wait again,
// for the domains pending then.
func (q *Queue) rewaitLocked() {
	q.seenEpoch = q.s.pending.epoch
	now := sortedSet(q.s.pending.domains())
	q.waits = slices.DeleteFunc(q.waits, func(pw *pacerWait) bool {
		if slices.Equal(pw.domains, now) {
			return false
		}
		pw.withdrawn = true
		pw.cancel()
		return true
	})
}

func sortedSet(s []string) []string {
	return slices.Sorted(slices.Values(s))
}

// handle calls the handler for e and settles its result. A handler that
// calls runtime.Goexit (as testing's t.FailNow does) ends the worker's
// goroutine whatever handle does; the deferred settle still counts the call
// as failed with ErrHandlerExited, so the item is retried and its in-flight
// slot is freed, and respawn puts a new worker in the ended one's place.
func (q *Queue) handle(ctx context.Context, e *entry, respawn func()) {
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

package main

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/failoverkit/failover/evictionqueue"
)

// workerLine models the queues' workers in line for the shared Limiter, as
// evictionqueue.Queue's workers would be: each queue has the scenario's
// workers, one waits for a permit only for an item no other worker waits
// for and while MaxInFlight has a slot, and the Limiter serves them first
// come, first served. The handler takes no simulated time, so between
// handler calls every worker of a queue is either in line or idle; the
// workers bound how many of a queue's items wait for a permit at once, and
// so how the two queues interleave on the Limiter.
type workerLine struct {
	workers int
	waiting [2]int // workers of each queue in line
	order   []int  // the queue of each worker in line, first come first
	// permitAt is when the Limiter may next free a permit for the worker at
	// the head of the line, as TakeAt last said; zero when nobody is in
	// line, or while paused (only a change of health frees one then).
	permitAt time.Time
}

// join puts in line the idle workers of queue i that may go for an item:
// an item is pending, more items wait (pending or backing off) than its
// workers in line, and MaxInFlight (0: unlimited) has a slot for one more.
// Items backing off may make one join that finds none once its permit
// comes: it gives the permit back (dispatch).
func (l *workerLine) join(i int, q *evictionqueue.Store, maxInFlight int) {
	if len(q.PendingDomains()) == 0 {
		return
	}
	for l.waiting[i] < l.workers && q.Len() > l.waiting[i] &&
		(maxInFlight == 0 || q.InFlight()+l.waiting[i] < maxInFlight) {
		l.order = append(l.order, i)
		l.waiting[i]++
	}
}

// withdraw takes out of line, newest first, the workers of queue i whose
// items CancelCluster removed, so that none takes a permit for nothing.
func (l *workerLine) withdraw(i int, q *evictionqueue.Store) {
	for j := len(l.order) - 1; j >= 0 && l.waiting[i] > q.Len(); j-- {
		if l.order[j] == i {
			l.order = slices.Delete(l.order, j, j+1)
			l.waiting[i]--
		}
	}
}

// dispatch hands the permits free at now to the workers in line, in order:
// each takes its queue's head item and calls the handler, whose result the
// store settles at once; the worker then joins the line again if it may.
//
// Under a domain rule a worker asks, as an evictionqueue.Queue's worker
// does, for a permit for any domain its queue has items pending in
// (Limiter.TakeDomainAt) and takes that domain's head item: a worker whose
// domains have no permit free lets the next one in line, of the other
// queue, try its own.
func (s *sim) dispatch(ctx context.Context, now time.Time) error {
	l := &s.line
	for {
		l.permitAt = time.Time{}
		j, domain, giveBack, ok := s.nextPermit(now)
		if !ok {
			return nil
		}
		i := l.order[j]
		l.order = slices.Delete(l.order, j, j+1)
		l.waiting[i]--
		q := s.w.queues[i]
		it, ok := q.TakeFrom(domain, now)
		if !ok {
			// The items it joined for back off (RetryAfter): as an
			// evictionqueue.Queue's worker does, it gives the permit
			// back and stays out of line until one is pending.
			giveBack()
			continue
		}
		err := s.w.handler(i)(ctx, it)
		q.Done(it, err, now)
		var deferred *evictionqueue.RetryAfterError
		if evictionqueue.IsAbandoned(err) || errors.As(err, &deferred) {
			giveBack() // as an evictionqueue.Queue's worker does: nothing was evicted
		}
		l.join(i, q, s.sc.MaxInFlight)
	}
}

// nextPermit takes a permit at now for the first worker in line that can
// have one, and returns its place in line and the permit's domain. When no
// worker can, it sets permitAt to when one may (zero: only a change of
// health frees one).
func (s *sim) nextPermit(now time.Time) (j int, domain string, giveBack func(), ok bool) {
	l := &s.line
	var tried [2]bool // workers of one queue ask for the same domains
	for j, i := range l.order {
		if tried[i] {
			continue
		}
		tried[i] = true
		domain, giveBack, ok, next := s.w.limiter.TakeDomainAt(now, s.w.queues[i].PendingDomains())
		if ok {
			return j, domain, giveBack, true
		}
		if !next.IsZero() && (l.permitAt.IsZero() || next.Before(l.permitAt)) {
			l.permitAt = next
		}
		if !s.w.perDomain() {
			break // one bucket for all: nobody further in line gets one
		}
	}
	return 0, "", nil, false
}

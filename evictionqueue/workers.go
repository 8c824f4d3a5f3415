package evictionqueue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Permits hands out a pacer's permits without waiting, for a caller that
// moves time itself: *ratelimit.Limiter (TakeDomainAt is WaitDomain's
// step). TakeDomainAt takes a permit at now for the first of domains that
// has one free and returns that domain and what gives it back, or, when
// none is free, when to ask again (zero: only a change of health frees
// one).
type Permits interface {
	TakeDomainAt(now time.Time, domains []string) (domain string, giveBack func(), ok bool, next time.Time)
	PacesByDomain() bool
}

// Workers are the workers of Stores that share one Permits, run on the
// caller's goroutine at the time the caller gives: Queue.Run's workers for a
// simulation that moves its own clock and must play the same run whatever
// the goroutines would have done. A worker of each Store waits for a permit
// when Queue.Run's would (more items pending than its workers waiting, and
// a MaxInFlight slot for each wait), in one line across the Stores, in the
// order the workers began to wait, as a Limiter serves the workers of the
// Queues sharing it. A worker given a permit takes its Store's head item of
// the permit's domain, calls the Store's handler (a panic is an error, as
// in Run) and settles the result, then gives the permit back if the call
// left it unused (Skip, Abandon, a deferral) or no item was left for it,
// and waits again at the end of the line.
//
// Workers never wait and start no goroutine. It is not safe for concurrent
// use, nor are its Stores.
type Workers struct {
	permits   Permits
	perDomain bool
	stores    []workedStore
	// line is the workers waiting for a permit, by the index of their
	// store in stores, oldest first.
	line []int
}

type workedStore struct {
	st *Store
	h  Handler
	n  int
}

// NewWorkers returns Workers that take their permits from p.
func NewWorkers(p Permits) (*Workers, error) {
	if p == nil {
		return nil, errors.New("evictionqueue: NewWorkers: Permits must not be nil")
	}
	return &Workers{permits: p, perDomain: p.PacesByDomain()}, nil
}

// Add gives st n workers that call h. Its workers join the line as they
// begin to wait, after those of the Stores added before.
func (w *Workers) Add(st *Store, h Handler, n int) error {
	switch {
	case st == nil:
		return errors.New("evictionqueue: Workers.Add: Store must not be nil")
	case h == nil:
		return errors.New("evictionqueue: Workers.Add: handler must not be nil")
	case n < 1:
		return fmt.Errorf("evictionqueue: Workers.Add: n: %d: want at least one worker", n)
	}
	w.stores = append(w.stores, workedStore{st: st, h: h, n: n})
	return nil
}

// Run does what the workers can do at now: it ends the Stores' backoffs
// and in-flight TTLs due by then (Store.Advance), then hands out the
// permits free at now, one at a time, to the workers in line, each worker
// handling its item before the next permit goes out. Under a pacer by
// domain, a worker whose domains have no permit free lets the next one in
// line, of another Store, try its own; under one bucket nobody further in
// line gets one. It returns when a permit may next be free for a worker in
// line (zero: none waits, or only a change of health frees one), and ctx's
// error once ctx has ended.
func (w *Workers) Run(ctx context.Context, now time.Time) (next time.Time, err error) {
	for _, ws := range w.stores {
		ws.st.Advance(now)
	}
	for {
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		w.syncLine()
		var ok bool
		if ok, next = w.grantNext(ctx, now); !ok {
			return next, nil
		}
	}
}

// syncLine puts at the end of the line the workers of each Store that wait
// now and are not in it, the first Store's first, and takes out of it,
// newest first, those that no longer would.
func (w *Workers) syncLine() {
	for i, ws := range w.stores {
		have := 0
		for _, j := range w.line {
			if j == i {
				have++
			}
		}
		n := 0
		for n < ws.n && ws.st.s.mayWait(n) {
			n++
		}
		for ; have < n; have++ {
			w.line = append(w.line, i)
		}
		for k := len(w.line) - 1; k >= 0 && have > n; k-- {
			if w.line[k] == i {
				w.line = slices.Delete(w.line, k, k+1)
				have--
			}
		}
	}
}

// grantNext takes a permit at now for the first worker in line that can
// have one and lets it handle its item; false when nobody can, with when a
// permit may next be free.
func (w *Workers) grantNext(ctx context.Context, now time.Time) (granted bool, next time.Time) {
	tried := make([]bool, len(w.stores)) // the workers of one Store ask for the same domains
	for k, i := range w.line {
		if tried[i] {
			continue
		}
		tried[i] = true
		domain, giveBack, ok, at := w.permits.TakeDomainAt(now, w.stores[i].st.s.domains())
		if ok {
			w.line = slices.Delete(w.line, k, k+1)
			w.handle(ctx, w.stores[i], domain, giveBack, now)
			return true, time.Time{}
		}
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
		if !w.perDomain {
			break
		}
	}
	return false, next
}

// handle is one worker's turn with a permit for domain: it takes ws's head
// item of domain, calls the handler and settles the result as a Queue's
// worker does, and gives the permit back when the call left it unused or
// no item was left.
func (w *Workers) handle(ctx context.Context, ws workedStore, domain string, giveBack func(), now time.Time) {
	s := &ws.st.s
	e := s.take(domain, false, now)
	if e == nil {
		giveBack()
		return
	}
	err := callHandler(context.WithValue(ctx, permitDomainKey{}, domain), ws.h, e.item)
	_, unused := s.done(e, err, now, ctx.Err() != nil)
	ws.st.deliver()
	if unused {
		giveBack()
	}
}

package main

import (
	"context"
	"time"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/ratelimit"
)

// The library's eviction queues, one evictionqueue.Store per binding kind,
// worked by evictionqueue.Workers on the simulated clock: at each instant
// the driver's one goroutine lets the workers take the permits the shared
// ratelimit.Limiter has free then (Workers.Run), in the line Queue.Run's
// workers would form, each calling the handler before the next permit goes
// out. Nothing runs between two of the driver's calls, so the run is the
// same run after run; the Queue's rules (order, backoffs, in-flight TTLs,
// MaxInFlight, when a worker waits) are the library's own, not restated.
type engine struct {
	queues  [2]*evictionqueue.Store
	workers *evictionqueue.Workers
	// permitAt is when the Limiter may next free a permit for a worker in
	// line (zero: nobody in line, or only a change of health frees one).
	permitAt time.Time
}

func newEngine(limiter *ratelimit.Limiter) (*engine, error) {
	w, err := evictionqueue.NewWorkers(limiter)
	if err != nil {
		return nil, err
	}
	return &engine{workers: w}, nil
}

// newQueue makes queue i with n workers that call h.
func (e *engine) newQueue(i int, cfg evictionqueue.Config, h evictionqueue.Handler, n int) error {
	st, err := evictionqueue.NewStore(cfg)
	if err != nil {
		return err
	}
	e.queues[i] = st
	return e.workers.Add(st, h, n)
}

// dispatch lets the workers take the permits free at now and handle their
// items.
func (e *engine) dispatch(ctx context.Context, now time.Time) error {
	next, err := e.workers.Run(ctx, now)
	e.permitAt = next
	return err
}

// nextDue is when the next backoff or in-flight TTL ends, in either queue.
func (e *engine) nextDue() (time.Time, bool) {
	var next time.Time
	found := false
	for _, q := range e.queues {
		if t, ok := q.NextDue(); ok && (!found || t.Before(next)) {
			next, found = t, true
		}
	}
	return next, found
}

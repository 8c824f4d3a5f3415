package main

import (
	"fmt"
	"time"
)

// settle waits until the queues' goroutines have done all they can at the
// clock's time (see engine).
func (e *engine) settle() error {
	return e.waitFor(e.quiet, func() string { return "the eviction queues did not settle (" + e.state() + ")" })
}

// waitFor waits until done reports true, checking it again at every event
// the driver sees (engine.changed), never on time. The queues settle
// within microseconds, so settleTimeout of wall time passing means a bug
// in the driver's bookkeeping: the error says what did not happen
// (failed).
func (e *engine) waitFor(done func() bool, failed func() string) error {
	var guard *time.Timer
	defer func() {
		if guard != nil {
			guard.Stop()
		}
	}()
	for {
		e.mu.Lock()
		changed := e.changed
		e.mu.Unlock()
		if done() {
			return nil
		}
		if guard == nil {
			guard = time.NewTimer(settleTimeout)
		}
		select {
		case <-changed:
		case <-guard.C:
			return fmt.Errorf("fleetsim: %s within %v (a bug in the driver)", failed(), settleTimeout)
		}
	}
}

// quiet reports whether the queues' goroutines have nothing left to do
// until the driver acts.
func (e *engine) quiet() bool {
	now := e.clk.Now()
	var queued, inFlight [2]int
	for i, q := range e.queues {
		queued[i], inFlight[i] = q.Len(), q.InFlight()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.granted > 0 {
		return false
	}
	for i := range 2 {
		if e.delivered[i] != e.expected[i] {
			return false
		}
		e.expireLocked(i, now)
		pending := queued[i] - e.backoff[i].len()
		want := min(e.workers, pending)
		if e.maxInFlight > 0 {
			want = min(want, e.maxInFlight-inFlight[i])
		}
		if e.waiting(i) != want {
			return false
		}
		// Every timer that fired was acted on, and the scheduler wakes
		// at the queue's next deadline at the latest.
		next, due := e.nextDueLocked(i, now)
		armed := !due
		for t, q := range e.timers {
			if q != i {
				continue
			}
			if !t.at.After(now) {
				return false
			}
			if due && !t.at.After(next) {
				armed = true
			}
		}
		if !armed {
			return false
		}
	}
	return true
}

// state describes what settle waits on, for the error that says it never
// came.
func (e *engine) state() string {
	now := e.clk.Now()
	var queued, inFlight [2]int
	for i, q := range e.queues {
		queued[i], inFlight[i] = q.Len(), q.InFlight()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := fmt.Sprintf("at %s, %d permits in use", now.Format(time.TimeOnly), e.granted)
	for i := range 2 {
		next, due := e.nextDueLocked(i, now)
		var timers []string
		for t, q := range e.timers {
			if q == i {
				timers = append(timers, t.at.Format(time.TimeOnly))
			}
		}
		out += fmt.Sprintf("; %s: %d of %d outcomes, %d queued, %d backing off, %d in flight, %d waiting for a permit, next deadline %s (%v), timers %v",
			queueNames[i], e.delivered[i], e.expected[i], queued[i], e.backoff[i].len(), inFlight[i], e.waiting(i), next.Format(time.TimeOnly), due, timers)
	}
	return out
}

// waiting counts queue i's workers waiting for a permit (not withdrawn).
func (e *engine) waiting(i int) int {
	n := 0
	for _, w := range e.waits[i] {
		if w.ctx.Err() == nil {
			n++
		}
	}
	return n
}

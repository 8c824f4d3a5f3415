package main

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// queueClock is a queue's clock: the simulated one, whose timers it
// watches until they are stopped.
//
// A timer is set for the time the queue meant: the Now it last read plus
// the duration. The driver moves the clock only when the queue's
// goroutines have nothing due, but its scheduler goroutine, woken by a
// handler's result, may still be between reading the time and setting its
// timer: the FakeClock's own NewTimer would then count from the time the
// driver moved to, and the deadline would slip.
type queueClock struct {
	*clocktesting.FakeClock
	e     *engine
	queue int

	mu   sync.Mutex
	last time.Time // what Now last returned
}

// Now is the FakeClock's, remembered.
func (c *queueClock) Now() time.Time {
	t := c.FakeClock.Now()
	c.mu.Lock()
	c.last = t
	c.mu.Unlock()
	return t
}

// NewTimer fires d after the time Now last returned, watched.
func (c *queueClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	at := c.last.Add(d)
	c.mu.Unlock()
	t := &watchedTimer{at: at, c: c}
	if now := c.FakeClock.Now(); at.After(now) {
		t.Timer = c.FakeClock.NewTimer(at.Sub(now))
	} else {
		t.Timer = firedTimer(now) // the clock has passed it already
	}
	c.e.mu.Lock()
	c.e.timers[t] = c.queue
	c.e.notifyLocked()
	c.e.mu.Unlock()
	return t
}

type watchedTimer struct {
	clock.Timer
	at time.Time
	c  *queueClock
}

// Stop stops the timer and forgets it.
func (t *watchedTimer) Stop() bool {
	ok := t.Timer.Stop()
	e := t.c.e
	e.mu.Lock()
	delete(e.timers, t)
	e.notifyLocked()
	e.mu.Unlock()
	return ok
}

// Reset sets the timer again, d from now. The Queue does not call it.
func (t *watchedTimer) Reset(d time.Duration) bool {
	ok := t.Timer.Stop()
	t.Timer = t.c.FakeClock.NewTimer(d)
	e := t.c.e
	e.mu.Lock()
	t.at = t.c.FakeClock.Now().Add(d)
	e.timers[t] = t.c.queue
	e.notifyLocked()
	e.mu.Unlock()
	return ok
}

// firedTimer is a timer that fired at t.
func firedTimer(t time.Time) clock.Timer {
	c := make(chan time.Time, 1)
	c <- t
	return &fired{c: c}
}

type fired struct{ c chan time.Time }

func (f *fired) C() <-chan time.Time      { return f.c }
func (f *fired) Stop() bool               { return false }
func (f *fired) Reset(time.Duration) bool { return false }

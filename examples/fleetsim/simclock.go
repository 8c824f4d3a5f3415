package main

import (
	"bytes"
	"container/heap"
	"runtime"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// simClock is the simulation's clock: a FakeClock that also remembers when
// every timer and ticker created on it is due, so that the driver can jump
// straight to the next moment at which anything can happen instead of
// stepping through idle time. A timer that was stopped or reset leaves a
// stale deadline behind; stepping to it wakes nobody and costs one no-op step.
type simClock struct {
	*clocktesting.FakeClock

	mu      sync.Mutex
	due     timeHeap
	tickers []*simTicker
}

var _ clock.WithTicker = (*simClock)(nil)
var _ clock.WithDelayedExecution = (*simClock)(nil)

func newSimClock(start time.Time) *simClock {
	return &simClock{FakeClock: clocktesting.NewFakeClock(start)}
}

func (c *simClock) note(d time.Duration) {
	t := c.Now().Add(d)
	c.mu.Lock()
	heap.Push(&c.due, t)
	c.mu.Unlock()
}

// After is the fake time.After, remembered.
func (c *simClock) After(d time.Duration) <-chan time.Time {
	c.note(d)
	return c.FakeClock.After(d)
}

// NewTimer is the fake time.NewTimer, remembered, also across Reset.
func (c *simClock) NewTimer(d time.Duration) clock.Timer {
	c.note(d)
	return &simTimer{Timer: c.FakeClock.NewTimer(d), c: c}
}

// AfterFunc is the fake time.AfterFunc, remembered.
func (c *simClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.note(d)
	return &simTimer{Timer: c.FakeClock.AfterFunc(d, f), c: c}
}

// Tick is the fake time.Tick, remembered.
func (c *simClock) Tick(d time.Duration) <-chan time.Time {
	if d <= 0 {
		return nil
	}
	c.addTicker(d)
	return c.FakeClock.Tick(d)
}

// NewTicker is the fake time.NewTicker, remembered until it is stopped.
func (c *simClock) NewTicker(d time.Duration) clock.Ticker {
	t := c.addTicker(d)
	t.Ticker = c.FakeClock.NewTicker(d)
	return t
}

// Sleep blocks until the simulation has moved the clock on by d. The
// FakeClock's own Sleep moves the clock itself, which would let any sleeping
// goroutine push simulated time forward behind the driver's back.
func (c *simClock) Sleep(d time.Duration) {
	<-c.After(d)
}

func (c *simClock) addTicker(d time.Duration) *simTicker {
	t := &simTicker{next: c.Now().Add(d), period: d, c: c}
	c.mu.Lock()
	c.tickers = append(c.tickers, t)
	c.mu.Unlock()
	return t
}

// nextDue returns the earliest deadline after now of any timer or live
// ticker, and false when nothing is waiting on the clock.
func (c *simClock) nextDue() (time.Time, bool) {
	now := c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.due.Len() > 0 && !c.due[0].After(now) {
		heap.Pop(&c.due)
	}
	var next time.Time
	found := false
	if c.due.Len() > 0 {
		next, found = c.due[0], true
	}
	live := c.tickers[:0]
	for _, t := range c.tickers {
		if t.stopped {
			continue
		}
		live = append(live, t)
		for !t.next.After(now) {
			t.next = t.next.Add(t.period)
		}
		if !found || t.next.Before(next) {
			next, found = t.next, true
		}
	}
	c.tickers = live
	return next, found
}

type simTimer struct {
	clock.Timer
	c *simClock
}

func (t *simTimer) Reset(d time.Duration) bool {
	t.c.note(d)
	return t.Timer.Reset(d)
}

type simTicker struct {
	clock.Ticker
	next    time.Time
	period  time.Duration
	stopped bool // guarded by simClock.mu
	c       *simClock
}

func (t *simTicker) Stop() {
	if t.c != nil {
		t.c.mu.Lock()
		t.stopped = true
		t.c.mu.Unlock()
	}
	t.Ticker.Stop()
}

type timeHeap []time.Time

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *timeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// settler waits until the goroutines the simulation drives (the queues'
// workers and whatever they call) are all blocked, so that the driver moves
// the clock only when nothing is left to happen at the current instant. That
// is what makes a run on the FakeClock reproducible: a worker that is still
// running when the clock jumps would take its next permit at the wrong time.
//
// There is no API that says "this goroutine is blocked for good", but the
// runtime's goroutine dump says what each one is doing. A goroutine blocked on
// a channel, a select or a condition variable only runs again when another
// goroutine (or a FakeClock step, which the driver makes) wakes it, and being
// woken makes it runnable at once; so once every goroutine we drive is blocked
// in such a wait, the system is quiescent until the driver acts. Goroutines
// waiting for a mutex are counted as busy: a lock is held only briefly.
type settler struct {
	// markers select the goroutines to wait for: those with one of these
	// strings in their stack.
	markers []string
	// limit bounds the wall time spent waiting in one call, so that a
	// goroutine spinning outside our control slows the run instead of
	// hanging it. Calls that hit it are counted.
	limit  time.Duration
	buf    []byte
	missed int
}

func newSettler() *settler {
	return &settler{
		markers: []string{
			"github.com/failoverkit/failover/evictionqueue.",
			"github.com/failoverkit/failover/ratelimit.",
		},
		limit: 2 * time.Second,
		buf:   make([]byte, 64<<10),
	}
}

// settle returns once every goroutine of interest is blocked.
func (s *settler) settle() {
	var start time.Time
	for i := 0; ; i++ {
		if !s.busy() {
			return
		}
		switch {
		case i == 0:
			start = time.Now()
		case time.Since(start) > s.limit:
			s.missed++
			return
		case i > 50:
			// Another process may hold the CPU the runnable goroutine needs.
			time.Sleep(20 * time.Microsecond)
		}
		runtime.Gosched()
	}
}

// busy reports whether a goroutine of interest other than the caller is
// running, runnable or about to take a lock.
func (s *settler) busy() bool {
	var dump []byte
	for {
		n := runtime.Stack(s.buf, true)
		if n < len(s.buf) {
			dump = s.buf[:n]
			break
		}
		s.buf = make([]byte, 2*len(s.buf))
	}
	// Skip the caller's own trace, which comes first.
	if i := bytes.Index(dump, []byte("\n\ngoroutine ")); i >= 0 {
		dump = dump[i+2:]
	} else {
		return false
	}
	for len(dump) > 0 {
		var g []byte
		if i := bytes.Index(dump, []byte("\n\ngoroutine ")); i >= 0 {
			g, dump = dump[:i], dump[i+2:]
		} else {
			g, dump = dump, nil
		}
		if !s.ours(g) {
			continue
		}
		if goroutineBusy(g) {
			return true
		}
	}
	return false
}

func (s *settler) ours(g []byte) bool {
	for _, m := range s.markers {
		if bytes.Contains(g, []byte(m)) {
			return true
		}
	}
	return false
}

// goroutineBusy reads the state from a trace header such as
// "goroutine 7 [select, 2 minutes]:".
func goroutineBusy(g []byte) bool {
	open := bytes.IndexByte(g, '[')
	end := bytes.IndexByte(g, ']')
	if open < 0 || end < open {
		return true
	}
	state := string(g[open+1 : end])
	if i := strings.IndexByte(state, ','); i >= 0 {
		state = state[:i]
	}
	switch state {
	case "running", "runnable", "syscall", "preempted", "semacquire",
		"sync.Mutex.Lock", "sync.RWMutex.Lock", "sync.RWMutex.RLock":
		return true
	}
	return strings.HasPrefix(state, "GC ") || strings.HasPrefix(state, "stopping")
}

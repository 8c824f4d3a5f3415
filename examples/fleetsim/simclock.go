package main

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// settler waits until the goroutines of one run (the driver's own children:
// the queues' Run, their workers and scheduler, whatever they start) are all
// blocked, so that the driver moves the clock only when nothing is left to
// happen at the current instant. That is what makes a run on the FakeClock
// reproducible: a worker that is still running when the clock jumps would
// take its next permit at the wrong time.
//
// There is no API that says "this goroutine is blocked for good", but the
// runtime's goroutine dump says what each one is doing. A goroutine blocked on
// a channel, a select, a condition variable or a WaitGroup only runs again
// when another goroutine (or a FakeClock step, which the driver makes) wakes
// it, and being woken makes it runnable at once; so once every goroutine of
// the run is blocked in such a wait, the run is quiescent until the driver
// acts. Every other state counts as busy: running, runnable, waiting for a
// mutex (held only briefly), sleeping or in I/O (which wake by themselves),
// and any state this code does not know.
//
// The run's goroutines are told apart by a pprof label that the driver's
// goroutine carries and that every goroutine inherits from the one that
// starts it, from the moment it is created. Matching on the function names
// in a stack instead would couple the clock to the library's internals, and
// miss a goroutine created but not yet started: its stack shows only its
// entry function, such as sync.(*WaitGroup).Go's, so the driver would race
// ahead of workers that had not run yet.
type settler struct {
	label string // this run's value of labelKey
	// mark is the label as a traceback header prints it.
	mark []byte
	// limit bounds the wall time one call may wait: a goroutine of the run
	// that never blocks is a bug, reported by err, not a reason to hang.
	limit time.Duration
	buf   []byte
	// err is set when a call hits limit; later calls return at once and
	// the driver stops.
	err error
}

// labelKey is the pprof label that marks the goroutines of a run.
const labelKey = "fleetsim-run"

// runs numbers the settlers, so that two simulations in one process (tests)
// do not wait for each other.
var runs atomic.Uint64

func newSettler() (*settler, error) {
	if err := enableTracebackLabels(); err != nil {
		return nil, err
	}
	label := strconv.FormatUint(runs.Add(1), 10)
	return &settler{
		label: label,
		mark:  []byte(strconv.Quote(labelKey) + ": " + strconv.Quote(label)),
		limit: 30 * time.Second,
		buf:   make([]byte, 64<<10),
	}, nil
}

// do calls f with the run's label on the calling goroutine, and so on every
// goroutine f starts.
func (s *settler) do(ctx context.Context, f func(context.Context)) {
	pprof.Do(ctx, pprof.Labels(labelKey, s.label), f)
}

var tracebackLabels struct {
	once sync.Once
	err  error
}

// enableTracebackLabels makes goroutine dumps show pprof labels (Go 1.26's
// GODEBUG tracebacklabels, which the runtime re-reads when the environment
// variable changes) and checks that they do.
func enableTracebackLabels() error {
	tracebackLabels.once.Do(func() {
		if labelsInTraceback() {
			return
		}
		godebug := "tracebacklabels=1"
		if cur := os.Getenv("GODEBUG"); cur != "" {
			godebug = cur + "," + godebug // the last setting of a key wins
		}
		if err := os.Setenv("GODEBUG", godebug); err != nil {
			tracebackLabels.err = fmt.Errorf("fleetsim: simulated clock: setting GODEBUG: %w", err)
			return
		}
		if !labelsInTraceback() {
			tracebackLabels.err = fmt.Errorf("fleetsim: simulated clock: this Go runtime (%s) does not show pprof labels in goroutine dumps even with GODEBUG=%s; the simulated clock needs them to know when the run's goroutines are idle", runtime.Version(), godebug)
		}
	})
	return tracebackLabels.err
}

// labelsInTraceback reports whether a labelled goroutine's dump shows its
// label. It looks from a goroutine of its own, so that no caller's labels
// are touched.
func labelsInTraceback() bool {
	found := make(chan bool)
	go func() {
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(labelKey, "probe")))
		buf := make([]byte, 4<<10)
		header, _, _ := bytes.Cut(buf[:runtime.Stack(buf, false)], []byte("\n"))
		found <- bytes.Contains(header, []byte(strconv.Quote(labelKey)+": "+strconv.Quote("probe")))
	}()
	return <-found
}

// settle returns once every goroutine of the run other than the caller is
// blocked, or, after limit, with an error naming those that are not.
func (s *settler) settle() error {
	if s.err != nil {
		return s.err
	}
	var start time.Time
	for i := 0; ; i++ {
		busy := s.busy()
		if len(busy) == 0 {
			return nil
		}
		switch {
		case i == 0:
			start = time.Now()
		case time.Since(start) > s.limit:
			if len(busy) > 3 {
				busy = append(busy[:3], fmt.Sprintf("and %d more", len(busy)-3))
			}
			s.err = fmt.Errorf("fleetsim: simulated clock: after %s, goroutines of the run still neither block nor end, so the clock cannot move on: %s",
				s.limit, strings.Join(busy, "; "))
			return s.err
		case i > 50:
			// Another process may hold the CPU the runnable goroutine needs.
			time.Sleep(20 * time.Microsecond)
		}
		runtime.Gosched()
	}
}

// busy describes the goroutines of the run, other than the caller, that are
// not blocked: each as its trace header and innermost call.
func (s *settler) busy() []string {
	var dump []byte
	for {
		n := runtime.Stack(s.buf, true)
		if n < len(s.buf) {
			dump = s.buf[:n]
			break
		}
		s.buf = make([]byte, 2*len(s.buf))
	}
	var busy []string
	// The caller's own trace comes first: skip it.
	for first := true; len(dump) > 0; first = false {
		var g []byte
		if i := bytes.Index(dump, []byte("\n\ngoroutine ")); i >= 0 {
			g, dump = dump[:i], dump[i+2:]
		} else {
			g, dump = dump, nil
		}
		header, frames, _ := bytes.Cut(g, []byte("\n"))
		if first || !bytes.Contains(header, s.mark) || !goroutineBusy(header) {
			continue
		}
		busy = append(busy, fmt.Sprintf("%s in %s", bytes.TrimSuffix(header, []byte(":")), innermost(frames)))
	}
	return busy
}

// innermost is the innermost call of a trace outside the runtime, such as
// "main.spin(...)", the code that keeps a goroutine busy.
func innermost(frames []byte) []byte {
	var first []byte
	for line := range bytes.Lines(frames) {
		if len(line) == 0 || line[0] == '\t' {
			continue // a file:line
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		if first == nil {
			first = line
		}
		if !bytes.HasPrefix(line, []byte("runtime.")) {
			return line
		}
	}
	return first
}

// goroutineBusy reads the state from a trace header such as
// `goroutine 7 [select, 2 minutes labels:{"fleetsim-run": "1"}]:` and
// reports whether it may run again without another goroutine waking it.
func goroutineBusy(header []byte) bool {
	open := bytes.IndexByte(header, '[')
	if open < 0 {
		return true
	}
	state := header[open+1:]
	if i := bytes.Index(state, []byte(" labels:{")); i >= 0 {
		state = state[:i]
	}
	if i := bytes.IndexAny(state, ",]"); i >= 0 {
		state = state[:i]
	}
	switch string(state) {
	case "chan receive", "chan send", "select", "sync.Cond.Wait", "sync.WaitGroup.Wait",
		"chan receive (nil chan)", "chan send (nil chan)", "select (no cases)":
		return false
	}
	return true
}

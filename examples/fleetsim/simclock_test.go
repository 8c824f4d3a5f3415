package main

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSimClockKnowsWhatIsDue(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newSimClock(t0)
	if _, ok := c.nextDue(); ok {
		t.Fatal("nothing is waiting on a new clock")
	}
	timer := c.NewTimer(10 * time.Second)
	_ = c.After(30 * time.Second)
	ticker := c.NewTicker(4 * time.Second)
	want := func(d time.Duration) {
		t.Helper()
		if got, ok := c.nextDue(); !ok || !got.Equal(t0.Add(d)) {
			t.Fatalf("at %v: next due %v (%v), want %v", c.Now().Sub(t0), got.Sub(t0), ok, d)
		}
	}
	want(4 * time.Second) // the ticker
	c.SetTime(t0.Add(4 * time.Second))
	want(8 * time.Second) // the ticker again
	ticker.Stop()
	want(10 * time.Second) // the timer
	timer.Reset(time.Second)
	want(5 * time.Second) // the reset timer
	c.SetTime(t0.Add(5 * time.Second))
	select {
	case <-timer.C():
	default:
		t.Fatal("the reset timer did not fire")
	}
	want(10 * time.Second) // the timer's stale deadline: a harmless no-op step
	c.SetTime(t0.Add(10 * time.Second))
	want(30 * time.Second)
	c.SetTime(t0.Add(30 * time.Second))
	if _, ok := c.nextDue(); ok {
		t.Fatal("everything has fired")
	}
}

func TestSimClockSleepWaitsForTheDriver(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newSimClock(t0)
	done := make(chan struct{})
	go func() {
		c.Sleep(time.Minute)
		close(done)
	}()
	for !c.HasWaiters() {
		runtime.Gosched() // let the sleeper register; the clock does not move
	}
	if !c.Now().Equal(t0) {
		t.Fatal("Sleep moved the clock")
	}
	c.SetTime(t0.Add(time.Minute))
	<-done
}

func TestGoroutineBusy(t *testing.T) {
	for header, busy := range map[string]bool{
		"goroutine 7 [running]:":                                     true,
		"goroutine 7 [runnable]:":                                    true,
		`goroutine 7 [runnable labels:{"fleetsim-run": "1"}]:`:       true,
		"goroutine 7 [sync.Mutex.Lock]:":                             true,
		"goroutine 7 [semacquire]:":                                  true,
		"goroutine 7 [GC assist wait]:":                              true,
		"goroutine 7 [sleep]:":                                       true, // wakes by itself
		"goroutine 7 [IO wait, locked to thread]:":                   true, // woken by the outside world
		"goroutine 7 [some state of a future runtime]:":              true,
		"goroutine 7 [select]:":                                      false,
		"goroutine 7 [select, 2 minutes]:":                           false,
		`goroutine 7 [select labels:{"fleetsim-run": "1"}]:`:         false,
		`goroutine 7 [select, 2 minutes labels:{"a": "b, c"}]:`:      false,
		"goroutine 7 [chan receive]:":                                false,
		"goroutine 7 [chan send (nil chan)]:":                        false,
		"goroutine 7 [sync.Cond.Wait]:":                              false,
		`goroutine 7 [sync.WaitGroup.Wait labels:{"x": "running"}]:`: false,
	} {
		if got := goroutineBusy([]byte(header)); got != busy {
			t.Errorf("%s: busy = %v, want %v", header, got, busy)
		}
	}
}

func TestLabelsShowInGoroutineDumps(t *testing.T) {
	if err := enableTracebackLabels(); err != nil {
		t.Fatal(err)
	}
	if !labelsInTraceback() {
		t.Fatal("a labelled goroutine's dump does not show its label")
	}
}

// A goroutine that has been created but has not run yet shows only its
// entry function in a dump (for wg.Go, sync.(*WaitGroup).Go.func1): the
// settler must wait for it all the same, whatever package it runs in.
func TestSettleWaitsForEveryGoroutineOfTheRun(t *testing.T) {
	s, err := newSettler()
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var reached atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	s.do(t.Context(), func(context.Context) {
		for range n {
			wg.Go(func() {
				// Children of children are the run's too.
				wg.Go(func() {
					for range 1000 {
						runtime.Gosched()
					}
					reached.Add(1)
					<-release
				})
			})
		}
		if err := s.settle(); err != nil {
			t.Error(err)
		}
	})
	if got := reached.Load(); got != n {
		t.Errorf("settle returned with %d of %d goroutines at their wait", got, n)
	}
	close(release)
	wg.Wait()
}

// Goroutines that are not the run's, spinning or another run's, do not hold
// the run back: if settle waited for them it would return its error.
func TestSettleIgnoresOtherGoroutines(t *testing.T) {
	s, err := newSettler()
	if err != nil {
		t.Fatal(err)
	}
	other, err := newSettler()
	if err != nil {
		t.Fatal(err)
	}
	s.limit = 10 * time.Second
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { spinUntil(stop) })
	other.do(t.Context(), func(context.Context) { wg.Go(func() { spinUntil(stop) }) })
	s.do(t.Context(), func(context.Context) {
		if err := s.settle(); err != nil {
			t.Error(err)
		}
	})
	close(stop)
	wg.Wait()
}

// A goroutine of the run that never blocks is a bug: the settler names it
// after its limit instead of hanging, and the error sticks.
func TestSettleNamesAGoroutineThatNeverBlocks(t *testing.T) {
	s, err := newSettler()
	if err != nil {
		t.Fatal(err)
	}
	s.limit = 50 * time.Millisecond
	stop := make(chan struct{})
	var wg sync.WaitGroup
	s.do(t.Context(), func(context.Context) {
		wg.Go(func() { spinUntil(stop) })
		err = s.settle()
	})
	close(stop)
	wg.Wait()
	if err == nil || !strings.Contains(err.Error(), "fleetsim: simulated clock:") || !strings.Contains(err.Error(), "fleetsim.spinUntil(") {
		t.Fatalf("want an error naming spinUntil, got %v", err)
	}
	if again := s.settle(); again != err {
		t.Errorf("a second settle returned %v, want the first error again", again)
	}
}

func spinUntil(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
			runtime.Gosched()
		}
	}
}

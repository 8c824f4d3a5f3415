package main

import (
	"runtime"
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
		"goroutine 7 [running]:":                   true,
		"goroutine 7 [runnable]:":                  true,
		"goroutine 7 [sync.Mutex.Lock]:":           true,
		"goroutine 7 [select]:":                    false,
		"goroutine 7 [select, 2 minutes]:":         false,
		"goroutine 7 [chan receive]:":              false,
		"goroutine 7 [sync.Cond.Wait]:":            false,
		"goroutine 7 [sync.WaitGroup.Wait]:":       false,
		"goroutine 7 [GC assist wait]:":            true,
		"goroutine 7 [IO wait, locked to thread]:": false,
	} {
		if got := goroutineBusy([]byte(header + "\nmain.f()\n")); got != busy {
			t.Errorf("%s: busy = %v, want %v", header, got, busy)
		}
	}
}

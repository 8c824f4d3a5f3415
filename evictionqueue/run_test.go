package evictionqueue

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestAddIsRefusedInEveryState(t *testing.T) {
	x := item("down", "x")
	tests := []struct {
		name string
		// reach puts x in the state and returns how to let it leave the queue.
		reach func(t *testing.T, f *fixture) (finish func())
	}{
		{"pending", func(t *testing.T, f *fixture) func() {
			f.q.Add(x)
			return func() { start(t, f.q); f.h.expect(t, "x", nil) }
		}},
		{"being handled", func(t *testing.T, f *fixture) func() {
			start(t, f.q)
			f.q.Add(x)
			c := f.h.next(t)
			return func() {
				c.reply <- nil
				// The refused Add was a decision made while x ran: x is
				// handled again, and leaves after that call.
				f.h.expect(t, "x", Skip(errors.New("evicted already")))
			}
		}},
		{"backing off", func(t *testing.T, f *fixture) func() {
			start(t, f.q)
			f.q.Add(x)
			f.h.expect(t, "x", errBoom)
			waitArmed(t, f.q, t0.Add(time.Second))
			return func() { f.clock.Step(time.Second); f.h.expect(t, "x", nil) }
		}},
		{"in flight", func(t *testing.T, f *fixture) func() {
			start(t, f.q)
			f.q.Add(x)
			f.h.expect(t, "x", ErrInProgress)
			quiet(t, f.q)
			return func() {
				if !f.q.Complete(x) {
					t.Error("Complete = false")
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, Config{})
				finish := tt.reach(t, f)
				before := f.q.Len()
				if f.q.Add(Item{Cluster: "down", Key: "x", Priority: 9}) {
					t.Fatal("Add of a held identity = true")
				}
				if f.q.Len() != before {
					t.Errorf("Len went from %d to %d on a refused Add", before, f.q.Len())
				}
				f.balanced(t)
				finish()
				settled(t, "x has left the queue", func() bool { return !holds(f.q, "down", "x") })
				if !f.q.Add(x) {
					t.Error("Add after the item left = false")
				}
				f.balanced(t)
			})
		})
	}
}

func TestCancelClusterInEveryState(t *testing.T) {
	tests := []struct {
		name      string
		cancelled int // CancelCluster's result
		// reach puts down/x in the state, with the queue running, and
		// returns what lets the running handler (if any) return.
		reach func(*testing.T, *fixture) (release func())
		after func(*testing.T, *fixture) // let time pass
		kinds []OutcomeKind              // x's outcomes, in order
	}{
		{
			name: "pending behind a busy worker", cancelled: 1,
			reach: func(t *testing.T, f *fixture) func() {
				f.q.Add(item("up", "busy"))
				f.q.Add(item("down", "x"))
				c := f.h.next(t)
				return func() { c.reply <- nil }
			},
			kinds: []OutcomeKind{Cancelled},
		},
		{
			name: "backing off", cancelled: 1,
			reach: func(t *testing.T, f *fixture) func() {
				f.q.Add(item("down", "x"))
				f.h.expect(t, "x", errBoom)
				waitArmed(t, f.q, t0.Add(time.Second))
				return func() {}
			},
			after: func(t *testing.T, f *fixture) { f.clock.Step(time.Hour) },
			kinds: []OutcomeKind{Retrying, Cancelled},
		},
		{
			name: "being handled, then fails: dropped, not retried", cancelled: 0,
			reach: func(t *testing.T, f *fixture) func() {
				f.q.Add(item("down", "x"))
				c := f.h.next(t)
				return func() { c.reply <- errBoom }
			},
			after: func(t *testing.T, f *fixture) { f.clock.Step(time.Hour) },
			kinds: []OutcomeKind{Cancelled},
		},
		{
			name: "being handled, then succeeds", cancelled: 0,
			reach: func(t *testing.T, f *fixture) func() {
				f.q.Add(item("down", "x"))
				c := f.h.next(t)
				return func() { c.reply <- nil }
			},
			kinds: []OutcomeKind{Succeeded},
		},
		{
			name: "in flight, then expires: dropped, not retried", cancelled: 0,
			reach: func(t *testing.T, f *fixture) func() {
				f.q.Add(item("down", "x"))
				f.h.expect(t, "x", ErrInProgress)
				waitArmed(t, f.q, t0.Add(DefaultInFlightTTL))
				return func() {}
			},
			after: func(t *testing.T, f *fixture) {
				f.clock.Step(DefaultInFlightTTL)
				settled(t, "the expiry is handled", func() bool { return f.q.InFlight() == 0 })
			},
			kinds: []OutcomeKind{InProgress, Expired, Cancelled},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, Config{})
				start(t, f.q)
				release := tt.reach(t, f)
				if n := f.q.CancelCluster("down"); n != tt.cancelled {
					t.Fatalf("CancelCluster = %d, want %d", n, tt.cancelled)
				}
				f.balanced(t)
				release()
				if tt.after != nil {
					tt.after(t, f)
				}
				settled(t, "x has left the queue", func() bool { return !holds(f.q, "down", "x") })
				if n := clusterLen(t, f.q, "down"); n != 0 {
					t.Errorf("cluster index still lists %d entries", n)
				}
				quiet(t, f.q)
				f.h.none(t)
				f.out.waitKinds(t, "x", tt.kinds...)
				wantMetric := 0
				if slices.Contains(tt.kinds, Cancelled) {
					wantMetric = 1
				}
				if f.m.snap().cancelled != wantMetric {
					t.Errorf("Cancelled metric = %d, want %d", f.m.snap().cancelled, wantMetric)
				}
				f.balanced(t)
			})
		})
	}
}

func TestAddAfterCancelRevokesTheCancellationOfAnInFlightItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{})
		start(t, f.q)
		x := item("down", "x")
		f.q.Add(x)
		f.h.expect(t, "x", ErrInProgress)
		waitArmed(t, f.q, t0.Add(DefaultInFlightTTL))
		f.q.CancelCluster("down")
		if f.q.Add(x) {
			t.Fatal("Add of an in-flight item = true")
		}
		// The cluster failed again: an expiry must retry the eviction.
		f.clock.Step(DefaultInFlightTTL)
		f.h.expect(t, "x", nil)
		f.out.waitKinds(t, "x", InProgress, Expired, Succeeded)
	})
}

func TestRetriesBackOffExponentiallyThenFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{MaxRetries: 2, BackoffBase: time.Second, BackoffMax: time.Minute})
		start(t, f.q)
		f.q.Add(item("a", "x"))

		f.h.expect(t, "x", errBoom) // attempt 1 at t0
		waitArmed(t, f.q, t0.Add(time.Second))
		f.balanced(t)
		if f.q.Len() != 1 || len(f.q.Pending()) != 1 {
			t.Errorf("a backing-off item: Len %d, Pending %v", f.q.Len(), f.q.Pending())
		}
		f.clock.Step(999 * time.Millisecond)
		quiet(t, f.q)
		f.h.none(t) // backoff not over yet
		f.clock.Step(time.Millisecond)

		f.h.expect(t, "x", errBoom) // attempt 2 at t0+1s, backs off 2s
		waitArmed(t, f.q, t0.Add(3*time.Second))
		f.clock.Step(1999 * time.Millisecond)
		quiet(t, f.q)
		f.h.none(t)
		f.clock.Step(time.Millisecond)

		f.h.expect(t, "x", errBoom) // attempt 3: out of retries
		f.out.waitKinds(t, "x", Retrying, Retrying, Failed)
		last := f.out.last("x")
		if !errors.Is(last.Err, errBoom) || last.Attempts != 3 {
			t.Errorf("Failed outcome = %+v", last)
		}
		if f.q.Len() != 0 || f.m.snap().processed[ResultError] != 3 {
			t.Errorf("Len %d, processed %v", f.q.Len(), f.m.snap().processed)
		}
		f.balanced(t)
	})
}

func TestRetriedItemKeepsItsPlaceAndItsFirstEnqueueTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{})
		start(t, f.q)
		f.q.Add(item("a", "x"))
		f.h.expect(t, "x", errBoom)
		waitArmed(t, f.q, t0.Add(time.Second))
		f.q.Add(item("a", "y"))
		busy := f.h.next(t) // y holds the only worker
		f.q.Add(item("a", "z"))
		f.clock.Step(time.Second)
		settled(t, "x's backoff has ended", func() bool {
			return slices.Equal(keys(f.q.Pending()), []string{"x", "z"})
		})
		f.clock.Step(time.Minute)
		busy.reply <- nil
		f.h.expect(t, "x", nil)
		f.h.expect(t, "z", nil)
		quiet(t, f.q)
		// Everything was added at t0. Processed latencies: x (0), y (0), then at
		// t0+61s x again, measured from its first enqueue, and z.
		want := []time.Duration{0, 0, 61 * time.Second, 61 * time.Second}
		if !slices.Equal(f.m.snap().latencies, want) {
			t.Errorf("latencies = %v, want %v", f.m.snap().latencies, want)
		}
	})
}

func TestAbandonDropsWithoutRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{})
		start(t, f.q)
		f.q.Add(item("a", "x"))
		noTarget := errors.New("no cluster can take the replicas")
		f.h.expect(t, "x", Abandon(noTarget))
		settled(t, "x is abandoned", func() bool { return len(f.out.kinds("x")) == 1 })
		o := f.out.last("x")
		if o.Kind != Abandoned || !errors.Is(o.Err, noTarget) {
			t.Errorf("outcome = %+v", o)
		}
		f.clock.Step(time.Hour)
		quiet(t, f.q)
		f.h.none(t)
		if f.q.Len() != 0 || f.m.snap().processed[ResultAbandoned] != 1 {
			t.Errorf("Len %d, processed %v", f.q.Len(), f.m.snap().processed)
		}
		f.balanced(t)
	})
}

func TestHandlerPanicIsRetriedAsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{})
		start(t, f.q)
		f.q.Add(item("a", "x"))
		f.h.expect(t, "x", panicWith{"nil map"})
		waitArmed(t, f.q, t0.Add(time.Second))
		f.out.waitKinds(t, "x", Retrying)
		o := f.out.last("x")
		var pe *PanicError
		if o.Kind != Retrying || !errors.As(o.Err, &pe) || pe.Value != "nil map" || len(pe.Stack) == 0 {
			t.Fatalf("outcome after a panic = %+v", o)
		}
		f.clock.Step(time.Second)
		f.h.expect(t, "x", nil)
		quiet(t, f.q)
		if f.m.snap().processed[ResultError] != 1 || f.m.snap().processed[ResultSuccess] != 1 {
			t.Errorf("processed = %v", f.m.snap().processed)
		}
	})
}

func TestHandlerGoexitIsRetriedAndFreesItsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{Workers: 2, MaxInFlight: 1})
		start(t, f.q)
		f.q.Add(item("a", "x"))
		f.q.Add(item("a", "y"))
		f.h.expect(t, "x", errGoexit)
		f.out.waitKinds(t, "x", Retrying)
		if o := f.out.last("x"); !errors.Is(o.Err, ErrHandlerExited) {
			t.Fatalf("outcome after Goexit = %+v, want Retrying with ErrHandlerExited", o)
		}
		// The slot x held is free again, so y is handled; the worker that
		// ended has been replaced, so both workers are back.
		f.h.expect(t, "y", nil)
		waitArmed(t, f.q, t0.Add(time.Second))
		f.clock.Step(time.Second)
		f.h.expect(t, "x", nil)
		quiet(t, f.q)
		if f.q.Len() != 0 {
			t.Errorf("Len = %d after both items succeeded", f.q.Len())
		}
		f.balanced(t)
	})
}

func TestMaxInFlightHoldsWorkersBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{Workers: 3, MaxInFlight: 2})
		start(t, f.q)
		for _, k := range []string{"a", "b", "c", "d"} {
			f.q.Add(item("down", k))
		}
		// Two workers take a and b, in either order; both evictions go to the
		// background.
		var first []string
		for range 2 {
			c := f.h.next(t)
			first = append(first, c.Key)
			c.reply <- ErrInProgress
		}
		slices.Sort(first)
		if !slices.Equal(first, []string{"a", "b"}) {
			t.Fatalf("handled first: %v, want a and b", first)
		}
		quiet(t, f.q)
		f.h.none(t) // two evictions unconfirmed: the budget is spent
		if f.q.InFlight() != 2 {
			t.Fatalf("InFlight = %d, want 2", f.q.InFlight())
		}
		f.balanced(t)

		if !f.q.Complete(item("down", "a")) {
			t.Fatal("Complete(a) = false")
		}
		c := f.h.next(t) // a's slot went to c
		if c.Key != "c" {
			t.Fatalf("handled %s, want c", c.Key)
		}
		// A running handler holds a slot too: b in flight + c running = 2.
		synctest.Wait()
		f.h.none(t)
		c.reply <- errBoom // c backs off, its slot frees: d goes
		f.h.expect(t, "d", ErrInProgress)
		quiet(t, f.q)
		f.h.none(t)
		f.out.waitKinds(t, "a", InProgress, Completed)
		f.balanced(t)
	})
}

func TestInFlightTTLExpiryRetriesTheItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{InFlightTTL: time.Minute})
		start(t, f.q)
		f.q.Add(item("a", "x"))
		f.h.expect(t, "x", ErrInProgress)
		waitArmed(t, f.q, t0.Add(time.Minute))
		if f.q.Len() != 0 || f.q.InFlight() != 1 {
			t.Fatalf("in flight: Len %d, InFlight %d", f.q.Len(), f.q.InFlight())
		}
		f.balanced(t)
		f.clock.Step(59 * time.Second)
		quiet(t, f.q)
		f.h.none(t)
		f.clock.Step(time.Second)
		f.h.expect(t, "x", nil)
		quiet(t, f.q)
		f.out.waitKinds(t, "x", InProgress, Expired, Succeeded)
		if o := f.out.all()[1]; !errors.Is(o.Err, ErrInFlightExpired) {
			t.Errorf("Expired outcome error = %v", o.Err)
		}
		if f.m.snap().inFlight != 0 || f.m.snap().processed[ResultSuccess] != 2 {
			t.Errorf("in-flight gauge %d, processed %v", f.m.snap().inFlight, f.m.snap().processed)
		}
		f.balanced(t)
	})
}

func TestInFlightExpiriesCountAgainstMaxRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{InFlightTTL: time.Minute, MaxRetries: 1})
		start(t, f.q)
		f.q.Add(item("a", "x"))
		f.h.expect(t, "x", ErrInProgress)
		waitArmed(t, f.q, t0.Add(time.Minute))
		f.clock.Step(time.Minute)
		f.h.expect(t, "x", ErrInProgress)
		waitArmed(t, f.q, t0.Add(2*time.Minute))
		f.clock.Step(time.Minute)
		settled(t, "x is dropped", func() bool { return f.out.last("x").Kind == Failed })
		quiet(t, f.q)
		f.h.none(t)
		if f.q.InFlight() != 0 || f.q.Len() != 0 {
			t.Errorf("InFlight %d, Len %d", f.q.InFlight(), f.q.Len())
		}
	})
}

func TestCompleteEndsAnInFlightEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{})
		start(t, f.q)
		x := item("a", "x")
		f.q.Add(x)
		f.h.expect(t, "x", ErrInProgress)
		quiet(t, f.q)
		if !f.q.Complete(x) {
			t.Fatal("Complete = false")
		}
		if f.q.Complete(x) {
			t.Error("second Complete = true")
		}
		if f.q.InFlight() != 0 || f.m.snap().inFlight != 0 {
			t.Errorf("InFlight %d, gauge %d", f.q.InFlight(), f.m.snap().inFlight)
		}
		f.q.mu.Lock()
		armedLeft := f.q.s.delayed.Len()
		f.q.mu.Unlock()
		if armedLeft != 0 {
			t.Errorf("%d deadlines left after Complete", armedLeft)
		}
		f.clock.Step(time.Hour)
		quiet(t, f.q)
		f.h.none(t)
	})
}

func TestCompleteBeforeTheHandlerReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{})
		start(t, f.q)
		x := item("a", "x")
		f.q.Add(x)
		c := f.h.next(t)
		// The background eviction finished before the handler returned.
		if !f.q.Complete(x) {
			t.Fatal("Complete of a running item = false")
		}
		c.reply <- ErrInProgress
		quiet(t, f.q)
		if f.q.InFlight() != 0 {
			t.Error("the item waits in flight although Complete confirmed it")
		}
		f.out.waitKinds(t, "x", InProgress, Completed)
		if !f.q.Add(x) {
			t.Error("Add after completion = false")
		}
	})
}

func TestRunStopsAndResumesWithoutLosingItems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{Workers: 2})
		all := []string{"a", "b", "c", "d", "e"}
		for _, k := range all {
			f.q.Add(item("down", k))
		}
		stop := start(t, f.q)
		c1, c2 := f.h.next(t), f.h.next(t)

		// A second Run is refused while the first runs.
		if err := f.q.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "already running") {
			t.Errorf("concurrent Run = %v", err)
		}

		stop() // the handlers see their context end and fail
		if c1.ctx.Err() == nil || c2.ctx.Err() == nil {
			t.Error("handler contexts still live after Run returned")
		}
		if got := keys(f.q.Pending()); !slices.Equal(got, all) {
			t.Fatalf("Pending after Run = %v, want %v", got, all)
		}
		f.out.waitKinds(t, c1.Key, Requeued)
		f.balanced(t)

		// The queue works while stopped, and a new Run resumes.
		f.q.CancelCluster("nothing")
		f.q.Add(item("down", "f"))
		start(t, f.q)
		var handled []string
		for range 6 {
			c := f.h.next(t)
			handled = append(handled, c.Key)
			c.reply <- nil
		}
		slices.Sort(handled)
		if !slices.Equal(handled, []string{"a", "b", "c", "d", "e", "f"}) {
			t.Errorf("handled after restart: %v", handled)
		}
		quiet(t, f.q)
		f.balanced(t)
	})
}

func TestBackoffEndsWhileStoppedAreActedOnAtRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{})
		stop := start(t, f.q)
		f.q.Add(item("a", "x"))
		f.h.expect(t, "x", errBoom)
		waitArmed(t, f.q, t0.Add(time.Second))
		stop()
		f.clock.Step(time.Minute)
		if got := keys(f.q.Pending()); !slices.Equal(got, []string{"x"}) {
			t.Fatalf("Pending while stopped = %v", got)
		}
		start(t, f.q)
		f.h.expect(t, "x", nil)
	})
}

func TestOutcomeCallbackMayCallTheQueue(t *testing.T) {
	var mu sync.Mutex
	var lens []int
	var q *Queue
	done := make(chan struct{})
	q, err := New(Config{Name: "q", OnOutcome: func(o Outcome) {
		mu.Lock()
		lens = append(lens, q.Len()) // would deadlock if called under the lock
		mu.Unlock()
		if o.Item.Key == "last" {
			close(done)
		}
	}}, func(context.Context, Item) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	q.Add(item("a", "x"))
	q.Add(item("a", "y"))
	q.CancelCluster("a")
	q.Add(item("a", "last"))
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error)
	go func() { ran <- q.Run(ctx) }()
	<-done
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lens, []int{0, 0, 0}) {
		t.Errorf("Len seen from OnOutcome = %v", lens)
	}
}

func TestHugeTTLAndBackoffNeverFireEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		forever := time.Duration(math.MaxInt64)
		f := newFixture(t, Config{InFlightTTL: forever, BackoffBase: forever, BackoffMax: forever})
		start(t, f.q)
		f.q.Add(item("a", "inflight"))
		f.h.expect(t, "inflight", ErrInProgress)
		f.q.Add(item("a", "failing"))
		f.h.expect(t, "failing", errBoom)
		f.out.waitKinds(t, "failing", Retrying)
		f.clock.Step(100 * 365 * 24 * time.Hour)
		quiet(t, f.q)
		f.h.none(t)
		if f.q.InFlight() != 1 || f.q.Len() != 1 {
			t.Errorf("after 100 years: InFlight %d, Len %d", f.q.InFlight(), f.q.Len())
		}
		if !f.q.Complete(item("a", "inflight")) {
			t.Error("Complete = false")
		}
	})
}

func TestPendingListsBackingOffItemsAfterPendingOnesByEndOfBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{})
		start(t, f.q)
		f.q.Add(item("a", "early"))
		f.h.expect(t, "early", errBoom) // backs off until t0+1s
		waitArmed(t, f.q, t0.Add(time.Second))
		f.q.Add(item("a", "late"))
		c := f.h.next(t)
		f.clock.Step(500 * time.Millisecond)
		c.reply <- errBoom // backs off until t0+1.5s
		f.out.waitKinds(t, "late", Retrying)
		quiet(t, f.q)
		f.q.Add(Item{Cluster: "b", Key: "waiting", Priority: -5})
		c = f.h.next(t) // the worker takes it: hold it there
		f.q.Add(Item{Cluster: "b", Key: "next", Priority: -5})
		if got := keys(f.q.Pending()); !slices.Equal(got, []string{"next", "early", "late"}) {
			t.Errorf("Pending = %v, want the pending item, then the backoffs by end", got)
		}
		if f.q.Len() != 3 {
			t.Errorf("Len = %d, want 3", f.q.Len())
		}
		c.reply <- nil
	})
}

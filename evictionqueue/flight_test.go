package evictionqueue

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// hold is what a caller attaches to an eviction in flight in these tests.
type hold struct{ room int }

func newFlightStore(t *testing.T, cfg Config) (*Store, *outcomes) {
	t.Helper()
	out := &outcomes{}
	cfg.Name, cfg.OnOutcome = "flights", out.add
	st, err := NewStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st, out
}

// An eviction in flight carries what its handler attached, found by its
// binding's key; it ends once: the first EndFlight ends it and frees its
// slot, a second one of the same flight is told false.
func TestFlightCarriesItsValueAndEndsOnce(t *testing.T) {
	st, out := newFlightStore(t, Config{MaxInFlight: 2})
	a, b, other := item("east", "ns/a"), item("west", "ns/a"), item("east", "ns/b")
	for _, it := range []Item{a, b, other} {
		st.Add(it, t0)
	}
	for _, it := range []Item{a, b} {
		got, _ := st.Take(t0)
		if got != it {
			t.Fatalf("Take = %v, want %v", got, it)
		}
		st.Done(it, InProgressWith(&hold{room: len(it.Cluster)}), t0)
	}
	if _, ok := st.Take(t0); ok {
		t.Fatal("a third call took a slot while two evictions were in flight (MaxInFlight 2)")
	}
	fs := st.Flights("ns/a")
	if len(fs) != 2 {
		t.Fatalf("Flights(ns/a) = %v, want the two evictions in flight", fs)
	}
	var west Flight
	for _, f := range fs {
		h, _ := f.Value.(*hold)
		if f.Running || h == nil || h.room != len(f.Item.Cluster) {
			t.Fatalf("flight %+v does not carry what its handler attached", f)
		}
		if f.Item == b {
			west = f
		}
	}
	if got := st.Flights("ns/b"); len(got) != 0 {
		t.Fatalf("Flights(ns/b) = %v, want none: it is pending", got)
	}
	if !st.EndFlight(west) {
		t.Fatal("EndFlight of an eviction in flight = false")
	}
	if st.EndFlight(west) {
		t.Fatal("the same flight ended twice")
	}
	if st.InFlight() != 1 || len(st.Flights("ns/a")) != 1 {
		t.Fatalf("after one end: InFlight %d, Flights %v", st.InFlight(), st.Flights("ns/a"))
	}
	if got := out.kinds("ns/b"); len(got) != 0 {
		t.Fatalf("outcomes of ns/b = %v, want none: it waited for a slot", got)
	}
	if got, ok := st.Take(t0); !ok || got != other {
		t.Fatalf("the freed slot took %v, %v; want %v", got, ok, other)
	}
	if st.Complete(b) {
		t.Fatal("Complete of the flight EndFlight ended = true")
	}
}

// A flight read before its eviction expired and was handled again does not
// end the new flight: its value went with the expiry, and the new one is
// the new call's.
func TestFlightReadBeforeAnExpiryEndsNothingAfterIt(t *testing.T) {
	st, _ := newFlightStore(t, Config{InFlightTTL: time.Minute})
	a := item("east", "ns/a")
	st.Add(a, t0)
	st.Take(t0)
	st.Done(a, InProgressWith(&hold{room: 1}), t0)
	old := st.Flights("ns/a")[0]

	st.Advance(t0.Add(time.Minute)) // expired: pending again
	if got := st.Flights("ns/a"); len(got) != 0 {
		t.Fatalf("Flights after the expiry = %v, want none", got)
	}
	st.Take(t0.Add(time.Minute))
	st.Done(a, InProgressWith(&hold{room: 2}), t0.Add(time.Minute))
	if st.EndFlight(old) {
		t.Fatal("a flight read before the expiry ended the eviction in flight after it")
	}
	now := st.Flights("ns/a")
	if len(now) != 1 || now[0].Value.(*hold).room != 2 {
		t.Fatalf("Flights = %v, want the second call's", now)
	}
	if !st.EndFlight(now[0]) {
		t.Fatal("EndFlight of the current flight = false")
	}
}

// A take-over's eviction carries its value as a handler's does.
func TestAddInFlightWithCarriesItsValue(t *testing.T) {
	st, out := newFlightStore(t, Config{})
	a := item("east", "ns/a")
	if !st.AddInFlightWith(a, "held", t0) || st.AddInFlightWith(a, "again", t0) {
		t.Fatal("AddInFlightWith: want true, then false for the same identity")
	}
	fs := st.Flights("ns/a")
	if len(fs) != 1 || fs[0].Value != "held" {
		t.Fatalf("Flights = %v, want the value attached", fs)
	}
	if !st.EndFlight(fs[0]) {
		t.Fatal("EndFlight = false")
	}
	if got := out.kinds("ns/a"); !slices.Equal(got, []OutcomeKind{InProgress, Completed}) {
		t.Fatalf("outcomes of ns/a = %v, want InProgress, Completed", got)
	}
}

// While its handler runs, an eviction shows as Running with no value; ended
// then, it leaves when the call returns, though the call puts it in flight.
func TestRunningFlightEndedLeavesWhenItsCallReturns(t *testing.T) {
	st, out := newFlightStore(t, Config{})
	a := item("east", "ns/a")
	st.Add(a, t0)
	st.Take(t0)
	fs := st.Flights("ns/a")
	if len(fs) != 1 || !fs[0].Running || fs[0].Value != nil {
		t.Fatalf("Flights while running = %+v, want one Running", fs)
	}
	if !st.EndFlight(fs[0]) || st.EndFlight(fs[0]) {
		t.Fatal("EndFlight of the running call: want true once")
	}
	st.Done(a, InProgressWith(&hold{}), t0)
	if st.InFlight() != 0 || len(st.Flights("ns/a")) != 0 {
		t.Fatalf("after the call: InFlight %d, Flights %v; want it gone", st.InFlight(), st.Flights("ns/a"))
	}
	if got := out.kinds("ns/a"); !slices.Equal(got, []OutcomeKind{InProgress, Completed}) {
		t.Fatalf("outcomes of ns/a = %v, want InProgress, Completed", got)
	}
}

// A Running flight read in one call does not end the next call of the item.
func TestRunningFlightOfAnEarlierCallEndsNothing(t *testing.T) {
	st, _ := newFlightStore(t, Config{})
	a := item("east", "ns/a")
	st.Add(a, t0)
	st.Take(t0)
	first := st.Flights("ns/a")[0]
	st.Done(a, errors.New("conflict"), t0)
	st.Advance(t0.Add(time.Hour))
	st.Take(t0.Add(time.Hour))
	if st.EndFlight(first) {
		t.Fatal("a Running flight of the first call ended the second")
	}
}

// The result carries its value and is ErrInProgress to errors.Is.
func TestInProgressWithIsErrInProgress(t *testing.T) {
	err := InProgressWith(1)
	if !errors.Is(err, ErrInProgress) {
		t.Fatal("errors.Is(InProgressWith(v), ErrInProgress) = false")
	}
	if err.Error() != ErrInProgress.Error() {
		t.Fatalf("Error() = %q", err.Error())
	}
}

// Through a running Queue: a handler's InProgressWith puts its eviction in
// flight with the value, and EndFlight frees the slot for the next item.
func TestQueueFlightsThroughRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{MaxInFlight: 1})
		start(t, f.q)
		f.q.Add(item("east", "ns/a"))
		f.q.Add(item("east", "ns/b"))
		c := f.h.next(t)
		if fs := f.q.Flights("ns/a"); len(fs) != 1 || !fs[0].Running {
			t.Fatalf("Flights during the call = %+v, want it Running", fs)
		}
		c.reply <- InProgressWith("room")
		quiet(t, f.q)
		f.h.none(t) // the one slot is taken
		fs := f.q.Flights("ns/a")
		if len(fs) != 1 || fs[0].Value != "room" || f.q.InFlight() != 1 {
			t.Fatalf("Flights = %+v, InFlight %d", fs, f.q.InFlight())
		}
		if !f.q.EndFlight(fs[0]) {
			t.Fatal("EndFlight = false")
		}
		f.h.expect(t, "ns/b", nil)
		quiet(t, f.q)
		f.balanced(t)
	})
}

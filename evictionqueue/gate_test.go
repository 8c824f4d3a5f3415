package evictionqueue

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

var (
	refused = Gate{Reason: "refused"}
	frozen  = Gate{Reason: "freeze"}
)

// gateMetrics is recMetrics that also keeps the parked gauge.
type gateMetrics struct {
	*recMetrics
	parked map[string]int
}

func (m *gateMetrics) Parked(queue, reason string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.parked[reason] = n
}

func (m *gateMetrics) parkedAt(reason string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parked[reason]
}

func newGateStore(t *testing.T) (*Store, *gateMetrics, *outcomes) {
	t.Helper()
	m := &gateMetrics{recMetrics: newRecMetrics(), parked: map[string]int{}}
	out := &outcomes{}
	st, err := NewStore(Config{Name: "gates", Metrics: m, OnOutcome: out.add})
	if err != nil {
		t.Fatal(err)
	}
	return st, m, out
}

// take takes the head item, which must be want.
func take(t *testing.T, st *Store, want string, now time.Time) Item {
	t.Helper()
	it, ok := st.Take(now)
	if !ok || it.Key != want {
		t.Fatalf("Take = %v, %v; want %s", it, ok, want)
	}
	return it
}

// An item parked at a gate waits there, counted in Len and in the gauge,
// until the gate opens; then it is pending again in its first place, ahead
// of the items added after it. Opening another gate frees nothing.
func TestParkWaitsAtItsGateAndKeepsItsPlace(t *testing.T) {
	st, m, _ := newGateStore(t)
	a, b := item("down", "a"), item("down", "b")
	st.Add(a, t0)
	st.Add(b, t0)
	take(t, st, "a", t0)
	st.Done(a, Park(refused, time.Hour, errors.New("nowhere to go")), t0)
	if st.Len() != 2 || st.Parked(refused) != 1 || m.parkedAt("refused") != 1 || m.depth != 2 {
		t.Fatalf("parked: Len %d, Parked %d, gauge %d, depth %d; want 2, 1, 1, 2", st.Len(), st.Parked(refused), m.parkedAt("refused"), m.depth)
	}
	if n := st.Open(frozen); n != 0 || st.Parked(refused) != 1 {
		t.Fatalf("Open of another gate freed %d, left %d parked", n, st.Parked(refused))
	}
	st.Add(item("down", "c"), t0)
	if n := st.Open(refused); n != 1 {
		t.Fatalf("Open(refused) = %d, want 1", n)
	}
	if got := keys(st.Pending()); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("Pending after Open = %v, want a back in its first place", got)
	}
	if st.Parked(refused) != 0 || m.parkedAt("refused") != 0 || m.depth != 3 {
		t.Fatalf("after Open: Parked %d, gauge %d, depth %d", st.Parked(refused), m.parkedAt("refused"), m.depth)
	}
	if s := m.snap(); s.processed[ResultDeferred] != 1 {
		t.Errorf("results %v, want the park counted deferred", s.processed)
	}
}

// A gate that never opens holds its items for at most the park's max (as
// RetryAfter's delay: at least BackoffBase), then they are decided again,
// with no failure counted however often they park.
func TestParkLastsAtMostItsMax(t *testing.T) {
	st, m, _ := newGateStore(t)
	a := item("down", "a")
	st.Add(a, t0)
	now := t0
	for range DefaultMaxRetries + 2 {
		take(t, st, "a", now)
		st.Done(a, Park(refused, time.Minute, errors.New("nowhere to go")), now)
		st.Advance(now.Add(time.Minute - time.Nanosecond))
		if len(st.Pending()) != 1 || st.Parked(refused) != 1 {
			t.Fatalf("before its minute: %d waiting, %d parked", len(st.Pending()), st.Parked(refused))
		}
		now = now.Add(time.Minute)
		st.Advance(now)
		if st.Parked(refused) != 0 || m.parkedAt("refused") != 0 {
			t.Fatalf("after its minute still parked (%d, gauge %d)", st.Parked(refused), m.parkedAt("refused"))
		}
	}
	take(t, st, "a", now)
	st.Done(a, Park(refused, 0, nil), now)
	if due, _ := st.NextDue(); !due.Equal(now.Add(DefaultBackoffBase)) {
		t.Errorf("a park of 0 waits until %v, want BackoffBase", due.Sub(now))
	}
}

// A gate opened while the call that parks its item decides is not lost:
// the item is pending again at once (Requeued), as it is when the item is
// added again meanwhile. A gate opened before the call began, or another
// gate, parks it.
func TestOpenWhileTheCallDecidesIsNotLost(t *testing.T) {
	st, _, out := newGateStore(t)
	a := item("down", "a")
	st.Add(a, t0)

	st.Open(refused) // before the call: the call sees its change
	take(t, st, "a", t0)
	st.Open(frozen)
	st.Done(a, Park(refused, time.Hour, errors.New("nowhere to go")), t0)
	if st.Parked(refused) != 1 {
		t.Fatal("a gate opened before the call, or another gate, did not leave the item parked")
	}

	st.Open(refused)
	take(t, st, "a", t0)
	st.Open(refused) // while the call decides
	st.Done(a, Park(refused, time.Hour, errors.New("nowhere to go")), t0)
	if st.Parked(refused) != 0 || len(st.Pending()) != 1 {
		t.Fatalf("opened during the call: %d parked, %d pending; want pending at once", st.Parked(refused), len(st.Pending()))
	}
	if k := out.kinds("a"); k[len(k)-1] != Requeued {
		t.Errorf("outcomes %v, want the last Requeued", k)
	}

	take(t, st, "a", t0)
	st.Add(a, t0) // a decision made while the call decides
	st.Done(a, Park(refused, time.Hour, errors.New("nowhere to go")), t0)
	if st.Parked(refused) != 0 || len(st.Pending()) != 1 {
		t.Fatalf("added during the call: %d parked, %d pending; want pending at once", st.Parked(refused), len(st.Pending()))
	}
}

// Adding a parked item again carries news its gate may not (the binding
// changed): it is decided again at once. An item deferred by RetryAfter
// keeps its course, as before gates.
func TestAddOfAParkedItemDecidesItAgain(t *testing.T) {
	st, _, _ := newGateStore(t)
	a, b := item("down", "a"), item("down", "b")
	st.Add(a, t0)
	st.Add(b, t0)
	take(t, st, "a", t0)
	st.Done(a, Park(refused, time.Hour, errors.New("nowhere to go")), t0)
	take(t, st, "b", t0)
	st.Done(b, RetryAfter(time.Hour, errors.New("room held")), t0)
	if st.Add(a, t0) || st.Add(b, t0) {
		t.Fatal("Add of an item the store holds = true")
	}
	if got := keys(st.Pending()); !slices.Equal(got, []string{"a", "b"}) || st.Parked(refused) != 0 {
		t.Fatalf("Pending = %v (a pending, then b backing off wanted), %d parked", got, st.Parked(refused))
	}
	take(t, st, "a", t0)
	if _, ok := st.Take(t0); ok {
		t.Fatal("b, deferred by RetryAfter, was pending again")
	}
}

// A recovered cluster's parked items are cancelled with the rest, and no
// longer counted parked; a gate opened later finds none.
func TestCancelClusterEndsParkedItems(t *testing.T) {
	st, m, out := newGateStore(t)
	a := item("down", "a")
	st.Add(a, t0)
	take(t, st, "a", t0)
	st.Done(a, Park(Gate{Reason: "transit-budget", Key: "ns/a"}, time.Hour, errors.New("budget used up")), t0)
	if n := st.CancelCluster("down"); n != 1 {
		t.Fatalf("CancelCluster = %d, want the parked item", n)
	}
	if st.Len() != 0 || m.parkedAt("transit-budget") != 0 || m.depth != 0 {
		t.Fatalf("after the cancel: Len %d, gauge %d, depth %d", st.Len(), m.parkedAt("transit-budget"), m.depth)
	}
	if n := st.Open(Gate{Reason: "transit-budget", Key: "ns/a"}); n != 0 {
		t.Fatalf("Open after the cancel freed %d", n)
	}
	if k := out.kinds("a"); k[len(k)-1] != Cancelled {
		t.Errorf("outcomes %v, want Cancelled last", k)
	}
}

// On a running queue, Open hands a parked item to a worker at once, and
// the park gave its permit back.
func TestQueueOpenWakesAWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &givingPacer{permits: make(chan struct{})}
		f := newFixture(t, Config{Pacer: p})
		start(t, f.q)
		f.q.Add(item("down", "web"))
		p.permits <- struct{}{}
		f.h.expect(t, "web", Park(refused, time.Hour, errors.New("nowhere to go")))
		quiet(t, f.q)
		if p.givenBack() != 1 || f.q.Parked(refused) != 1 || f.q.Len() != 1 {
			t.Fatalf("after the park: given back %d, parked %d, Len %d", p.givenBack(), f.q.Parked(refused), f.q.Len())
		}
		if n := f.q.Open(refused); n != 1 {
			t.Fatalf("Open = %d", n)
		}
		p.permits <- struct{}{}
		f.h.expect(t, "web", nil)
		quiet(t, f.q)
		f.balanced(t)
	})
}

func TestParkUnwraps(t *testing.T) {
	err := Park(Gate{Reason: "transit-budget", Key: "ns/web"}, time.Minute, errBoom)
	var pe *ParkError
	if !errors.As(err, &pe) || pe.Max != time.Minute || !errors.Is(err, errBoom) {
		t.Fatalf("Park = %#v", err)
	}
	if got := err.Error(); got != "evictionqueue: waiting at transit-budget/ns/web for at most 1m0s: boom" {
		t.Errorf("Error() = %q", got)
	}
	if !errors.As(Park(refused, 0, nil), &pe) || pe.Err == nil {
		t.Error("Park(g, 0, nil) carries no reason")
	}
}

// On a running queue, adding a parked item again hands it to a worker at
// once, as Open does: a worker asleep for want of a pending item is woken.
func TestQueueAddOfAParkedItemWakesAWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &givingPacer{permits: make(chan struct{})}
		f := newFixture(t, Config{Pacer: p})
		start(t, f.q)
		f.q.Add(item("down", "web"))
		p.permits <- struct{}{}
		f.h.expect(t, "web", Park(refused, time.Hour, errors.New("nowhere to go")))
		quiet(t, f.q)
		if f.q.Add(item("down", "web")) {
			t.Fatal("Add of a parked item = true")
		}
		p.permits <- struct{}{}
		f.h.expect(t, "web", nil)
		quiet(t, f.q)
		f.balanced(t)
	})
}

package evictionqueue

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewStoreValidatesLikeNew(t *testing.T) {
	_, err := NewStore(Config{MaxInFlight: -1})
	if err == nil || !strings.Contains(err.Error(), "evictionqueue: Name") || !strings.Contains(err.Error(), "MaxInFlight") {
		t.Errorf("NewStore of a bad config = %v", err)
	}
}

// TestStoreSteppedThroughTime drives a Store the way a simulation does and
// checks the rules a Queue follows: MaxInFlight, in-flight TTL, Done only for
// a taken item, cancellation of a running item.
func TestStoreSteppedThroughTime(t *testing.T) {
	out := &outcomes{}
	m := newRecMetrics()
	st, err := NewStore(Config{Name: "sim", MaxInFlight: 1, InFlightTTL: time.Minute, Metrics: m, OnOutcome: out.add})
	if err != nil {
		t.Fatal(err)
	}
	a, b := item("down", "a"), item("down", "b")
	st.Add(a, t0)
	st.Add(b, t0)
	if st.Done(a, nil, t0) {
		t.Error("Done of an item not taken = true")
	}
	got, ok := st.Take(t0)
	if !ok || got != a {
		t.Fatalf("Take = %v, %v; want a", got, ok)
	}
	if _, ok := st.Take(t0); ok {
		t.Fatal("Take with the one MaxInFlight slot held by a handler call = true")
	}
	st.Done(a, ErrInProgress, t0)
	if _, ok := st.Take(t0); ok {
		t.Fatal("Take with the one slot held by a background eviction = true")
	}
	if due, ok := st.NextDue(); !ok || !due.Equal(t0.Add(time.Minute)) {
		t.Fatalf("NextDue = %v, %v; want the TTL at t0+1m", due, ok)
	}
	st.Advance(t0.Add(59 * time.Second))
	if st.InFlight() != 1 {
		t.Fatal("the TTL ended early")
	}
	st.Advance(t0.Add(time.Minute))
	if st.InFlight() != 0 || !slices.Equal(keys(st.Pending()), []string{"a", "b"}) {
		t.Fatalf("after the TTL: InFlight %d, Pending %v; want a pending again ahead of b", st.InFlight(), keys(st.Pending()))
	}
	got, _ = st.Take(t0.Add(time.Minute))
	st.CancelCluster("down") // b leaves; a is running, so it is marked
	if !st.Done(got, errBoom, t0.Add(time.Minute)) {
		t.Fatal("Done of the taken item = false")
	}
	if st.Len() != 0 || st.InFlight() != 0 {
		t.Errorf("Len %d, InFlight %d after everything left", st.Len(), st.InFlight())
	}
	if k := out.kinds("a"); !slices.Equal(k, []OutcomeKind{InProgress, Expired, Cancelled}) {
		t.Errorf("a's outcomes = %v", k)
	}
	if k := out.kinds("b"); !slices.Equal(k, []OutcomeKind{Cancelled}) {
		t.Errorf("b's outcomes = %v", k)
	}
	if o := out.last("a"); !errors.Is(o.Err, errBoom) || o.Attempts != 2 {
		t.Errorf("a's last outcome = %+v", o)
	}
	if s := m.snap(); s.cancelled != 2 || m.depth != 0 || s.latencies[1] != time.Minute {
		t.Errorf("metrics: %d cancelled, depth %d, latencies %v", s.cancelled, m.depth, s.latencies)
	}
}

// An item added again while its handler runs carries a decision made
// meanwhile (client-go's dirty item): a call that would let it leave makes
// it pending again instead, its retries counted afresh; one that left it
// retrying or in flight keeps that course; a recovery after the Add drops
// it. Without the second Add each leaves as before.
func TestAnItemAddedWhileItsHandlerRunsIsHandledAgain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		result  error
		cancel  bool // CancelCluster after the second Add
		want    []OutcomeKind
		wantLen int // pending or backing off after the call
	}{
		{"evicted (nil)", nil, false, []OutcomeKind{Requeued}, 1},
		{"nothing to do (Skip)", Skip(errors.New("cluster recovered")), false, []OutcomeKind{Requeued}, 1},
		{"abandoned", Abandon(errors.New("no target")), false, []OutcomeKind{Requeued}, 1},
		{"its last failure", errBoom, false, []OutcomeKind{Requeued}, 1},
		{"deferred: retried after its delay anyway", RetryAfter(time.Minute, errBoom), false, []OutcomeKind{Retrying}, 1},
		{"in flight: the eviction is under way", ErrInProgress, false, []OutcomeKind{InProgress}, 0},
		{"the cluster recovered after the Add", nil, true, []OutcomeKind{Succeeded}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, again := range []bool{false, true} {
				out := &outcomes{}
				st, err := NewStore(Config{Name: "q", MaxRetries: 1, OnOutcome: out.add})
				if err != nil {
					t.Fatal(err)
				}
				it := item("down", "web")
				st.Add(it, t0)
				if tc.result == errBoom { // one failure already: this one is the last
					got, _ := st.Take(t0)
					st.Done(got, errBoom, t0)
					st.Advance(t0.Add(time.Hour))
					out.list = nil
				}
				got, ok := st.Take(t0)
				if !ok {
					t.Fatal("nothing to take")
				}
				if again && st.Add(it, t0) {
					t.Fatal("Add of a running item = true, want false: its identity is held")
				}
				if tc.cancel {
					st.CancelCluster("down")
				}
				st.Done(got, tc.result, t0)
				kinds := out.kinds("web")
				if !again {
					if len(kinds) == 1 && kinds[0] == Requeued {
						t.Errorf("requeued without a second Add")
					}
					continue
				}
				if !slices.Equal(kinds, tc.want) || st.Len() != tc.wantLen {
					t.Errorf("outcomes %v, Len %d; want %v, %d", kinds, st.Len(), tc.want, tc.wantLen)
				}
				if tc.wantLen == 1 && tc.want[0] == Requeued {
					if again, ok := st.Take(t0); !ok || again != it {
						t.Errorf("Take after the requeue = %v, %v; want the item at once", again, ok)
					}
					st.Done(it, errBoom, t0) // its retries counted afresh: not its last
					if k := out.kinds("web"); k[len(k)-1] != Retrying {
						t.Errorf("a failure after the requeue: %v, want Retrying", k)
					}
				}
			}
		})
	}
}

// An eviction the queue did not start, found under way, counts in flight
// and against MaxInFlight until Complete; one never confirmed is pending
// again at its TTL; an identity the queue holds is refused.
func TestAddInFlight(t *testing.T) {
	out := &outcomes{}
	st, err := NewStore(Config{Name: "q", MaxInFlight: 1, InFlightTTL: time.Minute, OnOutcome: out.add})
	if err != nil {
		t.Fatal(err)
	}
	a, b := item("down", "a"), item("down", "b")
	if !st.AddInFlight(a, t0) || st.AddInFlight(a, t0) {
		t.Fatal("AddInFlight: want true, then false for the held identity")
	}
	st.Add(b, t0)
	if st.InFlight() != 1 {
		t.Fatalf("InFlight = %d, want 1", st.InFlight())
	}
	if _, ok := st.Take(t0); ok {
		t.Fatal("Take with the one MaxInFlight slot held by the eviction found under way = true")
	}
	if !st.Complete(a) || st.InFlight() != 0 {
		t.Fatal("Complete of the eviction found under way: want true and nothing in flight")
	}
	if got, ok := st.Take(t0); !ok || got != b {
		t.Fatalf("Take after Complete = %v, %v; want b", got, ok)
	}
	st.Done(b, nil, t0)

	st.AddInFlight(a, t0)
	st.Advance(t0.Add(time.Minute))
	if st.InFlight() != 0 || !slices.Equal(keys(st.Pending()), []string{"a"}) {
		t.Fatalf("after the TTL: InFlight %d, Pending %v; want a pending again", st.InFlight(), keys(st.Pending()))
	}
	if k := out.kinds("a"); !slices.Equal(k, []OutcomeKind{InProgress, Completed, InProgress, Expired}) {
		t.Errorf("a's outcomes = %v", k)
	}
}

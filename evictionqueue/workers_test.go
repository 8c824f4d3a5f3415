package evictionqueue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/ratelimit"
)

var workersT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// workersLimiter is a fleet Limiter of rate permits a second on a healthy
// fleet of 20 clusters, on clk.
func workersLimiter(t *testing.T, clk *clocktesting.FakeClock, rate float64) *ratelimit.Limiter {
	t.Helper()
	cfg := ratelimit.DefaultConfig()
	cfg.ResourceEvictionRate = rate
	tracker := ratelimit.NewTracker()
	for i := range 20 {
		tracker.Set(fmt.Sprintf("c%d", i), false)
	}
	l, err := ratelimit.NewLimiter(cfg, tracker, ratelimit.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// play runs w on clk until nothing is due: at each instant Workers.Run,
// then the clock moves to the next permit or deadline.
func play(t *testing.T, clk *clocktesting.FakeClock, w *evictionqueue.Workers, stores ...*evictionqueue.Store) {
	t.Helper()
	for range 1000 {
		next, err := w.Run(context.Background(), clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range stores {
			if at, ok := st.NextDue(); ok && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
		if next.IsZero() {
			return
		}
		clk.SetTime(next)
	}
	t.Fatal("still running after 1000 instants")
}

// workersRun plays two stores of 2 workers each, sharing a 1/s Limiter,
// through 3 items in the first and 2 in the second, the second item of the
// first deferred once by 5s, and returns the handler calls in order, each
// as "store:key@seconds".
func workersRun(t *testing.T) []string {
	t.Helper()
	clk := clocktesting.NewFakeClock(workersT0)
	w, err := evictionqueue.NewWorkers(workersLimiter(t, clk, 1))
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	deferred := false
	var stores []*evictionqueue.Store
	for i := range 2 {
		st, err := evictionqueue.NewStore(evictionqueue.Config{Name: fmt.Sprint("q", i)})
		if err != nil {
			t.Fatal(err)
		}
		h := func(_ context.Context, it evictionqueue.Item) error {
			calls = append(calls, fmt.Sprintf("%d:%s@%v", i, it.Key, clk.Since(workersT0).Seconds()))
			if it.Key == "a1" && !deferred {
				deferred = true
				return evictionqueue.RetryAfter(5*time.Second, errors.New("not yet"))
			}
			return nil
		}
		if err := w.Add(st, h, 2); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, st)
	}
	for _, k := range []string{"a0", "a1", "a2"} {
		stores[0].Add(evictionqueue.Item{Cluster: "c0", Key: k}, clk.Now())
	}
	for _, k := range []string{"b0", "b1"} {
		stores[1].Add(evictionqueue.Item{Cluster: "c1", Key: k}, clk.Now())
	}
	play(t, clk, w, stores...)
	if n := stores[0].Len() + stores[1].Len(); n != 0 {
		t.Errorf("%d items left", n)
	}
	return calls
}

// The workers of two Stores take a shared Limiter's permits one per second
// in the order they joined the line; a permit a call leaves unused goes at
// once to the next in line, and a deferred item comes back when its backoff
// ends: the same calls, run after run.
func TestWorkersTakePermitsInLineOrder(t *testing.T) {
	first := workersRun(t)
	// a0 takes the permit at 0s. a1's worker, next in line, takes the one
	// at 1s, is deferred and gives it back, so b0, next, gets it at once;
	// b1 and a2 follow a second apart, in line order, and a1 comes back
	// when its 5s backoff ends.
	want := []string{"0:a0@0", "0:a1@1", "1:b0@1", "1:b1@2", "0:a2@3", "0:a1@6"}
	if !slices.Equal(first, want) {
		t.Fatalf("calls %v, want %v", first, want)
	}
	for range 20 {
		if again := workersRun(t); !slices.Equal(again, first) {
			t.Fatalf("two runs differ:\n%v\n%v", first, again)
		}
	}
}

// Workers hold to MaxInFlight as Run's do: with one slot, an eviction in
// flight holds back the next item until it completes, and its TTL's expiry
// hands it to a worker again; a panic is a failure, not a crash.
func TestWorkersHoldToMaxInFlightAndTTL(t *testing.T) {
	clk := clocktesting.NewFakeClock(workersT0)
	w, err := evictionqueue.NewWorkers(workersLimiter(t, clk, 100))
	if err != nil {
		t.Fatal(err)
	}
	st, err := evictionqueue.NewStore(evictionqueue.Config{Name: "q", MaxInFlight: 1, InFlightTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	h := func(_ context.Context, it evictionqueue.Item) error {
		calls = append(calls, fmt.Sprintf("%s@%v", it.Key, clk.Since(workersT0).Seconds()))
		if it.Key == "b" {
			panic("boom")
		}
		return evictionqueue.ErrInProgress
	}
	if err := w.Add(st, h, 3); err != nil {
		t.Fatal(err)
	}
	st.Add(evictionqueue.Item{Cluster: "c0", Key: "a"}, clk.Now())
	st.Add(evictionqueue.Item{Cluster: "c0", Key: "b"}, clk.Now())
	if _, err := w.Run(context.Background(), clk.Now()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a@0"}; !slices.Equal(calls, want) || st.InFlight() != 1 {
		t.Fatalf("calls %v, in flight %d: want %v and one in flight", calls, st.InFlight(), want)
	}
	clk.Step(time.Minute) // a's TTL passes: a is pending again, behind nothing
	if _, err := w.Run(context.Background(), clk.Now()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a@0", "a@60"}; !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want %v: a again after its TTL, b still held back", calls, want)
	}
	st.Complete(evictionqueue.Item{Cluster: "c0", Key: "a"})
	clk.Step(time.Second) // the next permit
	if _, err := w.Run(context.Background(), clk.Now()); err != nil {
		t.Fatal(err)
	}
	if got := calls[len(calls)-1]; got != "b@61" || st.Len() != 1 {
		t.Fatalf("calls %v, Len %d: want b handled once a completed, and backing off after its panic", calls, st.Len())
	}
}

// Under a pacer by domain, a worker whose domains have no permit free lets
// the next in line, of another Store, take its own domain's.
func TestWorkersByDomainLetTheNextInLineTryItsOwn(t *testing.T) {
	clk := clocktesting.NewFakeClock(workersT0)
	cfg := ratelimit.DefaultConfig()
	cfg.DisruptionDomain = ratelimit.DomainRegion
	tracker := ratelimit.NewTracker()
	// east: a small region mostly down, paused; west: healthy.
	for i, down := range []bool{true, true, false} {
		tracker.SetInDomains(fmt.Sprint("e", i), down, "east")
	}
	for i := range 3 {
		tracker.SetInDomains(fmt.Sprint("w", i), false, "west")
	}
	limiter, err := ratelimit.NewLimiter(cfg, tracker, ratelimit.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	w, err := evictionqueue.NewWorkers(limiter)
	if err != nil {
		t.Fatal(err)
	}
	region := func(cluster string) string {
		if strings.HasPrefix(cluster, "e") {
			return "east"
		}
		return "west"
	}
	var calls []string
	var stores []*evictionqueue.Store
	for i := range 2 {
		st, err := evictionqueue.NewStore(evictionqueue.Config{Name: fmt.Sprint("q", i), DomainOf: region})
		if err != nil {
			t.Fatal(err)
		}
		h := func(_ context.Context, it evictionqueue.Item) error {
			calls = append(calls, fmt.Sprintf("%d:%s@%v", i, it.Key, clk.Since(workersT0).Seconds()))
			return nil
		}
		if err := w.Add(st, h, 1); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, st)
	}
	stores[0].Add(evictionqueue.Item{Cluster: "e2", Key: "a0"}, clk.Now())
	stores[0].Add(evictionqueue.Item{Cluster: "e2", Key: "a1"}, clk.Now())
	stores[1].Add(evictionqueue.Item{Cluster: "w1", Key: "b0"}, clk.Now())
	if _, err := w.Run(context.Background(), clk.Now()); err != nil {
		t.Fatal(err)
	}
	// The first store's worker, first in line, waits for east, paused;
	// the second's, behind it, takes west's permit.
	if want := []string{"1:b0@0"}; !slices.Equal(calls, want) || stores[0].Len() != 2 {
		t.Fatalf("calls %v, east's items queued %d; want %v and both of east's waiting", calls, stores[0].Len(), want)
	}
}

// Bad arguments are errors naming what is wrong; an ended context ends Run.
func TestWorkersRefuseBadArguments(t *testing.T) {
	if _, err := evictionqueue.NewWorkers(nil); err == nil {
		t.Error("NewWorkers(nil): no error")
	}
	clk := clocktesting.NewFakeClock(workersT0)
	w, err := evictionqueue.NewWorkers(workersLimiter(t, clk, 1))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := evictionqueue.NewStore(evictionqueue.Config{Name: "q"})
	h := func(context.Context, evictionqueue.Item) error { return nil }
	for _, tc := range []struct {
		name string
		st   *evictionqueue.Store
		h    evictionqueue.Handler
		n    int
		want string
	}{
		{"no store", nil, h, 1, "Store"},
		{"no handler", st, nil, 1, "handler"},
		{"no workers", st, h, 0, "n: 0"},
	} {
		if err := w.Add(tc.st, tc.h, tc.n); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Add = %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	if err := w.Add(st, h, 1); err != nil {
		t.Fatal(err)
	}
	st.Add(evictionqueue.Item{Cluster: "c0", Key: "a"}, clk.Now())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Run(ctx, clk.Now()); !errors.Is(err, context.Canceled) || st.Len() != 1 {
		t.Errorf("Run on an ended context = %v, Len %d: want context.Canceled and the item kept", err, st.Len())
	}
}

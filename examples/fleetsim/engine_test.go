package main

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

// engineRun drives two queues of 2 workers, sharing a 1/s Limiter, through
// 3 items in the first queue and 2 in the second, the second item of the
// first deferred once by 5s, and returns the handler calls in order, each
// as "queue:key@seconds".
func engineRun(t *testing.T) []string {
	t.Helper()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	cfg := ratelimit.DefaultConfig()
	cfg.ResourceEvictionRate = 1
	tracker := ratelimit.NewTracker()
	for i := range 20 {
		tracker.Set(fmt.Sprintf("c%d", i), false)
	}
	limiter, err := ratelimit.NewLimiter(cfg, tracker, ratelimit.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(clk, limiter, 2, 0)
	var calls []string
	deferred := false
	for i := range 2 {
		h := func(_ context.Context, it evictionqueue.Item) error {
			calls = append(calls, fmt.Sprintf("%d:%s@%v", i, it.Key, clk.Since(t0).Seconds()))
			if it.Key == "a1" && !deferred {
				deferred = true
				return evictionqueue.RetryAfter(5*time.Second, errors.New("not yet"))
			}
			return nil
		}
		if err := e.newQueue(i, evictionqueue.Config{Name: queueNames[i]}, h, func(evictionqueue.Outcome) {}); err != nil {
			t.Fatal(err)
		}
	}
	e.start()
	defer func() {
		if err := e.shutdown(); err != nil {
			t.Error(err)
		}
	}()
	for _, k := range []string{"a0", "a1", "a2"} {
		e.add(qRB, evictionqueue.Item{Cluster: "c0", Key: k})
	}
	for _, k := range []string{"b0", "b1"} {
		e.add(qCRB, evictionqueue.Item{Cluster: "c1", Key: k})
	}
	for range 100 {
		now := clk.Now()
		if err := e.dispatch(now); err != nil {
			t.Fatal(err)
		}
		next, ok := e.nextDue(now)
		if t := e.permitAt; !t.IsZero() && (!ok || t.Before(next)) {
			next, ok = t, true
		}
		if !ok {
			break
		}
		clk.SetTime(next)
	}
	if n := e.queues[qRB].Len() + e.queues[qCRB].Len(); n != 0 {
		t.Errorf("%d items left", n)
	}
	return calls
}

// The real queues' workers, on the simulated clock, take the Limiter's
// permits one per second in the order they joined the line, and a deferred
// item comes back when its backoff ends: the same calls, run after run.
func TestEngineDrivesTheQueuesDeterministically(t *testing.T) {
	first := engineRun(t)
	// a0 takes the permit at 0s. a1's worker, next in line, takes the one
	// at 1s, is deferred and gives it back, so b0, next, gets it at once;
	// b1 and a2 follow a second apart, in line order, and a1 comes back
	// when its 5s backoff ends.
	want := []string{"0:a0@0", "0:a1@1", "1:b0@1", "1:b1@2", "0:a2@3", "0:a1@6"}
	if !slices.Equal(first, want) {
		t.Fatalf("calls %v, want %v", first, want)
	}
	for range 20 {
		if again := engineRun(t); !slices.Equal(again, first) {
			t.Fatalf("two runs differ:\n%v\n%v", first, again)
		}
	}
}

// A run whose context ends mid-run, with items queued, stops the queues'
// goroutines (TestMain's goleak checks that none is left) and says why.
func TestRunStopsTheQueuesWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := cancelOn{cancel: cancel, after: "taint manager queued"}
	if err := run(ctx, nil, &out); !errors.Is(err, context.Canceled) {
		t.Errorf("run: %v, want context.Canceled", err)
	}
	if !out.seen {
		t.Error("the run never queued an eviction")
	}
}

// cancelOn cancels once a write holds after.
type cancelOn struct {
	cancel func()
	after  string
	seen   bool
}

func (c *cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.after) {
		c.seen = true
		c.cancel()
	}
	return len(p), nil
}

// The driver's record of backoffs: a replaced or dropped deadline no longer
// counts, and those that ended by now leave.
func TestBackoffs(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b, c := itemID{"x", "a"}, itemID{"x", "b"}, itemID{"y", "c"}
	bo := newBackoffs()
	bo.set(a, t0.Add(10*time.Second))
	bo.set(b, t0.Add(5*time.Second))
	bo.set(c, t0.Add(20*time.Second))
	bo.set(b, t0.Add(30*time.Second)) // backs off again, longer
	bo.drop(c)
	if next, ok := bo.next(); !ok || !next.Equal(t0.Add(10*time.Second)) || bo.len() != 2 {
		t.Fatalf("next %v %v, len %d: want a's 10s and 2", next, ok, bo.len())
	}
	bo.expire(t0.Add(10 * time.Second))
	if _, ok := bo.until(a); ok || bo.len() != 1 {
		t.Errorf("a's backoff ended at 10s: still %v, len %d", ok, bo.len())
	}
	if next, ok := bo.next(); !ok || !next.Equal(t0.Add(30*time.Second)) {
		t.Errorf("next %v %v: want b's 30s", next, ok)
	}
	bo.expire(t0.Add(time.Minute))
	if _, ok := bo.next(); ok || bo.len() != 0 {
		t.Errorf("every backoff ended: len %d", bo.len())
	}
}

package evictionqueue

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"
)

func TestNewRejectsBadConfig(t *testing.T) {
	h := func(context.Context, Item) error { return nil }
	tests := []struct {
		name    string
		cfg     Config
		handler Handler
		want    []string // substrings of the error
	}{
		{"nil handler", Config{Name: "q"}, nil, []string{"handler must not be nil"}},
		{"empty name", Config{}, h, []string{"Name must not be empty"}},
		{"negative workers", Config{Name: "q", Workers: -1}, h, []string{"Workers", "-1"}},
		{"more workers than goroutines can be started", Config{Name: "q", Workers: 1 << 40}, h, []string{"Workers", "1099511627776", "10000"}},
		{"negative retries", Config{Name: "q", MaxRetries: -2}, h, []string{"MaxRetries", "-2"}},
		{"negative in-flight budget", Config{Name: "q", MaxInFlight: -3}, h, []string{"MaxInFlight", "-3"}},
		{"negative TTL", Config{Name: "q", InFlightTTL: -time.Second}, h, []string{"InFlightTTL", "-1s"}},
		{"negative backoff base", Config{Name: "q", BackoffBase: -time.Second}, h, []string{"BackoffBase", "-1s"}},
		{"negative backoff max", Config{Name: "q", BackoffMax: -time.Minute}, h, []string{"BackoffMax", "-1m0s"}},
		{"base above max", Config{Name: "q", BackoffBase: time.Minute, BackoffMax: time.Second}, h, []string{"BackoffBase 1m0s", "BackoffMax 1s"}},
		{"base above default max", Config{Name: "q", BackoffBase: time.Hour}, h, []string{"BackoffBase 1h0m0s", "BackoffMax 5m0s"}},
		{"every problem at once", Config{Workers: -1, MaxInFlight: -1}, nil, []string{"Name", "Workers", "MaxInFlight", "handler"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := New(tt.cfg, tt.handler)
			if err == nil {
				t.Fatalf("New accepted %+v", tt.cfg)
			}
			if q != nil {
				t.Error("New returned a queue with its error")
			}
			if !strings.HasPrefix(err.Error(), "evictionqueue: ") {
				t.Errorf("error %q does not start with the package name", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestNewAppliesDefaults(t *testing.T) {
	q, err := New(Config{Name: "q"}, func(context.Context, Item) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	c := q.cfg
	if c.Workers != 1 || c.MaxRetries != 5 || c.InFlightTTL != 10*time.Minute ||
		c.BackoffBase != time.Second || c.BackoffMax != 5*time.Minute || c.Clock == nil || c.MaxInFlight != 0 {
		t.Errorf("defaults not applied: %+v", c)
	}
}

func TestBackoffDoublesUpToTheCap(t *testing.T) {
	c := Config{BackoffBase: time.Second, BackoffMax: 10 * time.Second}
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, c.backoff(n))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("backoff = %v, want %v", got, want)
	}
	huge := Config{BackoffBase: time.Second, BackoffMax: time.Duration(1<<63 - 1)}
	if d := huge.backoff(100); d <= 0 {
		t.Errorf("backoff overflowed to %v", d)
	}
}

func TestPendingIsPriorityThenFirstInFirstOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Config{})
		add := []Item{
			{Cluster: "a", Key: "low-1", Priority: 0},
			{Cluster: "b", Key: "high-1", Priority: 10},
			{Cluster: "a", Key: "low-2", Priority: 0},
			{Cluster: "c", Key: "mid-1", Priority: 5},
			{Cluster: "b", Key: "high-2", Priority: 10},
			{Cluster: "a", Key: "neg-1", Priority: -1},
			{Cluster: "c", Key: "low-3", Priority: 0},
		}
		for _, it := range add {
			if !f.q.Add(it) {
				t.Fatalf("Add(%v) = false on a new item", it)
			}
		}
		want := []string{"high-1", "high-2", "mid-1", "low-1", "low-2", "low-3", "neg-1"}
		if got := keys(f.q.Pending()); !slices.Equal(got, want) {
			t.Fatalf("Pending = %v, want %v", got, want)
		}
		if f.q.Len() != len(add) {
			t.Errorf("Len = %d, want %d", f.q.Len(), len(add))
		}
		f.balanced(t)

		// The workers follow the order Pending promised.
		start(t, f.q)
		for _, k := range want {
			f.h.expect(t, k, nil)
		}
		quiet(t, f.q)
		f.balanced(t)
		if f.q.Len() != 0 {
			t.Errorf("Len = %d after handling everything", f.q.Len())
		}
	})
}

func TestAddOfAPendingItemChangesNothing(t *testing.T) {
	f := newFixture(t, Config{})
	if !f.q.Add(Item{Cluster: "a", Key: "x", Priority: 1}) {
		t.Fatal("first Add = false")
	}
	f.q.Add(Item{Cluster: "a", Key: "y", Priority: 1})
	// Same identity, other priority and kind: refused, the first one kept.
	if f.q.Add(Item{Cluster: "a", Key: "x", Priority: 100, ResourceKind: "other"}) {
		t.Fatal("Add of a pending identity = true")
	}
	// Same key in another cluster is another item.
	if !f.q.Add(Item{Cluster: "b", Key: "x"}) {
		t.Fatal("Add of the same key in another cluster = false")
	}
	got := f.q.Pending()
	if len(got) != 3 || got[0] != (Item{Cluster: "a", Key: "x", Priority: 1}) {
		t.Errorf("Pending = %v", got)
	}
	f.balanced(t)
}

func TestCancelClusterRemovesOnlyThatClustersWaitingItems(t *testing.T) {
	f := newFixture(t, Config{})
	for i := range 5 {
		f.q.Add(item("down", "d"+string(rune('0'+i))))
		f.q.Add(item("up", "u"+string(rune('0'+i))))
	}
	if n := f.q.CancelCluster("down"); n != 5 {
		t.Fatalf("CancelCluster = %d, want 5", n)
	}
	if got := keys(f.q.Pending()); !slices.Equal(got, []string{"u0", "u1", "u2", "u3", "u4"}) {
		t.Errorf("Pending after cancel = %v", got)
	}
	if n := f.q.CancelCluster("down"); n != 0 {
		t.Errorf("second CancelCluster = %d, want 0", n)
	}
	if n := f.q.CancelCluster("unknown"); n != 0 {
		t.Errorf("CancelCluster of an unknown cluster = %d", n)
	}
	if f.m.snap().cancelled != 5 {
		t.Errorf("Cancelled metric = %d, want 5", f.m.snap().cancelled)
	}
	if k := f.out.kinds("d3"); !slices.Equal(k, []OutcomeKind{Cancelled}) {
		t.Errorf("outcomes of a cancelled item = %v", k)
	}
	// The identity is free again: the cluster may fail again later.
	if !f.q.Add(item("down", "d0")) {
		t.Error("Add after cancel = false")
	}
	if _, ok := f.q.s.index.clusters["unknown"]; ok {
		t.Error("CancelCluster of an unknown cluster left an index entry behind")
	}
	f.balanced(t)
}

func TestCompleteOfAnItemNotInFlightIsFalse(t *testing.T) {
	f := newFixture(t, Config{})
	f.q.Add(item("a", "x"))
	if f.q.Complete(item("a", "x")) {
		t.Error("Complete of a pending item = true")
	}
	if f.q.Complete(item("a", "nope")) {
		t.Error("Complete of an unknown item = true")
	}
	if f.q.Len() != 1 {
		t.Error("Complete changed the queue")
	}
}

func TestAbandonAndPanicErrorsUnwrap(t *testing.T) {
	err := Abandon(errBoom)
	if !IsAbandoned(err) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("Abandon(errBoom) = %v", err)
	}
	if !errors.Is(err, errBoom) {
		t.Error("errors.Is(Abandon(errBoom), errBoom) = false")
	}
	if IsAbandoned(errBoom) || IsAbandoned(nil) {
		t.Error("IsAbandoned of a plain error = true")
	}
	if !IsAbandoned(Abandon(nil)) || Abandon(nil).Error() == "" {
		t.Error("Abandon(nil) is not an abandon error")
	}
	p := &PanicError{Value: errBoom}
	if !errors.Is(p, errBoom) {
		t.Error("a panic with an error does not unwrap to it")
	}
	if (&PanicError{Value: "text"}).Unwrap() != nil {
		t.Error("a panic with a string unwraps to an error")
	}
}

func TestAPanickingOutcomeCallbackDoesNotStopLaterOutcomes(t *testing.T) {
	var got []OutcomeKind
	calls := 0
	q, err := New(Config{Name: "q", OnOutcome: func(o Outcome) {
		if calls++; calls == 1 {
			panic("callback bug")
		}
		got = append(got, o.Kind)
	}}, func(context.Context, Item) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	q.Add(item("a", "x"))
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the callback's panic did not reach the caller")
			}
		}()
		q.CancelCluster("a")
	}()
	q.Add(item("b", "y"))
	q.CancelCluster("b")
	if !slices.Equal(got, []OutcomeKind{Cancelled}) {
		t.Errorf("outcomes after the panic = %v, want [Cancelled]", got)
	}
}

func TestOutcomesAfterAPanickingOneInTheSameBatchAreStillDelivered(t *testing.T) {
	var got []string
	panicked := false
	q, err := New(Config{Name: "q", OnOutcome: func(o Outcome) {
		if !panicked {
			panicked = true
			panic("callback bug")
		}
		got = append(got, o.Item.Key)
	}}, func(context.Context, Item) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	q.Add(item("a", "x"))
	q.Add(item("a", "y"))
	func() {
		defer func() { _ = recover() }()
		q.CancelCluster("a") // one batch: the first outcome panics
	}()
	q.Add(item("b", "z"))
	q.CancelCluster("b")
	if len(got) != 2 || got[1] != "z" {
		t.Errorf("outcomes delivered after the panic = %v, want the one left of the batch, then z", got)
	}
}

func TestAPanickingOutcomeCallbackInAWorkerDoesNotCrashTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs syncBuffer
		var mu sync.Mutex
		var got []OutcomeKind
		f := newFixture(t, Config{})
		f.q.cfg.Logger = funcr.New(func(prefix, args string) { logs.Write([]byte(prefix + args + "\n")) }, funcr.Options{})
		f.q.cfg.OnOutcome = func(o Outcome) {
			if o.Kind == Succeeded && o.Item.Key == "x" {
				panic("callback bug")
			}
			mu.Lock()
			got = append(got, o.Kind)
			mu.Unlock()
		}
		start(t, f.q)
		f.q.Add(item("a", "x"))
		f.h.expect(t, "x", nil) // the worker delivers Succeeded, which panics
		f.q.Add(item("a", "y"))
		f.h.expect(t, "y", nil) // the worker lives on
		settled(t, "y's outcome is delivered", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) == 1
		})
		f.balanced(t)
		log := logs.String()
		if !strings.Contains(log, "OnOutcome panicked: callback bug") || strings.Contains(log, "handler panicked") {
			t.Errorf("the panic was not logged as OnOutcome's through Config.Logger; log: %q", log)
		}
	})
}

// syncBuffer is a bytes.Buffer safe for the logger and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

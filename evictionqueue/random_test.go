package evictionqueue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// yieldingPacer grants every permit after letting other goroutines run, so
// that cancels and adds land while workers wait for permits.
type yieldingPacer struct{}

func (yieldingPacer) Wait(ctx context.Context) error {
	runtime.Gosched()
	return ctx.Err()
}

// TestRandomInterleavingsKeepTheBooks drives queues with random adds,
// cancels, completes, clock steps, handler results (nil, error, Abandon,
// ErrInProgress, panic, blocking until Run ends) and Run stops and restarts,
// concurrently with the workers. After every stop it checks the queue's
// books: no permit wait, handler call or undelivered outcome is left over, the metrics'
// gauges equal Len and InFlight, and every item added is either still held
// or has left with exactly one final outcome. The handler is never running
// twice for one identity.
func TestRandomInterleavingsKeepTheBooks(t *testing.T) {
	seeds := uint64(20)
	if testing.Short() {
		seeds = 5
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { randomRun(t, seed) })
	}
}

func randomRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 42))
	clk := clocktesting.NewFakeClock(t0)
	m := newRecMetrics()
	var (
		mu        sync.Mutex
		running   = map[Item]bool{}
		problems  []string
		finals    = map[Item]int{}
		addedTrue = map[Item]int{}
		results   = rand.New(rand.NewPCG(seed, 7))
	)
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	h := func(ctx context.Context, it Item) error {
		id := Item{Cluster: it.Cluster, Key: it.Key}
		mu.Lock()
		if running[id] {
			mu.Unlock()
			report("%v handled twice at once", id)
			return nil
		}
		running[id] = true
		r := results.IntN(12)
		mu.Unlock()
		defer func() {
			mu.Lock()
			delete(running, id)
			mu.Unlock()
		}()
		runtime.Gosched()
		switch {
		case r < 3:
			return nil
		case r < 6:
			return errBoom
		case r < 7:
			return Abandon(errBoom)
		case r < 9:
			return fmt.Errorf("accepted: %w", ErrInProgress)
		case r < 10:
			panic("handler bug")
		default:
			<-ctx.Done()
			return ctx.Err()
		}
	}
	var pacer Pacer
	if rng.IntN(2) == 0 {
		pacer = yieldingPacer{}
	}
	cfg := Config{
		Name: "random", Workers: 1 + rng.IntN(4), MaxInFlight: rng.IntN(4), MaxRetries: 1 + rng.IntN(2),
		InFlightTTL: 3 * time.Second, BackoffBase: time.Second, BackoffMax: 4 * time.Second,
		Pacer: pacer, Clock: clk, Metrics: m,
		OnOutcome: func(o Outcome) {
			switch o.Kind {
			case Succeeded, Completed, Abandoned, Failed, Cancelled:
				mu.Lock()
				finals[Item{Cluster: o.Item.Cluster, Key: o.Item.Key}]++
				mu.Unlock()
			}
		},
	}
	q, err := New(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	pick := func() Item {
		return Item{Cluster: fmt.Sprint("c", rng.IntN(3)), Key: fmt.Sprint("k", rng.IntN(4)), Priority: int32(rng.IntN(2))}
	}
	checkStopped := func(round int) {
		t.Helper()
		q.mu.Lock()
		run, waits, out := q.s.running, len(q.waits), len(q.s.outbox)
		q.mu.Unlock()
		if run != 0 || waits != 0 || out != 0 {
			t.Fatalf("round %d, after Run: running %d, waiting for permits %d, outbox %d; want all 0", round, run, waits, out)
		}
		checkBalanced(t, q, m)
		q.mu.Lock()
		held := map[Item]bool{}
		for _, ci := range q.s.index.clusters {
			for _, e := range ci.keys.all() {
				held[Item{Cluster: e.item.Cluster, Key: e.item.Key}] = true
			}
		}
		q.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		for id, n := range addedTrue {
			want := n
			if held[id] {
				want--
			}
			if finals[id] != want {
				t.Fatalf("round %d: %v added %d times, held %v, %d final outcomes", round, id, n, held[id], finals[id])
			}
		}
		if len(problems) > 0 {
			t.Fatal(problems)
		}
	}

	for round := range 4 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- q.Run(ctx) }()
		for range 60 {
			switch op := rng.IntN(10); {
			case op < 4:
				it := pick()
				if q.Add(it) {
					mu.Lock()
					addedTrue[Item{Cluster: it.Cluster, Key: it.Key}]++
					mu.Unlock()
				}
			case op < 5:
				q.CancelCluster(pick().Cluster)
			case op < 7:
				q.Complete(pick())
			case op < 9:
				clk.Step(time.Duration(rng.IntN(2000)) * time.Millisecond)
			default:
				runtime.Gosched()
			}
			for range rng.IntN(8) {
				runtime.Gosched() // let workers interleave
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		checkStopped(round)
	}
}

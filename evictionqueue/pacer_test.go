package evictionqueue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestItemCancelledWhileAWorkerWaitsForAPermitIsNeverHandledAndTakesNoPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakePacer()
		f := newFixture(t, Config{Workers: 2, Pacer: p})
		start(t, f.q)
		f.q.Add(item("down", "x"))
		// One item: one worker goes for a permit, the other does not.
		quiet(t, f.q)
		if w := p.waitingNow(); w != 1 {
			t.Fatalf("%d workers wait for a permit for one item", w)
		}
		if n := f.q.CancelCluster("down"); n != 1 {
			t.Fatalf("CancelCluster = %d", n)
		}
		// The worker stops waiting: a shared Pacer gives its place to others.
		settled(t, "the worker has left the pacer", func() bool { return p.waitingNow() == 0 })
		quiet(t, f.q)
		f.h.none(t) // x is never handled

		f.q.Add(item("up", "y"))
		p.grant(t)
		f.h.expect(t, "y", nil)
		quiet(t, f.q)
		if calls, granted := p.counts(); calls != 2 || granted != 1 {
			t.Errorf("pacer: %d waits, %d permits; want 2 (one withdrawn) and 1", calls, granted)
		}
		f.out.waitKinds(t, "x", Cancelled)
		f.balanced(t)
	})
}

func TestCancellingSomeItemsWithdrawsOnlyTheExcessPacerWaits(t *testing.T) {
	// The wait left keeps its place in a shared Pacer's line: withdrawn and
	// made again, it would go behind other queues' workers.
	synctest.Test(t, func(t *testing.T) {
		p := newFakePacer()
		f := newFixture(t, Config{Workers: 4, Pacer: p})
		start(t, f.q)
		for _, k := range []string{"a", "b", "c"} {
			f.q.Add(item("down", k))
		}
		f.q.Add(item("up", "d"))
		quiet(t, f.q)
		if w := p.waitingNow(); w != 4 {
			t.Fatalf("%d of 4 workers wait for a permit with 4 items pending", w)
		}
		f.q.CancelCluster("down")
		f.q.CancelCluster("down") // again: nothing more to withdraw
		settled(t, "three workers have left the pacer", func() bool { return p.waitingNow() == 1 })
		quiet(t, f.q)
		if calls, _ := p.counts(); calls != 4 {
			t.Errorf("pacer: %d waits, want 4: the wait for d was withdrawn and made again", calls)
		}
		p.grant(t)
		f.h.expect(t, "d", nil)
		quiet(t, f.q)
		if w := p.waitingNow(); w != 0 {
			t.Errorf("%d workers wait for a permit with nothing pending", w)
		}
		f.balanced(t)
	})
}

func TestAPlainPacersWaitsStayWhenADomainGainsItsFirstItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakePacer()
		regionOf := func(cluster string) string { return cluster[:2] }
		f := newFixture(t, Config{Workers: 2, Pacer: p, DomainOf: regionOf})
		start(t, f.q)
		f.q.Add(item("eu-1", "x"))
		quiet(t, f.q)
		f.q.Add(item("us-1", "y")) // a new domain: nothing for a plain Pacer
		quiet(t, f.q)
		if w := p.waitingNow(); w != 2 {
			t.Fatalf("%d workers wait for a permit for two items", w)
		}
		if calls, _ := p.counts(); calls != 2 {
			t.Errorf("pacer: %d waits, want 2: a plain Pacer's wait was renewed for a new domain", calls)
		}
		p.grant(t)
		f.h.expect(t, "x", nil)
		p.grant(t)
		f.h.expect(t, "y", nil)
		f.balanced(t)
	})
}

// stubbornPacer grants permits whatever the context, like a Pacer whose
// permit was granted just as its waiter was withdrawn.
type stubbornPacer struct{ permits chan struct{} }

func (p stubbornPacer) Wait(context.Context) error {
	<-p.permits
	return nil
}

func TestAPermitGrantedForACancelledItemIsNotKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := stubbornPacer{permits: make(chan struct{})}
		f := newFixture(t, Config{Pacer: p})
		start(t, f.q)
		f.q.Add(item("down", "x"))
		synctest.Wait()
		if waits := waitsNow(f.q); waits != 1 {
			t.Fatalf("%d workers wait for a permit for one item, want 1", waits)
		}
		f.q.CancelCluster("down")
		p.permits <- struct{}{} // granted although withdrawn
		quiet(t, f.q)
		f.h.none(t)

		// A plain Pacer cannot take it back, and the queue does not keep
		// it: a pause after it would not hold y back. y waits for its own.
		f.q.Add(item("up", "y"))
		quiet(t, f.q)
		f.h.none(t)
		if waits := waitsNow(f.q); waits != 1 {
			t.Fatalf("%d workers wait for a permit for y, want 1", waits)
		}
		p.permits <- struct{}{}
		f.h.expect(t, "y", nil)
		f.out.waitKinds(t, "x", Cancelled)
		f.balanced(t)
	})
}

func waitsNow(q *Queue) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waits)
}

// givingPacer is a DomainPacer whose permits a test grants one at a time
// and which counts those given back.
type givingPacer struct {
	permits  chan struct{}
	mu       sync.Mutex
	asked    [][]string // what domains listed at each grant
	returned int
}

func (p *givingPacer) Wait(ctx context.Context) error {
	_, _, err := p.WaitDomain(ctx, nil)
	return err
}

func (p *givingPacer) WaitDomain(ctx context.Context, ds []string) (string, func(), error) {
	select {
	case <-p.permits:
	case <-ctx.Done():
		return "", nil, ctx.Err()
	}
	p.mu.Lock()
	p.asked = append(p.asked, ds)
	p.mu.Unlock()
	d := ""
	if len(ds) > 0 {
		d = ds[0]
	}
	once := false
	return d, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if !once {
			once = true
			p.returned++
		}
	}, nil
}

func (p *givingPacer) PacesByDomain() bool { return false }

func (p *givingPacer) givenBack() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.returned
}

func TestAPermitNotUsedGoesBackToADomainPacer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &givingPacer{permits: make(chan struct{})}
		f := newFixture(t, Config{Pacer: p})
		stop := start(t, f.q)

		// Used: a success and a failure each spend their permit.
		f.q.Add(item("down", "ok"))
		p.permits <- struct{}{}
		f.h.expect(t, "ok", nil)
		f.q.Add(item("down", "fails"))
		p.permits <- struct{}{}
		f.h.expect(t, "fails", errors.New("apiserver down"))
		quiet(t, f.q)
		if n := p.givenBack(); n != 0 {
			t.Fatalf("%d permits given back after a success and a failure, want 0", n)
		}

		// Abandoned: nothing was done, the permit goes back.
		f.q.Add(item("down", "no-target"))
		p.permits <- struct{}{}
		f.h.expect(t, "no-target", Abandon(errors.New("no cluster fits")))
		quiet(t, f.q)
		if n := p.givenBack(); n != 1 {
			t.Fatalf("%d permits given back after an abandon, want 1", n)
		}

		// Granted for an item cancelled just as the grant came: back too.
		f.q.Add(item("gone", "x"))
		synctest.Wait()
		f.q.mu.Lock()
		f.q.s.cancelCluster("gone") // not withdrawing the wait, as if the grant came first
		f.q.mu.Unlock()
		p.permits <- struct{}{}
		quiet(t, f.q)
		f.h.none(t)
		if n := p.givenBack(); n != 2 {
			t.Fatalf("%d permits given back after a grant for a cancelled item, want 2", n)
		}

		// Granted as Run ends: back, not kept for the next Run.
		f.q.Add(item("down", "late"))
		synctest.Wait()
		stopped := make(chan struct{})
		go func() { stop(); close(stopped) }()
		<-stopped
		if n := p.givenBack(); n != 2 {
			t.Fatalf("%d permits given back, want 2: the wait ended without a grant", n)
		}
		if f.q.Len() != 2 { // fails backing off, late pending
			t.Fatalf("Len = %d after Run, want 2", f.q.Len())
		}
	})
}

func TestEveryHandlerCallTakesOnePermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakePacer()
		f := newFixture(t, Config{Workers: 4, Pacer: p})
		start(t, f.q)
		for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
			f.q.Add(item("down", k))
		}
		quiet(t, f.q)
		if w := p.waitingNow(); w != 4 {
			t.Fatalf("%d of 4 workers wait for a permit with 10 items pending", w)
		}
		handled := 0
		for range 3 {
			p.grant(t)
			f.h.next(t).reply <- nil
			handled++
		}
		quiet(t, f.q)
		f.h.none(t) // four workers, three permits: three calls
		if f.q.Len() != 10-handled {
			t.Errorf("Len = %d, want %d", f.q.Len(), 10-handled)
		}
		if _, granted := p.counts(); granted != handled {
			t.Errorf("%d permits for %d calls", granted, handled)
		}
	})
}

func TestQueuesSharingAPacerShareItsPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakePacer()
		var calls atomic.Int64
		h := func(context.Context, Item) error { calls.Add(1); return nil }
		var qs []*Queue
		for _, name := range []string{"resource-binding", "cluster-resource-binding"} {
			q, err := New(Config{Name: name, Workers: 4, Pacer: p}, h)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 10 {
				q.Add(Item{Cluster: "down", Key: name + string(rune('a'+i))})
			}
			start(t, q)
			qs = append(qs, q)
		}
		const permits = 6
		for range permits {
			p.grant(t)
		}
		synctest.Wait()
		if w := p.waitingNow(); w != 8 {
			t.Errorf("%d of 8 workers wait for a permit with 14 items pending", w)
		}
		for _, q := range qs {
			q.mu.Lock()
			if q.s.running != 0 {
				t.Errorf("%s: %d handler calls run", q.Name(), q.s.running)
			}
			q.mu.Unlock()
		}
		if n := qs[0].Len() + qs[1].Len(); n != 20-permits {
			t.Errorf("%d items left, want %d", n, 20-permits)
		}
		if calls.Load() != permits {
			t.Errorf("%d calls for %d permits", calls.Load(), permits)
		}
	})
}

func TestRunStopsWithAnErrorWhenThePacerFails(t *testing.T) {
	q, err := New(Config{Name: "q", Workers: 2, Pacer: brokenPacer{}}, func(context.Context, Item) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	q.Add(item("a", "x"))
	err = q.Run(context.Background())
	if err == nil || !errors.Is(err, errBroken) {
		t.Fatalf("Run = %v, want the pacer's error", err)
	}
	if q.Len() != 1 {
		t.Errorf("Len = %d after a pacer failure, want 1", q.Len())
	}
}

var errBroken = errors.New("pacer broken")

type brokenPacer struct{}

func (brokenPacer) Wait(context.Context) error { return errBroken }

func TestAPermitGrantedAsRunEndsIsNotKeptForTheNextRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := stubbornPacer{permits: make(chan struct{})}
		f := newFixture(t, Config{Pacer: p})
		stop := start(t, f.q)
		f.q.Add(item("a", "x"))
		synctest.Wait() // the worker waits for a permit
		stopped := make(chan struct{})
		go func() { stop(); close(stopped) }()
		synctest.Wait()
		p.permits <- struct{}{} // granted although Run is ending
		<-stopped
		f.h.none(t)
		if n := f.q.Len(); n != 1 {
			t.Fatalf("after Run: Len %d, want x pending", n)
		}
		// The next Run waits for a permit of its own: the Pacer may have
		// paused meanwhile.
		start(t, f.q)
		quiet(t, f.q)
		f.h.none(t)
		p.permits <- struct{}{}
		f.h.expect(t, "x", nil)
	})
}

// RetryAfter: nothing was done and the item waits its delay, however often,
// without running out of retries; its permit goes back each time.
func TestRetryAfterWaitsWithoutFailingAndGivesThePermitBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &givingPacer{permits: make(chan struct{})}
		f := newFixture(t, Config{Pacer: p, MaxRetries: 1})
		start(t, f.q)

		f.q.Add(item("down", "web"))
		for n := 1; n <= 3; n++ { // more deferrals than MaxRetries allows failures
			p.permits <- struct{}{}
			f.h.expect(t, "web", RetryAfter(time.Minute, errors.New("room held for evictions in flight")))
			quiet(t, f.q)
			if got := p.givenBack(); got != n {
				t.Fatalf("%d permits given back after %d deferrals, want %d", got, n, n)
			}
			if f.q.Len() != 1 {
				t.Fatalf("Len = %d after a deferral, want 1: the item waits", f.q.Len())
			}
			f.clock.Step(59 * time.Second)
			synctest.Wait()
			f.h.none(t) // not before its minute
			f.clock.Step(time.Second)
			synctest.Wait()
		}
		p.permits <- struct{}{}
		f.h.expect(t, "web", nil)
		quiet(t, f.q)
		if f.q.Len() != 0 || p.givenBack() != 3 {
			t.Fatalf("Len = %d, given back %d after the eviction, want 0 and 3", f.q.Len(), p.givenBack())
		}
	})
}

func TestRetryAfterUnwraps(t *testing.T) {
	err := RetryAfter(time.Minute, errBoom)
	var ra *RetryAfterError
	if !errors.As(err, &ra) || ra.After != time.Minute || !errors.Is(err, errBoom) {
		t.Fatalf("RetryAfter(1m, errBoom) = %#v", err)
	}
	if got := err.Error(); got != "evictionqueue: deferred for 1m0s: boom" {
		t.Errorf("Error() = %q", got)
	}
	if !errors.As(RetryAfter(0, nil), &ra) || ra.Err == nil {
		t.Error("RetryAfter(0, nil) carries no reason")
	}
}

// A call that found nothing to do wrote nothing: its permit goes back, and
// the item leaves, reported Skipped, with the result "skipped".
func TestSkipGivesThePermitBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &givingPacer{permits: make(chan struct{})}
		f := newFixture(t, Config{Pacer: p})
		out := f.out
		start(t, f.q)
		f.q.Add(item("down", "moved"))
		p.permits <- struct{}{}
		f.h.expect(t, "moved", Skip(errors.New("the binding left the cluster")))
		quiet(t, f.q)
		if n := p.givenBack(); n != 1 {
			t.Fatalf("%d permits given back after a skip, want 1", n)
		}
		if f.q.Len() != 0 {
			t.Fatalf("Len = %d after a skip, want 0", f.q.Len())
		}
		out.waitKinds(t, "moved", Skipped)
		if !IsSkipped(out.last("moved").Err) {
			t.Errorf("the Skipped outcome's Err = %v", out.last("moved").Err)
		}
		if s := f.m.snap(); s.processed[ResultSkipped] != 1 {
			t.Errorf("results %v, want one %q", s.processed, ResultSkipped)
		}
	})
}

// Retry ends a deferral at once: the item is handled again before its
// delay ends, once its permit comes. An item not backing off is left as
// it is.
func TestRetryEndsADeferralAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &givingPacer{permits: make(chan struct{})}
		f := newFixture(t, Config{Pacer: p})
		start(t, f.q)

		if f.q.Retry(item("down", "web")) {
			t.Fatal("Retry of an item not queued = true")
		}
		f.q.Add(item("down", "web"))
		if f.q.Retry(item("down", "web")) {
			t.Fatal("Retry of a pending item = true")
		}
		p.permits <- struct{}{}
		f.h.expect(t, "web", RetryAfter(time.Hour, errors.New("budget of clusters in transit used up")))
		quiet(t, f.q)
		if !f.q.Retry(item("down", "web")) {
			t.Fatal("Retry of a deferred item = false")
		}
		p.permits <- struct{}{}
		f.h.expect(t, "web", nil)
		quiet(t, f.q)
		if f.q.Len() != 0 || p.givenBack() != 1 {
			t.Fatalf("Len = %d, given back %d, want 0 and 1", f.q.Len(), p.givenBack())
		}
	})
}

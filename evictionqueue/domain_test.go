package evictionqueue_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/ratelimit"
)

// regionOf: a cluster "eu-1" is in region "eu".
func regionOf(cluster string) string { return strings.SplitN(cluster, "-", 2)[0] }

func TestStorePacesByDomainKeepingFIFOPerDomain(t *testing.T) {
	st, err := evictionqueue.NewStore(evictionqueue.Config{Name: "q", DomainOf: regionOf})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, it := range []evictionqueue.Item{
		{Cluster: "eu-1", Key: "a"}, {Cluster: "asia-1", Key: "b"}, {Cluster: "eu-2", Key: "c"},
		{Cluster: "asia-2", Key: "d", Priority: 1}, {Cluster: "us-1", Key: "e"},
	} {
		st.Add(it, now)
	}
	if got, want := st.PendingDomains(), []string{"asia", "eu", "us"}; !slices.Equal(got, want) {
		t.Fatalf("PendingDomains = %v, want %v (by head item: asia's priority-1 d first)", got, want)
	}
	var got []string
	for _, d := range []string{"eu", "eu", "asia", "asia"} {
		it, ok := st.TakeFrom(d, now)
		if !ok {
			t.Fatalf("TakeFrom(%q): nothing", d)
		}
		got = append(got, it.Key)
		st.Done(it, nil, now)
	}
	if want := []string{"a", "c", "d", "b"}; !slices.Equal(got, want) {
		t.Errorf("taken %v, want %v: FIFO within a priority, per domain", got, want)
	}
	if _, ok := st.TakeFrom("eu", now); ok {
		t.Error("TakeFrom a domain with nothing pending took an item")
	}
	if n := st.CancelCluster("us-1"); n != 1 || len(st.PendingDomains()) != 0 || st.Len() != 0 {
		t.Errorf("after cancelling the last item: %d cancelled, domains %v, Len %d", n, st.PendingDomains(), st.Len())
	}
}

// domainFixture runs one queue of workers paced by a Limiter under the
// region rule, in a synctest bubble.
type domainFixture struct {
	clk     *clocktesting.FakeClock
	tr      *ratelimit.Tracker
	q       *evictionqueue.Queue
	mu      sync.Mutex
	handled []string
	permits []string // the domain of each handled item's permit
}

func newDomainFixture(t *testing.T, workers int) *domainFixture {
	return newDomainFixtureOf(t, workers, regionOf)
}

// newDomainFixtureOf is newDomainFixture with the queue's DomainOf.
func newDomainFixtureOf(t *testing.T, workers int, domainOf func(string) string) *domainFixture {
	f := &domainFixture{clk: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), tr: ratelimit.NewTracker()}
	cfg := ratelimit.DefaultConfig() // 0.5/s; above 55% faulty; large above 10
	cfg.DisruptionDomain = ratelimit.DomainRegion
	lim, err := ratelimit.NewLimiter(cfg, f.tr, ratelimit.WithClock(f.clk))
	if err != nil {
		t.Fatal(err)
	}
	f.q, err = evictionqueue.New(evictionqueue.Config{Name: "q", Workers: workers, Pacer: lim, Clock: f.clk, DomainOf: domainOf},
		func(ctx context.Context, it evictionqueue.Item) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.handled = append(f.handled, it.Key)
			d, _ := evictionqueue.PermitDomain(ctx)
			f.permits = append(f.permits, d)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *domainFixture) got() []string {
	synctest.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.handled)
}

func (f *domainFixture) run(t *testing.T) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := f.q.Run(ctx); err != nil {
			t.Error(err)
		}
	})
	return func() { cancel(); wg.Wait() }
}

// TestQueueOneDomainsPauseDoesNotHoldBackAnother: one worker, waiting for a
// permit for a paused region, is re-aimed when another region's item
// arrives; the paused region's items wait, then go in order when it
// recovers.
func TestQueueOneDomainsPauseDoesNotHoldBackAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newDomainFixture(t, 1)
		// asia: 2 of 3 faulty, a small domain partly disrupted: paused.
		f.tr.SetInDomains("asia-1", true, "asia")
		f.tr.SetInDomains("asia-2", true, "asia")
		f.tr.SetInDomains("asia-3", false, "asia")
		f.tr.SetInDomains("eu-1", false, "eu")
		stop := f.run(t)
		defer stop()
		f.q.Add(evictionqueue.Item{Cluster: "asia-1", Key: "a1"})
		f.q.Add(evictionqueue.Item{Cluster: "asia-2", Key: "a2"})
		if got := f.got(); len(got) != 0 {
			t.Fatalf("handled %v while asia is paused", got)
		}
		f.q.Add(evictionqueue.Item{Cluster: "eu-1", Key: "e1"})
		f.q.Add(evictionqueue.Item{Cluster: "eu-1", Key: "e2"})
		if got := f.got(); !slices.Equal(got, []string{"e1"}) {
			t.Fatalf("handled %v, want e1 at once: the worker waiting for asia was re-aimed", got)
		}
		f.clk.Step(2 * time.Second)
		if got := f.got(); !slices.Equal(got, []string{"e1", "e2"}) {
			t.Fatalf("handled %v, want e2 one interval later", got)
		}
		// asia's whole region fails: FullDisruption, the primary rate; the
		// total (0.5/s) still spaces it from e2.
		f.tr.SetInDomains("asia-3", true, "asia")
		if got := f.got(); len(got) != 2 {
			t.Fatalf("handled %v before the total's next slot", got)
		}
		f.clk.Step(2 * time.Second)
		synctest.Wait()
		f.clk.Step(2 * time.Second)
		if got := f.got(); !slices.Equal(got, []string{"e1", "e2", "a1", "a2"}) {
			t.Fatalf("handled %v, want asia's items in order once it may go", got)
		}
	})
}

// TestQueueCancelledDomainItemCostsNoPermit: a worker waiting for a
// permit for a domain whose items are all cancelled stops waiting; the
// permit goes to another domain's item that arrives later, not to nothing.
func TestQueueCancelledDomainItemCostsNoPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newDomainFixture(t, 2)
		for _, c := range []string{"asia-1", "eu-1"} {
			f.tr.SetInDomains(c, false, regionOf(c))
		}
		stop := f.run(t)
		defer stop()
		f.q.Add(evictionqueue.Item{Cluster: "eu-1", Key: "e1"}) // takes the first permit
		f.q.Add(evictionqueue.Item{Cluster: "asia-1", Key: "a1"})
		synctest.Wait()
		if n := f.q.CancelCluster("asia-1"); n != 1 {
			t.Fatalf("cancelled %d, want 1", n)
		}
		f.q.Add(evictionqueue.Item{Cluster: "eu-1", Key: "e2"})
		// The worker waits for e2's permit before the clock moves: a timer
		// it set after the Step would count from the new time.
		synctest.Wait()
		// The slot a1 waited for (one interval on) goes to e2: had a1 taken
		// it, e2 would wait another interval.
		f.clk.Step(2 * time.Second)
		if got := f.got(); !slices.Equal(got, []string{"e1", "e2"}) {
			t.Fatalf("handled %v, want e1 then e2", got)
		}
	})
}

// TestNewRequiresDomainOfWithADomainPacer: a Limiter with a disruption
// domain and a queue without DomainOf would pace every item as one with no
// domain, silently ignoring --disruption-domain; New says so at start-up.
// Under the fleet rule DomainOf stays optional.
func TestNewRequiresDomainOfWithADomainPacer(t *testing.T) {
	handler := func(context.Context, evictionqueue.Item) error { return nil }
	for _, d := range []ratelimit.Domain{ratelimit.DomainFleet, ratelimit.DomainRegion} {
		cfg := ratelimit.DefaultConfig()
		cfg.DisruptionDomain = d
		lim, err := ratelimit.NewLimiter(cfg, ratelimit.NewTracker())
		if err != nil {
			t.Fatal(err)
		}
		_, err = evictionqueue.New(evictionqueue.Config{Name: "rb", Pacer: lim}, handler)
		if d == ratelimit.DomainFleet {
			if err != nil {
				t.Errorf("fleet rule without DomainOf: %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "DomainOf") || !strings.Contains(err.Error(), `"rb"`) {
			t.Errorf("region rule without DomainOf: error %v, want one naming the queue and DomainOf", err)
		}
		if _, err := evictionqueue.New(evictionqueue.Config{Name: "rb", Pacer: lim, DomainOf: regionOf}, handler); err != nil {
			t.Errorf("region rule with DomainOf: %v", err)
		}
	}
}

var _ evictionqueue.DomainPacer = (*ratelimit.Limiter)(nil)

// TestStoreReadsADomainOncePerChange: DomainOf is read when the Store first
// holds an item of a cluster and at DomainChanged, never per permit; a
// cluster that moved takes its pending items along, in their order, once
// the caller says so.
func TestStoreReadsADomainOncePerChange(t *testing.T) {
	region := map[string]string{"c1": "eu", "c2": "us"}
	reads := map[string]int{}
	st, err := evictionqueue.NewStore(evictionqueue.Config{Name: "q", DomainOf: func(c string) string {
		reads[c]++
		return region[c]
	}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, it := range []evictionqueue.Item{
		{Cluster: "c1", Key: "a"}, {Cluster: "c2", Key: "b"}, {Cluster: "c1", Key: "c"}, {Cluster: "c1", Key: "d", Priority: 1},
	} {
		st.Add(it, now)
	}
	for range 10 {
		st.PendingDomains()
		st.TakeFrom("nowhere", now)
	}
	if reads["c1"] != 1 || reads["c2"] != 1 {
		t.Fatalf("DomainOf read %v, want once per cluster", reads)
	}
	region["c1"] = "us" // moved, not told yet: still filed under eu
	if got, want := st.PendingDomains(), []string{"eu", "us"}; !slices.Equal(got, want) {
		t.Fatalf("PendingDomains = %v before DomainChanged, want %v", got, want)
	}
	st.DomainChanged("c1")
	st.DomainChanged("unknown") // holds nothing: nothing to read
	if reads["c1"] != 2 || reads["unknown"] != 0 {
		t.Fatalf("DomainOf read %v, want c1 twice and unknown never", reads)
	}
	if got, want := st.PendingDomains(), []string{"us"}; !slices.Equal(got, want) {
		t.Fatalf("PendingDomains = %v after the move, want %v", got, want)
	}
	var got []string
	for {
		it, ok := st.TakeFrom("us", now)
		if !ok {
			break
		}
		got = append(got, it.Key)
		st.Done(it, nil, now)
	}
	if want := []string{"d", "a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("taken %v, want %v: the moved items keep their places", got, want)
	}
}

// TestQueueDomainChangedReaimsAWaitingWorker: one worker waits for a permit
// for a paused region; its cluster moves to a region that may evict, and
// DomainChanged re-aims the worker at once.
func TestQueueDomainChangedReaimsAWaitingWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		region := map[string]string{"x-1": "asia"}
		f := newDomainFixtureOf(t, 1, func(c string) string { mu.Lock(); defer mu.Unlock(); return region[c] })
		// asia: 2 of 3 faulty, a small domain partly disrupted: paused.
		f.tr.SetInDomains("asia-1", true, "asia")
		f.tr.SetInDomains("asia-2", true, "asia")
		f.tr.SetInDomains("asia-3", false, "asia")
		f.tr.SetInDomains("eu-1", false, "eu")
		stop := f.run(t)
		defer stop()
		f.q.Add(evictionqueue.Item{Cluster: "x-1", Key: "a"})
		if got := f.got(); len(got) != 0 {
			t.Fatalf("handled %v while asia is paused", got)
		}
		mu.Lock()
		region["x-1"] = "eu"
		mu.Unlock()
		f.q.DomainChanged("x-1")
		if got := f.got(); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("handled %v, want a at once", got)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if !slices.Equal(f.permits, []string{"eu"}) {
			t.Errorf("permits of domains %v, want eu's", f.permits)
		}
	})
}

// TestStoreRetryEndsABackoffAtOnce: an item deferred (RetryAfter) is taken
// again at once after Retry, before its delay ends; Retry of an item not
// backing off changes nothing.
func TestStoreRetryEndsABackoffAtOnce(t *testing.T) {
	st, err := evictionqueue.NewStore(evictionqueue.Config{Name: "q"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web := evictionqueue.Item{Cluster: "c1", Key: "web"}
	st.Add(web, now)
	if st.Retry(web) {
		t.Fatal("Retry of a pending item reported a change")
	}
	it, ok := st.Take(now)
	if !ok || it != web {
		t.Fatalf("Take = %v, %v; want %v", it, ok, web)
	}
	st.Done(it, evictionqueue.RetryAfter(time.Minute, errors.New("frozen")), now)
	if _, ok := st.Take(now); ok {
		t.Fatal("a deferred item was taken before its delay or a Retry")
	}
	if !st.Retry(web) {
		t.Fatal("Retry of a deferred item reported no change")
	}
	if it, ok := st.Take(now); !ok || it != web {
		t.Fatalf("after Retry, Take = %v, %v; want %v at once", it, ok, web)
	}
	if st.Len() != 0 {
		t.Fatalf("Len = %d after the item was taken", st.Len())
	}
}

package evictionqueue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// waitUntil waits for other goroutines to reach a state, for the tests that
// run real concurrency outside a synctest bubble. It never moves the queue's
// clock; the real-time limit only turns a hang into a failure.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// settled waits, in a synctest bubble, until every other goroutine is
// blocked, and checks that by then cond holds.
func settled(t *testing.T, what string, cond func() bool) {
	t.Helper()
	synctest.Wait()
	if !cond() {
		t.Fatalf("once the queue is idle, it is not so that %s", what)
	}
}

// call is one handler invocation waiting for the test to decide its result.
type call struct {
	Item
	ctx   context.Context
	reply chan error
}

// script is a Handler whose every call blocks until the test replies.
type script struct{ calls chan call }

func newScript() *script { return &script{calls: make(chan call)} }

func (s *script) handle(ctx context.Context, it Item) error {
	c := call{Item: it, ctx: ctx, reply: make(chan error, 1)}
	select {
	case s.calls <- c:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-c.reply:
		if p, ok := err.(panicWith); ok {
			panic(p.v)
		}
		if err == errGoexit {
			runtime.Goexit()
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errGoexit, replied to a call, makes the handler call runtime.Goexit, as a
// handler that calls t.FailNow does.
var errGoexit = errors.New("goexit")

// panicWith, replied to a call, makes the handler panic with v.
type panicWith struct{ v any }

func (p panicWith) Error() string { return fmt.Sprint("panic: ", p.v) }

// next returns the next handler call.
func (s *script) next(t *testing.T) call {
	t.Helper()
	select {
	case c := <-s.calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a handler call")
		return call{}
	}
}

// expect takes the next call, checks its item and replies err.
func (s *script) expect(t *testing.T, key string, err error) call {
	t.Helper()
	c := s.next(t)
	if c.Key != key {
		t.Fatalf("handler called for %s/%s, want key %s", c.Cluster, c.Key, key)
	}
	c.reply <- err
	return c
}

// none checks that no handler call is waiting. Call it once the queue is
// quiet (see quiet).
func (s *script) none(t *testing.T) {
	t.Helper()
	select {
	case c := <-s.calls:
		t.Fatalf("unexpected handler call for %s/%s", c.Cluster, c.Key)
	default:
	}
}

// quiet waits, in a synctest bubble, until every goroutine of a running q
// is blocked, and checks that no handler call runs: every worker is parked
// waiting for work or (with a Pacer) for a permit, so the test can assert
// what did not happen.
func quiet(t *testing.T, q *Queue) {
	t.Helper()
	synctest.Wait()
	q.mu.Lock()
	running := q.s.running
	q.mu.Unlock()
	if running != 0 {
		t.Fatalf("%d handler calls run when the queue should be idle", running)
	}
}

// waitArmed waits, in a synctest bubble, until Run's scheduler waits for
// the queue's earliest deadline and checks that it is due and that a timer
// of the fake clock is set, so that stepping the clock past due fires it.
func waitArmed(t *testing.T, q *Queue, due time.Time) {
	t.Helper()
	synctest.Wait()
	q.mu.Lock()
	next, ok := q.s.nextDue()
	q.mu.Unlock()
	if !ok || !next.Equal(due) {
		t.Fatalf("the earliest deadline is %v (set: %v), want %v", next, ok, due)
	}
	if !q.clock.(*clocktesting.FakeClock).HasWaiters() {
		t.Fatalf("no timer is set for the deadline %v", due)
	}
}

// start runs q, in a synctest bubble, until the returned stop is called;
// stop waits for Run to return and checks its error.
func start(t *testing.T, q *Queue) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	synctest.Wait()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// fakePacer grants one permit per value the test sends on permits.
type fakePacer struct {
	permits chan struct{}
	mu      sync.Mutex
	waiting int
	granted int
	calls   int
}

func newFakePacer() *fakePacer { return &fakePacer{permits: make(chan struct{})} }

func (p *fakePacer) Wait(ctx context.Context) error {
	p.mu.Lock()
	p.waiting++
	p.calls++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
	}()
	select {
	case <-p.permits:
		p.mu.Lock()
		p.granted++
		p.mu.Unlock()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// grant hands one permit to a waiting worker.
func (p *fakePacer) grant(t *testing.T) {
	t.Helper()
	select {
	case p.permits <- struct{}{}:
	case <-time.After(10 * time.Second):
		t.Fatal("timed out: no worker waits for a permit")
	}
}

func (p *fakePacer) waitingNow() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting
}

func (p *fakePacer) counts() (calls, granted int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls, p.granted
}

// recMetrics records every Metrics call and keeps the gauges a Prometheus
// implementation would.
type recMetrics struct {
	mu        sync.Mutex
	depth     int            // eviction_total
	byKind    map[string]int // evict_kind_total by cluster/kind
	negative  bool           // some gauge went below zero
	processed map[string]int // by result
	latencies []time.Duration
	cancelled int
	inFlight  int
}

func newRecMetrics() *recMetrics {
	return &recMetrics{byKind: map[string]int{}, processed: map[string]int{}}
}

func (m *recMetrics) Added(queue, cluster, kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.depth++
	m.byKind[cluster+"|"+kind]++
}

func (m *recMetrics) Removed(queue, cluster, kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.depth--
	m.byKind[cluster+"|"+kind]--
	if m.depth < 0 || m.byKind[cluster+"|"+kind] < 0 {
		m.negative = true
	}
}

func (m *recMetrics) Processed(queue, result string, latency time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.processed[result]++
	m.latencies = append(m.latencies, latency)
}

func (m *recMetrics) Cancelled(queue string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cancelled += n
}

func (m *recMetrics) InFlight(queue string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight = n
}

// snapshot is a copy of what recMetrics recorded.
type snapshot struct {
	processed map[string]int
	latencies []time.Duration
	cancelled int
	inFlight  int
}

func (m *recMetrics) snap() snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return snapshot{maps.Clone(m.processed), slices.Clone(m.latencies), m.cancelled, m.inFlight}
}

// checkBalanced asserts, at this moment, that the gauges built from Added and
// Removed equal the queue's Len (overall and per cluster and kind) and that
// the in-flight gauge equals InFlight. It holds the queue's lock, so it may
// be called while workers run.
func checkBalanced(t *testing.T, q *Queue, m *recMetrics) {
	t.Helper()
	q.mu.Lock()
	want := map[string]int{}
	count := func(e *entry) { want[e.item.Cluster+"|"+e.item.ResourceKind]++ }
	q.s.pending.each(count)
	for _, e := range q.s.delayed.s {
		if e.state == stateBackingOff {
			count(e)
		}
	}
	n, inFlight := q.s.len(), q.s.inFlight
	m.mu.Lock()
	depth, negative, gotInFlight := m.depth, m.negative, m.inFlight
	got := map[string]int{}
	for k, v := range m.byKind {
		if v != 0 {
			got[k] = v
		}
	}
	m.mu.Unlock()
	q.mu.Unlock()
	if depth != n || negative || gotInFlight != inFlight {
		t.Fatalf("metrics: depth %d (negative seen: %v), in flight %d; queue: Len %d, in flight %d", depth, negative, gotInFlight, n, inFlight)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("metrics by cluster/kind %v, queue holds %v", got, want)
	}
}

// holds reports whether q holds cluster/key in any state.
func holds(q *Queue, cluster, key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.s.index.get(cluster, key) != nil
}

// clusterLen returns how many entries q holds for cluster, in any state, and
// checks that its entries point back at it and that its pending count is
// right.
func clusterLen(t *testing.T, q *Queue, cluster string) int {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	ci := q.s.index.clusters[cluster]
	if ci == nil {
		return 0
	}
	pending := 0
	for k, e := range ci.keys.all() {
		if e.item.Key != k || e.ci != ci {
			t.Errorf("cluster %s maps %s to an entry of %s/%s", cluster, k, e.item.Cluster, e.item.Key)
		}
		if e.state == statePending {
			pending++
		}
	}
	if pending != ci.pending {
		t.Errorf("cluster %s holds %d pending entries, counts %d", cluster, pending, ci.pending)
	}
	return ci.keys.len()
}

// outcomes records OnOutcome calls.
type outcomes struct {
	mu   sync.Mutex
	list []Outcome
}

func (o *outcomes) add(x Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = append(o.list, x)
}

// kinds returns the kinds recorded for key, in order.
func (o *outcomes) kinds(key string) []OutcomeKind {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ks []OutcomeKind
	for _, x := range o.list {
		if x.Item.Key == key {
			ks = append(ks, x.Kind)
		}
	}
	return ks
}

// waitKinds waits, in a synctest bubble, until the queue is idle and
// checks key's outcomes.
func (o *outcomes) waitKinds(t *testing.T, key string, want ...OutcomeKind) {
	t.Helper()
	synctest.Wait()
	if got := o.kinds(key); !slices.Equal(got, want) {
		t.Errorf("outcomes of %s = %v, want %v", key, got, want)
	}
}

func (o *outcomes) all() []Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.list)
}

func (o *outcomes) last(key string) Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.list) - 1; i >= 0; i-- {
		if o.list[i].Item.Key == key {
			return o.list[i]
		}
	}
	return Outcome{}
}

// fixture is a queue on a fake clock with a scripted handler, recording
// metrics and outcomes.
type fixture struct {
	q     *Queue
	h     *script
	clock *clocktesting.FakeClock
	m     *recMetrics
	out   *outcomes
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	f := &fixture{h: newScript(), clock: clocktesting.NewFakeClock(t0), m: newRecMetrics(), out: &outcomes{}}
	if cfg.Name == "" {
		cfg.Name = "test"
	}
	cfg.Clock = f.clock
	cfg.Metrics = f.m
	cfg.OnOutcome = f.out.add
	q, err := New(cfg, f.h.handle)
	if err != nil {
		t.Fatal(err)
	}
	f.q = q
	return f
}

func (f *fixture) balanced(t *testing.T) {
	t.Helper()
	checkBalanced(t, f.q, f.m)
}

func item(cluster, key string) Item {
	return Item{Cluster: cluster, Key: key, ResourceKind: "apps/v1/Deployment"}
}

func keys(items []Item) []string {
	var ks []string
	for _, it := range items {
		ks = append(ks, it.Key)
	}
	return ks
}

var errBoom = errors.New("boom")

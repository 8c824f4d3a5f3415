package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/ratelimit"
)

// The library's eviction queues, one evictionqueue.Queue per binding kind,
// run with their own goroutine workers on the simulated clock. The driver
// moves the clock and must know, before it does and before it hands out a
// permit, that every worker has done what it can: the run is then the same
// run after run, whatever the goroutines' interleaving.
//
// The Queue leaves three things to its user, and fleetsim's own code sits
// at each of them, so it sees every step a worker or a queue's scheduler
// goroutine takes that changes what the driver reads:
//
//   - the Pacer (permitGate): a worker that may go for an item waits here
//     for a permit; the driver hands the permits out, one at a time, from
//     the shared ratelimit.Limiter (TakeDomainAt), to the workers in line in
//     the order they joined, as the Limiter serves Wait's callers;
//   - the Handler (world.handler, wrapped): a call that returns nil or
//     ErrInProgress uses its permit; one that returns Skip, Abandon or
//     RetryAfter leaves it unused, and the worker gives it back after the
//     queue settled the result;
//   - the Clock and OnOutcome: each outcome is counted, and every timer of
//     a queue's scheduler (which ends backoffs and in-flight TTLs) is
//     watched until it is stopped.
//
// A worker that is none of these is waiting on the queue's condition
// variable, which the driver cannot see, or on its way to one of them. So
// the driver waits (settle) until: no permit it handed out is in use, every
// outcome it expects was delivered, every timer that fired was stopped (its
// scheduler acted on it), every queue's scheduler holds a timer for the
// queue's next deadline, and each queue has as many workers waiting for a
// permit as the Queue lets wait: min(workers, pending items, free
// MaxInFlight slots), the pending items being the queued ones less those
// whose backoff has not ended. Every change to what that condition reads is
// followed by one of the events fleetsim's code sees, so the driver waits on
// those events, never on time.
type engine struct {
	clk         *clocktesting.FakeClock
	limiter     *ratelimit.Limiter
	queues      [2]*evictionqueue.Queue
	workers     int
	maxInFlight int
	perDomain   bool

	mu sync.Mutex
	// changed is closed, and replaced, at every event the driver may be
	// waiting for.
	changed chan struct{}
	waits   [2][]*permitWait // the workers waiting for a permit, oldest first
	// granted counts the permits handed out whose call has not ended: a
	// used one ends when its handler returns, an unused one when the
	// worker gives it back.
	granted int
	// expected and delivered count each queue's outcomes: one per handler
	// call, CancelCluster's n and Complete's one.
	expected, delivered [2]int
	// backoff and inFlight are each queue's deadlines, by item: when a
	// backoff (Retrying) or an in-flight TTL (InProgress) ends.
	backoff  [2]*backoffs
	inFlight [2]map[itemID]time.Time
	// queued are each queue's items waiting (pending or backing off), by
	// the domain of their cluster (domainOf), and how many per domain: the
	// domains with pending items are those with more waiting than backing
	// off, known without a pass over the queue.
	queued   [2]map[itemID]string
	byDomain [2]map[string]int
	domainOf func(cluster string) string
	timers   map[*watchedTimer]int // live timers of the queues' schedulers, by queue

	// The driver's own, on its goroutine: the workers in line for a
	// permit, by queue, in the order they joined; and when the Limiter may
	// next free a permit for the head of the line (zero: nobody in line,
	// or only a change of health frees one).
	line     []int
	permitAt time.Time

	stop context.CancelFunc
	ran  sync.WaitGroup
	errs [2]error
}

// settleTimeout bounds the wall time settle waits: the queues settle within
// microseconds, so passing it means a bug in the driver's bookkeeping.
const settleTimeout = time.Minute

func newEngine(clk *clocktesting.FakeClock, limiter *ratelimit.Limiter, workers, maxInFlight int, domainOf func(string) string) *engine {
	e := &engine{clk: clk, limiter: limiter, workers: workers, maxInFlight: maxInFlight, perDomain: limiter.PacesByDomain(),
		domainOf: domainOf, changed: make(chan struct{}), timers: map[*watchedTimer]int{}}
	for i := range 2 {
		e.backoff[i], e.inFlight[i] = newBackoffs(), map[itemID]time.Time{}
		e.queued[i], e.byDomain[i] = map[itemID]string{}, map[string]int{}
	}
	return e
}

// waitLocked records that id waits in queue i (wait true) or no longer
// does.
// Called with e.mu held.
func (e *engine) waitLocked(i int, id itemID, wait bool) {
	d, ok := e.queued[i][id]
	switch {
	case wait && !ok:
		d = e.domainOf(id.cluster)
		e.queued[i][id] = d
		e.byDomain[i][d]++
	case !wait && ok:
		delete(e.queued[i], id)
		e.byDomain[i][d]--
	}
}

// newQueue makes queue i with fleetsim's pacer, clock and wrappers of h and
// onOutcome.
func (e *engine) newQueue(i int, cfg evictionqueue.Config, h evictionqueue.Handler, onOutcome func(evictionqueue.Outcome)) error {
	cfg.Workers = e.workers
	cfg.Pacer = &permitGate{e: e, queue: i}
	cfg.Clock = &queueClock{FakeClock: e.clk, e: e, queue: i}
	cfg.OnOutcome = func(o evictionqueue.Outcome) {
		onOutcome(o)
		e.outcome(i, o)
	}
	q, err := evictionqueue.New(cfg, e.handler(i, h))
	if err != nil {
		return err
	}
	e.queues[i] = q
	return nil
}

// start runs the queues' workers until stop.
func (e *engine) start() {
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	for i, q := range e.queues {
		e.ran.Go(func() { e.errs[i] = q.Run(ctx) })
	}
}

// shutdown stops the queues and waits for their goroutines.
func (e *engine) shutdown() error {
	if e.stop == nil {
		return nil
	}
	e.stop()
	e.ran.Wait()
	e.stop = nil
	return errors.Join(e.errs[:]...)
}

// notifyLocked wakes the driver if it waits in settle.
func (e *engine) notifyLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// handler wraps h to count the permit's use: see engine.
func (e *engine) handler(i int, h evictionqueue.Handler) evictionqueue.Handler {
	return func(ctx context.Context, it evictionqueue.Item) (err error) {
		e.mu.Lock()
		e.waitLocked(i, itemID{it.Cluster, it.Key}, false) // taken
		e.mu.Unlock()
		returned := false
		defer func() {
			var deferred *evictionqueue.RetryAfterError
			unused := returned && (evictionqueue.IsAbandoned(err) || evictionqueue.IsSkipped(err) || errors.As(err, &deferred))
			e.mu.Lock()
			e.expected[i]++ // its outcome
			if !unused {
				e.granted-- // an unused permit's call ends when it is given back
			}
			e.notifyLocked()
			e.mu.Unlock()
		}()
		err = h(ctx, it)
		returned = true
		return err
	}
}

// outcome counts o and notes the deadline it sets.
func (e *engine) outcome(i int, o evictionqueue.Outcome) {
	id := itemID{o.Item.Cluster, o.Item.Key}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.delivered[i]++
	e.backoff[i].drop(id)
	delete(e.inFlight[i], id)
	// Back to waiting, or gone; an item whose call settled was taken
	// already.
	back := o.Kind == evictionqueue.Retrying || o.Kind == evictionqueue.Expired || o.Kind == evictionqueue.Requeued
	e.waitLocked(i, id, back)
	switch o.Kind {
	case evictionqueue.Retrying:
		e.backoff[i].set(id, e.queued[i][id], o.RetryAt)
	case evictionqueue.InProgress:
		e.inFlight[i][id] = e.clk.Now().Add(evictionqueue.DefaultInFlightTTL)
	}
	e.notifyLocked()
}

// add is Queue.Add.
func (e *engine) add(i int, it evictionqueue.Item) bool {
	ok := e.queues[i].Add(it)
	if ok {
		e.mu.Lock()
		e.waitLocked(i, itemID{it.Cluster, it.Key}, true)
		e.mu.Unlock()
	}
	return ok
}

// cancelCluster is Queue.CancelCluster, its outcomes delivered.
func (e *engine) cancelCluster(i int, cluster string) (int, error) {
	n := e.queues[i].CancelCluster(cluster)
	e.expect(i, n)
	return n, e.delivery(i)
}

// complete is Queue.Complete, its outcome delivered.
func (e *engine) complete(i int, it evictionqueue.Item) (bool, error) {
	ok := e.queues[i].Complete(it)
	if ok {
		e.expect(i, 1)
	}
	return ok, e.delivery(i)
}

// delivery waits until queue i has delivered every outcome expected: a
// worker still in its delivery loop when the driver calls the queue
// delivers the call's outcomes itself, a moment later, and the driver must
// not read the record before.
func (e *engine) delivery(i int) error {
	var guard *time.Timer
	defer func() {
		if guard != nil {
			guard.Stop()
		}
	}()
	for {
		e.mu.Lock()
		changed, done := e.changed, e.delivered[i] == e.expected[i]
		e.mu.Unlock()
		if done {
			return nil
		}
		if guard == nil {
			guard = time.NewTimer(settleTimeout)
		}
		select {
		case <-changed:
		case <-guard.C:
			return fmt.Errorf("fleetsim: queue %s did not deliver its outcomes within %v (a bug in the driver)", queueNames[i], settleTimeout)
		}
	}
}

// retry is Queue.Retry: the item's backoff ends now.
func (e *engine) retry(i int, it evictionqueue.Item) bool {
	ok := e.queues[i].Retry(it)
	if ok {
		e.mu.Lock()
		e.backoff[i].drop(itemID{it.Cluster, it.Key})
		e.mu.Unlock()
	}
	return ok
}

func (e *engine) expect(i, n int) {
	e.mu.Lock()
	e.expected[i] += n
	e.mu.Unlock()
}

// pendingDomains are the domains of queue i's pending items: those queued
// and not backing off, in time proportional to the domains.
func (e *engine) pendingDomains(i int) []string {
	now := e.clk.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.backoff[i].expire(now)
	var out []string
	for d, n := range e.byDomain[i] {
		if n > e.backoff[i].byDomain[d] {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// nextDue is when the next backoff or in-flight TTL after now ends, in
// either queue.
func (e *engine) nextDue(now time.Time) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var next time.Time
	found := false
	for i := range 2 {
		if t, ok := e.nextDueLocked(i, now); ok && (!found || t.Before(next)) {
			next, found = t, true
		}
	}
	return next, found
}

func (e *engine) nextDueLocked(i int, now time.Time) (time.Time, bool) {
	e.backoff[i].expire(now)
	next, found := e.backoff[i].next()
	for _, t := range e.inFlight[i] {
		if t.After(now) && (!found || t.Before(next)) {
			next, found = t, true
		}
	}
	return next, found
}

// settle waits until the queues' goroutines have done all they can at the
// clock's time (see engine).
func (e *engine) settle() error {
	var guard *time.Timer
	defer func() {
		if guard != nil {
			guard.Stop()
		}
	}()
	for {
		e.mu.Lock()
		changed := e.changed
		e.mu.Unlock()
		if e.quiet() {
			return nil
		}
		if guard == nil {
			guard = time.NewTimer(settleTimeout)
		}
		select {
		case <-changed:
		case <-guard.C:
			return fmt.Errorf("fleetsim: the eviction queues did not settle within %v (a bug in the driver): %s", settleTimeout, e.state())
		}
	}
}

// quiet reports whether the queues' goroutines have nothing left to do
// until the driver acts.
func (e *engine) quiet() bool {
	now := e.clk.Now()
	var queued, inFlight [2]int
	for i, q := range e.queues {
		queued[i], inFlight[i] = q.Len(), q.InFlight()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.granted > 0 {
		return false
	}
	for i := range 2 {
		if e.delivered[i] != e.expected[i] {
			return false
		}
		e.backoff[i].expire(now)
		pending := queued[i] - e.backoff[i].len()
		want := min(e.workers, pending)
		if e.maxInFlight > 0 {
			want = min(want, e.maxInFlight-inFlight[i])
		}
		if e.waiting(i) != want {
			return false
		}
		// Every timer that fired was acted on, and the scheduler wakes
		// at the queue's next deadline at the latest.
		next, due := e.nextDueLocked(i, now)
		armed := !due
		for t, q := range e.timers {
			if q != i {
				continue
			}
			if !t.at.After(now) {
				return false
			}
			if due && !t.at.After(next) {
				armed = true
			}
		}
		if !armed {
			return false
		}
	}
	return true
}

// state describes what settle waits on, for the error that says it never
// came.
func (e *engine) state() string {
	now := e.clk.Now()
	var queued, inFlight [2]int
	for i, q := range e.queues {
		queued[i], inFlight[i] = q.Len(), q.InFlight()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := fmt.Sprintf("at %s, %d permits in use", now.Format(time.TimeOnly), e.granted)
	for i := range 2 {
		next, due := e.nextDueLocked(i, now)
		var timers []string
		for t, q := range e.timers {
			if q == i {
				timers = append(timers, t.at.Format(time.TimeOnly))
			}
		}
		out += fmt.Sprintf("; %s: %d of %d outcomes, %d queued, %d backing off, %d in flight, %d waiting for a permit, next deadline %s (%v), timers %v",
			queueNames[i], e.delivered[i], e.expected[i], queued[i], e.backoff[i].len(), inFlight[i], e.waiting(i), next.Format(time.TimeOnly), due, timers)
	}
	return out
}

// waiting counts queue i's workers waiting for a permit (not withdrawn).
func (e *engine) waiting(i int) int {
	n := 0
	for _, w := range e.waits[i] {
		if w.ctx.Err() == nil {
			n++
		}
	}
	return n
}

// dispatch hands out the permits free at now, one at a time, to the
// workers in line, settling after each: each takes its queue's head item
// (of the permit's domain) and calls the handler. Under a domain rule a
// worker whose domains have no permit free lets the next one in line, of
// the other queue, try its own; under the fleet rule nobody further in
// line gets one.
func (e *engine) dispatch(now time.Time) error {
	for {
		if err := e.settle(); err != nil {
			return err
		}
		e.syncLine()
		e.permitAt = time.Time{}
		if !e.grantNext(now) {
			return nil
		}
	}
}

// syncLine puts in line, at its end, the workers that began waiting since
// (the first queue's first), and takes out of it, newest first, those whose
// waits the queue withdrew.
func (e *engine) syncLine() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range 2 {
		have := 0
		for _, q := range e.line {
			if q == i {
				have++
			}
		}
		n := e.waiting(i)
		for ; have < n; have++ {
			e.line = append(e.line, i)
		}
		for j := len(e.line) - 1; j >= 0 && have > n; j-- {
			if e.line[j] == i {
				e.line = slices.Delete(e.line, j, j+1)
				have--
			}
		}
	}
}

// grantNext takes a permit at now for the first worker in line that can
// have one and hands it over; false when nobody can, with permitAt set.
func (e *engine) grantNext(now time.Time) bool {
	var tried [2]bool // workers of one queue ask for the same domains
	for j, i := range e.line {
		if tried[i] {
			continue
		}
		tried[i] = true
		domain, giveBack, ok, next := e.limiter.TakeDomainAt(now, e.askFor(i, now))
		if ok {
			e.line = slices.Delete(e.line, j, j+1)
			e.grant(i, domain, giveBack)
			return true
		}
		if !next.IsZero() && (e.permitAt.IsZero() || next.Before(e.permitAt)) {
			e.permitAt = next
		}
		if !e.perDomain {
			break
		}
	}
	return false
}

// askFor is the domains a permit for queue i is asked for: those its
// workers wait for, the first preferred. The workers' lists hold the same
// domains, but each in the order of the domains' head items when it was
// made, which items added since with a higher priority may have changed:
// which worker waited last is up to the goroutines, so under a domain rule
// the driver asks in the queue's order now, the domains of its pending
// items in the order they will be handled (Queue.Pending), in time
// proportional to the queue's items.
func (e *engine) askFor(i int, now time.Time) []string {
	if !e.perDomain {
		return e.newestWait(i).domains // one bucket: the order does not matter
	}
	items := e.queues[i].Pending()
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, it := range items {
		if at, ok := e.backoff[i].until(itemID{it.Cluster, it.Key}); ok && at.After(now) {
			continue
		}
		if d := e.queued[i][itemID{it.Cluster, it.Key}]; !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// newestWait is the latest wait of queue i: its domains are the queue's
// pending domains now.
func (e *engine) newestWait(i int) *permitWait {
	e.mu.Lock()
	defer e.mu.Unlock()
	for j := len(e.waits[i]) - 1; j >= 0; j-- {
		if w := e.waits[i][j]; w.ctx.Err() == nil {
			return w
		}
	}
	panic("fleetsim: a worker in line without a wait") // syncLine keeps them equal
}

// grant hands the permit to queue i's oldest waiting worker.
func (e *engine) grant(i int, domain string, giveBack func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := slices.IndexFunc(e.waits[i], func(w *permitWait) bool { return w.ctx.Err() == nil })
	w := e.waits[i][j]
	e.waits[i] = slices.Delete(e.waits[i], j, j+1)
	e.granted++
	var once sync.Once
	w.grant <- permitGrant{domain: domain, giveBack: func() {
		once.Do(func() {
			giveBack()
			e.mu.Lock()
			e.granted--
			e.notifyLocked()
			e.mu.Unlock()
		})
	}}
}

// permitGate is a queue's Pacer: its workers wait here until the driver
// hands them a permit (engine.dispatch).
type permitGate struct {
	e     *engine
	queue int
}

type permitWait struct {
	ctx     context.Context
	domains []string
	grant   chan permitGrant // buffered: the driver never blocks
}

type permitGrant struct {
	domain   string
	giveBack func()
}

// Wait is never called: the Queue calls WaitDomain of a DomainPacer.
func (g *permitGate) Wait(ctx context.Context) error {
	_, giveBack, err := g.WaitDomain(ctx, []string{""})
	if err == nil {
		giveBack()
		return errors.New("fleetsim: permitGate.Wait: the queue asks WaitDomain")
	}
	return err
}

// PacesByDomain is the Limiter's.
func (g *permitGate) PacesByDomain() bool { return g.e.perDomain }

// WaitDomain waits until the driver grants a permit for one of domains, or
// ctx ends.
func (g *permitGate) WaitDomain(ctx context.Context, domains []string) (string, func(), error) {
	e := g.e
	w := &permitWait{ctx: ctx, domains: domains, grant: make(chan permitGrant, 1)}
	e.mu.Lock()
	e.waits[g.queue] = append(e.waits[g.queue], w)
	e.notifyLocked()
	e.mu.Unlock()
	select {
	case p := <-w.grant:
		return p.domain, p.giveBack, nil
	case <-ctx.Done():
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.notifyLocked()
	if j := slices.Index(e.waits[g.queue], w); j >= 0 {
		e.waits[g.queue] = slices.Delete(e.waits[g.queue], j, j+1)
		return "", nil, ctx.Err()
	}
	// Granted as it was withdrawn: the permit is the worker's.
	p := <-w.grant
	return p.domain, p.giveBack, nil
}

// queueClock is a queue's clock: the simulated one, whose timers it
// watches until they are stopped.
//
// A timer is set for the time the queue meant: the Now it last read plus
// the duration. The driver moves the clock only when the queue's
// goroutines have nothing due, but its scheduler goroutine, woken by a
// handler's result, may still be between reading the time and setting its
// timer: the FakeClock's own NewTimer would then count from the time the
// driver moved to, and the deadline would slip.
type queueClock struct {
	*clocktesting.FakeClock
	e     *engine
	queue int

	mu   sync.Mutex
	last time.Time // what Now last returned
}

// Now is the FakeClock's, remembered.
func (c *queueClock) Now() time.Time {
	t := c.FakeClock.Now()
	c.mu.Lock()
	c.last = t
	c.mu.Unlock()
	return t
}

// NewTimer fires d after the time Now last returned, watched.
func (c *queueClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	at := c.last.Add(d)
	c.mu.Unlock()
	t := &watchedTimer{at: at, c: c}
	if now := c.FakeClock.Now(); at.After(now) {
		t.Timer = c.FakeClock.NewTimer(at.Sub(now))
	} else {
		t.Timer = firedTimer(now) // the clock has passed it already
	}
	c.e.mu.Lock()
	c.e.timers[t] = c.queue
	c.e.notifyLocked()
	c.e.mu.Unlock()
	return t
}

type watchedTimer struct {
	clock.Timer
	at time.Time
	c  *queueClock
}

// Stop stops the timer and forgets it.
func (t *watchedTimer) Stop() bool {
	ok := t.Timer.Stop()
	e := t.c.e
	e.mu.Lock()
	delete(e.timers, t)
	e.notifyLocked()
	e.mu.Unlock()
	return ok
}

// Reset sets the timer again, d from now. The Queue does not call it.
func (t *watchedTimer) Reset(d time.Duration) bool {
	ok := t.Timer.Stop()
	t.Timer = t.c.FakeClock.NewTimer(d)
	e := t.c.e
	e.mu.Lock()
	t.at = t.c.FakeClock.Now().Add(d)
	e.timers[t] = t.c.queue
	e.notifyLocked()
	e.mu.Unlock()
	return ok
}

// firedTimer is a timer that fired at t.
func firedTimer(t time.Time) clock.Timer {
	c := make(chan time.Time, 1)
	c <- t
	return &fired{c: c}
}

type fired struct{ c chan time.Time }

func (f *fired) C() <-chan time.Time      { return f.c }
func (f *fired) Stop() bool               { return false }
func (f *fired) Reset(time.Duration) bool { return false }

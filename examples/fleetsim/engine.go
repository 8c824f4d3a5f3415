package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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

func newEngine(clk *clocktesting.FakeClock, limiter *ratelimit.Limiter, workers, maxInFlight int) *engine {
	e := &engine{clk: clk, limiter: limiter, workers: workers, maxInFlight: maxInFlight, perDomain: limiter.PacesByDomain(),
		changed: make(chan struct{}), timers: map[*watchedTimer]int{}}
	for i := range 2 {
		e.backoff[i], e.inFlight[i] = newBackoffs(), map[itemID]time.Time{}
	}
	return e
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
	switch o.Kind {
	case evictionqueue.Retrying:
		e.backoff[i].set(id, o.RetryAt)
	case evictionqueue.InProgress:
		e.inFlight[i][id] = e.clk.Now().Add(evictionqueue.DefaultInFlightTTL)
	}
	e.notifyLocked()
}

// expireLocked ends the backoffs of queue i that ended by now: their items
// are pending again. Called with e.mu held.
func (e *engine) expireLocked(i int, now time.Time) {
	e.backoff[i].expire(now)
}

// add is Queue.Add.
func (e *engine) add(i int, it evictionqueue.Item) bool {
	return e.queues[i].Add(it)
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
	return e.waitFor(func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.delivered[i] == e.expected[i]
	}, func() string {
		return fmt.Sprintf("queue %s did not deliver its outcomes", queueNames[i])
	})
}

// retry is Queue.Retry: the item's backoff ends now.
func (e *engine) retry(i int, it evictionqueue.Item) bool {
	ok := e.queues[i].Retry(it)
	if ok {
		id := itemID{it.Cluster, it.Key}
		e.mu.Lock()
		e.backoff[i].drop(id)
		e.mu.Unlock()
	}
	return ok
}

func (e *engine) expect(i, n int) {
	e.mu.Lock()
	e.expected[i] += n
	e.mu.Unlock()
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
	e.expireLocked(i, now)
	next, found := e.backoff[i].next()
	for _, t := range e.inFlight[i] {
		if t.After(now) && (!found || t.Before(next)) {
			next, found = t, true
		}
	}
	return next, found
}

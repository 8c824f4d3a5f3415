package evictionqueue

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Queue is an in-memory eviction queue: it holds the resources to evict from
// faulty clusters and hands them, paced, to a Handler.
//
// An item's identity is (Cluster, Key); the queue holds at most one item per
// identity, whatever its state: pending, backing off, being handled or in
// flight (accepted, finishing in the background). Pending items are handled
// highest Priority first, then in the order they were first added; an item
// that failed keeps its place and its first enqueue time.
//
// Run starts Config.Workers workers. A worker that sees more pending items
// than workers waiting for permits takes a permit from the Pacer, and only
// then the head item (Queue.next, in run.go, says how), so every handler
// call, retries included, costs one permit: the queues sharing a Pacer get
// its rate whatever their workers. With MaxInFlight > 0 a worker holds a
// slot from before it waits for a permit until its handler returns, and an
// eviction in progress keeps it until Complete or InFlightTTL: the queue
// never has more than MaxInFlight evictions running or unconfirmed, and
// takes no permit it could not use.
//
// Handler results: nil, done; Skip, nothing to do, done, its permit back;
// Abandon, dropped without retry, its permit back; RetryAfter,
// pending again after its delay, no failure counted; Park, waiting at a
// gate until it opens; ErrInProgress (or InProgressWith, carrying a
// value), in flight until Complete or EndFlight, or pending again (a
// failed attempt) after InFlightTTL; another error or a panic, pending again after
// BackoffBase·2^(n-1) (at most BackoffMax) for the n-th failure, and dropped
// as failed after MaxRetries retries. Each step goes to Config.OnOutcome.
//
// Run blocks until its context ends, then waits for the running handlers,
// whose context has ended too. Nothing is lost: items not handled stay
// queued (an item whose handler failed because of the shutdown is pending
// again), and a later Run resumes. The other methods work before, during
// and after Run; deadlines follow Config.Clock and are acted on while Run
// runs. No goroutine outlives Run; New starts none.
//
// A Queue is safe for concurrent use. It must be created with New.
type Queue struct {
	cfg     Config
	handler Handler
	clock   clock.WithTicker

	mu sync.Mutex
	s  store // the items and their rules (store.go)

	// The worker layer (run.go), under mu.
	ready sync.Cond    // workers wait here until they may go for an item
	waits []*pacerWait // workers waiting for permits; each holds an in-flight slot
	// domains is Config.Pacer when it is a DomainPacer; nil otherwise.
	domains   DomainPacer
	seenEpoch uint64 // the pending domains' epoch the waits were made at
	active    bool   // Run is running
	// wake tells Run's scheduler that a deadline earlier than the one its
	// timer is set for was added.
	wake chan struct{}

	delivering bool // some goroutine is passing the store's outbox to OnOutcome
}

// New returns a Queue that hands items to h. It validates cfg (see Config for
// the defaults of zero fields) and starts no goroutine: call Run.
func New(cfg Config, h Handler) (*Queue, error) {
	cfg, err := cfg.withDefaults()
	if h == nil {
		err = errors.Join(err, errors.New("evictionqueue: handler must not be nil"))
	}
	dp, _ := cfg.Pacer.(DomainPacer)
	if dp != nil && cfg.DomainOf == nil && dp.PacesByDomain() {
		err = errors.Join(err, fmt.Errorf("evictionqueue: queue %q: Config.DomainOf is nil, but the Pacer paces by "+
			"disruption domain: set DomainOf to the domain of an item's cluster, or every item is paced as one "+
			"with no domain", cfg.Name))
	}
	if err != nil {
		return nil, err
	}
	q := &Queue{cfg: cfg, handler: h, clock: cfg.Clock, wake: make(chan struct{}, 1), domains: dp}
	q.s.init(&q.cfg)
	q.ready.L = &q.mu
	return q, nil
}

// latencyNow reads the clock for the latency metric only: without Metrics,
// zero, as reading a clock can cost more than the rest of Add.
func (q *Queue) latencyNow() time.Time {
	if q.cfg.Metrics == nil {
		return time.Time{}
	}
	return q.clock.Now()
}

// Name returns Config.Name.
func (q *Queue) Name() string { return q.cfg.Name }

// Add queues it and returns true, unless the queue holds an item with the
// same (Cluster, Key) in any state: then it returns false and keeps its own,
// but revokes a cancellation of it (its cluster is faulty again), so that a
// failure or expiry retries it instead of dropping it. An item whose handler
// call is running is marked: if that call lets it leave (nil, Skip,
// Abandon, or a last failure), it is pending again at once, as client-go's
// workqueue re-adds an item added while it was processed, so the decision
// behind this Add is not lost, and so does a call that parks it (Park). An
// item parked at a gate is pending again at once, in its place: the Add is
// news its gate may not carry. One retrying or in flight keeps its course.
func (q *Queue) Add(it Item) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	added, pending := q.s.add(it, q.latencyNow())
	if pending {
		q.kickLocked()
	}
	return added
}

// AddInFlight holds it as a background eviction already under way, as if
// its handler had returned ErrInProgress: until Complete, or until
// InFlightTTL from now, when it is pending again (an expiry). It is for an
// eviction the queue did not start, found when a program starts (a new
// leader finds its predecessor's evictions still finishing), so that
// MaxInFlight and the in-flight count include it. It returns false, changing
// nothing, when the queue holds an item with the same identity.
func (q *Queue) AddInFlight(it Item) bool { return q.AddInFlightWith(it, nil) }

// AddInFlightWith is AddInFlight for an eviction that carries v, as if its
// handler had returned InProgressWith(v): Flights shows v with it, and
// EndFlight ends it once.
func (q *Queue) AddInFlightWith(it Item, v any) bool {
	q.mu.Lock()
	added, earliest := q.s.addInFlight(it, v, q.clock.Now())
	if earliest {
		select {
		case q.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	q.unlockAndDeliver()
	return added
}

// CancelCluster is called when cluster recovered: it removes the cluster's
// pending and backing-off items (never handled, each reported Cancelled) and
// returns how many, in time proportional to the cluster's items. Its items
// being handled or in flight finish; if they fail or expire they are dropped
// as Cancelled, not retried.
func (q *Queue) CancelCluster(cluster string) int {
	q.mu.Lock()
	n := q.s.cancelCluster(cluster)
	q.kickLocked()
	q.unlockAndDeliver()
	return n
}

// DomainChanged tells the queue that cluster's disruption domain
// (Config.DomainOf) may have changed, as when an informer reports a change
// of the cluster's region, zone or provider: the queue reads DomainOf for it
// again and moves its pending items to the new domain's line, keeping their
// order, in time proportional to the cluster's items. The queue reads a
// cluster's domain only when it first has a pending item of it and here,
// so a caller whose clusters can move must call it; without DomainOf it
// does nothing.
func (q *Queue) DomainChanged(cluster string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.s.domainChanged(cluster)
	q.kickLocked() // the domains with pending items may have changed
}

// Complete reports that the background eviction of it finished: the item
// leaves, frees its slot and is reported Completed; false when it is not in
// flight. Before its handler has returned ErrInProgress, it returns true and
// the item leaves when the handler returns, whatever it returns.
func (q *Queue) Complete(it Item) bool {
	q.mu.Lock()
	ok := q.s.complete(it)
	q.kickLocked()
	q.unlockAndDeliver()
	return ok
}

// Flights returns the evictions of key (an Item.Key) in flight, each with
// the value its InProgressWith result or AddInFlightWith attached, and those
// whose handler call is running (Running), in time proportional to the
// key's evictions and the calls running, not to the queue: for a caller
// that learns an eviction of a binding has ended (its task is gone) and
// must find which.
func (q *Queue) Flights(key string) []Flight {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.s.flights.of(key)
}

// EndFlight ends the eviction f, as Flights returned it, if it is still
// that flight: not ended, expired or handled again since. An eviction in
// flight leaves, frees its slot and is reported Completed, as Complete
// makes it; one Running leaves when its call returns, whatever it returns.
// It reports whether it ended f: of callers ending one flight at once,
// exactly one is told true, and it alone acts on f.Value (gives back the
// room it held, say).
func (q *Queue) EndFlight(f Flight) bool {
	q.mu.Lock()
	ok := q.s.endFlight(f)
	q.kickLocked()
	q.unlockAndDeliver()
	return ok
}

// Retry ends the backoff of it at once: an item deferred until something
// outside the queue changes (RetryAfter) is pending again as soon as the
// caller learns that it has, not at the end of its backoff. It returns
// false, changing nothing, when it is not backing off: pending, being
// handled, in flight, or not queued.
func (q *Queue) Retry(it Item) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.s.retry(it) {
		return false
	}
	q.kickLocked()
	return true
}

// Open opens gate: every item parked at it (Park) is pending again at once,
// each in its place in line, and a handler call running now that parks its
// item at it makes the item pending at once, so a change announced while a
// call decided is not lost. It returns how many items were parked at it.
func (q *Queue) Open(gate Gate) int {
	q.mu.Lock()
	n := q.s.open(gate)
	if n > 0 {
		q.kickLocked()
	}
	q.unlockAndDeliver()
	return n
}

// Parked returns the number of items parked at gate now.
func (q *Queue) Parked(gate Gate) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.s.parked(gate)
}

// Len returns the number of items waiting to be handled: pending and
// backing off, not those handled or in flight.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.s.len()
}

// InFlight returns the number of background evictions awaiting Complete.
func (q *Queue) InFlight() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.s.inFlight
}

// Pending returns the Len items waiting: the pending ones in the order they
// will be handled, then the backing-off ones by end of backoff. After Run,
// every item not handled, for a caller that hands the work over.
func (q *Queue) Pending() []Item {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.s.waiting()
}

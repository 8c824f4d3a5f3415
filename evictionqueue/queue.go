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
// # Order and identity
//
// An item's identity is (Cluster, Key). The queue holds at most one item per
// identity, whatever its state: pending, backing off after a failure, being
// handled, or in flight (its eviction was accepted and finishes in the
// background). Add of an identity the queue holds returns false and changes
// nothing. Pending items are handled highest Priority first and, among equal
// priorities, in the order they were first added. An item that failed keeps
// its place: once its backoff ends it is pending again with its original
// sequence, so it goes ahead of equal-priority items added after it, and the
// latency reported for it is still measured from its first enqueue.
//
// # Workers and pacing
//
// Run starts Config.Workers workers. A worker that sees more pending items
// than workers already waiting for permits first takes a permit from the
// Pacer and only then takes the head pending item, so an item cancelled
// while workers wait for permits takes no permit and is never handled. Every
// handler call costs one permit, retries included, so the queue's
// throughput is the Pacer's rate whatever the number of workers, and queues
// sharing one Pacer share its rate.
//
// With a DomainPacer (*ratelimit.Limiter), a worker asks for a permit for
// any of the domains that have pending items (Config.DomainOf, read then;
// the domain of the oldest head item preferred) and takes the head item of
// the domain it is granted, read again at that moment, so items are handled
// highest Priority first and first-in-first-out within each domain, a
// paused domain holds back no other, and a cluster that moved domains takes
// its items along. A permit for which no item is left goes back to the
// Pacer, as does the permit of an item the handler abandons; none is kept
// for later. When the pending items change under the waits (CancelCluster
// removed some, or a domain gained its first pending item or lost its
// last), the waits are withdrawn and made again for what is pending then.
//
// # In-flight budget
//
// With MaxInFlight > 0, a worker holds one slot from before it waits for a
// permit (or takes a kept one) until its handler returns, and a handler that returns ErrInProgress
// passes its slot to the item, which keeps it until Complete or until
// InFlightTTL passes. When every slot is taken, workers wait: the queue never
// has more than MaxInFlight evictions running or unconfirmed, and it takes no
// permit from a shared Pacer that it could not use.
//
// # Results
//
// nil: the item is done. Abandon(err): it is dropped without retry.
// ErrInProgress: it is in flight; Complete ends it, and when InFlightTTL
// passes first it is pending again, counted as a failed attempt. Any other
// error, or a handler panic: it backs off for BackoffBase·2^(n-1) (capped at
// BackoffMax) after its n-th failure, then is pending again; after
// MaxRetries retries it is dropped as failed. Every step is reported to
// Config.OnOutcome.
//
// # Recovery
//
// CancelCluster removes a recovered cluster's pending and backing-off items at
// once, in time proportional to that cluster's items. Its items being handled
// or in flight cannot be called back; they finish, and if they fail or expire
// they are dropped as cancelled rather than retried.
//
// # Lifetime
//
// Run blocks until its context ends, then waits for running handlers, whose
// context has ended too, and returns. Nothing is lost: items not yet handled
// stay queued (Len, Pending), an item whose handler failed because of the
// shutdown is pending again, and a later Run resumes. Add, CancelCluster,
// Complete, Len and Pending work before, during and after Run. Backoff and
// in-flight deadlines follow Config.Clock and are acted on while Run runs.
// No goroutine outlives Run; New starts none.
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

// latencyNow reads the clock for the latency metric, the only reader of the
// times Add and take are given; without Metrics it returns the zero time, as
// reading a clock can cost more than the rest of Add.
func (q *Queue) latencyNow() time.Time {
	if q.cfg.Metrics == nil {
		return time.Time{}
	}
	return q.clock.Now()
}

// Name returns Config.Name.
func (q *Queue) Name() string { return q.cfg.Name }

// Add queues it and returns true, unless the queue already holds an item with
// the same (Cluster, Key) in any state (pending, backing off, being handled or
// in flight): then it returns false and the queue keeps the item it has. One
// exception: if that item's cluster was cancelled while the item was being
// handled or in flight, Add revokes the cancellation (the cluster is faulty
// again), so a failure or expiry retries the item instead of dropping it.
func (q *Queue) Add(it Item) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.s.add(it, q.latencyNow()) {
		return false
	}
	q.kickLocked()
	return true
}

// CancelCluster is called when cluster recovered: it removes the cluster's
// pending and backing-off items at once and returns how many it removed. They
// take no permit and are never handled. Each is reported Cancelled. Items of
// the cluster being handled or in flight stay until they finish; if they fail
// or their TTL passes they are dropped as Cancelled instead of being retried.
// The cost is proportional to the cluster's items, not to the queue's length.
func (q *Queue) CancelCluster(cluster string) int {
	q.mu.Lock()
	n := q.s.cancelCluster(cluster)
	q.kickLocked()
	q.unlockAndDeliver()
	return n
}

// Complete reports that the background eviction of it finished: the item
// leaves the queue, frees its in-flight slot and is reported Completed. It
// returns false when the queue holds no such item in flight. Complete may
// arrive before the handler that started the eviction has returned
// ErrInProgress; then it returns true and the item leaves as soon as the
// handler returns, whatever the handler returns.
func (q *Queue) Complete(it Item) bool {
	q.mu.Lock()
	ok := q.s.complete(it)
	q.kickLocked()
	q.unlockAndDeliver()
	return ok
}

// Len returns the number of items waiting to be handled: pending plus backing
// off. Items being handled or in flight are not counted (see InFlight).
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

// Pending returns the Len items waiting to be handled: first the pending ones
// in the order they will be handled, then the backing-off ones in the order
// their backoff ends. After Run has returned, this is every item not yet
// handled, for a caller that hands the work over.
func (q *Queue) Pending() []Item {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.s.waiting()
}

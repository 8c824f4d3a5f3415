package evictionqueue

import (
	"cmp"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
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
// than workers already going for them first takes a permit from the Pacer and
// only then takes the head pending item, so an item cancelled while workers
// wait for permits takes no permit and is never handled. CancelCluster
// withdraws the Pacer waits that no pending item backs any more, so a shared
// Limiter hands their slots to other waiters instead of to a worker with
// nothing to do; a permit granted just before its wait was withdrawn is kept
// for the next item. Every handler call costs one
// permit, retries included, so the queue's throughput is the Pacer's rate
// whatever the number of workers, and queues sharing one Pacer share its rate.
//
// # In-flight budget
//
// With MaxInFlight > 0, a worker holds one slot from before it waits for a
// permit until its handler returns, and a handler that returns ErrInProgress
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
	metrics Metrics
	clock   clock.WithTicker

	mu         sync.Mutex
	index      index        // every entry, in any state: identity and cluster lists
	pending    pendingQueue // statePending, in processing order
	delayed    entryHeap    // stateBackingOff and stateInFlight, by due time
	backingOff int          // entries in stateBackingOff
	inFlight   int          // entries in stateInFlight
	running    int          // handler calls now
	seq        uint64
	// free recycles entries of items that left. Without it a queue
	// allocates an entry per item and its Add+process overhead exceeds
	// client-go's workqueue (BenchmarkAddProcess), DESIGN.md's bound.
	free sync.Pool

	// claims counts workers that have committed to an item (they wait for a
	// permit, or hold one while waiting for an item) but have not taken one.
	// A worker only claims while pending items outnumber claims, so permits
	// are taken for items that exist, not banked by idle workers. Each claim
	// holds an in-flight slot.
	claims       int
	claimCond    sync.Cond // workers waiting until they may claim
	holdCond     sync.Cond // workers holding a permit, waiting for an item
	claimWaiters int
	holdWaiters  int
	// pacing are the claims now waiting in Pacer.Wait, oldest first;
	// withdrawn counts claims whose wait withdrawLocked cancelled and whose
	// worker has not yet returned from Pacer.Wait.
	pacing    []*pacerWait
	withdrawn int

	// outbox holds outcomes not yet passed to OnOutcome; delivering is set
	// while some goroutine passes them on, in order, outside the lock.
	outbox     []Outcome
	delivering bool

	active   bool          // Run is running
	stopping bool          // Run's context ended: workers stop taking items
	wake     chan struct{} // tells Run's scheduler that the delayed heap's head may be earlier
	armed    time.Time     // the due time the scheduler's timer is set for (tests wait on it)
}

// New returns a Queue that hands items to h. It validates cfg (see Config for
// the defaults of zero fields) and starts no goroutine: call Run.
func New(cfg Config, h Handler) (*Queue, error) {
	cfg, err := cfg.withDefaults()
	if h == nil {
		err = errors.Join(err, errors.New("evictionqueue: handler must not be nil"))
	}
	if err != nil {
		return nil, err
	}
	q := &Queue{
		cfg:     cfg,
		handler: h,
		metrics: cfg.Metrics,
		clock:   cfg.Clock,
		delayed: entryHeap{byDue: true},
		wake:    make(chan struct{}, 1),
	}
	if q.metrics == nil {
		q.metrics = nopMetrics{}
	}
	q.claimCond.L = &q.mu
	q.holdCond.L = &q.mu
	return q, nil
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
	ci := q.index.cluster(it.Cluster, true)
	if e := ci.keys[it.Key]; e != nil {
		e.cancelled = false
		return false
	}
	q.seq++
	e, _ := q.free.Get().(*entry)
	if e == nil {
		e = new(entry)
	}
	e.item, e.seq, e.state = it, q.seq, statePending
	if q.cfg.Metrics != nil { // only the latency metric reads it
		e.enqueued = q.clock.Now()
	}
	q.index.insert(ci, e)
	q.pending.push(e)
	q.metrics.Added(q.cfg.Name, it.Cluster, it.ResourceKind)
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
	ci := q.index.cluster(cluster, false)
	n := 0
	var first *entry
	if ci != nil {
		first = ci.head
	}
	for e, next := first, (*entry)(nil); e != nil; e = next {
		next = e.next
		switch e.state {
		case statePending:
			q.pending.remove(e)
		case stateBackingOff:
			q.delayed.remove(int(e.index))
			q.backingOff--
		default: // running or in flight: see entry.cancelled
			e.cancelled = true
			continue
		}
		n++
		q.metrics.Removed(q.cfg.Name, e.item.Cluster, e.item.ResourceKind)
		q.leaveLocked(e, Cancelled, nil)
	}
	q.index.release(ci) // the cluster recovered: its index may go
	if n > 0 {
		q.metrics.Cancelled(q.cfg.Name, n)
		q.withdrawLocked()
	}
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
	e := q.index.get(it.Cluster, it.Key)
	switch {
	case e == nil:
		q.mu.Unlock()
		return false
	case e.state == stateRunning:
		e.completed = true
		q.mu.Unlock()
		return true
	case e.state != stateInFlight:
		q.mu.Unlock()
		return false
	}
	q.delayed.remove(int(e.index))
	q.setInFlightLocked(q.inFlight - 1)
	q.leaveLocked(e, Completed, nil)
	q.kickLocked()
	q.unlockAndDeliver()
	return true
}

// Len returns the number of items waiting to be handled: pending plus backing
// off. Items being handled or in flight are not counted (see InFlight).
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pending.Len() + q.backingOff
}

// InFlight returns the number of background evictions awaiting Complete.
func (q *Queue) InFlight() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inFlight
}

// Pending returns the Len items waiting to be handled: first the pending ones
// in the order they will be handled, then the backing-off ones in the order
// their backoff ends. After Run has returned, this is every item not yet
// handled, for a caller that hands the work over.
func (q *Queue) Pending() []Item {
	// Copy under the lock: entries are recycled once they leave the queue.
	q.mu.Lock()
	ready := make([]waitingItem, 0, q.pending.Len())
	q.pending.each(func(e *entry) { ready = append(ready, waitingItem{e.item, e.seq, e.due}) })
	backingOff := make([]waitingItem, 0, q.backingOff)
	for _, e := range q.delayed.s {
		if e.state == stateBackingOff {
			backingOff = append(backingOff, waitingItem{e.item, e.seq, e.due})
		}
	}
	q.mu.Unlock()

	slices.SortFunc(ready, compareOrder)
	slices.SortFunc(backingOff, func(a, b waitingItem) int {
		if c := a.due.Compare(b.due); c != 0 {
			return c
		}
		return compareOrder(a, b)
	})
	out := make([]Item, 0, len(ready)+len(backingOff))
	for _, w := range ready {
		out = append(out, w.item)
	}
	for _, w := range backingOff {
		out = append(out, w.item)
	}
	return out
}

// waitingItem is what Pending needs of an entry.
type waitingItem struct {
	item Item
	seq  uint64
	due  time.Time
}

// compareOrder is the processing order: higher Priority first, then lower seq.
func compareOrder(a, b waitingItem) int {
	if c := cmp.Compare(b.item.Priority, a.item.Priority); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// leaveLocked reports the item's last outcome and forgets it: it has left the
// queue for good. e must not be used afterwards; it is recycled.
func (q *Queue) leaveLocked(e *entry, kind OutcomeKind, err error) {
	q.noteLocked(e, kind, err)
	q.index.remove(e)
	*e = entry{}
	q.free.Put(e)
}

func (q *Queue) setInFlightLocked(n int) {
	q.inFlight = n
	q.metrics.InFlight(q.cfg.Name, n)
}

// noteLocked records an outcome for e when someone listens.
func (q *Queue) noteLocked(e *entry, kind OutcomeKind, err error) {
	if q.cfg.OnOutcome == nil {
		return
	}
	o := Outcome{Queue: q.cfg.Name, Item: e.item, Kind: kind, Err: err, Attempts: int(e.calls)}
	if kind == Retrying {
		o.RetryAt = e.due
	}
	q.outbox = append(q.outbox, o)
}

// unlockAndDeliver releases the lock and passes the recorded outcomes to
// OnOutcome, in the order they were recorded. Only one goroutine delivers at
// a time; one that finds another delivering leaves its outcomes to it. So
// OnOutcome sees each item's events in order, is never called concurrently,
// and may call the queue: a call it makes records outcomes that this loop
// delivers after it returns. A panic in OnOutcome reaches the caller; the
// outcomes after the one that panicked stay for the next delivery.
func (q *Queue) unlockAndDeliver() {
	if q.delivering || len(q.outbox) == 0 {
		q.mu.Unlock()
		return
	}
	q.delivering = true
	var batch []Outcome
	next := 0 // batch[next:] is not delivered yet
	finished := false
	defer func() {
		if !finished {
			// OnOutcome panicked. Whoever recovers may go on using the
			// queue: let the next caller deliver what is left.
			q.mu.Lock()
			q.outbox = append(batch[next:len(batch):len(batch)], q.outbox...)
			q.delivering = false
			q.mu.Unlock()
		}
	}()
	for len(q.outbox) > 0 {
		batch, next = q.outbox, 0
		q.outbox = nil
		q.mu.Unlock()
		for next < len(batch) {
			next++
			q.cfg.OnOutcome(batch[next-1])
		}
		q.mu.Lock()
	}
	q.delivering = false
	q.mu.Unlock()
	finished = true
}

// unlockAndDeliverOwn is unlockAndDeliver for the queue's own goroutines
// (workers and Run's scheduler). No caller there could recover a panic in
// OnOutcome: it would crash the process and lose every queued item. So it is
// logged, and delivery goes on with the next outcome.
func (q *Queue) unlockAndDeliverOwn() {
	for q.deliverRecovering() {
		q.mu.Lock()
	}
}

// deliverRecovering runs unlockAndDeliver and reports whether OnOutcome
// panicked.
func (q *Queue) deliverRecovering() (panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
			q.cfg.Logger.Error(fmt.Errorf("evictionqueue: OnOutcome panicked: %v", r),
				"the outcome was dropped", "queue", q.cfg.Name, "stack", string(debug.Stack()))
		}
	}()
	q.unlockAndDeliver()
	return false
}

type nopMetrics struct{}

func (nopMetrics) Added(string, string, string)            {}
func (nopMetrics) Removed(string, string, string)          {}
func (nopMetrics) Processed(string, string, time.Duration) {}
func (nopMetrics) Cancelled(string, int)                   {}
func (nopMetrics) InFlight(string, int)                    {}

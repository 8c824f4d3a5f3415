package evictionqueue

import (
	"errors"
	"slices"
	"sync"
	"time"
)

// Store is a Queue without its goroutines, for a caller that moves time
// itself, such as a simulation: the items and every rule about them. Its
// methods take the time, as x/time/rate's ReserveN(t) does, and nothing
// happens between calls: the caller takes an item, calls its handler,
// reports the result with Done, and calls Advance to act on the backoffs and
// TTLs ended by then. It uses every Config field but Workers, Pacer, Clock
// and Logger. Metrics and OnOutcome are called before the method that
// caused them returns. A Store is not safe for concurrent use.
type Store struct {
	cfg Config
	s   store
}

// NewStore returns an empty Store, after validating cfg as New does.
func NewStore(cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	st := &Store{cfg: cfg}
	st.s.init(&st.cfg)
	return st, nil
}

// Add is Queue.Add at now.
func (st *Store) Add(it Item, now time.Time) bool {
	added, _ := st.s.add(it, now)
	return added
}

// AddInFlight is Queue.AddInFlight at now.
func (st *Store) AddInFlight(it Item, now time.Time) bool {
	defer st.deliver()
	added, _ := st.s.addInFlight(it, nil, now)
	return added
}

// AddInFlightWith is Queue.AddInFlightWith at now.
func (st *Store) AddInFlightWith(it Item, v any, now time.Time) bool {
	defer st.deliver()
	added, _ := st.s.addInFlight(it, v, now)
	return added
}

// Flights is Queue.Flights.
func (st *Store) Flights(key string) []Flight { return st.s.flights.of(key) }

// EndFlight is Queue.EndFlight.
func (st *Store) EndFlight(f Flight) bool {
	defer st.deliver()
	return st.s.endFlight(f)
}

// CancelCluster is Queue.CancelCluster.
func (st *Store) CancelCluster(cluster string) int {
	defer st.deliver()
	return st.s.cancelCluster(cluster)
}

// Take returns the head pending item for a handler call that begins at now,
// which holds it until Done; false when none is pending or MaxInFlight has
// no slot.
func (st *Store) Take(now time.Time) (Item, bool) {
	return st.take("", true, now)
}

// PendingDomains returns the domains with pending items, by their head
// items: what a worker asks a pacer for (ratelimit.Limiter.TakeDomainAt).
// Each cluster's domain is Config.DomainOf's answer when the Store first
// had a pending item of it, or at DomainChanged. Without DomainOf: [""],
// or none. It costs time proportional to the domains, not the clusters.
func (st *Store) PendingDomains() []string { return st.s.domains() }

// DomainChanged is Queue.DomainChanged.
func (st *Store) DomainChanged(cluster string) { st.s.domainChanged(cluster) }

// TakeFrom is Take for the head pending item of domain, for a handler call
// holding a permit for it; a caller whose permit finds none gives it back.
// Without DomainOf it is Take.
func (st *Store) TakeFrom(domain string, now time.Time) (Item, bool) {
	return st.take(domain, false, now)
}

func (st *Store) take(domain string, any bool, now time.Time) (Item, bool) {
	if st.cfg.MaxInFlight > 0 && st.s.running+st.s.inFlight >= st.cfg.MaxInFlight {
		return Item{}, false
	}
	if e := st.s.take(domain, any, now); e != nil {
		return e.item, true
	}
	return Item{}, false
}

// Done reports the result err of the handler call for it at now (see
// Handler); false, changing nothing, when it is not being handled.
func (st *Store) Done(it Item, err error, now time.Time) bool {
	e := st.s.index.get(it.Cluster, it.Key)
	if e == nil || e.state != stateRunning {
		return false
	}
	defer st.deliver()
	st.s.done(e, err, now, false)
	return true
}

// Retry is Queue.Retry: an item backing off is pending again at once.
func (st *Store) Retry(it Item) bool {
	defer st.deliver()
	return st.s.retry(it)
}

// Open is Queue.Open.
func (st *Store) Open(gate Gate) int {
	defer st.deliver()
	return st.s.open(gate)
}

// Parked is Queue.Parked.
func (st *Store) Parked(gate Gate) int { return st.s.parked(gate) }

// Complete is Queue.Complete.
func (st *Store) Complete(it Item) bool {
	defer st.deliver()
	return st.s.complete(it)
}

// Advance acts on every backoff and in-flight TTL ended by now.
func (st *Store) Advance(now time.Time) {
	defer st.deliver()
	st.s.advance(now)
}

// NextDue returns when the next backoff or in-flight TTL ends; false when
// none is under way.
func (st *Store) NextDue() (time.Time, bool) { return st.s.nextDue() }

// Len is Queue.Len.
func (st *Store) Len() int { return st.s.len() }

// InFlight is Queue.InFlight.
func (st *Store) InFlight() int { return st.s.inFlight }

// Pending is Queue.Pending.
func (st *Store) Pending() []Item { return st.s.waiting() }

// deliver passes the recorded outcomes to OnOutcome, in order, also those
// OnOutcome causes by calling the Store.
func (st *Store) deliver() {
	for len(st.s.outbox) > 0 {
		o := st.s.outbox[0]
		st.s.outbox = st.s.outbox[1:]
		st.cfg.OnOutcome(o)
	}
}

// store is the state Store and Queue share: it takes the time, starts no
// goroutine and takes no lock (Queue holds its own). Each method makes the
// Metrics calls and records the Outcomes of its changes, in order.
type store struct {
	cfg     *Config
	metrics Metrics

	index      index      // every entry, in any state: identity and cluster lists
	pending    pendingSet // statePending, in processing order (a line per domain)
	delayed    entryHeap  // stateBackingOff and stateInFlight, by due time
	backingOff int        // entries in stateBackingOff
	inFlight   int        // entries in stateInFlight
	running    int        // entries in stateRunning
	gates      gates      // the entries backing off that are parked at a gate
	flights    flights    // the entries running or in flight, by key
	seq        uint64
	// free recycles entries: without it Add+process costs about 1.5x
	// client-go's workqueue (BenchmarkAddProcess: 7.3-7.8 ms against
	// 4.8-4.9 ms per 20,000 items), above DESIGN's 1.0x.
	free sync.Pool

	outbox []Outcome // outcomes not yet passed to Config.OnOutcome
}

// init readies the zero store for cfg, which it keeps using.
func (s *store) init(cfg *Config) {
	s.cfg, s.metrics, s.delayed.byDue = cfg, cfg.Metrics, true
	if cfg.DomainOf != nil {
		s.pending.byDomain = make(map[string]*line)
		s.pending.domainOf = cfg.DomainOf
	}
	if s.metrics == nil {
		s.metrics = nopMetrics{}
	}
}

// add makes it pending, unless the store holds its identity (see
// Queue.Add). It reports whether it added it, and whether an item became
// pending: the new one, or a parked one it made pending again.
func (s *store) add(it Item, now time.Time) (added, pending bool) {
	ci := s.index.cluster(it.Cluster, true)
	if e := ci.keys.get(it.Key); e != nil {
		e.cancelled = false
		switch {
		case e.state == stateRunning:
			e.dirty = true
		case e.state == stateBackingOff && s.isParked(e):
			// News its gate may not carry (the binding changed, say):
			// decided again now, in its place.
			s.retryEntry(e)
			return false, true
		}
		return false, false
	}
	s.seq++
	e, _ := s.free.Get().(*entry)
	if e == nil {
		e = new(entry)
	}
	e.item, e.seq, e.state = it, s.seq, statePending
	if !now.IsZero() { // zero without Metrics (Queue.latencyNow)
		e.enqueued = now.UnixNano()
	}
	s.index.insert(ci, e)
	s.pending.push(e)
	s.metrics.Added(s.cfg.Name, it.Cluster, it.ResourceKind)
	return true, true
}

// addInFlight holds it in flight from now, as if its handler had returned
// ErrInProgress, unless the store holds its identity (see
// Queue.AddInFlight). It reports whether it was added and whether it has
// the earliest deadline now.
func (s *store) addInFlight(it Item, v any, now time.Time) (added, earliest bool) {
	ci := s.index.cluster(it.Cluster, true)
	if ci.keys.get(it.Key) != nil {
		return false, false
	}
	s.seq++
	e, _ := s.free.Get().(*entry)
	if e == nil {
		e = new(entry)
	}
	e.item, e.seq, e.state = it, s.seq, stateInFlight
	e.enqueued = now.UnixNano()
	e.due = now.Add(s.cfg.InFlightTTL)
	s.index.insert(ci, e)
	earliest = s.delay(e)
	s.flights.flying(e, v)
	s.setInFlight(s.inFlight + 1)
	s.note(e, InProgress, nil)
	return true, earliest
}

// cancelCluster drops the cluster's pending and backing-off items and marks
// its running and in-flight ones cancelled (see Queue.CancelCluster).
func (s *store) cancelCluster(cluster string) int {
	ci := s.index.cluster(cluster, false)
	if ci == nil {
		return 0
	}
	n := 0
	for _, e := range ci.keys.all() {
		switch e.state {
		case statePending:
			s.pending.remove(e)
		case stateBackingOff:
			s.delayed.remove(int(e.index))
			s.backingOff--
			s.unpark(e)
		default: // running or in flight: see entry.cancelled
			e.cancelled, e.dirty = true, false
			continue
		}
		n++
		s.metrics.Removed(s.cfg.Name, e.item.Cluster, e.item.ResourceKind)
		s.leave(e, Cancelled, nil)
	}
	s.index.release(ci) // the cluster recovered: its index may go
	if n > 0 {
		s.metrics.Cancelled(s.cfg.Name, n)
	}
	return n
}

// mayWait reports whether one more worker may wait for a permit when
// waiting already do: more items are pending than workers waiting, and
// MaxInFlight, counting those waits, the handler calls and the background
// evictions, has room. The one rule of Queue's workers and of Workers.
func (s *store) mayWait(waiting int) bool {
	if s.pending.Len() <= waiting {
		return false
	}
	return s.cfg.MaxInFlight == 0 || s.running+s.inFlight+waiting < s.cfg.MaxInFlight
}

// domains lists the domains with pending items (see pendingSet.domains),
// in time proportional to their number: no cluster's domain is read.
func (s *store) domains() []string { return s.pending.domains() }

// domainChanged reads cluster's domain again and files its pending items
// under it (see Queue.DomainChanged).
func (s *store) domainChanged(cluster string) {
	if s.cfg.DomainOf == nil {
		return
	}
	ci := s.index.cluster(cluster, false)
	if ci == nil || !ci.domainRead {
		return // read when it is first pushed
	}
	s.pending.move(ci, s.cfg.DomainOf(cluster))
}

// take hands the head pending item to a handler call, which holds it until
// done: the head of domain, or of all domains when any is set. It returns
// nil when there is none.
func (s *store) take(domain string, any bool, now time.Time) *entry {
	e := s.pending.pop(domain, any)
	if e == nil {
		return nil
	}
	s.running++
	s.flights.started(e)
	e.state, e.due = stateRunning, now
	e.index = int32(s.gates.opens) // while running: see gates.opens
	e.calls++
	s.metrics.Removed(s.cfg.Name, e.item.Cluster, e.item.ResourceKind)
	return e
}

// done acts on the result err of the handler call for e. interrupted: Run
// ended under the call, so a failure says nothing. It reports whether e now
// has the earliest deadline, which a timer set for a later one must learn,
// and whether the call left its permit unused: the handler skipped, abandoned or
// deferred the item, so nothing was evicted, whatever became of the item.
func (s *store) done(e *entry, err error, now time.Time, interrupted bool) (earliest, unused bool) {
	s.running--
	s.flights.stopped(e)
	defer s.callEnded()
	began := uint32(e.index)
	latency := e.due.Sub(time.Unix(0, e.enqueued))
	result := ResultError
	var abandoned, skipped, deferred, parked bool
	var after time.Duration
	var gate Gate
	if err != nil { // errors.As allocates: not on the path of every success
		abandoned, skipped = IsAbandoned(err), IsSkipped(err)
		after, gate, parked, deferred = asDeferred(err)
		unused = abandoned || skipped || deferred
	}
	dirty := e.dirty && !e.completed && !e.cancelled
	e.dirty = false
	switch {
	case err == nil:
		result = ResultSuccess
		s.leaveUnlessDirty(e, dirty, Succeeded, nil)
	case skipped:
		result = ResultSkipped
		s.leaveUnlessDirty(e, dirty, Skipped, err)
	case abandoned:
		result = ResultAbandoned
		s.leaveUnlessDirty(e, dirty, Abandoned, err)
	case parked && !e.cancelled && !e.completed && (dirty || s.openedSince(gate, began)):
		// Its gate opened, or it was added again, while the call decided:
		// the news it waits for may have come too late for the call.
		result = ResultDeferred
		s.requeue(e, err)
	case deferred && !e.cancelled && !e.completed:
		result = ResultDeferred
		earliest = s.backOff(e, err, now, min(max(after, s.cfg.BackoffBase), s.cfg.BackoffMax))
		if parked {
			s.park(e, gate)
		}
	case errors.Is(err, ErrInProgress):
		result = ResultSuccess
		if e.completed {
			s.note(e, InProgress, nil)
			s.leave(e, Completed, nil)
			break
		}
		e.state = stateInFlight
		e.due = now.Add(s.cfg.InFlightTTL)
		earliest = s.delay(e)
		s.flights.flying(e, inProgressValue(err))
		s.setInFlight(s.inFlight + 1)
		s.note(e, InProgress, nil)
	case e.completed:
		// Complete confirmed the eviction while the handler was failing:
		// the eviction is done, retrying it would evict again.
		s.leave(e, Completed, nil)
	case e.cancelled:
		s.metrics.Cancelled(s.cfg.Name, 1)
		s.leave(e, Cancelled, err)
	case interrupted:
		s.requeue(e, err)
	default:
		earliest = s.fail(e, err, now, dirty)
	}
	s.metrics.Processed(s.cfg.Name, result, latency)
	return earliest, unused
}

// asRetryAfter returns the RetryAfterError in err's chain, or nil.
func asRetryAfter(err error) *RetryAfterError {
	var d *RetryAfterError
	if errors.As(err, &d) {
		return d
	}
	return nil
}

// fail counts a handler failure of e: e backs off before its next attempt,
// or is dropped when out of retries.
func (s *store) fail(e *entry, err error, now time.Time, dirty bool) (earliest bool) {
	e.failures++
	if int(e.failures) > s.cfg.MaxRetries {
		s.leaveUnlessDirty(e, dirty, Failed, err)
		return false
	}
	return s.backOff(e, err, now, s.cfg.backoff(int(e.failures)))
}

// backOff makes e wait d before its next attempt.
func (s *store) backOff(e *entry, err error, now time.Time, d time.Duration) (earliest bool) {
	e.state = stateBackingOff
	e.due = now.Add(d)
	earliest = s.delay(e)
	s.backingOff++
	s.metrics.Added(s.cfg.Name, e.item.Cluster, e.item.ResourceKind)
	s.note(e, Retrying, err)
	return earliest
}

// retry makes it pending at once if it is backing off (see Queue.Retry).
func (s *store) retry(it Item) bool {
	e := s.index.get(it.Cluster, it.Key)
	if e == nil || e.state != stateBackingOff {
		return false
	}
	s.retryEntry(e)
	return true
}

// retryEntry makes e, backing off, pending at once, in its place.
func (s *store) retryEntry(e *entry) {
	s.delayed.remove(int(e.index))
	// Still counted by Added since it began backing off, as in advance.
	s.backingOff--
	s.unpark(e)
	e.state = statePending
	s.pending.push(e)
}

// isParked reports whether e is parked at a gate.
func (s *store) isParked(e *entry) bool {
	_, ok := s.gates.at[e]
	return ok
}

// complete ends the background eviction of it (see Queue.Complete).
func (s *store) complete(it Item) bool {
	e := s.index.get(it.Cluster, it.Key)
	switch {
	case e == nil:
		return false
	case e.state == stateRunning:
		e.completed = true
		return true
	case e.state != stateInFlight:
		return false
	}
	s.delayed.remove(int(e.index))
	s.flights.landed(e)
	s.setInFlight(s.inFlight - 1)
	s.leave(e, Completed, nil)
	return true
}

// advance acts on every deadline by now: a backoff ended makes its entry
// pending; an in-flight TTL passed frees the slot and counts a failure: the
// entry is pending again at once (no backoff: its eviction may be under
// way), or dropped as failed, or as cancelled.
func (s *store) advance(now time.Time) {
	for {
		e := s.delayed.peek()
		if e == nil || e.due.After(now) {
			return
		}
		s.delayed.pop()
		if e.state == stateBackingOff {
			// Still counted by Added since it began backing off.
			s.backingOff--
			s.unpark(e)
			e.state = statePending
			s.pending.push(e)
			continue
		}
		s.flights.landed(e) // what it carried goes with it
		s.setInFlight(s.inFlight - 1)
		if em, ok := s.metrics.(ExpiryMetrics); ok {
			em.InFlightExpired(s.cfg.Name)
		}
		s.note(e, Expired, ErrInFlightExpired)
		if e.cancelled {
			s.metrics.Cancelled(s.cfg.Name, 1)
			s.leave(e, Cancelled, ErrInFlightExpired)
			continue
		}
		if e.failures++; int(e.failures) > s.cfg.MaxRetries {
			s.leave(e, Failed, ErrInFlightExpired)
			continue
		}
		e.state = statePending
		s.pending.push(e)
		s.metrics.Added(s.cfg.Name, e.item.Cluster, e.item.ResourceKind)
	}
}

// nextDue returns the earliest backoff end or TTL deadline, if any.
func (s *store) nextDue() (time.Time, bool) {
	if e := s.delayed.peek(); e != nil {
		return e.due, true
	}
	return time.Time{}, false
}

// len is Queue.Len: pending plus backing off.
func (s *store) len() int { return s.pending.Len() + s.backingOff }

// waiting lists the pending items in processing order, then the backing-off
// ones by end of backoff (see Queue.Pending).
func (s *store) waiting() []Item {
	ready := make([]*entry, 0, s.pending.Len())
	s.pending.each(func(e *entry) { ready = append(ready, e) })
	backingOff := make([]*entry, 0, s.backingOff)
	for _, e := range s.delayed.s {
		if e.state == stateBackingOff {
			backingOff = append(backingOff, e)
		}
	}
	slices.SortFunc(ready, compareOrder)
	slices.SortFunc(backingOff, compareDue)
	out := make([]Item, 0, len(ready)+len(backingOff))
	for _, e := range slices.Concat(ready, backingOff) {
		out = append(out, e.item)
	}
	return out
}

// delay puts e in the delayed heap and reports whether it is now the first.
func (s *store) delay(e *entry) bool {
	s.delayed.push(e)
	return e.index == 0
}

// leaveUnlessDirty lets e leave with its last outcome, or, when it was
// added again while its handler ran (dirty), makes it pending again at once
// for that decision, its retries counted afresh.
func (s *store) leaveUnlessDirty(e *entry, dirty bool, kind OutcomeKind, err error) {
	if !dirty {
		s.leave(e, kind, err)
		return
	}
	e.failures = 0
	s.requeue(e, err)
}

// requeue makes e, just handled, pending again at once.
func (s *store) requeue(e *entry, err error) {
	e.state = statePending
	s.pending.push(e)
	s.metrics.Added(s.cfg.Name, e.item.Cluster, e.item.ResourceKind)
	s.note(e, Requeued, err)
}

// leave reports the item's last outcome and recycles e.
func (s *store) leave(e *entry, kind OutcomeKind, err error) {
	s.note(e, kind, err)
	s.index.remove(e)
	*e = entry{}
	s.free.Put(e)
}

func (s *store) setInFlight(n int) {
	s.inFlight = n
	s.metrics.InFlight(s.cfg.Name, n)
}

// note records an outcome for e when someone listens.
func (s *store) note(e *entry, kind OutcomeKind, err error) {
	if s.cfg.OnOutcome == nil {
		return
	}
	o := Outcome{Queue: s.cfg.Name, Item: e.item, Kind: kind, Err: err, Attempts: int(e.calls)}
	if kind == Retrying {
		o.RetryAt = e.due
	}
	s.outbox = append(s.outbox, o)
}

type nopMetrics struct{}

func (nopMetrics) Added(string, string, string)            {}
func (nopMetrics) Removed(string, string, string)          {}
func (nopMetrics) Processed(string, string, time.Duration) {}
func (nopMetrics) Cancelled(string, int)                   {}
func (nopMetrics) InFlight(string, int)                    {}

package evictionqueue

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"time"
)

// store is the queue's state and every rule about what happens to an item:
// identity, priority-then-FIFO order, backoff, in-flight TTLs and
// cancel-by-cluster. It takes the time as a parameter, starts no goroutine
// and takes no lock: Queue holds its lock around every call, and its workers
// and scheduler (run.go) are the only code that waits. Each method records
// the Metrics calls and Outcomes of the changes it makes, in order.
type store struct {
	cfg     *Config
	metrics Metrics

	index      index        // every entry, in any state: identity and cluster lists
	pending    pendingQueue // statePending, in processing order
	delayed    entryHeap    // stateBackingOff and stateInFlight, by due time
	backingOff int          // entries in stateBackingOff
	inFlight   int          // entries in stateInFlight
	running    int          // entries in stateRunning
	seq        uint64
	// free recycles entries of items that left. Without it a queue
	// allocates an entry per item and its Add+process overhead exceeds
	// client-go's workqueue (BenchmarkAddProcess), DESIGN.md's bound.
	free sync.Pool

	outbox []Outcome // outcomes not yet passed to Config.OnOutcome
}

// init readies the zero store for cfg, which it keeps using.
func (s *store) init(cfg *Config) {
	s.cfg, s.metrics, s.delayed.byDue = cfg, cfg.Metrics, true
	if s.metrics == nil {
		s.metrics = nopMetrics{}
	}
}

// add makes it pending, unless the store holds its identity (see Queue.Add).
func (s *store) add(it Item, now time.Time) bool {
	ci := s.index.cluster(it.Cluster, true)
	if e := ci.keys[it.Key]; e != nil {
		e.cancelled = false
		return false
	}
	s.seq++
	e, _ := s.free.Get().(*entry)
	if e == nil {
		e = new(entry)
	}
	e.item, e.seq, e.state, e.enqueued = it, s.seq, statePending, now
	s.index.insert(ci, e)
	s.pending.push(e)
	s.metrics.Added(s.cfg.Name, it.Cluster, it.ResourceKind)
	return true
}

// cancelCluster drops the cluster's pending and backing-off items and marks
// its running and in-flight ones cancelled (see Queue.CancelCluster).
func (s *store) cancelCluster(cluster string) int {
	ci := s.index.cluster(cluster, false)
	if ci == nil {
		return 0
	}
	n := 0
	for e, next := ci.head, (*entry)(nil); e != nil; e = next {
		next = e.next
		switch e.state {
		case statePending:
			s.pending.remove(e)
		case stateBackingOff:
			s.delayed.remove(int(e.index))
			s.backingOff--
		default: // running or in flight: see entry.cancelled
			e.cancelled = true
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

// take hands the head pending item to a handler call, which holds it until
// done. There must be a pending item.
func (s *store) take(now time.Time) *entry {
	e := s.pending.pop()
	s.running++
	e.state, e.due = stateRunning, now
	e.calls++
	s.metrics.Removed(s.cfg.Name, e.item.Cluster, e.item.ResourceKind)
	return e
}

// done acts on the result err of the handler call for e, which take
// returned. interrupted says that Run ended under the call, so a failure
// says nothing about the item. It reports whether e now waits for the
// store's earliest deadline, which a timer set for a later one must learn.
func (s *store) done(e *entry, err error, now time.Time, interrupted bool) (earliest bool) {
	s.running--
	latency := e.due.Sub(e.enqueued)
	result := ResultError
	switch {
	case err == nil:
		result = ResultSuccess
		s.leave(e, Succeeded, nil)
	case IsAbandoned(err):
		result = ResultAbandoned
		s.leave(e, Abandoned, err)
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
		e.state = statePending
		s.pending.push(e)
		s.metrics.Added(s.cfg.Name, e.item.Cluster, e.item.ResourceKind)
		s.note(e, Requeued, err)
	default:
		earliest = s.fail(e, err, now)
	}
	s.metrics.Processed(s.cfg.Name, result, latency)
	return earliest
}

// fail counts a handler failure of e: e backs off before its next attempt,
// or is dropped when out of retries.
func (s *store) fail(e *entry, err error, now time.Time) (earliest bool) {
	e.failures++
	if int(e.failures) > s.cfg.MaxRetries {
		s.leave(e, Failed, err)
		return false
	}
	e.state = stateBackingOff
	e.due = now.Add(s.cfg.backoff(int(e.failures)))
	earliest = s.delay(e)
	s.backingOff++
	s.metrics.Added(s.cfg.Name, e.item.Cluster, e.item.ResourceKind)
	s.note(e, Retrying, err)
	return earliest
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
	s.setInFlight(s.inFlight - 1)
	s.leave(e, Completed, nil)
	return true
}

// advance acts on every deadline not after now: a backoff that ended makes
// its entry pending; an in-flight TTL that passed frees the slot and counts
// a failure: the entry is pending again at once (its eviction may be under
// way, so there is nothing to back off from), or dropped as failed when out
// of retries, or as cancelled when its cluster was cancelled.
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
			e.state = statePending
			s.pending.push(e)
			continue
		}
		s.setInFlight(s.inFlight - 1)
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
	slices.SortFunc(backingOff, func(a, b *entry) int {
		if c := a.due.Compare(b.due); c != 0 {
			return c
		}
		return compareOrder(a, b)
	})
	out := make([]Item, 0, len(ready)+len(backingOff))
	for _, e := range slices.Concat(ready, backingOff) {
		out = append(out, e.item)
	}
	return out
}

// compareOrder is the processing order: higher Priority first, then lower seq.
func compareOrder(a, b *entry) int {
	if c := cmp.Compare(b.item.Priority, a.item.Priority); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// delay puts e in the delayed heap and reports whether it is now the first.
func (s *store) delay(e *entry) bool {
	s.delayed.push(e)
	return e.index == 0
}

// leave reports the item's last outcome and forgets it: it has left the
// queue for good. e must not be used afterwards; it is recycled.
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

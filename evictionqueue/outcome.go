package evictionqueue

import (
	"fmt"
	"runtime/debug"
	"time"
)

// OutcomeKind names what happened to an item, in CamelCase, to serve as the
// reason of a Kubernetes Event.
type OutcomeKind string

// The outcomes reported through Config.OnOutcome: every item that leaves is
// reported once with Succeeded, Skipped, Completed, Abandoned, Failed or
// Cancelled.
const (
	Succeeded  OutcomeKind = "Succeeded"  // the handler returned nil; the item left
	Skipped    OutcomeKind = "Skipped"    // the handler returned Skip (Err): nothing to do; the item left
	InProgress OutcomeKind = "InProgress" // the handler returned ErrInProgress: in flight until Complete or InFlightTTL
	Completed  OutcomeKind = "Completed"  // Complete confirmed the background eviction; the item left
	Retrying   OutcomeKind = "Retrying"   // the handler failed or deferred the item (Err; see RetryAfter): waiting until RetryAt
	Failed     OutcomeKind = "Failed"     // failed (Err) after MaxRetries retries, or expired once too often; the item left
	Abandoned  OutcomeKind = "Abandoned"  // the handler returned Abandon (Err); the item left without retry
	Cancelled  OutcomeKind = "Cancelled"  // its cluster recovered (CancelCluster); the item left
	// Expired: an in-flight eviction was not confirmed within InFlightTTL
	// (Err is ErrInFlightExpired); pending again unless Failed or Cancelled
	// follows.
	Expired OutcomeKind = "Expired"
	// Requeued: pending again at once (Err: the call's result). Run ended
	// while the handler failed, no attempt counted; or the item was added
	// again while its handler ran and the call would have let it leave
	// (nil, Skip, Abandon, or a last failure), so the decision made
	// meanwhile is acted on, with its retries counted afresh.
	Requeued OutcomeKind = "Requeued"
)

// Outcome is one event in an item's life, passed to Config.OnOutcome.
type Outcome struct {
	Queue    string      // Config.Name
	Item     Item        // the item as it was added
	Kind     OutcomeKind // what happened
	Err      error       // the handler error for Retrying, Failed, Abandoned, Skipped and Requeued; ErrInFlightExpired for Expired
	Attempts int         // handler calls made for the item so far
	RetryAt  time.Time   // Retrying only: when the item is pending again
}

// unlockAndDeliver releases q.mu and passes the recorded outcomes to
// OnOutcome, in order. One goroutine delivers at a time (another leaves its
// outcomes to it), so OnOutcome is never called concurrently and may call
// the queue: what its calls record is delivered after it returns. A panic in
// OnOutcome reaches the caller; the outcomes after it stay for the next.
func (q *Queue) unlockAndDeliver() {
	if q.delivering || len(q.s.outbox) == 0 {
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
			q.s.outbox = append(batch[next:len(batch):len(batch)], q.s.outbox...)
			q.delivering = false
			q.mu.Unlock()
		}
	}()
	for len(q.s.outbox) > 0 {
		batch, next = q.s.outbox, 0
		q.s.outbox = nil
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

// unlockAndDeliverOwn is unlockAndDeliver for the queue's own goroutines,
// where a panic in OnOutcome would crash the process and lose every queued
// item: it is logged, and delivery goes on.
func (q *Queue) unlockAndDeliverOwn() {
	if q.delivering || len(q.s.outbox) == 0 {
		q.mu.Unlock() // the common case, without deliverRecovering's defer
		return
	}
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

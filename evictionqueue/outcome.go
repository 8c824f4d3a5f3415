package evictionqueue

import (
	"fmt"
	"runtime/debug"
	"time"
)

// OutcomeKind names what happened to an item. The values are CamelCase so a
// controller can use them directly as the reason of a Kubernetes Event.
type OutcomeKind string

// The outcomes reported through Config.OnOutcome. Every item that leaves the
// queue is reported exactly once with Succeeded, Completed, Abandoned, Failed
// or Cancelled; the other kinds report steps on the way.
const (
	// Succeeded: the handler returned nil; the item left the queue.
	Succeeded OutcomeKind = "Succeeded"
	// InProgress: the handler returned ErrInProgress; the item is in flight
	// until Complete or InFlightTTL.
	InProgress OutcomeKind = "InProgress"
	// Completed: Complete confirmed the item's background eviction; the item
	// left the queue.
	Completed OutcomeKind = "Completed"
	// Retrying: the handler failed (Err); the item backs off until RetryAt,
	// then it is pending again.
	Retrying OutcomeKind = "Retrying"
	// Failed: the handler failed (Err) after MaxRetries retries, or an
	// in-flight eviction expired once too often; the item left the queue.
	Failed OutcomeKind = "Failed"
	// Abandoned: the handler returned Abandon (Err); the item left the queue
	// without retry.
	Abandoned OutcomeKind = "Abandoned"
	// Cancelled: the item's cluster recovered (CancelCluster); the item left
	// the queue without being handled again.
	Cancelled OutcomeKind = "Cancelled"
	// Expired: an in-flight eviction was not confirmed within InFlightTTL
	// (Err is ErrInFlightExpired). Unless a Failed or Cancelled outcome
	// follows for the same item, it is pending again.
	Expired OutcomeKind = "Expired"
	// Requeued: Run ended while the handler ran and the handler failed (Err),
	// so the item is pending again without an attempt counted against it.
	Requeued OutcomeKind = "Requeued"
)

// Outcome is one event in an item's life, passed to Config.OnOutcome.
type Outcome struct {
	Queue    string      // Config.Name
	Item     Item        // the item as it was added
	Kind     OutcomeKind // what happened
	Err      error       // the handler error for Retrying, Failed, Abandoned and Requeued; ErrInFlightExpired for Expired
	Attempts int         // handler calls made for the item so far
	RetryAt  time.Time   // Retrying only: when the item is pending again
}

// unlockAndDeliver releases q.mu and passes the outcomes the store recorded
// to OnOutcome, in the order they were recorded. Only one goroutine delivers
// at a time; one that finds another delivering leaves its outcomes to it. So
// OnOutcome sees each item's events in order, is never called concurrently,
// and may call the queue: a call it makes records outcomes that this loop
// delivers after it returns. A panic in OnOutcome reaches the caller; the
// outcomes after the one that panicked stay for the next delivery.
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

// unlockAndDeliverOwn is unlockAndDeliver for the queue's own goroutines
// (workers and Run's scheduler). No caller there could recover a panic in
// OnOutcome: it would crash the process and lose every queued item. So it is
// logged, and delivery goes on with the next outcome.
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

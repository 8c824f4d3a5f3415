package evictionqueue

import "time"

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

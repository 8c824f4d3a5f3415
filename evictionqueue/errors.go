package evictionqueue

import (
	"errors"
	"fmt"
	"time"
)

// ErrInProgress is the handler result for an eviction accepted and finishing
// in the background: the item stays in flight, holding a MaxInFlight slot,
// until [Queue.Complete] or Config.InFlightTTL (then it is retried).
// Handlers may wrap it.
var ErrInProgress = errors.New("evictionqueue: eviction in progress")

// ErrInFlightExpired is the Outcome.Err of an Expired outcome: a background
// eviction was not confirmed by Complete within Config.InFlightTTL.
var ErrInFlightExpired = errors.New("evictionqueue: background eviction not confirmed within InFlightTTL")

// ErrHandlerExited is the handler error recorded when the handler ended its
// goroutine with runtime.Goexit (as t.FailNow does): the item is retried,
// and a new worker replaces the one that ended.
var ErrHandlerExited = errors.New("evictionqueue: handler called runtime.Goexit instead of returning")

// Abandon wraps a handler error to drop the item without retry, when nothing
// was done (no cluster to migrate to, say); its permit goes back. The result
// still matches err with errors.Is and errors.As.
func Abandon(err error) error {
	if err == nil {
		err = errors.New("no reason given")
	}
	return &AbandonError{Err: err}
}

// AbandonError is the error [Abandon] returns.
type AbandonError struct {
	Err error // why the item was abandoned
}

// Error describes the abandoned eviction and its reason.
func (e *AbandonError) Error() string { return "evictionqueue: abandoned: " + e.Err.Error() }

// Unwrap returns the reason, so errors.Is and errors.As see through Abandon.
func (e *AbandonError) Unwrap() error { return e.Err }

// IsAbandoned reports whether err, or an error it wraps, came from [Abandon].
func IsAbandoned(err error) bool {
	var a *AbandonError
	return errors.As(err, &a)
}

// Skip wraps why a handler call found nothing to do and wrote nothing: the
// binding moved or is gone, the cluster recovered, the taint is tolerated
// now. The item leaves as if done (Outcome Skipped, result "skipped"), but
// its permit goes back, as after Abandon: the rate pays for evictions
// written, not for decisions. An item added again while that call ran is
// handled again (see Queue.Add). The result still matches reason with
// errors.Is and errors.As.
func Skip(reason error) error {
	if reason == nil {
		reason = errors.New("no reason given")
	}
	return &SkipError{Err: reason}
}

// SkipError is the error [Skip] returns.
type SkipError struct {
	Err error // why there was nothing to do
}

// Error says that nothing was done, and why.
func (e *SkipError) Error() string { return "evictionqueue: nothing to do: " + e.Err.Error() }

// Unwrap returns the reason, so errors.Is and errors.As see through Skip.
func (e *SkipError) Unwrap() error { return e.Err }

// IsSkipped reports whether err, or an error it wraps, came from [Skip].
func IsSkipped(err error) bool {
	var s *SkipError
	return errors.As(err, &s)
}

// RetryAfter wraps a handler error to try the item again after d without
// counting a failure, when nothing was done and something outside the queue
// must change first: the surviving clusters' room is held for evictions
// already approved, say, and frees as the scheduler places them. Its permit
// goes back, and MaxRetries does not run out however often it is deferred;
// CancelCluster still ends it. A d shorter than Config.BackoffBase waits
// BackoffBase, and one longer than BackoffMax waits BackoffMax. The result
// still matches err with errors.Is and errors.As.
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		err = errors.New("no reason given")
	}
	return &RetryAfterError{After: d, Err: err}
}

// RetryAfterError is the error [RetryAfter] returns.
type RetryAfterError struct {
	After time.Duration // how long to wait before the next attempt
	Err   error         // why the item waits
}

// Error describes the deferred eviction and its reason.
func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("evictionqueue: deferred for %v: %v", e.After, e.Err)
}

// Unwrap returns the reason, so errors.Is and errors.As see through RetryAfter.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// PanicError is the error a handler panic is turned into. The queue treats it
// like any other handler error: the item is retried with backoff.
type PanicError struct {
	Value any    // what the handler panicked with
	Stack []byte // the handler goroutine's stack at the panic
}

// Error describes the panic value; the stack is left to callers that log it.
func (e *PanicError) Error() string {
	return fmt.Sprintf("evictionqueue: handler panicked: %v", e.Value)
}

// Unwrap returns the panic value when it is an error (panic(err)), so
// errors.Is finds it.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

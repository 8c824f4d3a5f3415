package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Limiter is one token bucket of burst 1 for the whole fleet: every goroutine,
// worker and queue that shares a Limiter shares its rate, so adding workers
// never multiplies it. The rate in force is cfg.RateFor of the source's
// current Health (0 while the source returns an error or an impossible
// Health, such as more unhealthy clusters than clusters).
//
// Guarantees:
//   - Over any window t in which the rate r stays the same, at most r×t + 1
//     permits are handed out, whatever the number of callers (delays that
//     When returned before a slowdown are kept, see below). Slots are fixed
//     on the clock, not counted from when a waiter wakes, so wake-up latency
//     does not lower the rate either.
//   - When the rate changes, callers already blocked in Wait are re-timed at
//     once against the new rate: a slower rate pushes them back, a faster one
//     brings them forward. A source that is a Notifier (such as Tracker) wakes
//     them the moment its health changes; other sources are polled
//     (WithPollInterval), and Refresh forces a re-read.
//   - Rate 0 is a pause: no permit at all, and no debt or credit piles up.
//     When the rate becomes positive again the first waiter goes through at
//     once (unless a delay When promised before the pause ends within one
//     interval of now) and the rest follow one interval apart.
//   - Waiters are served first come, first served. A waiter whose context ends
//     gives its slot back: the waiters behind it move up, and the next caller
//     can take the last slot.
//
// Wait and DynamicRateLimiter.When draw from the same bucket. A delay returned
// by When is a promise that cannot be taken back, so a rate change re-times
// only blocked waiters, fitting them around the slots already promised.
//
// The Limiter starts no goroutine: health is read by the callers themselves,
// when the source's Changed channel has closed, when the poll interval has
// passed, or on Refresh; blocked callers select on their context, a timer of
// the injected clock, the source's Changed channel and the Limiter's own
// wake-up broadcast. Source errors are logged once per distinct error and once
// when the source answers again.
//
// A Limiter is safe for concurrent use. Create it with NewLimiter; a nil or
// zero Limiter hands out no permits: its Wait returns an error, its Rate is 0
// and DynamicRateLimiter over it always returns the re-check delay.
type Limiter struct {
	cfg      Config
	src      HealthSource
	notifier Notifier // src, when it is one
	clock    clock.WithTicker
	metrics  Metrics
	poll     time.Duration
	hold     time.Duration
	logger   klog.Logger

	mu sync.Mutex

	// Reading the source. Reads happen outside mu; readSeq orders them so a
	// slow read never overwrites a newer answer.
	readSeq, appliedSeq uint64
	read                bool
	lastRead            time.Time
	changed             <-chan struct{} // the source's Changed channel as of the last applied read
	srcErr              error
	health              Health
	healthKnown         bool

	// history holds the rule's rate after each good read that changed it,
	// oldest first, trimmed to the recovery hold: history[0] was in force at
	// the start of the hold window. The health rate is the slowest of them,
	// so a slowdown applies at once and a speed-up once it has lasted the
	// hold. Without a hold only the latest entry is kept.
	history []rateChange

	// The bucket.
	rate     float64       // in force: 0 while paused or while the source errs
	rateSet  bool          // rate has been decided at least once
	interval time.Duration // 1/rate, rounded up so the rate is never exceeded
	// last is the latest slot a waiter has taken (or a promise that has
	// come); zero after a pause, so that resuming starts afresh.
	last time.Time
	// promises are the slots When has promised that are still to come, in
	// increasing order. They cannot be moved: re-timed waiters fit around
	// them, and they outlive a pause.
	promises   []time.Time
	head, tail *waiter // blocked waiters in slot order
	nWaiters   int
	// wake is closed (and replaced) to make blocked waiters re-read their slot.
	wake chan struct{}
	// epoch counts broadcasts; parked counts waiters blocked since the last
	// one. A waiter parked in an older epoch has been told to wake, so it is
	// no longer counted: parked == nWaiters means every waiter has seen the
	// current state (tests wait for that before moving a fake clock).
	epoch  uint64
	parked int
}

// waiter is one blocked Wait call.
type waiter struct {
	slot       time.Time // when its permit is due; zero while paused
	prev, next *waiter
}

var errZeroLimiter = errors.New("ratelimit: Limiter was not created by NewLimiter")

// NewLimiter returns a Limiter whose rate follows cfg.RateFor(src.Health()).
// It validates cfg and the options, and neither reads src nor starts anything:
// the first Wait, When or Rate reads the source.
func NewLimiter(cfg Config, src HealthSource, opts ...Option) (*Limiter, error) {
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if src == nil {
		errs = append(errs, errors.New("ratelimit: NewLimiter: health source is nil"))
	} else if v := reflect.ValueOf(src); v.Kind() == reflect.Pointer && v.IsNil() {
		// A typed nil such as (*Tracker)(nil) is a non-nil interface whose
		// Health would panic on the first read.
		errs = append(errs, fmt.Errorf("ratelimit: NewLimiter: health source is a nil %T", src))
	}
	s := settings{clock: clock.RealClock{}, poll: DefaultPollInterval}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	errs = append(errs, s.errs...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	l := &Limiter{
		cfg:     cfg,
		src:     src,
		clock:   s.clock,
		metrics: s.metrics,
		poll:    s.poll,
		hold:    s.hold,
		wake:    make(chan struct{}),
	}
	if s.logger != nil {
		l.logger = *s.logger
	} else {
		l.logger = klog.Background()
	}
	l.notifier, _ = src.(Notifier)
	return l, nil
}

// Wait blocks until the caller may evict one resource, or until ctx ends, in
// which case it returns ctx's error and gives its place back. While the rate
// is 0 it blocks without limit (ctx bounds it). A health read that Wait makes
// itself is not interrupted (the Limiter starts no goroutine to abandon it),
// but when ctx has ended by the time it returns, Wait returns ctx's error and
// takes no permit.
func (l *Limiter) Wait(ctx context.Context) error {
	if l == nil || l.src == nil {
		return errZeroLimiter
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := l.lockFresh(false)
	// Reading a slow source may have outlasted ctx: no permit then.
	if err := ctx.Err(); err != nil {
		l.mu.Unlock()
		return err
	}
	if l.rate > 0 && l.head == nil {
		if slot, _ := l.nextSlotLocked(now); !slot.After(now) {
			l.last = slot
			l.mu.Unlock()
			return nil
		}
	}
	w := &waiter{}
	l.pushLocked(w, now)
	l.mu.Unlock()
	return l.wait(ctx, w)
}

// wait blocks w until its slot arrives. Every wake-up (timer, rate change,
// source change, poll) re-reads w.slot under the lock, so a re-timing by
// another goroutine is never missed: it is always followed by a broadcast.
func (l *Limiter) wait(ctx context.Context, w *waiter) error {
	parkedEpoch, wasParked := uint64(0), false
	for {
		now := l.lockFresh(false)
		if wasParked && parkedEpoch == l.epoch {
			l.parked--
		}
		wasParked = false
		if err := ctx.Err(); err != nil {
			// ctx ended while this goroutine read a slow source.
			l.cancelLocked(w)
			l.mu.Unlock()
			return err
		}
		if l.rate > 0 && !w.slot.After(now) {
			l.removeLocked(w)
			if w.slot.After(l.last) {
				l.last = w.slot
			}
			l.mu.Unlock()
			return nil
		}
		deadline := l.deadlineLocked(w)
		if !deadline.IsZero() && !deadline.After(now) {
			// A poll or the end of a recovery hold is due: lockFresh acts on it.
			l.mu.Unlock()
			continue
		}
		// The timer is set in the same critical section that read now and
		// counts the waiter as parked, so once parked is observed the timer
		// exists and measures from the right instant.
		var timer clock.Timer
		var timerC <-chan time.Time
		if !deadline.IsZero() {
			timer = l.clock.NewTimer(deadline.Sub(now))
			timerC = timer.C()
		}
		wake, changed := l.wake, l.changed
		if l.notifier == nil {
			changed = nil
		}
		l.parked++
		parkedEpoch, wasParked = l.epoch, true
		l.mu.Unlock()

		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			l.mu.Lock()
			if parkedEpoch == l.epoch {
				l.parked--
			}
			l.cancelLocked(w)
			l.mu.Unlock()
			return ctx.Err()
		case <-timerC:
		case <-wake:
		case <-changed:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// Rate returns the permits per second in force now, reading the source first
// if it has changed or is due for a poll. 0 means paused.
func (l *Limiter) Rate() float64 {
	if l == nil || l.src == nil {
		return 0
	}
	l.lockFresh(false)
	defer l.mu.Unlock()
	return l.rate
}

// Refresh reads the source now, applies the result and wakes every waiter to
// re-check its slot. Use it for a source that is not a Notifier when the
// caller knows health has changed before the next poll.
func (l *Limiter) Refresh() {
	if l == nil || l.src == nil {
		return
	}
	l.lockFresh(true)
	l.broadcastLocked()
	l.mu.Unlock()
}

// reserve promises the next slot to a caller that cannot be re-timed (When)
// and returns how long until it. ok is false while paused: nothing is
// reserved then.
func (l *Limiter) reserve() (delay time.Duration, ok bool) {
	if l == nil || l.src == nil {
		return 0, false
	}
	now := l.lockFresh(false)
	defer l.mu.Unlock()
	if l.rate <= 0 {
		return 0, false
	}
	l.prunePromisesLocked(now)
	slot, i := l.nextSlotLocked(now)
	l.promises = slices.Insert(l.promises, i, slot)
	return slot.Sub(now), true
}

// lockFresh locks l.mu, first reading the source if it is due (or if force)
// and applying the answer, and returns the time read under the lock. The read
// itself happens outside the lock: a source may be slow.
func (l *Limiter) lockFresh(force bool) time.Time {
	l.mu.Lock()
	now := l.clock.Now()
	l.expireHoldLocked(now)
	if !force && !l.needReadLocked(now) {
		return now
	}
	l.readSeq++
	seq := l.readSeq
	l.mu.Unlock()

	// Take the channel before reading, so that a change landing between the
	// two closes the channel we keep and is read next time.
	var ch <-chan struct{}
	if l.notifier != nil {
		ch = l.notifier.Changed()
	}
	h, err := l.src.Health()
	if err == nil {
		err = h.check() // paused like any source error
	}

	l.mu.Lock()
	now = l.clock.Now()
	if seq > l.appliedSeq { // else a read that started later was applied already
		l.appliedSeq = seq
		l.applyLocked(h, err, ch, now)
	}
	l.expireHoldLocked(now)
	return now
}

func (l *Limiter) needReadLocked(now time.Time) bool {
	if !l.read {
		return true
	}
	if l.notifier != nil && l.changed != nil {
		select {
		case <-l.changed:
			// Also while the source errs: waiters select on this channel,
			// and leaving it closed and unread would spin them.
			return true
		default:
		}
		if l.srcErr == nil {
			return false
		}
	}
	return !now.Before(l.lastRead.Add(l.poll))
}

func (l *Limiter) applyLocked(h Health, err error, ch <-chan struct{}, now time.Time) {
	l.read = true
	l.lastRead = now
	l.changed = ch
	if err != nil {
		if l.srcErr == nil || l.srcErr.Error() != err.Error() {
			l.logger.Error(err, "ratelimit: fleet health unknown; evictions paused until the health source answers")
		}
		l.srcErr = err
		l.setRateLocked(0, now)
		return
	}
	if l.srcErr != nil {
		l.logger.Info("ratelimit: health source answers again", "total", h.Total, "unhealthy", h.Unhealthy)
		l.srcErr = nil
	}
	if l.metrics != nil && (!l.healthKnown || h != l.health) {
		l.metrics.FleetHealth(h.Total, h.Unhealthy)
	}
	l.health, l.healthKnown = h, true

	c := l.cfg.RateFor(h)
	if n := len(l.history); n == 0 || l.history[n-1].rate != c {
		if l.hold <= 0 {
			l.history = l.history[:0]
		}
		l.history = append(l.history, rateChange{at: now, rate: c})
		// A new entry may move the end of the hold: waiters re-read it.
		l.broadcastLocked()
	}
	l.setRateLocked(l.healthRateLocked(now), now)
}

// rateChange is one entry of Limiter.history.
type rateChange struct {
	at   time.Time
	rate float64
}

// healthRateLocked trims history to the hold window ending at now and
// returns the slowest rate in it.
func (l *Limiter) healthRateLocked(now time.Time) float64 {
	start := now.Add(-l.hold)
	i := 0
	for i+1 < len(l.history) && !l.history[i+1].at.After(start) {
		i++ // history[i+1] was already in force at the window's start
	}
	l.history = l.history[i:]
	r := math.Inf(1)
	for _, c := range l.history {
		r = min(r, c.rate)
	}
	return r
}

// holdEndLocked is when the slowest rate in the hold window next drops out
// of it; zero when nothing is held.
func (l *Limiter) holdEndLocked() time.Time {
	if len(l.history) < 2 {
		return time.Time{}
	}
	return l.history[1].at.Add(l.hold)
}

// expireHoldLocked applies a held speed-up once it has lasted l.hold.
func (l *Limiter) expireHoldLocked(now time.Time) {
	if end := l.holdEndLocked(); end.IsZero() || now.Before(end) || l.srcErr != nil {
		return
	}
	l.setRateLocked(l.healthRateLocked(now), now)
}

// setRateLocked puts r in force and re-times the waiters.
func (l *Limiter) setRateLocked(r float64, now time.Time) {
	if l.rateSet && r == l.rate {
		return
	}
	l.rate, l.rateSet = r, true
	if l.metrics != nil {
		l.metrics.EvictionRate(r)
	}
	if r <= 0 {
		// Paused: forget the past so that neither debt nor credit carries
		// over. Promised slots stay: the first waiter after a resume keeps
		// one interval from them, so the bound holds across the pause.
		l.last = time.Time{}
		for w := l.head; w != nil; w = w.next {
			w.slot = time.Time{}
		}
	} else {
		l.interval = intervalFor(r)
		l.retimeLocked(now)
	}
	l.broadcastLocked()
}

// maxInterval keeps slot arithmetic far from time.Time's limits for tiny rates.
const maxInterval = 100 * 365 * 24 * time.Hour

// intervalFor is 1/r rounded up to the nanosecond, so rounding never makes the
// bucket faster than r.
func intervalFor(r float64) time.Duration {
	iv := math.Ceil(float64(time.Second) / r)
	switch {
	case iv < 1:
		return 1
	case iv > float64(maxInterval):
		return maxInterval
	}
	return time.Duration(iv)
}

// retimeLocked gives every waiter, in order, the earliest slot one interval
// after the previous permit (or now) that keeps one interval from every
// promised slot.
func (l *Limiter) retimeLocked(now time.Time) {
	l.prunePromisesLocked(now)
	from := now
	if !l.last.IsZero() {
		from = later(from, l.last.Add(l.interval))
	}
	for w := l.head; w != nil; w = w.next {
		w.slot, _ = l.fitLocked(from)
		from = w.slot.Add(l.interval)
	}
}

// nextSlotLocked is when a new reservation made now is due: the earliest
// slot, not before now, one interval after the last permit taken and after
// every waiter, that keeps one interval from every promised slot. idx is
// where the slot goes in l.promises if it becomes a promise. Newcomers queue
// behind waiters but may fill a gap between promises that a faster rate has
// opened. Only meaningful while rate > 0.
func (l *Limiter) nextSlotLocked(now time.Time) (slot time.Time, idx int) {
	from := now
	if !l.last.IsZero() {
		from = later(from, l.last.Add(l.interval))
	}
	if l.tail != nil {
		from = later(from, l.tail.slot.Add(l.interval))
	}
	return l.fitLocked(from)
}

// fitLocked returns the earliest t ≥ from at least one interval away from
// every promised slot, and the index in l.promises at which t keeps them
// sorted. Promises are sorted, so this is a binary search plus a walk over
// the promises t has to step past.
func (l *Limiter) fitLocked(from time.Time) (time.Time, int) {
	p, iv := l.promises, l.interval
	i := sort.Search(len(p), func(i int) bool { return p[i].After(from.Add(-iv)) })
	t := from
	for ; i < len(p) && p[i].Before(t.Add(iv)); i++ {
		t = later(t, p[i].Add(iv))
	}
	return t, i
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// prunePromisesLocked retires promised slots that have come: they count as
// taken permits from now on.
func (l *Limiter) prunePromisesLocked(now time.Time) {
	i := 0
	for i < len(l.promises) && !l.promises[i].After(now) {
		l.last = later(l.last, l.promises[i])
		i++
	}
	if i == len(l.promises) {
		l.promises = l.promises[:0] // keep the array
	} else if i > 0 {
		l.promises = l.promises[i:]
	}
}

// deadlineLocked is when w must wake up by itself: its slot, the end of a
// recovery hold, or the next poll. Zero: only a channel can wake it.
func (l *Limiter) deadlineLocked(w *waiter) time.Time {
	var d time.Time
	earliest := func(t time.Time) {
		if d.IsZero() || t.Before(d) {
			d = t
		}
	}
	if l.rate > 0 {
		earliest(w.slot)
	}
	if end := l.holdEndLocked(); !end.IsZero() && l.srcErr == nil {
		earliest(end)
	}
	if l.notifier == nil || l.srcErr != nil || l.changed == nil {
		earliest(l.lastRead.Add(l.poll))
	}
	return d
}

func (l *Limiter) pushLocked(w *waiter, now time.Time) {
	if l.rate > 0 {
		w.slot, _ = l.nextSlotLocked(now)
	}
	w.prev = l.tail
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
	l.nWaiters++
}

func (l *Limiter) removeLocked(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.prev, w.next = nil, nil
	l.nWaiters--
}

// cancelLocked removes a waiter whose context ended and gives its slot back:
// each waiter behind it takes the slot of the one ahead, and the last slot
// becomes free for the next reservation.
func (l *Limiter) cancelLocked(w *waiter) {
	moved := w.next != nil
	freed := w.slot
	for e := w.next; e != nil; e = e.next {
		e.slot, freed = freed, e.slot
	}
	l.removeLocked(w)
	if moved {
		l.broadcastLocked()
	}
}

func (l *Limiter) broadcastLocked() {
	close(l.wake)
	l.wake = make(chan struct{})
	l.epoch++
	l.parked = 0
}

// String describes the Limiter's state, for logs.
func (l *Limiter) String() string {
	if l == nil || l.src == nil {
		return "ratelimit.Limiter(unconfigured)"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("ratelimit.Limiter(rate=%g/s, waiters=%d)", l.rate, l.nWaiters)
}

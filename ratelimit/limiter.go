package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"reflect"
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
// # By disruption domain
//
// With Config.DisruptionDomain region, zone or provider, the source must be
// a DomainHealthSource (such as Tracker, fed with SetInDomains) and health
// is judged per domain, as the Kubernetes node lifecycle controller judges
// it per zone. Each domain is in one state, by its own clusters
// (Config.StateFor): FullDisruption when it has clusters and every one is
// faulty; PartialDisruption when its failure rate is above
// UnhealthyClusterThreshold (strictly); Normal otherwise. Its rate
// (Config.DomainRates) is ResourceEvictionRate when Normal or in
// FullDisruption (the domain is gone, its workloads should leave it), and
// when in PartialDisruption SecondaryResourceEvictionRate if the domain has
// more than LargeClusterNumThreshold clusters (strictly), else 0. When every
// domain (at least one) is in FullDisruption, every rate is 0: the control
// plane is more likely cut off than the whole fleet down. A cluster with no
// region (zone, provider) counts in the domain ""; a multi-zone cluster
// counts in each of its zones.
//
// Each domain has a bucket of burst 1 at its rate, and every permit for a
// domain (WaitDomain, TakeDomainAt) takes one slot of its domain's bucket
// and one of a total bucket at ResourceEvictionRate (0 when every domain is
// in FullDisruption), so over any window t in which the rates stay the same
// a domain at rate r gets at most r×t + 1 permits and all domains together
// at most ResourceEvictionRate×t + 1: healthy clusters never take more
// evictions than under the fleet rule. Callers that name no domain (Wait,
// TakeAt, When) are paced by the fleet rule (RateFor of the fleet's Health)
// and take a slot of the total too. A domain's change of state re-times only
// its own callers: the others keep their slots. A source error pauses every
// domain. Callers asking for a domain are not served in arrival order: the
// first to ask once a slot is free gets it. WithRecoveryHold applies to the
// fleet rule only, and NewLimiter rejects it with a disruption domain.
//
// Wait, TakeAt and DynamicRateLimiter.When draw from the same bucket; TakeAt
// is Wait for a simulation that steps time itself. A delay returned by When
// is a promise that cannot be taken back, so a rate change re-times only
// blocked waiters, fitting them around the slots already promised.
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
	// The layers below take the time as an argument and never block:
	// reading the source (source.go), turning health into the rate in force
	// (decide.go) and the bucket (bucket.go). The Limiter reads the clock,
	// holds the lock and blocks.
	clock   clock.WithTicker
	metrics Metrics
	recheck time.Duration // what a DynamicRateLimiter's When returns while paused

	mu       sync.Mutex
	src      reader
	decision decision
	bucket   bucket
	rateSet  bool // the bucket's rate has been decided at least once
	// dom is the domain rule's buckets, nil under the fleet rule. With it,
	// bucket paces the callers that name no domain (Wait, TakeAt, When) by
	// the fleet rule, and every permit also takes a slot of dom.total.
	dom      *domainPacing
	reported float64   // the rate last reported to Metrics.EvictionRate
	holdEnd  time.Time // when the decision's rate next changes by itself
	// wake is closed (and replaced) to make blocked waiters re-read their
	// slot and deadline.
	wake chan struct{}
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
	s := settings{clock: clock.RealClock{}, poll: DefaultPollInterval, recheck: DefaultRecheckDelay}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	errs = append(errs, s.errs...)
	if err := checkDomainMode(cfg, src, s.hold); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	logger := klog.Background()
	if s.logger != nil {
		logger = *s.logger
	}
	notifier, _ := src.(Notifier)
	l := &Limiter{
		clock:    s.clock,
		metrics:  s.metrics,
		recheck:  s.recheck,
		src:      reader{src: src, notifier: notifier, poll: s.poll, logger: logger, metrics: s.metrics},
		decision: newDecision(cfg, s.hold),
		reported: -1,
		wake:     make(chan struct{}),
	}
	if cfg.DisruptionDomain.PerDomain() {
		l.dom = &domainPacing{cfg: cfg}
		l.src.domains = src.(DomainHealthSource) // checked by checkDomainMode
	}
	return l, nil
}

// checkDomainMode rejects what cannot work with a disruption domain: a
// source that does not report health per domain, and a recovery hold (the
// domain rule puts each domain's state in force at once).
func checkDomainMode(cfg Config, src HealthSource, hold time.Duration) error {
	if !cfg.DisruptionDomain.PerDomain() || src == nil {
		return nil
	}
	var errs []error
	if _, ok := src.(DomainHealthSource); !ok {
		errs = append(errs, fmt.Errorf("ratelimit: NewLimiter: --%s=%s needs a health source that reports health per domain "+
			"(a DomainHealthSource, such as Tracker); %T does not", FlagDisruptionDomain, cfg.DisruptionDomain, src))
	}
	if hold > 0 {
		errs = append(errs, fmt.Errorf("ratelimit: NewLimiter: WithRecoveryHold(%v) works with --%s=fleet only, got --%s=%s",
			hold, FlagDisruptionDomain, FlagDisruptionDomain, cfg.DisruptionDomain))
	}
	return errors.Join(errs...)
}

// Wait blocks until the caller may evict one resource, or until ctx ends, in
// which case it returns ctx's error and gives its place back. While the rate
// is 0 it blocks without limit (ctx bounds it). A health read that Wait makes
// itself is not interrupted (the Limiter starts no goroutine to abandon it),
// but when ctx has ended by the time it returns, Wait returns ctx's error and
// takes no permit.
func (l *Limiter) Wait(ctx context.Context) error {
	if l == nil || l.src.src == nil {
		return errZeroLimiter
	}
	if err := ctx.Err(); err != nil {
		return err // before reading the source, which may be slow
	}
	if l.dom != nil {
		return l.poll(ctx, func(now time.Time) (bool, time.Time) {
			if takeAll(now, &l.dom.total, &l.bucket) {
				return true, time.Time{}
			}
			return false, slotAll(now, &l.dom.total, &l.bucket)
		})
	}
	var w *reservation // this caller's place in line, once it has one
	for {
		var (
			err           error
			granted       bool
			timer         clock.Timer
			wake, changed <-chan struct{}
		)
		l.locked(l.clock.Now, func(now time.Time) {
			// Checked under the lock, so also after a slow read of the
			// source that locked made first.
			if err = ctx.Err(); err != nil {
				if w != nil {
					l.cancelLocked(w)
				}
				return
			}
			if w == nil {
				if granted = l.bucket.take(now); granted {
					return
				}
				w = l.bucket.reserve(now)
			} else if granted = l.bucket.due(w, now); granted {
				return
			}
			// The deadline is after now: locked has acted on a due poll and
			// on the end of a hold, and due on a slot that has come.
			if d := l.deadlineLocked(w); !d.IsZero() {
				timer = l.clock.NewTimer(d.Sub(now))
			}
			// Any later change to w's slot or deadline is followed by a
			// broadcast, which closes this wake.
			wake, changed = l.wake, l.src.changed
		})
		if err != nil || granted {
			return err
		}
		sleep(ctx, timer, wake, changed)
	}
}

// Rate returns the permits per second in force now, reading the source first
// if it has changed or is due for a poll. 0 means paused. Under a disruption
// domain (Config.DisruptionDomain) it is the rate of the callers that name no
// domain (Wait, TakeAt, When): the fleet rule's, within the total's cap;
// DomainRates gives each domain's, and Metrics.EvictionRate reports what all
// domains may take together.
func (l *Limiter) Rate() float64 {
	if l == nil || l.src.src == nil {
		return 0
	}
	var r float64
	l.locked(l.clock.Now, func(time.Time) {
		r = l.bucket.rate
		if l.dom != nil {
			r = min(r, l.dom.total.rate)
		}
	})
	return r
}

// Refresh reads the source now, applies the result and wakes every waiter to
// re-check its slot. Use it for a source that is not a Notifier when the
// caller knows health has changed before the next poll.
func (l *Limiter) Refresh() {
	if l == nil || l.src.src == nil {
		return
	}
	l.mu.Lock()
	seq := l.src.begin()
	l.mu.Unlock()
	l.read(seq, l.clock.Now)
}

// promise fixes the next free slot for a caller that cannot be re-timed
// (DynamicRateLimiter.When) and returns how long until it. ok is false while
// paused: nothing is promised then.
func (l *Limiter) promise() (delay time.Duration, ok bool) {
	if l == nil || l.src.src == nil {
		return 0, false
	}
	l.locked(l.clock.Now, func(now time.Time) {
		var slot time.Time
		if l.dom != nil {
			slot, ok = promiseAll(now, &l.dom.total, &l.bucket)
		} else {
			slot, ok = l.bucket.promise(now)
		}
		if ok {
			delay = slot.Sub(now)
		}
	})
	return delay, ok
}

// TakeAt is Wait's step for a caller that keeps time itself, such as a
// simulation that moves a fake clock from one event to the next instead of
// running goroutines: at now, it takes a permit if one is free and reports
// ok. Otherwise it takes nothing and returns when to ask again: the bucket's
// next free slot at the rate in force, the end of a recovery hold, or the
// next poll of a source that is not a Notifier, whichever comes first; the
// zero time while paused with none of these due, when only a change of
// health (a Notifier's, or Refresh) can free a permit. next is when a permit
// may be free, not a promise: another caller may take it first. Callers
// blocked in Wait come first: TakeAt takes nothing while one is in line.
//
// It shares the bucket and the guarantees of Wait. now must not go back
// between calls, and should be the time of the Limiter's clock (WithClock)
// if Wait, Rate or When are called too.
func (l *Limiter) TakeAt(now time.Time) (ok bool, next time.Time) {
	if l == nil || l.src.src == nil {
		return false, time.Time{}
	}
	l.locked(func() time.Time { return now }, func(now time.Time) {
		if l.dom != nil {
			if ok = takeAll(now, &l.dom.total, &l.bucket); !ok {
				next = earliest(slotAll(now, &l.dom.total, &l.bucket), l.src.nextPoll())
			}
			return
		}
		if ok = l.bucket.take(now); ok {
			return
		}
		next = earliest(earliest(l.bucket.nextFree(now), l.holdEnd), l.src.nextPoll())
	})
	return ok, next
}

// locked runs f under the lock with the Limiter brought up to the time at
// returns, having first read the source (outside the lock) if a read was
// due.
func (l *Limiter) locked(at func() time.Time, f func(now time.Time)) {
	for {
		l.mu.Lock()
		now := at()
		if seq, due := l.readDueLocked(now); due {
			l.mu.Unlock()
			l.read(seq, at)
			continue
		}
		f(now)
		l.mu.Unlock()
		return
	}
}

// readDueLocked reports whether the source must be read before acting at
// now; if so it returns the read's number, for the caller to read it after
// releasing the lock. If not, it brings the bucket up to now.
func (l *Limiter) readDueLocked(now time.Time) (seq uint64, due bool) {
	if l.src.due(now) {
		return l.src.begin(), true
	}
	l.advanceLocked(now)
	return 0, false
}

// read reads the source (slow, so outside the lock), applies the answer and
// wakes every waiter to re-check its slot and deadline.
func (l *Limiter) read(seq uint64, at func() time.Time) {
	h, domains, changed, err := l.src.read()
	l.mu.Lock()
	defer l.mu.Unlock()
	now := at()
	if l.src.apply(seq, now, h, changed, err) {
		l.decision.observe(now, h, err)
		if l.dom != nil {
			l.applyDomainsLocked(now, domains, err)
		}
		l.advanceLocked(now)
	}
	l.broadcastLocked()
}

// advanceLocked puts the decision's rate at now in force.
func (l *Limiter) advanceLocked(now time.Time) {
	r, end := l.decision.rate(now)
	changed := !end.Equal(l.holdEnd)
	l.holdEnd = end
	if !l.rateSet || r != l.bucket.rate {
		l.rateSet = true
		l.bucket.setRate(r, now)
		changed = true
	}
	if l.metrics != nil {
		// Under the domain rule, the most the domains may take together.
		if l.dom != nil {
			r = l.dom.totalRate()
		}
		if r != l.reported {
			l.reported = r
			l.metrics.EvictionRate(r)
		}
	}
	if changed {
		l.broadcastLocked()
	}
}

// deadlineLocked is when w must wake up by itself: its slot, the end of a
// recovery hold, or the next poll. Zero: only a channel can wake it.
func (l *Limiter) deadlineLocked(w *reservation) time.Time {
	d := earliest(l.src.nextPoll(), l.holdEnd)
	if l.bucket.rate > 0 {
		d = earliest(d, w.slot)
	}
	return d
}

// earliest is the earlier of two times, the zero time meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// cancelLocked gives the place of a waiter whose context ended back.
func (l *Limiter) cancelLocked(w *reservation) {
	if l.bucket.cancel(w) {
		l.broadcastLocked()
	}
}

func (l *Limiter) broadcastLocked() {
	close(l.wake)
	l.wake = make(chan struct{})
}

// String describes the Limiter's state, for logs.
func (l *Limiter) String() string {
	if l == nil || l.src.src == nil {
		return "ratelimit.Limiter(unconfigured)"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("ratelimit.Limiter(rate=%g/s, waiters=%d)", l.bucket.rate, l.bucket.n)
}

// sleep blocks until ctx ends, timer (if any) fires, or wake or changed is
// closed; a nil changed, for a source that is not a Notifier, never is. It
// stops timer.
func sleep(ctx context.Context, timer clock.Timer, wake, changed <-chan struct{}) {
	var timerC <-chan time.Time
	if timer != nil {
		timerC = timer.C()
		defer timer.Stop()
	}
	select {
	case <-ctx.Done():
	case <-timerC:
	case <-wake:
	case <-changed:
	}
}

package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Limiter paces evictions for the whole fleet: every goroutine, worker and
// queue that shares a Limiter shares its rate, so adding workers never
// multiplies it.
//
// Under the fleet rule the rate in force is cfg.RateFor of the source's
// current Health. With Config.DisruptionDomain region, zone or provider,
// the source must be a DomainHealthSource (such as Tracker, fed with
// SetInDomains) and health is judged per domain, as the Kubernetes node
// lifecycle controller judges it per zone: each domain gets the rate
// Config.DomainRates gives it, and a total, at most ResourceEvictionRate,
// caps them together. The fleet rule is the domain rule with one domain,
// the whole fleet: a Limiter has one bucket per domain (or one for the
// fleet) and one for the total, and every permit takes one from each of
// two. Callers that name no domain (Wait, TakeAt, When) are paced by the
// fleet rule under either rule. Every rate is 0 while the source returns
// an error or an impossible Health (such as more unhealthy clusters than
// clusters), and WithRecoveryHold delays speed-ups under either rule.
//
// Guarantees:
//   - A bucket fills at the rate in force and holds at most one permit; a
//     pause adds nothing. So over any window, however the rate changed or
//     paused inside it, the permits handed out are at most 1 + ∫ rate dt,
//     for each domain (or the fleet) and for the total, whatever the
//     number of callers. Resuming lets a caller through at once only if
//     the bucket still held its permit from before the pause. Delays that
//     DynamicRateLimiter.When returned before a slowdown are the exception:
//     a workqueue cannot be told to take them back.
//   - When the rate changes, blocked callers are re-timed against it at
//     once. A source that is a Notifier (such as Tracker) wakes them the
//     moment its health changes; other sources are polled
//     (WithPollInterval), and Refresh forces a re-read.
//   - A permit from WaitDomain or TakeDomainAt that is not used can be
//     given back, as x/time/rate's Reservation.Cancel gives one: the
//     bucket is left as if it had never been taken, provided no permit was
//     taken from it since. A waiter whose context ends takes nothing.
//
// Waiters are not served in arrival order: when a permit becomes free, the
// first blocked caller to look for it gets it.
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
	// reading the source (source.go), the rule (rule.go), the rates in force
	// over time (decide.go) and the buckets (bucket.go). The Limiter reads
	// the clock, holds the lock and blocks.
	clock     clock.WithTicker
	metrics   Metrics
	recheck   time.Duration // what a DynamicRateLimiter's When returns while paused
	perDomain bool

	mu       sync.Mutex
	src      reader
	decision decision
	buckets  buckets
	inForce  rates     // the rates the buckets have
	dirty    bool      // a read was applied since the rates were put in force
	holdEnd  time.Time // when a rate in force next changes by itself
	reported float64   // the rate last reported to Metrics.EvictionRate
	// wake is closed (and replaced) to make blocked waiters look again.
	wake chan struct{}
}

var errZeroLimiter = errors.New("ratelimit: Limiter was not created by NewLimiter")

// NewLimiter returns a Limiter whose rates follow cfg's rule on src's health.
// It validates cfg and the options, and neither reads src nor starts
// anything: the first Wait, When or Rate reads the source. Under a domain
// rule src must report health per domain: a Tracker made by
// NewInformerSource without WithDomains, or one fed with Set rather than
// SetInDomains, is refused.
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
	} else if err := checkDomainSource(cfg, src); err != nil {
		errs = append(errs, err)
	}
	s := settings{clock: clock.RealClock{}, poll: DefaultPollInterval, recheck: DefaultRecheckDelay}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	if err := errors.Join(append(errs, s.errs...)...); err != nil {
		return nil, err
	}
	logger := klog.Background()
	if s.logger != nil {
		logger = *s.logger
	}
	notifier, _ := src.(Notifier)
	l := &Limiter{
		clock:     s.clock,
		metrics:   s.metrics,
		recheck:   s.recheck,
		perDomain: cfg.DisruptionDomain.PerDomain(),
		src:       reader{src: src, notifier: notifier, poll: s.poll, logger: logger, metrics: s.metrics},
		decision:  newDecision(cfg, s.hold),
		reported:  -1,
		wake:      make(chan struct{}),
	}
	if l.perDomain {
		l.src.domains = src.(DomainHealthSource) // checked by checkDomainSource
	}
	return l, nil
}

// checkDomainSource rejects, under a domain rule, a source that cannot say
// which domain each cluster is in: every cluster would count in one domain,
// and permits asked for the others would never come.
func checkDomainSource(cfg Config, src HealthSource) error {
	if !cfg.DisruptionDomain.PerDomain() {
		return nil
	}
	if _, ok := src.(DomainHealthSource); !ok {
		return fmt.Errorf("ratelimit: NewLimiter: --%s=%s needs a health source that reports health per domain "+
			"(a DomainHealthSource, such as Tracker); %T does not", FlagDisruptionDomain, cfg.DisruptionDomain, src)
	}
	if t, ok := src.(*Tracker); ok {
		if err := t.domainsErr(); err != nil {
			return fmt.Errorf("ratelimit: NewLimiter: --%s=%s: %w", FlagDisruptionDomain, cfg.DisruptionDomain, err)
		}
	}
	return nil
}

// Wait blocks until the caller may evict one resource, or until ctx ends, in
// which case it returns ctx's error and takes nothing. It names no domain:
// its permit is the fleet's, under either rule. While the rate is 0 it
// blocks without limit (ctx bounds it). A health read that Wait makes itself
// is not interrupted (the Limiter starts no goroutine to abandon it), but
// when ctx has ended by the time it returns, Wait returns ctx's error and
// takes no permit.
func (l *Limiter) Wait(ctx context.Context) error {
	_, err := l.wait(ctx, nil)
	return err
}

// WaitDomain is Wait for a permit for one of the domains that domains
// lists, in the order the caller prefers them; it returns that domain and a
// function that gives the permit back if the caller does not use it (say,
// the item it was for has gone, or was abandoned). Under the fleet rule
// every domain shares the fleet's bucket, and the domain returned is the
// first listed. A domain the health source does not report has no permit.
//
// domains is called, with the Limiter's lock held, each time WaitDomain
// looks for a permit: on its first try and whenever the rate, the health or
// a bucket changes. So a caller whose clusters move between domains (an
// eviction queue reading Config.DomainOf) is asked again after the move.
// It must be quick and must not call the Limiter; an empty list waits for
// the next change.
func (l *Limiter) WaitDomain(ctx context.Context, domains func() []string) (domain string, giveBack func(), err error) {
	if domains == nil {
		return "", nil, errors.New("ratelimit: WaitDomain: domains is nil")
	}
	p, err := l.wait(ctx, domains)
	if err != nil {
		return "", nil, err
	}
	return p.domain, l.giveBackFunc(p), nil
}

// wait is Wait and WaitDomain: domains nil names no domain.
func (l *Limiter) wait(ctx context.Context, domains func() []string) (p permit, err error) {
	if l == nil || l.src.src == nil {
		return p, errZeroLimiter
	}
	if err := ctx.Err(); err != nil {
		return p, err // before reading the source, which may be slow
	}
	for {
		var (
			ok            bool
			timer         clock.Timer
			wake, changed <-chan struct{}
		)
		l.locked(l.clock.Now, func(now time.Time) {
			// Checked under the lock, so also after a slow read of the
			// source that locked made first.
			if err = ctx.Err(); err != nil {
				return
			}
			var next time.Time
			if domains == nil {
				p, ok, next = l.buckets.take(now, nil, l.perDomain, false)
			} else if ds := domains(); len(ds) > 0 {
				p, ok, next = l.buckets.take(now, ds, l.perDomain, false)
			}
			if ok {
				return
			}
			if d := l.deadlineLocked(next); !d.IsZero() {
				timer = l.clock.NewTimer(d.Sub(now))
			}
			// Any later change of a rate or a bucket's level is followed
			// by a broadcast, which closes this wake.
			wake, changed = l.wake, l.src.changed
		})
		if err != nil || ok {
			return p, err
		}
		sleep(ctx, timer, wake, changed)
	}
}

// giveBackFunc returns the function that gives p back, once.
func (l *Limiter) giveBackFunc(p permit) func() {
	done := false
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !done && p.giveBack() {
			l.broadcastLocked()
		}
		done = true
	}
}

// TakeAt is Wait's step for a caller that keeps time itself, such as a
// simulation that moves a fake clock from one event to the next instead of
// running goroutines: at now, it takes a permit if one is free and reports
// ok. Otherwise it takes nothing and returns when to ask again: when the
// bucket next holds a permit at the rate in force, the end of a recovery
// hold, or the next poll of a source that is not a Notifier, whichever comes
// first; the zero time while paused with none of these due, when only a
// change of health (a Notifier's, or Refresh) can free a permit. next is
// when a permit may be free, not a promise: another caller may take it
// first.
//
// It shares the buckets and the guarantees of Wait. now must not go back
// between calls, and should be the time of the Limiter's clock (WithClock)
// if Wait, Rate or When are called too.
func (l *Limiter) TakeAt(now time.Time) (ok bool, next time.Time) {
	_, _, ok, next = l.takeAt(now, nil, false)
	return ok, next
}

// TakeDomainAt is WaitDomain's step, as TakeAt is Wait's: at now it takes
// a permit for the first of domains that has one free and returns that
// domain and the function that gives it back unused, or takes nothing and
// returns when to ask again (zero: only a change of health can free one).
func (l *Limiter) TakeDomainAt(now time.Time, domains []string) (domain string, giveBack func(), ok bool, next time.Time) {
	if len(domains) == 0 {
		return "", nil, false, time.Time{}
	}
	return l.takeAt(now, domains, true)
}

func (l *Limiter) takeAt(now time.Time, domains []string, named bool) (domain string, giveBack func(), ok bool, next time.Time) {
	if l == nil || l.src.src == nil {
		return "", nil, false, time.Time{}
	}
	var p permit
	l.locked(func() time.Time { return now }, func(now time.Time) {
		if p, ok, next = l.buckets.take(now, domains, l.perDomain, false); ok {
			next = time.Time{}
		} else {
			next = l.deadlineLocked(next)
		}
	})
	if ok && named {
		return p.domain, l.giveBackFunc(p), true, time.Time{}
	}
	return "", nil, ok, next
}

// promise takes the fleet's next permit ahead of time for a caller that
// cannot be re-timed (DynamicRateLimiter.When) and returns how long until
// it is due. ok is false while paused: nothing is promised then.
func (l *Limiter) promise() (delay time.Duration, ok bool) {
	if l == nil || l.src.src == nil {
		return 0, false
	}
	l.locked(l.clock.Now, func(now time.Time) {
		var due time.Time
		if _, ok, due = l.buckets.take(now, nil, l.perDomain, true); ok {
			delay = due.Sub(now)
		}
	})
	return delay, ok
}

// Rate returns the permits per second in force now for the callers that
// name no domain (Wait, TakeAt, When), reading the source first if it has
// changed or is due for a poll. 0 means paused. Under a domain rule it is
// the fleet rule's rate within the total's cap; DomainRates gives each
// domain's, and Metrics.EvictionRate reports what all domains may take
// together.
func (l *Limiter) Rate() float64 {
	if l == nil || l.src.src == nil {
		return 0
	}
	var r float64
	l.locked(l.clock.Now, func(time.Time) { r = min(l.inForce.fleet, l.inForce.total) })
	return r
}

// PacesByDomain reports whether the Limiter's Config has a disruption
// domain (region, zone or provider), so that a permit's rate depends on the
// domain it is asked for (WaitDomain, TakeDomainAt).
func (l *Limiter) PacesByDomain() bool { return l != nil && l.perDomain }

// DomainRates returns each domain's state and rate in force now, reading
// the source first if it is due; nil under the fleet rule.
func (l *Limiter) DomainRates() map[string]DomainRate {
	if l == nil || !l.perDomain {
		return nil
	}
	var rates map[string]DomainRate
	l.locked(l.clock.Now, func(time.Time) { rates = maps.Clone(l.inForce.domains) })
	return rates
}

// Refresh reads the source now, applies the result and wakes every waiter to
// look again. Use it for a source that is not a Notifier when the caller
// knows health has changed before the next poll.
func (l *Limiter) Refresh() {
	if l == nil || l.src.src == nil {
		return
	}
	l.mu.Lock()
	seq := l.src.begin()
	l.mu.Unlock()
	l.read(seq, l.clock.Now)
}

// locked runs f under the lock with the Limiter brought up to the time at
// returns, having first read the source (outside the lock) if a read was
// due.
func (l *Limiter) locked(at func() time.Time, f func(now time.Time)) {
	for {
		l.mu.Lock()
		now := at()
		if l.src.due(now) {
			seq := l.src.begin()
			l.mu.Unlock()
			l.read(seq, at)
			continue
		}
		l.advanceLocked(now)
		f(now)
		l.mu.Unlock()
		return
	}
}

// read reads the source (slow, so outside the lock) and applies the answer,
// which wakes every waiter to look again.
func (l *Limiter) read(seq uint64, at func() time.Time) {
	h, domains, changed, err := l.src.read()
	l.mu.Lock()
	defer l.mu.Unlock()
	now := at()
	if l.src.apply(seq, now, h, changed, err) {
		l.decision.observe(now, h, domains, err)
		l.dirty = true
		l.advanceLocked(now)
	}
}

// advanceLocked puts the rates in force at now in the buckets, when a read
// or the end of a hold may have changed them.
func (l *Limiter) advanceLocked(now time.Time) {
	if !l.dirty && (l.holdEnd.IsZero() || now.Before(l.holdEnd)) {
		return
	}
	old := l.inForce
	l.inForce, l.holdEnd = l.decision.inForce(now)
	l.dirty = false
	l.buckets.apply(l.inForce, now)
	l.report(old.domains)
	l.broadcastLocked()
}

// report tells Metrics what changed since the rates in force were old.
func (l *Limiter) report(old map[string]DomainRate) {
	if l.metrics == nil {
		return
	}
	r := min(l.inForce.fleet, l.inForce.total)
	if l.perDomain { // the most the domains may take together
		sum := 0.0
		for _, dr := range l.inForce.domains {
			sum += dr.Rate
		}
		r = min(sum, l.inForce.total)
	}
	if r != l.reported {
		l.reported = r
		l.metrics.EvictionRate(r)
	}
	dm, _ := l.metrics.(DomainMetrics)
	if dm == nil {
		return
	}
	for d := range old {
		if _, ok := l.inForce.domains[d]; !ok {
			dm.DomainRemoved(d)
		}
	}
	for d, dr := range l.inForce.domains {
		if o, ok := old[d]; !ok || o != dr {
			dm.DomainRate(d, dr.State.String(), dr.Rate)
		}
	}
}

// deadlineLocked is when a caller that found no permit must look again by
// itself: next (when a bucket may hold one), the end of a recovery hold or
// the next poll. Zero: only a channel can wake it.
func (l *Limiter) deadlineLocked(next time.Time) time.Time {
	return earliest(earliest(next, l.holdEnd), l.src.nextPoll())
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
	return fmt.Sprintf("ratelimit.Limiter(rate=%g/s)", min(l.inForce.fleet, l.inForce.total))
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

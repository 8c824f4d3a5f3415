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
// queue sharing a Limiter shares its rate.
//
// It has a bucket for the total, one for the fleet and, with
// Config.DisruptionDomain region, zone or provider, one per domain, as the
// Kubernetes node lifecycle controller judges health per zone (a domain
// rule needs a DomainHealthSource, such as a Tracker fed with SetInDomains).
// A permit takes one from the total and one from its domain's bucket, or
// the fleet's under the fleet rule and for callers naming no domain (Wait,
// TakeAt, When). The rule sets each bucket's rate from the source's health;
// every rate is 0 while the source fails, and WithRecoveryHold delays
// speed-ups. A failure storm, much of the fleet turning faulty at once
// (Config.StormThreshold), holds every rate at 0 for Config.StormConfirm,
// until the clusters recover or ConfirmStorm; StormHold says whether one
// is on, and it is logged when it starts and ends.
//
// Guarantees:
//   - A bucket fills at the rate in force and holds at most one permit; a
//     pause (a source error, a storm's hold) adds nothing. So over any window, however the rate changed or
//     paused inside it, the permits handed out are at most 1 + ∫ rate dt,
//     per bucket, whatever the number of callers, and resuming lets a
//     caller through at once only if the bucket held its permit before the
//     pause. The exception is a delay DynamicRateLimiter.When returned
//     before a slowdown: a workqueue cannot be told to take it back.
//   - A rate change re-times blocked callers at once: a Notifier source
//     (such as Tracker) wakes them, other sources are polled
//     (WithPollInterval), and Refresh forces a read.
//   - A permit from WaitDomain or TakeDomainAt is a reservation, as
//     x/time/rate's Reserve makes one: the caller names the domains it
//     wants as a plain list, then chooses its work, then uses the permit or
//     gives it back, as Reservation.Cancel does: the bucket is left as if it
//     had never been taken, if none was taken after it. A waiter whose
//     context ends takes nothing. Waiters are not served in arrival order:
//     the first to look once a permit is free gets it.
//   - The Limiter calls nothing of its callers, and its lock is held for
//     time proportional to the domains a caller lists (O(1) per permit,
//     whatever the number of clusters or items behind them); slow work,
//     reading the source, is done outside it.
//
// The Limiter starts no goroutine: callers read the source themselves (its
// Changed channel closed, a poll due, or Refresh), and blocked callers
// select on their context, a timer of the clock, Changed and the Limiter's
// broadcast. Source errors are logged once each, and once when they end.
//
// A Limiter is safe for concurrent use. Create it with NewLimiter; a nil or
// zero Limiter hands out no permits: its Wait returns an error, its Rate is 0
// and DynamicRateLimiter over it always returns the re-check delay.
type Limiter struct {
	// The layers below take the time and never block: the source
	// (source.go), the rule (rule.go), the rates over time (decide.go) and
	// the buckets (bucket.go).
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
	storming bool      // a failure storm's hold is in force
	// wake is closed (and replaced) to make blocked waiters look again.
	wake chan struct{}
}

var errZeroLimiter = errors.New("ratelimit: Limiter was not created by NewLimiter")

// NewLimiter returns a Limiter whose rates follow cfg's rule on src's
// health, after validating cfg and the options; it neither reads src nor
// starts anything. Under a domain rule, a Tracker that knows no domains
// (from NewInformerSource without WithDomains, or fed with Set) is refused.
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
	s := settings{clock: clock.RealClock{}, poll: DefaultPollInterval, recheck: DefaultRecheckDelay, logger: klog.Background()}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	if err := errors.Join(append(errs, s.errs...)...); err != nil {
		return nil, err
	}
	notifier, _ := src.(Notifier)
	l := &Limiter{
		clock:     s.clock,
		metrics:   s.metrics,
		recheck:   s.recheck,
		perDomain: cfg.DisruptionDomain.PerDomain(),
		src:       reader{src: src, notifier: notifier, poll: s.poll, logger: s.logger, metrics: s.metrics},
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
// which domain each cluster is in: permits asked for them would never come.
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

// Wait blocks until the caller may evict one resource (a permit of the
// fleet's bucket), or until ctx ends, when it returns ctx's error and takes
// nothing, also if ctx ends during a health read Wait makes itself (which
// is not interrupted: the Limiter starts no goroutine to abandon it).
func (l *Limiter) Wait(ctx context.Context) error {
	_, err := l.wait(ctx, nil)
	return err
}

// WaitDomain is Wait for a permit for one of the domains listed, the first
// preferred: a reservation, as x/time/rate's Reserve is one. It returns the
// domain whose permit it took and a function that gives the permit back
// unused, as Reservation.Cancel does (the caller's item has gone, or it
// was abandoned). Under the fleet rule every domain shares the fleet's
// bucket and the first listed is returned. A domain the source does not
// report has no permit; an empty list is an error.
//
// domains is a plain value, read under the Limiter's lock in time
// proportional to its length, never a callback: the Limiter calls nothing of
// its caller. A caller whose list changes while it waits (an eviction queue
// whose domains gained or lost pending items) ends the wait through ctx and
// asks again with the new list.
func (l *Limiter) WaitDomain(ctx context.Context, domains []string) (domain string, giveBack func(), err error) {
	if len(domains) == 0 {
		return "", nil, errors.New("ratelimit: WaitDomain: no domain listed")
	}
	p, err := l.wait(ctx, domains)
	if err != nil {
		return "", nil, err
	}
	return p.domain, l.giveBackFunc(p), nil
}

// wait is Wait and WaitDomain: domains nil names no domain.
func (l *Limiter) wait(ctx context.Context, domains []string) (p permit, err error) {
	if l == nil || l.src.src == nil {
		return p, errZeroLimiter
	}
	if err := ctx.Err(); err != nil {
		return p, err // before reading the source, which may be slow
	}
	for {
		now := l.lockAt(l.clock.Now)
		// Checked under the lock, so also after a slow read of the source.
		if err = ctx.Err(); err != nil {
			l.mu.Unlock()
			return p, err
		}
		var ok bool
		var next time.Time
		if p, ok, next = l.takeLocked(now, domains, false); ok {
			l.mu.Unlock()
			return p, nil
		}
		var timer clock.Timer
		if !next.IsZero() {
			timer = l.clock.NewTimer(next.Sub(now))
		}
		// Any later change of a rate or a bucket's level is followed by a
		// broadcast, which closes this wake.
		wake, changed := l.wake, l.src.changed
		l.mu.Unlock()
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
// simulation moving a fake clock: at now it takes a permit if one is free,
// or returns when to ask again (when the bucket may hold one, a hold ends or
// a poll is due; zero: only a change of health can help), which another
// caller may take first. now must not go back, and should be the Limiter's
// clock's if Wait, Rate or When are called too.
func (l *Limiter) TakeAt(now time.Time) (ok bool, next time.Time) {
	_, ok, next = l.takeAt(func() time.Time { return now }, nil, false)
	return ok, next
}

// TakeDomainAt is WaitDomain's step, as TakeAt is Wait's: it takes a
// permit for the first of domains that has one free and returns that domain
// and the function that gives it back, or when to ask again.
func (l *Limiter) TakeDomainAt(now time.Time, domains []string) (domain string, giveBack func(), ok bool, next time.Time) {
	if len(domains) == 0 {
		return "", nil, false, time.Time{}
	}
	p, ok, next := l.takeAt(func() time.Time { return now }, domains, false)
	if !ok {
		return "", nil, false, next
	}
	return p.domain, l.giveBackFunc(p), true, time.Time{}
}

// promise takes the fleet's next permit ahead of time for a caller that
// cannot be re-timed (DynamicRateLimiter.When) and returns how long until
// it is due; nothing while paused.
func (l *Limiter) promise() (delay time.Duration, ok bool) {
	var now time.Time
	_, ok, due := l.takeAt(func() time.Time { now = l.clock.Now(); return now }, nil, true)
	return due.Sub(now), ok
}

// takeAt takes a permit (ahead: a promise) at the time at returns; next is
// when it is due, or when to ask again.
func (l *Limiter) takeAt(at func() time.Time, domains []string, ahead bool) (p permit, ok bool, next time.Time) {
	if l == nil || l.src.src == nil {
		return p, false, time.Time{}
	}
	now := l.lockAt(at)
	defer l.mu.Unlock()
	p, ok, next = l.takeLocked(now, domains, ahead)
	return p, ok, next
}

// takeLocked takes a permit at now, or returns when to look again (zero:
// only a channel can wake the caller).
func (l *Limiter) takeLocked(now time.Time, domains []string, ahead bool) (p permit, ok bool, next time.Time) {
	p, ok, at := l.buckets.take(now, domains, l.perDomain, ahead)
	switch {
	case !ok:
		next = l.deadlineLocked(unixTime(at))
	case ahead:
		next = unixTime(at)
	}
	return p, ok, next
}

// Rate returns the permits per second in force now for the callers that
// name no domain (Wait, TakeAt, When), reading the source first if due; 0
// means paused. DomainRates gives each domain's, and Metrics.EvictionRate
// what all domains may take together.
func (l *Limiter) Rate() float64 {
	if l == nil || l.src.src == nil {
		return 0
	}
	l.lockAt(l.clock.Now)
	defer l.mu.Unlock()
	return min(l.inForce.fleet, l.inForce.total)
}

// PacesByDomain reports whether the Limiter's Config has a disruption
// domain, so that a permit's rate depends on the domain asked for.
func (l *Limiter) PacesByDomain() bool { return l != nil && l.perDomain }

// DomainRates returns each domain's state and rate in force now, reading
// the source first if it is due; nil under the fleet rule.
func (l *Limiter) DomainRates() map[string]DomainRate {
	if l == nil || !l.perDomain {
		return nil
	}
	l.lockAt(l.clock.Now)
	defer l.mu.Unlock()
	return maps.Clone(l.inForce.domains)
}

// Refresh reads the source now and wakes every waiter to look again, for a
// source that is not a Notifier when health changed before the next poll.
func (l *Limiter) Refresh() {
	if l == nil || l.src.src == nil {
		return
	}
	l.mu.Lock()
	seq := l.src.begin()
	l.mu.Unlock()
	l.read(seq, l.clock.Now)
}

// lockAt locks the Limiter and brings it up to the time at returns, which
// it returns, first reading the source (outside the lock) if due.
func (l *Limiter) lockAt(at func() time.Time) time.Time {
	for {
		l.mu.Lock()
		now := at()
		if !l.src.due(now) {
			l.advanceLocked(now)
			return now
		}
		seq := l.src.begin()
		l.mu.Unlock()
		l.read(seq, at)
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
// or a hold's end may have changed them, and wakes the waiters.
func (l *Limiter) advanceLocked(now time.Time) {
	if !l.dirty && (l.holdEnd.IsZero() || now.Before(l.holdEnd)) {
		return
	}
	old := l.inForce
	l.inForce, l.holdEnd = l.decision.inForce(now)
	l.dirty = false
	l.buckets.apply(l.inForce, now)
	l.report(old.domains)
	l.reportStorm()
	l.broadcastLocked()
}

// ConfirmStorm ends a failure storm's hold (Config.StormThreshold) now, as
// an operator who has confirmed the failures are real asks: the rule's rates
// apply at once and waiters look again. It reports whether a hold was on;
// the next storm holds again.
func (l *Limiter) ConfirmStorm() bool {
	if l == nil || l.src.src == nil {
		return false
	}
	now := l.lockAt(l.clock.Now)
	defer l.mu.Unlock()
	if !l.decision.confirmStorm(now) {
		return false
	}
	l.dirty = true
	l.advanceLocked(now)
	return true
}

// StormHold reports whether a failure storm holds evictions now, reading
// the source first if it is due.
func (l *Limiter) StormHold() bool {
	if l == nil || l.src.src == nil {
		return false
	}
	l.lockAt(l.clock.Now)
	defer l.mu.Unlock()
	return l.storming
}

// reportStorm logs a storm's hold starting or ending and tells
// StormMetrics.
func (l *Limiter) reportStorm() {
	if l.inForce.storm == l.storming {
		return
	}
	l.storming = l.inForce.storm
	st := &l.decision.storm
	if l.storming {
		l.src.logger.Info("Failure storm: evictions hold until confirmed, the clusters recover or the hold passes",
			"faultyBefore", st.baseline, "threshold", st.threshold, "window", st.window, "until", st.until())
	} else {
		l.src.logger.Info("Failure storm hold ended; the rate rule applies", "reason", string(st.ended))
	}
	if sm, ok := l.metrics.(StormMetrics); ok {
		sm.StormHold(l.storming)
	}
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

// deadlineLocked is the earliest of next, the end of a recovery hold and
// the next poll.
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

package ratelimit

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Metrics receives what a Limiter observes. Calls happen only when a value
// changes, never per Wait, and are made with the Limiter's lock held so that
// they arrive in order: implementations must be quick (a gauge Set) and must
// not call back into the Limiter. Package metrics implements it with
// Prometheus.
type Metrics interface {
	// FleetHealth reports the fleet's size and faulty count
	// (cluster_fault_num, cluster_failure_rate).
	FleetHealth(total, faulty int)
	// EvictionRate reports the permits per second now in force, 0 while
	// paused (eviction_rate).
	EvictionRate(perSecond float64)
}

// Option configures a Limiter.
type Option func(*settings)

type settings struct {
	clock   clock.WithTicker
	metrics Metrics
	poll    time.Duration
	hold    time.Duration
	recheck time.Duration
	logger  *klog.Logger
	errs    []error
}

// DefaultPollInterval is how often a Limiter re-reads a HealthSource that is
// not a Notifier, or one that has returned an error.
const DefaultPollInterval = time.Second

// WithClock sets the clock the Limiter reads and sets timers on; tests pass a
// k8s.io/utils/clock/testing.FakeClock. Default: the real clock.
func WithClock(c clock.WithTicker) Option {
	return func(s *settings) {
		if c == nil {
			s.errs = append(s.errs, errors.New("ratelimit: WithClock: clock is nil"))
			return
		}
		s.clock = c
	}
}

// WithMetrics reports fleet health and the rate in force to m. nil: none.
func WithMetrics(m Metrics) Option {
	return func(s *settings) { s.metrics = m }
}

// WithPollInterval sets how often a HealthSource that is not a Notifier is
// re-read, and how often any source is retried after an error. Default 1s.
func WithPollInterval(d time.Duration) Option {
	return func(s *settings) {
		if d <= 0 {
			s.errs = append(s.errs, fmt.Errorf("ratelimit: WithPollInterval: interval must be positive, got %v", d))
			return
		}
		s.poll = d
	}
}

// WithRecoveryHold keeps the slower rate after the fleet's health improves
// until the improvement has lasted d, so that a fleet flapping around a
// threshold does not flap the eviction rate. Getting worse always applies at
// once. Precisely, the rate in force is the slowest rate the rule gave over
// the last d. Source errors do not count as health: while the source errs
// the Limiter is paused, and its first answer is held only if faster than a
// rate seen within d. A change is timed from when the Limiter sees it: at
// once while anyone waits (a Notifier wakes them), otherwise at the next
// Wait, When or Rate. Default 0: off.
func WithRecoveryHold(d time.Duration) Option {
	return func(s *settings) {
		if d < 0 {
			s.errs = append(s.errs, fmt.Errorf("ratelimit: WithRecoveryHold: hold must not be negative, got %v", d))
			return
		}
		s.hold = d
	}
}

// DefaultRecheckDelay is what DynamicRateLimiter.When returns while the
// Limiter is paused, unless WithRecheckDelay says otherwise.
const DefaultRecheckDelay = 30 * time.Second

// WithRecheckDelay sets the delay a DynamicRateLimiter over this Limiter
// returns from When while the Limiter is paused, so that the item comes back
// and asks again. It must be positive (a zero delay would spin the
// workqueue). Default DefaultRecheckDelay (30s).
func WithRecheckDelay(d time.Duration) Option {
	return func(s *settings) {
		if d <= 0 {
			s.errs = append(s.errs, fmt.Errorf("ratelimit: WithRecheckDelay: delay must be positive, got %v", d))
			return
		}
		s.recheck = d
	}
}

// WithLogger sets where the Limiter logs health-source errors and their end.
// Default: klog.Background().
func WithLogger(l klog.Logger) Option {
	return func(s *settings) { s.logger = &l }
}

// DomainMetrics is optionally implemented by a Metrics given to a Limiter
// whose Config has a disruption domain; package metrics implements it.
// Like Metrics, it is called with the Limiter's lock held and only on
// change.
type DomainMetrics interface {
	// DomainRate reports a domain's state (DisruptionState.String:
	// "Normal", "PartialDisruption", "FullDisruption") and the permits per
	// second its evictions get (0 while paused). The state is a string so
	// that an implementation need not import this package.
	DomainRate(domain, state string, perSecond float64)
	// DomainRemoved reports that a domain has no cluster any more.
	DomainRemoved(domain string)
}

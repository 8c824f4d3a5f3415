package ratelimit

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Metrics receives what a Limiter observes, only when a value changes and
// with the Limiter's lock held, so in order: implementations must be quick
// and must not call the Limiter. Package metrics implements it.
type Metrics interface {
	// FleetHealth reports the fleet's size and faulty count
	// (cluster_fault_num, cluster_failure_rate).
	FleetHealth(total, faulty int)
	// EvictionRate reports the permits per second in force (eviction_rate).
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
	logger  klog.Logger
	errs    []error
}

// DefaultPollInterval is how often a source that is not a Notifier is read.
const DefaultPollInterval = time.Second

// WithClock sets the Limiter's clock. Default: the real clock.
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

// WithPollInterval sets how often a source that is not a Notifier, or failed,
// is read. Default 1s.
func WithPollInterval(d time.Duration) Option {
	return func(s *settings) {
		if d <= 0 {
			s.errs = append(s.errs, fmt.Errorf("ratelimit: WithPollInterval: interval must be positive, got %v", d))
			return
		}
		s.poll = d
	}
}

// WithRecoveryHold keeps the slower rate after health improves until the
// improvement has lasted d, so that health flapping around a threshold does
// not flap the rate; getting worse applies at once. Precisely, each bucket's
// rate in force (the fleet's, the total's, each domain's) is the slowest the
// rule gave it over the last d. Source errors are not health: they pause,
// and the first answer after is held only if faster than a rate seen within
// d. A change is timed from when the Limiter sees it. Default 0: off.
func WithRecoveryHold(d time.Duration) Option {
	return func(s *settings) {
		if d < 0 {
			s.errs = append(s.errs, fmt.Errorf("ratelimit: WithRecoveryHold: hold must not be negative, got %v", d))
			return
		}
		s.hold = d
	}
}

// DefaultRecheckDelay is what DynamicRateLimiter.When returns while paused.
const DefaultRecheckDelay = 30 * time.Second

// WithRecheckDelay sets what DynamicRateLimiter.When returns while paused,
// for the item to ask again; positive (0 would spin the workqueue). Default
// DefaultRecheckDelay.
func WithRecheckDelay(d time.Duration) Option {
	return func(s *settings) {
		if d <= 0 {
			s.errs = append(s.errs, fmt.Errorf("ratelimit: WithRecheckDelay: delay must be positive, got %v", d))
			return
		}
		s.recheck = d
	}
}

// WithLogger sets where source errors are logged. Default:
// klog.Background().
func WithLogger(l klog.Logger) Option {
	return func(s *settings) { s.logger = l }
}

// DomainMetrics is optionally implemented by a Metrics given to a Limiter
// with a disruption domain, and called as Metrics is; package metrics
// implements it.
type DomainMetrics interface {
	// DomainRate reports a domain's state (DisruptionState.String, so that
	// an implementation need not import this package) and its rate.
	DomainRate(domain, state string, perSecond float64)
	// DomainRemoved reports that a domain has no cluster any more.
	DomainRemoved(domain string)
}

// StormMetrics is optionally implemented by a Metrics given to a Limiter,
// and called as Metrics is; package metrics implements it.
type StormMetrics interface {
	// StormHold reports that a failure storm's hold (Config.StormThreshold)
	// started (true) or ended (false).
	StormHold(holding bool)
}

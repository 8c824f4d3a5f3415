package ratelimit

import (
	"fmt"
	"time"

	"k8s.io/klog/v2"
)

// reader keeps a Limiter's account of its HealthSource: when it last read
// it, what it answered, and so when the next read is due. It reads no clock.
// A read is made outside the Limiter's lock (a source may be slow) and
// numbered, so that a slow read never overwrites a newer answer.
type reader struct {
	src      HealthSource
	notifier Notifier           // src, when it is one
	domains  DomainHealthSource // src under a domain rule, else nil
	poll     time.Duration
	logger   klog.Logger
	metrics  Metrics

	begun, applied uint64 // read numbers
	lastRead       time.Time
	// changed is the source's Changed channel as of the last applied read.
	changed     <-chan struct{}
	err         error
	health      Health
	healthKnown bool
}

// due reports whether the source must be read before acting at now.
func (s *reader) due(now time.Time) bool {
	if s.applied == 0 {
		return true
	}
	if s.notifier != nil && s.changed != nil {
		select {
		case <-s.changed:
			// Also while it errs: a closed channel left unread spins waiters.
			return true
		default:
		}
	}
	next := s.nextPoll()
	return !next.IsZero() && !now.Before(next)
}

// nextPoll is when the source must be read again, unless Changed tells.
func (s *reader) nextPoll() time.Time {
	if s.notifier != nil && s.changed != nil && s.err == nil {
		return time.Time{}
	}
	return s.lastRead.Add(s.poll)
}

// begin numbers a read about to be made.
func (s *reader) begin() uint64 {
	s.begun++
	return s.begun
}

// read asks the source for its health; it touches no reader state, so runs
// without the Limiter's lock.
func (s *reader) read() (h Health, domains map[string]Health, changed <-chan struct{}, err error) {
	// The channel first: a change landing before the read closes it.
	if s.notifier != nil {
		changed = s.notifier.Changed()
	}
	h, err = s.src.Health()
	if err == nil {
		err = h.check() // paused like any source error
	}
	if err == nil && s.domains != nil {
		// After Health: a change between the two has closed changed.
		domains, err = s.domains.DomainHealth()
		for d, dh := range domains {
			if err != nil {
				break
			}
			if err = dh.check(); err != nil {
				err = fmt.Errorf("ratelimit: domain %q: %w", d, err)
			}
		}
	}
	return h, domains, changed, err
}

// apply records read number seq, made at now, unless a later one has been
// applied; it logs a new error and the end of one, reports health changes
// to metrics, and reports whether it applied the read.
func (s *reader) apply(seq uint64, now time.Time, h Health, changed <-chan struct{}, err error) bool {
	if seq <= s.applied {
		return false
	}
	s.applied, s.lastRead, s.changed = seq, now, changed
	if err != nil {
		if s.err == nil || s.err.Error() != err.Error() {
			s.logger.Error(err, "ratelimit: fleet health unknown; evictions paused until the health source answers")
		}
		s.err = err
		return true
	}
	if s.err != nil {
		s.logger.Info("ratelimit: health source answers again", "total", h.Total, "unhealthy", h.Unhealthy)
		s.err = nil
	}
	if s.metrics != nil && (!s.healthKnown || h != s.health) {
		s.metrics.FleetHealth(h.Total, h.Unhealthy)
	}
	s.health, s.healthKnown = h, true
	return true
}

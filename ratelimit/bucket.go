package ratelimit

import (
	"math"
	"time"
)

// bucket is a token bucket of at most one permit whose rate can change, 0
// pausing it. Like x/time/rate's ReserveN(t), its methods take the time, and
// nothing blocks; the Limiter's lock guards it.
//
// Its level, how much of a permit it holds, rises at the rate in force up
// to 1, falls by 1 for a permit taken, and is frozen by a pause. So the
// permits taken over any window are at most its level at the start (at
// most 1) plus the integral of the rate over it, however the rate changed
// or paused. A promise (DynamicRateLimiter.When) takes a permit ahead of
// time, below 0.
//
// Its times are Unix nanoseconds, cheaper than time.Time on every Wait.
type bucket struct {
	rate     float64
	interval int64 // 1/rate rounded up, so the rate is never exceeded
	// full is when the level reaches 1 at the rate in force; while paused,
	// lack holds 1 - level instead.
	full int64
	lack float64
	// promised is the latest permit taken ahead: a workqueue releases it
	// then whatever the rate does, so no permit comes within an interval.
	promised int64
	// takes counts the permits taken, for giveBack.
	takes uint64
}

// setRate puts r in force at now, keeping the level.
func (b *bucket) setRate(r float64, now int64) {
	if r == b.rate {
		return
	}
	lack := b.lack
	if b.rate > 0 {
		lack = float64(max(0, b.full-now)) / float64(b.interval)
	}
	b.rate, b.lack = r, lack
	if r > 0 {
		b.interval = int64(intervalFor(r))
		b.full = max(now+int64(scale(lack, time.Duration(b.interval))), b.promised+b.interval)
	}
}

// take takes a permit due at at (not before full) and returns its number.
func (b *bucket) take(at int64) uint64 {
	b.full = at + b.interval
	b.takes++
	return b.takes
}

// giveBack returns permit number n unused, as x/time/rate's Cancel does:
// the level is what it would be had the permit never been taken, which is
// known only while none was taken after it; after one it does nothing.
func (b *bucket) giveBack(n uint64) bool {
	if n != b.takes {
		return false
	}
	if b.rate > 0 {
		b.full -= b.interval
	} else {
		b.lack = max(0, b.lack-1)
	}
	return true
}

// buckets are a Limiter's buckets: every permit takes one from total and
// one from fleet or its domain's.
type buckets struct {
	total, fleet bucket
	// domains holds every domain seen, gone ones at rate 0: a domain that
	// comes back finds its level as it left it.
	domains map[string]*bucket
}

// apply puts rs in force at now.
func (s *buckets) apply(rs rates, t time.Time) {
	now := t.UnixNano()
	s.total.setRate(rs.total, now)
	s.fleet.setRate(rs.fleet, now)
	for name := range rs.domains {
		if s.domains[name] == nil {
			if s.domains == nil {
				s.domains = make(map[string]*bucket)
			}
			s.domains[name] = &bucket{}
		}
	}
	for name, b := range s.domains {
		b.setRate(rs.domains[name].Rate, now)
	}
}

// permit is a permit taken from two buckets, for giveBack.
type permit struct {
	domain   string
	b, total *bucket
	n, nt    uint64
}

// take takes at now a permit for the first of domains whose bucket and the
// total both hold one; under the fleet rule, or for no domain, the fleet's.
// ahead takes it even if not due yet (a promise), due at the time returned.
// Without a permit, take returns when one may come; 0: not before a change
// of rate.
func (s *buckets) take(t time.Time, domains []string, perDomain, ahead bool) (p permit, ok bool, due int64) {
	now, next := t.UnixNano(), int64(0)
	named, n := perDomain && len(domains) > 0, 1
	if named {
		n = len(domains)
	}
	for i := range n {
		b := &s.fleet
		if named {
			b = s.domains[domains[i]]
		}
		if b == nil || b.rate <= 0 || s.total.rate <= 0 {
			continue // unknown or paused
		}
		at := max(now, b.full, s.total.full)
		if at > now && !ahead {
			if next == 0 || at < next {
				next = at
			}
			continue
		}
		p = permit{b: b, n: b.take(at), total: &s.total, nt: s.total.take(at)}
		if ahead {
			b.promised, s.total.promised = at, at
		}
		if len(domains) > 0 {
			p.domain = domains[i]
		}
		return p, true, at
	}
	return permit{}, false, next
}

// giveBack returns p unused to both its buckets, and reports whether
// either level rose.
func (p permit) giveBack() bool {
	a := p.b.giveBack(p.n)
	return p.total.giveBack(p.nt) || a
}

// unixTime is a bucket's time as a time.Time; zero for 0.
func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// earliest is the earlier of two times, the zero time meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// maxInterval keeps durations far from time.Duration's limits.
const maxInterval = 10 * 365 * 24 * time.Hour

// intervalFor is 1/r rounded up, so rounding never makes a bucket faster.
func intervalFor(r float64) time.Duration {
	return scale(1/r, time.Second)
}

// scale is f×d rounded up, within [1ns, maxInterval] (0 for f ≤ 0).
func scale(f float64, d time.Duration) time.Duration {
	v := math.Ceil(f * float64(d))
	switch {
	case !(v > 0): // also NaN
		return 0
	case v > float64(maxInterval):
		return maxInterval
	}
	return time.Duration(v)
}

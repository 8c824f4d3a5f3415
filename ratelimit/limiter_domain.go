package ratelimit

import (
	"context"
	"errors"
	"time"

	"k8s.io/utils/clock"
)

// This file is the Limiter's blocking layer for the domain rule: a permit
// for one of several domains. The rule is Config.DomainRates (decide.go);
// its buckets are domainPacing (domains.go).

var errNoDomain = errors.New("ratelimit: a permit was asked for no domain")

// WaitDomain blocks until the caller may evict one resource from one of
// domains, and returns that domain; or until ctx ends, when it returns
// ctx's error. When several have a permit free, the first in domains gets
// it, so a caller lists them in the order it prefers (an eviction queue:
// by its head items). Under the fleet rule every domain shares the fleet's
// bucket: WaitDomain is Wait, and returns domains[0].
//
// Under the domain rule the permit is one slot of the domain's bucket and
// one of the total's, at once (see Limiter). A domain the health source
// does not report has no rate and waits until it does. Callers waiting for
// a domain are not served in arrival order: the first to ask once a slot
// is free gets it.
func (l *Limiter) WaitDomain(ctx context.Context, domains []string) (string, error) {
	if len(domains) == 0 {
		return "", errNoDomain
	}
	if l == nil || l.dom == nil {
		return domains[0], l.Wait(ctx)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var got string
	err := l.poll(ctx, func(now time.Time) (ok bool, next time.Time) {
		got, ok, next = l.dom.take(now, domains)
		return ok, next
	})
	return got, err
}

// TakeDomainAt is WaitDomain's step for a caller that keeps time itself, as
// TakeAt is Wait's: at now it takes a permit for the first of domains that
// has one free and returns that domain, or takes nothing and returns when
// to ask again (zero: only a change of health can free one). Under the
// fleet rule it is TakeAt, and returns domains[0].
func (l *Limiter) TakeDomainAt(now time.Time, domains []string) (domain string, ok bool, next time.Time) {
	if len(domains) == 0 {
		return "", false, time.Time{}
	}
	if l == nil || l.dom == nil {
		ok, next = l.TakeAt(now)
		if ok {
			domain = domains[0]
		}
		return domain, ok, next
	}
	if l.src.src == nil {
		return "", false, time.Time{}
	}
	l.locked(func() time.Time { return now }, func(now time.Time) {
		if domain, ok, next = l.dom.take(now, domains); !ok {
			next = earliest(next, l.src.nextPoll())
		}
	})
	return domain, ok, next
}

// PacesByDomain reports whether the Limiter's Config has a disruption
// domain (region, zone or provider), so that a permit's rate depends on the
// domain it is asked for (WaitDomain, TakeDomainAt).
func (l *Limiter) PacesByDomain() bool { return l != nil && l.dom != nil }

// DomainRates returns each domain's state and rate in force now, reading
// the source first if it is due; nil under the fleet rule.
func (l *Limiter) DomainRates() map[string]DomainRate {
	if l == nil || l.dom == nil || l.src.src == nil {
		return nil
	}
	var rates map[string]DomainRate
	l.locked(l.clock.Now, func(time.Time) { rates = l.dom.snapshot() })
	return rates
}

// applyDomainsLocked puts the domain rule's rates for a read at now in
// force and reports what changed.
func (l *Limiter) applyDomainsLocked(now time.Time, domains map[string]Health, err error) {
	changed, left := l.dom.apply(now, domains, err)
	dm, _ := l.metrics.(DomainMetrics)
	if dm == nil {
		return
	}
	for _, d := range left {
		dm.DomainRemoved(d)
	}
	for d, dr := range changed {
		dm.DomainRate(d, dr.State.String(), dr.Rate)
	}
}

// poll blocks until try, called under the lock at the clock's now, takes a
// permit, or ctx ends. try returns when it may succeed next (zero: only a
// change of health, which wakes the caller, can help). Unlike Wait's
// reservations, nobody holds a place in line: each try is a fresh attempt.
func (l *Limiter) poll(ctx context.Context, try func(now time.Time) (ok bool, next time.Time)) error {
	for {
		var (
			err           error
			granted       bool
			timer         clock.Timer
			wake, changed <-chan struct{}
		)
		l.locked(l.clock.Now, func(now time.Time) {
			if err = ctx.Err(); err != nil {
				return
			}
			var next time.Time
			if granted, next = try(now); granted {
				return
			}
			if d := earliest(earliest(next, l.holdEnd), l.src.nextPoll()); !d.IsZero() {
				timer = l.clock.NewTimer(d.Sub(now))
			}
			wake, changed = l.wake, l.src.changed
		})
		if err != nil || granted {
			return err
		}
		sleep(ctx, timer, wake, changed)
	}
}

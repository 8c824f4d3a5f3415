package ratelimit

import (
	"maps"
	"time"
)

// domainPacing is the domain rule's state over time (Config.DisruptionDomain
// other than fleet): a bucket per domain at the rate DomainRates gives it,
// and one bucket for the total that every permit also takes a slot from, so
// the sum never exceeds ResourceEvictionRate. Like bucket it takes the time
// as an argument and never blocks; the Limiter holds its lock around it.
type domainPacing struct {
	cfg     Config
	total   bucket
	buckets map[string]*bucket
	rates   map[string]DomainRate
}

// apply puts in force, at now, the rates the rule gives for domains; err (a
// failed read) pauses every domain. It returns the domains whose state or
// rate changed, and those that left (with ok false), for metrics.
func (p *domainPacing) apply(now time.Time, domains map[string]Health, err error) (changed map[string]DomainRate, left []string) {
	rates, total := map[string]DomainRate{}, 0.0
	if err == nil {
		rates, total = p.cfg.DomainRates(domains)
	}
	if total != p.total.rate || p.buckets == nil {
		p.total.setRate(total, now)
	}
	if p.buckets == nil {
		p.buckets = make(map[string]*bucket)
	}
	changed = make(map[string]DomainRate)
	for d := range p.buckets {
		if _, ok := rates[d]; !ok && err == nil {
			delete(p.buckets, d)
			left = append(left, d)
		}
	}
	for d, dr := range rates {
		b, known := p.buckets[d]
		if !known {
			b = &bucket{}
			p.buckets[d] = b
		}
		if old, ok := p.rates[d]; !ok || old != dr {
			changed[d] = dr
		}
		if !known || b.rate != dr.Rate {
			b.setRate(dr.Rate, now)
		}
	}
	if err != nil {
		// Keep the domains known, paused, until the source answers again.
		for d, b := range p.buckets {
			if b.rate != 0 {
				b.setRate(0, now)
			}
			dr := p.rates[d]
			if dr.Rate != 0 {
				dr.Rate = 0
				changed[d] = dr
			}
			rates[d] = dr
		}
	}
	p.rates = rates
	return changed, left
}

// take takes a permit at now for the first of domains that has one free,
// and returns that domain. Otherwise it returns when one of them may next
// have one (zero: only a change of health can free one). A domain the
// health source does not report has no rate: it waits.
func (p *domainPacing) take(now time.Time, domains []string) (domain string, ok bool, next time.Time) {
	for _, d := range domains {
		b := p.buckets[d]
		if b == nil {
			continue
		}
		slot := slotAll(now, &p.total, b)
		if slot.IsZero() {
			continue
		}
		if !slot.After(now) {
			takeAll(now, &p.total, b)
			return d, true, time.Time{}
		}
		next = earliest(next, slot)
	}
	return "", false, next
}

// totalRate is the most permits per second the domains may take together
// now: the sum of their rates, capped by the total.
func (p *domainPacing) totalRate() float64 {
	sum := 0.0
	for _, dr := range p.rates {
		sum += dr.Rate
	}
	return min(sum, p.total.rate)
}

// snapshot copies the rates in force.
func (p *domainPacing) snapshot() map[string]DomainRate { return maps.Clone(p.rates) }

package ratelimit

import (
	"fmt"
	"time"
)

// decision turns the health a Limiter reads into the rate in force: the rule
// (Config.RateFor) applied over time. It reads no clock and starts nothing:
// observe records a read made at now, and rate says what is in force at now.
// This file is the place to change how the rule's answers become the rate
// (the recovery hold, pausing on a source error); the rule itself is in
// config.go.
//
// The rate in force is 0 before the first read and while the latest read
// failed. Otherwise it is the slowest rate the rule gave over the last hold,
// so a slowdown applies at once and a speed-up once it has lasted the hold.
// A failed read is not health: it pauses, but it neither enters nor resets
// the hold.
type decision struct {
	cfg  Config
	hold time.Duration
	// failing: the latest read failed (or none was made yet).
	failing bool
	// history holds the rule's rate after each good read that changed it,
	// oldest first, trimmed to the hold window: history[0] was in force at
	// the window's start. Without a hold only the latest entry is kept.
	history []rateChange
}

// rateChange is one entry of decision.history.
type rateChange struct {
	at   time.Time
	rate float64
}

func newDecision(cfg Config, hold time.Duration) decision {
	return decision{cfg: cfg, hold: hold, failing: true}
}

// observe records a read of the source made at now: h, or err when the read
// failed (an impossible Health counts as failed).
func (d *decision) observe(now time.Time, h Health, err error) {
	d.failing = err != nil
	if d.failing {
		return
	}
	r := d.cfg.RateFor(h)
	if n := len(d.history); n > 0 && d.history[n-1].rate == r {
		return
	}
	if d.hold <= 0 {
		d.history = d.history[:0]
	}
	d.history = append(d.history, rateChange{at: now, rate: r})
}

// rate returns the rate in force at now, and when it will next change
// without a new read (a speed-up that has lasted the hold); zero when it
// will not. now must not go back between calls.
func (d *decision) rate(now time.Time) (r float64, next time.Time) {
	if d.failing {
		return 0, time.Time{}
	}
	// A good read has put at least one entry in history.
	if len(d.history) == 1 { // the usual case, on every Wait
		return d.history[0].rate, time.Time{}
	}
	start := now.Add(-d.hold)
	i := 0
	for i+1 < len(d.history) && !d.history[i+1].at.After(start) {
		i++ // history[i+1] was already in force at the window's start
	}
	d.history = d.history[i:]
	r, slowest := d.history[0].rate, 0
	for i, c := range d.history {
		if c.rate <= r {
			r, slowest = c.rate, i // the latest of the slowest
		}
	}
	// The rate goes up once the slowest entry leaves the window, which it
	// does when its successor has been in force for the hold; the latest
	// entry stays until a new read.
	if slowest+1 < len(d.history) {
		next = d.history[slowest+1].at.Add(d.hold)
	}
	return r, next
}

// DisruptionState is a domain's state under the domain rule (DomainRates),
// as the Kubernetes node lifecycle controller keeps one per zone.
type DisruptionState int

// The states of a domain, by its faulty share.
const (
	// Normal: the faulty share is at or below UnhealthyClusterThreshold.
	Normal DisruptionState = iota
	// PartialDisruption: above the threshold, but not every cluster faulty.
	PartialDisruption
	// FullDisruption: every cluster of the domain is faulty.
	FullDisruption
)

// String returns the state's name, as metrics and logs show it.
func (s DisruptionState) String() string {
	switch s {
	case Normal:
		return "Normal"
	case PartialDisruption:
		return "PartialDisruption"
	case FullDisruption:
		return "FullDisruption"
	}
	return fmt.Sprintf("DisruptionState(%d)", int(s))
}

// StateFor is a domain's state: FullDisruption when it has clusters and all
// are faulty, PartialDisruption when its failure rate is above
// UnhealthyClusterThreshold (strictly), else Normal. An empty domain is
// Normal.
func (c Config) StateFor(h Health) DisruptionState {
	switch {
	case h.Total > 0 && h.Unhealthy >= h.Total:
		return FullDisruption
	case h.FailureRate() > c.UnhealthyClusterThreshold:
		return PartialDisruption
	}
	return Normal
}

// DomainRate is one domain's state and the rate its evictions get.
type DomainRate struct {
	State DisruptionState
	Rate  float64
}

// DomainRates is the domain rule (Config.DisruptionDomain other than
// fleet), a pure function of each domain's health. Each domain gets:
//   - Normal: ResourceEvictionRate;
//   - PartialDisruption: SecondaryResourceEvictionRate when the domain has
//     more than LargeClusterNumThreshold clusters (strictly), else 0;
//   - FullDisruption: ResourceEvictionRate, since the domain is gone and its
//     workloads should leave it;
//
// except that when every domain (at least one) is in FullDisruption, every
// rate is 0: the control plane is more likely cut off from the fleet than
// the whole fleet down. total is the cap on the sum of all domains' permits:
// ResourceEvictionRate, or 0 when every domain is in FullDisruption, so
// healthy clusters never take more evictions than under the fleet rule.
func (c Config) DomainRates(domains map[string]Health) (rates map[string]DomainRate, total float64) {
	rates = make(map[string]DomainRate, len(domains))
	allFull := len(domains) > 0
	for d, h := range domains {
		st := c.StateFor(h)
		r := c.ResourceEvictionRate
		if st == PartialDisruption {
			r = 0
			if h.Total > c.LargeClusterNumThreshold {
				r = c.SecondaryResourceEvictionRate
			}
		}
		allFull = allFull && st == FullDisruption
		rates[d] = DomainRate{State: st, Rate: r}
	}
	if allFull {
		for d, dr := range rates {
			dr.Rate = 0
			rates[d] = dr
		}
		return rates, 0
	}
	return rates, c.ResourceEvictionRate
}

package ratelimit

import "fmt"

// This file is the rule: the rate each of a Limiter's buckets gets for the
// health just read.

// rates is the rule's answer for every bucket of a Limiter (see Limiter).
type rates struct {
	fleet, total float64
	domains      map[string]DomainRate // nil under the fleet rule
	storm        bool                  // a failure storm holds every rate at 0
}

// rates applies the rule: the fleet's bucket gets RateFor(fleet), and so
// does the total under the fleet rule; under a domain rule, DomainRates.
func (c Config) rates(fleet Health, domains map[string]Health) rates {
	r := rates{fleet: c.RateFor(fleet)}
	if !c.DisruptionDomain.PerDomain() {
		r.total = r.fleet
		return r
	}
	r.domains, r.total = c.DomainRates(domains)
	return r
}

// RateFor is the rule of the source document, word for word: above
// UnhealthyClusterThreshold (strictly), a fleet of more than
// LargeClusterNumThreshold clusters gets SecondaryResourceEvictionRate and a
// smaller one 0 (paused); otherwise ResourceEvictionRate.
func (c Config) RateFor(h Health) float64 {
	if h.FailureRate() > c.UnhealthyClusterThreshold {
		if h.Total > c.LargeClusterNumThreshold {
			return c.SecondaryResourceEvictionRate
		}
		return 0
	}
	return c.ResourceEvictionRate
}

// DisruptionState is a domain's state under the domain rule, as the
// Kubernetes node lifecycle controller keeps one per zone.
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
	if names := [...]string{"Normal", "PartialDisruption", "FullDisruption"}; s >= 0 && int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("DisruptionState(%d)", int(s))
}

// StateFor is a domain's state: FullDisruption when it has clusters, all
// faulty; PartialDisruption above UnhealthyClusterThreshold (strictly);
// else Normal.
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

// DomainRates is the domain rule, a pure function of each domain's health.
// Each domain gets:
//   - Normal: ResourceEvictionRate;
//   - PartialDisruption: SecondaryResourceEvictionRate when the domain has
//     more than LargeClusterNumThreshold clusters (strictly), else 0;
//   - FullDisruption: ResourceEvictionRate, since the domain is gone and its
//     workloads should leave it;
//
// except that when every domain (at least one) is in FullDisruption, all are
// 0: the control plane is more likely cut off than the whole fleet down.
// total caps all domains together: ResourceEvictionRate (then 0), so healthy
// clusters never take more evictions than under the fleet rule.
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

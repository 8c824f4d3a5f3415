package ratelimit

import "fmt"

// This file is the rule: what rate each of a Limiter's buckets gets for the
// health just read. How its answers become the rate in force over time is
// decide.go; the buckets themselves are bucket.go.

// rates is the rule's answer for every bucket of a Limiter. A permit takes
// one from the total and one from the fleet's bucket (a caller that names
// no domain, and every caller under the fleet rule, for which the whole
// fleet is the one domain) or from its domain's.
type rates struct {
	fleet, total float64
	domains      map[string]DomainRate // nil under the fleet rule
}

// rates applies the rule to the fleet's health and, under a domain rule,
// each domain's: the fleet's bucket gets RateFor(fleet); under the fleet
// rule the total is the same, under a domain rule it is DomainRates'.
func (c Config) rates(fleet Health, domains map[string]Health) rates {
	r := rates{fleet: c.RateFor(fleet)}
	if !c.DisruptionDomain.PerDomain() {
		r.total = r.fleet
		return r
	}
	r.domains, r.total = c.DomainRates(domains)
	return r
}

// RateFor is the rule of the source document, word for word. The failure rate
// is h.Unhealthy/h.Total (0 for an empty fleet). Above UnhealthyClusterThreshold
// (strictly) a fleet of more than LargeClusterNumThreshold clusters (strictly)
// gets SecondaryResourceEvictionRate and a smaller one 0, which pauses
// evictions; otherwise the rate is ResourceEvictionRate.
func (c Config) RateFor(h Health) float64 {
	if h.FailureRate() > c.UnhealthyClusterThreshold {
		if h.Total > c.LargeClusterNumThreshold {
			return c.SecondaryResourceEvictionRate
		}
		return 0
	}
	return c.ResourceEvictionRate
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

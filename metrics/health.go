package metrics

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
)

// FleetHealth records the fleet's health: cluster_fault_num is set to faulty
// and cluster_failure_rate to faulty/total, or 0 when total is 0 (an empty
// fleet has no failures, and NaN would break alerting rules). Negative counts
// are recorded as 0.
func (m *Metrics) FleetHealth(total, faulty int) {
	if m == nil {
		return
	}
	total, faulty = max(total, 0), max(faulty, 0)
	rate := 0.0
	if total > 0 {
		rate = float64(faulty) / float64(total)
	}
	m.healthMu.Lock()
	defer m.healthMu.Unlock()
	m.faultNum.Set(float64(faulty))
	m.failureRate.Set(rate)
}

// EvictionRate records the permits per second the fleet-wide limiter allows
// now in eviction_rate; 0 means paused. A negative or NaN rate is recorded as
// 0; +Inf (unlimited) is recorded as is.
func (m *Metrics) EvictionRate(perSecond float64) {
	if m == nil {
		return
	}
	if math.IsNaN(perSecond) || perSecond < 0 {
		perSecond = 0
	}
	m.evictionRate.Set(perSecond)
}

// DomainRate records a disruption domain's state and rate (see
// ratelimit.DomainMetrics): domain_disruption_state{domain, state} is 1 for
// its state now (the series of its former state is deleted) and
// domain_eviction_rate{domain} its permits per second. A negative or NaN
// rate is recorded as 0.
func (m *Metrics) DomainRate(domain, state string, perSecond float64) {
	if m == nil {
		return
	}
	if math.IsNaN(perSecond) || perSecond < 0 {
		perSecond = 0
	}
	m.healthMu.Lock()
	defer m.healthMu.Unlock()
	m.domainState.DeletePartialMatch(prometheus.Labels{labelDomain: domain})
	m.domainState.WithLabelValues(domain, state).Set(1)
	m.domainRate.WithLabelValues(domain).Set(perSecond)
}

// DomainRemoved deletes the series of a domain that has no cluster any more.
func (m *Metrics) DomainRemoved(domain string) {
	if m == nil {
		return
	}
	m.healthMu.Lock()
	defer m.healthMu.Unlock()
	m.domainState.DeletePartialMatch(prometheus.Labels{labelDomain: domain})
	m.domainRate.DeletePartialMatch(prometheus.Labels{labelDomain: domain})
}

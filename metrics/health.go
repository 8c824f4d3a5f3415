package metrics

import "math"

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

package metrics

// StormHold records whether a failure storm holds every eviction back now
// (ratelimit.Config.StormThreshold): eviction_storm_hold is 1 while it
// does, 0 otherwise. It implements ratelimit.StormMetrics.
func (m *Metrics) StormHold(holding bool) {
	if m == nil {
		return
	}
	v := 0.0
	if holding {
		v = 1
	}
	m.stormHold.Set(v)
}

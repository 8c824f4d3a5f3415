package metrics

// EvictionsFrozen records whether an operator's freeze holds every
// automatic eviction back now: eviction_frozen is 1 while frozen, 0
// otherwise. Every replica of a controller sets it from the freeze it
// reads, the standbys too, so the series says what a new leader would do.
func (m *Metrics) EvictionsFrozen(frozen bool) {
	if m == nil {
		return
	}
	v := 0.0
	if frozen {
		v = 1
	}
	m.frozen.Set(v)
}

package ratelimit

import "time"

// This file is the failure-storm hold: evictions wait while much of the
// fleet turned faulty at once, which more often means the control plane
// lost sight of its members than that they all failed.

// storm detects a failure storm and holds it (see Config.StormThreshold).
// Like decision, it reads no clock.
type storm struct {
	threshold float64
	window    time.Duration
	confirm   time.Duration
	perDomain bool

	fleet   counts             // the fleet's faulty counts over the window
	domains map[string]*counts // each domain's, under a domain rule

	holding  bool
	since    time.Time // when the hold started
	baseline int       // the fleet's faulty count before the storm
	total    int       // the fleet's size when the storm started
	// domainBase is each domain's faulty count before the storm.
	domainBase map[string]int
	ended      stormEnd // why the latest hold ended
}

// stormEnd says why a hold ended, for the log.
type stormEnd string

const (
	stormConfirmed stormEnd = "confirmation period passed"
	stormRecovered stormEnd = "clusters recovered"
	stormOperator  stormEnd = "operator confirmed"
)

func newStorm(cfg Config) storm {
	return storm{threshold: cfg.StormThreshold, window: cfg.StormWindow, confirm: cfg.StormConfirm,
		perDomain: cfg.DisruptionDomain.PerDomain()}
}

func (s *storm) enabled() bool { return s.threshold > 0 && s.window > 0 && s.confirm > 0 }

// observe records a good read at now and starts or ends a hold; states are
// the domains' states under a domain rule.
func (s *storm) observe(now time.Time, h Health, domains map[string]Health, states map[string]DisruptionState) {
	if !s.enabled() {
		return
	}
	s.fleet.observe(now, h.Unhealthy, s.window)
	if s.perDomain {
		if s.domains == nil {
			s.domains = make(map[string]*counts)
		}
		for name, dh := range domains {
			if s.domains[name] == nil {
				s.domains[name] = &counts{}
			}
			s.domains[name].observe(now, dh.Unhealthy, s.window)
		}
		for name, c := range s.domains {
			if _, ok := domains[name]; !ok {
				c.observe(now, 0, s.window)
			}
		}
	}
	if s.holdingAt(now) {
		// Measured from the counts before the storm, with the same
		// exemption: a storm of two domains, one back, leaves one
		// domain's outage, which the domain rule evacuates. Against the
		// fleet that stormed: healthy clusters joining since recover
		// none of it.
		rise := h.Unhealthy - s.baseline
		if full, ok := fullDomain(states); ok {
			rise -= domains[full].Unhealthy - s.domainBase[full]
		}
		if float64(rise) <= s.threshold*float64(s.total) {
			s.end(now, stormRecovered)
		}
		return
	}
	base := s.fleet.min(now, s.window)
	rise := h.Unhealthy - base
	// The outage of exactly one domain is the domain rule's to evacuate
	// at once: its clusters do not count towards a storm.
	if full, ok := fullDomain(states); ok {
		if c := s.domains[full]; c != nil {
			rise -= domains[full].Unhealthy - c.min(now, s.window)
		}
	}
	if h.Total > 0 && float64(rise) > s.threshold*float64(h.Total) {
		s.holding, s.since, s.baseline, s.total = true, now, base, h.Total
		s.domainBase = make(map[string]int, len(s.domains))
		for name, c := range s.domains {
			s.domainBase[name] = c.min(now, s.window)
		}
	}
}

// fullDomain is the one domain in FullDisruption, and whether there is
// exactly one. The clusters with no domain label form the domain "", a
// domain like any other.
func fullDomain(states map[string]DisruptionState) (name string, ok bool) {
	for d, st := range states {
		if st == FullDisruption {
			if ok {
				return "", false
			}
			name, ok = d, true
		}
	}
	return name, ok
}

// holdingAt reports whether a hold is on at now, ending it once it has
// lasted the confirmation period.
func (s *storm) holdingAt(now time.Time) bool {
	if s.holding && !now.Before(s.since.Add(s.confirm)) {
		s.end(now, stormConfirmed)
	}
	return s.holding
}

// until is when the hold in force ends by itself; zero when none is.
func (s *storm) until() time.Time {
	if !s.holding {
		return time.Time{}
	}
	return s.since.Add(s.confirm)
}

// end ends the hold at now. A new storm must rise from the counts at now:
// the rise that started this one never starts another.
func (s *storm) end(now time.Time, why stormEnd) {
	s.holding, s.ended = false, why
	s.fleet.reset(now)
	for _, c := range s.domains {
		c.reset(now)
	}
}

// counts is a faulty count's changes over a window, oldest first ([0] was
// in force at the window's start).
type counts []countChange

type countChange struct {
	at time.Time
	n  int
}

func (c *counts) observe(now time.Time, n int, window time.Duration) {
	if k := len(*c); k > 0 && (*c)[k-1].n == n {
		return
	}
	*c = append(*c, countChange{at: now, n: n})
	c.trim(now, window)
}

// trim drops the changes no longer in force within the window.
func (c *counts) trim(now time.Time, window time.Duration) {
	s, start := *c, now.Add(-window)
	i := 0
	for i+1 < len(s) && !s[i+1].at.After(start) {
		i++
	}
	*c = s[i:]
}

// min is the lowest count in force within the window ending at now.
func (c *counts) min(now time.Time, window time.Duration) int {
	c.trim(now, window)
	s := *c
	if len(s) == 0 {
		return 0
	}
	m := s[0].n
	for _, ch := range s[1:] {
		m = min(m, ch.n)
	}
	return m
}

// reset keeps only the count in force, as if first seen at now.
func (c *counts) reset(now time.Time) {
	if k := len(*c); k > 0 {
		last := (*c)[k-1]
		*c = append((*c)[:0], countChange{at: now, n: last.n})
	}
}

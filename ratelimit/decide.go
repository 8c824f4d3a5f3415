package ratelimit

import "time"

// decision turns the rule's answers (rule.go) into each bucket's rate in
// force over time: the place to change the recovery hold and the pause on a
// source error. It reads no clock: observe records a read made at now, and
// inForce says what is in force at now.
//
// Every rate is 0 before the first read and while the latest failed.
// Otherwise each bucket's is the slowest the rule gave it over the last
// hold, so a slowdown applies at once and a speed-up once it has lasted the
// hold. A failed read pauses but neither enters nor resets the hold. A
// domain whose clusters have all gone gets 0. During a failure storm's
// hold (storm.go) every rate is 0, and the histories go on recording the
// rule's rates, so that the rule, with its recovery hold, applies when it
// ends.
type decision struct {
	cfg     Config
	hold    time.Duration
	failing bool // the latest read failed, or none was made yet
	storm   storm
	fleet   history
	total   history
	// domains holds every domain read so far, also those gone since (at
	// rate 0), so that a domain's return is held like any speed-up.
	domains map[string]*history
	// states are the domains of the latest good read, with their states.
	states map[string]DisruptionState
}

// history is one bucket's rule rates after each good read that changed it,
// oldest first, trimmed to the hold window ([0] was in force at its start);
// without a hold, the latest only.
type history []rateChange

type rateChange struct {
	at   time.Time
	rate float64
}

func newDecision(cfg Config, hold time.Duration) decision {
	return decision{cfg: cfg, hold: hold, failing: true, storm: newStorm(cfg)}
}

// observe records a read made at now: the fleet's health h and, under a
// domain rule, each domain's; or err when it failed.
func (d *decision) observe(now time.Time, h Health, domains map[string]Health, err error) {
	d.failing = err != nil
	if d.failing {
		return
	}
	r := d.cfg.rates(h, domains)
	d.fleet.observe(now, r.fleet, d.hold)
	d.total.observe(now, r.total, d.hold)
	if r.domains == nil {
		d.storm.observe(now, h, nil, nil)
		return
	}
	if d.domains == nil {
		d.domains = make(map[string]*history)
	}
	d.states = make(map[string]DisruptionState, len(r.domains))
	for name, dr := range r.domains {
		d.states[name] = dr.State
		if d.domains[name] == nil {
			d.domains[name] = &history{}
		}
	}
	for name, hist := range d.domains {
		hist.observe(now, r.domains[name].Rate, d.hold) // 0 for a domain gone
	}
	d.storm.observe(now, h, domains, d.states)
}

// confirmStorm ends a failure storm's hold at now, as an operator confirms
// the failures are real; it reports whether one was on.
func (d *decision) confirmStorm(now time.Time) bool {
	if !d.storm.holdingAt(now) {
		return false
	}
	d.storm.end(now, stormOperator)
	return true
}

// inForce returns the rates in force at now, and when one next rises
// without a new read (zero: none will). now must not go back.
func (d *decision) inForce(now time.Time) (r rates, next time.Time) {
	if d.domains != nil {
		r.domains = make(map[string]DomainRate, len(d.states))
		for name, st := range d.states {
			r.domains[name] = DomainRate{State: st}
		}
	}
	if d.failing {
		return r, time.Time{}
	}
	at := func(h *history) float64 {
		rate, n := h.at(now, d.hold)
		next = earliest(next, n)
		return rate
	}
	r.fleet, r.total = at(&d.fleet), at(&d.total)
	storming := d.storm.holdingAt(now)
	for name, hist := range d.domains {
		rate := at(hist)
		if dr, ok := r.domains[name]; ok {
			dr.Rate = rate
			r.domains[name] = dr
		}
	}
	if storming {
		// The hold's end is a deadline even while the rule pauses anyway
		// (a small fleet above the threshold): no read may come, and
		// the hold must still be seen to end (StormMetrics, StormHold).
		next = earliest(next, d.storm.until())
		r.fleet, r.total, r.storm = 0, 0, true
		for name, dr := range r.domains {
			dr.Rate = 0
			r.domains[name] = dr
		}
	}
	return r, next
}

func (h *history) observe(now time.Time, r float64, hold time.Duration) {
	if n := len(*h); n > 0 && (*h)[n-1].rate == r {
		return
	}
	if hold <= 0 {
		*h = (*h)[:0]
	}
	*h = append(*h, rateChange{at: now, rate: r})
}

// at returns the rate in force at now and when it next rises by itself.
func (h *history) at(now time.Time, hold time.Duration) (r float64, next time.Time) {
	s := *h
	if len(s) == 0 { // before a domain's first read
		return 0, time.Time{}
	}
	start := now.Add(-hold)
	i := 0
	for i+1 < len(s) && !s[i+1].at.After(start) {
		i++ // s[i+1] was already in force at the window's start
	}
	s = s[i:]
	*h = s
	r, slowest := s[0].rate, 0
	for i, c := range s {
		if c.rate <= r {
			r, slowest = c.rate, i // the latest of the slowest
		}
	}
	// The rate rises when the slowest entry leaves the window: when its
	// successor has been in force for the hold.
	if slowest+1 < len(s) {
		next = s[slowest+1].at.Add(hold)
	}
	return r, next
}

package ratelimit

import "time"

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

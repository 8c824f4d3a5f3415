package ratelimit

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestDecisionStepwise steps the decision through reads at chosen times and
// checks the rate in force, and when it next changes by itself, after each.
func TestDecisionStepwise(t *testing.T) {
	// 4 clusters are large (above 2): 3 faulty slows to 0.1/s; 2 clusters are
	// small: both faulty pauses.
	cfg := Config{ResourceEvictionRate: 1, SecondaryResourceEvictionRate: 0.1, UnhealthyClusterThreshold: 0.5, LargeClusterNumThreshold: 2}
	healthy, slow, paused := Health{Total: 4}, Health{Total: 4, Unhealthy: 3}, Health{Total: 2, Unhealthy: 2}
	failed := errors.New("source down")
	type step struct {
		name     string
		at       time.Duration
		read     bool
		h        Health
		err      error
		want     float64
		wantNext time.Duration // -1: none
	}
	tests := []struct {
		name  string
		hold  time.Duration
		steps []step
	}{
		{"without a hold the latest read is in force", 0, []step{
			{"paused before the first read", 0, false, Health{}, nil, 0, -1},
			{"healthy", 0, true, healthy, nil, 1, -1},
			{"slower at once", time.Second, true, slow, nil, 0.1, -1},
			{"faster at once", 2 * time.Second, true, healthy, nil, 1, -1},
			{"a failed read pauses", 3 * time.Second, true, Health{}, failed, 0, -1},
			{"the next good read applies", 4 * time.Second, true, healthy, nil, 1, -1},
		}},
		{"a speed-up waits for the hold", 30 * time.Second, []step{
			{"the first read applies at once", 0, true, slow, nil, 0.1, -1},
			{"a speed-up is held", 10 * time.Second, true, healthy, nil, 0.1, 40 * time.Second},
			{"still held just before the end", 40*time.Second - 1, false, Health{}, nil, 0.1, 40 * time.Second},
			{"in force once it has lasted the hold", 40 * time.Second, false, Health{}, nil, 1, -1},
			{"a slowdown applies at once", 41 * time.Second, true, slow, nil, 0.1, -1},
			{"a flap back restarts the hold", 50 * time.Second, true, healthy, nil, 0.1, 80 * time.Second},
		}},
		{"each step of a recovery lasts the hold", 30 * time.Second, []step{
			{"paused", 0, true, paused, nil, 0, -1},
			{"better, held", 0, true, slow, nil, 0, 30 * time.Second},
			{"healthy, held", 10 * time.Second, true, healthy, nil, 0, 30 * time.Second},
			{"0.1/s has lasted 30s", 30 * time.Second, false, Health{}, nil, 0.1, 40 * time.Second},
			{"1/s has lasted 30s", 40 * time.Second, false, Health{}, nil, 1, -1},
		}},
		{"source errors pause but neither enter nor reset the hold", 30 * time.Second, []step{
			{"slow", 0, true, slow, nil, 0.1, -1},
			{"healthy, held", 10 * time.Second, true, healthy, nil, 0.1, 40 * time.Second},
			{"an error pauses", 20 * time.Second, true, Health{}, failed, 0, -1},
			{"the answer after it is still held", 25 * time.Second, true, healthy, nil, 0.1, 40 * time.Second},
			{"and in force when the hold ends", 40 * time.Second, false, Health{}, nil, 1, -1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDecision(cfg, tt.hold)
			for _, s := range tt.steps {
				if s.read {
					d.observe(at(s.at), s.h, nil, s.err)
				}
				rs, next := d.inForce(at(s.at))
				r := rs.fleet
				wantNext := time.Time{}
				if s.wantNext >= 0 {
					wantNext = at(s.wantNext)
				}
				assert.Equal(t, s.want, r, "%s: rate", s.name)
				assert.Equal(t, wantNext, next, "%s: next change", s.name)
			}
		})
	}
}

// TestDecisionHoldsEachDomain: under a domain rule the hold applies to each
// domain's rate apart, and to the total's: a domain that recovers waits for
// the hold while another's slowdown applies at once.
func TestDecisionHoldsEachDomain(t *testing.T) {
	cfg := Config{ResourceEvictionRate: 1, SecondaryResourceEvictionRate: 0.1, UnhealthyClusterThreshold: 0.5,
		LargeClusterNumThreshold: 2, DisruptionDomain: DomainRegion}
	d := newDecision(cfg, 30*time.Second)
	fleet := Health{Total: 8, Unhealthy: 3}
	d.observe(t0, fleet, map[string]Health{"east": {Total: 4, Unhealthy: 3}, "west": {Total: 4}}, nil)
	rs, next := d.inForce(t0)
	assert.Equal(t, 0.1, rs.domains["east"].Rate, "east partly down: secondary")
	assert.Equal(t, 1.0, rs.domains["west"].Rate)
	assert.True(t, next.IsZero())

	d.observe(at(10*time.Second), fleet, map[string]Health{"east": {Total: 4}, "west": {Total: 4, Unhealthy: 3}}, nil)
	rs, next = d.inForce(at(10 * time.Second))
	assert.Equal(t, 0.1, rs.domains["east"].Rate, "east recovered: held")
	assert.Equal(t, Normal, rs.domains["east"].State, "the state is the latest read's")
	assert.Equal(t, 0.1, rs.domains["west"].Rate, "west partly down: at once")
	assert.Equal(t, at(40*time.Second), next)
	rs, _ = d.inForce(at(40 * time.Second))
	assert.Equal(t, 1.0, rs.domains["east"].Rate, "the hold has passed")

	d.observe(at(50*time.Second), fleet, map[string]Health{"west": {Total: 4, Unhealthy: 3}}, nil)
	rs, _ = d.inForce(at(50 * time.Second))
	_, known := rs.domains["east"]
	assert.False(t, known, "a domain without clusters is not listed")
	d.observe(at(60*time.Second), fleet, map[string]Health{"east": {Total: 4}, "west": {Total: 4, Unhealthy: 3}}, nil)
	rs, _ = d.inForce(at(60 * time.Second))
	assert.Equal(t, 0.0, rs.domains["east"].Rate, "a domain that comes back is held like any speed-up")
}

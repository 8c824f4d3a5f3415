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
					d.observe(at(s.at), s.h, s.err)
				}
				r, next := d.rate(at(s.at))
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

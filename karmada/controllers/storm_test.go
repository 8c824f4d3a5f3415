package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover/metrics"
	"github.com/failoverkit/failover/ratelimit"
)

// stormLimiter is a Limiter on a 20-cluster fleet under the default rule,
// reporting to the Events of rec regarding the freeze ConfigMap.
func stormLimiter(t *testing.T, rec eventRecorder) (*ratelimit.Limiter, *ratelimit.Tracker, *clocktesting.FakeClock) {
	t.Helper()
	m, err := metrics.New(prometheus.NewRegistry(), metrics.WithKarmadaNames())
	require.NoError(t, err)
	clk := clocktesting.NewFakeClock(evictNow)
	tr := ratelimit.NewTracker()
	for i := range 20 {
		tr.Set(fmt.Sprintf("m%02d", i), false)
	}
	l, err := ratelimit.NewLimiter(ratelimit.DefaultConfig(), tr, ratelimit.WithClock(clk),
		ratelimit.WithMetrics(stormEvents{Metrics: m, recorder: rec, freeze: freezeName}), ratelimit.WithLogger(logr.Discard()))
	require.NoError(t, err)
	require.Equal(t, 0.5, l.Rate())
	return l, tr, clk
}

func storm(tr *ratelimit.Tracker) {
	for i := range 12 {
		tr.Set(fmt.Sprintf("m%02d", i), true) // 60% at once
	}
}

// A storm's hold starts with a Warning Event on the freeze ConfigMap and
// ends with a Normal one.
func TestStormHoldIsAnEvent(t *testing.T) {
	events := &recorded{}
	l, tr, clk := stormLimiter(t, events)
	storm(tr)
	assert.Zero(t, l.Rate())
	assert.Equal(t, recorded{EventReasonStormHold}, *events)
	clk.Step(5 * time.Minute)
	assert.Equal(t, 0.1, l.Rate())
	assert.Equal(t, recorded{EventReasonStormHold, EventReasonStormHoldEnded}, *events)

	var none stormEvents // no recorder, no ConfigMap: metrics only
	none.Metrics, _ = metrics.New(prometheus.NewRegistry())
	assert.NotPanics(t, func() { none.StormHold(true) })
	none.recorder, none.freeze = events, types.NamespacedName{}
	none.StormHold(true)
	assert.Len(t, *events, 2, "no ConfigMap to regard: no Event")
}

// The operator ends the hold through the freeze ConfigMap with confirm:
// storm, which freezes nothing; each version of it confirms once, so one
// left in place does not confirm the next storm.
func TestFreezeConfigMapConfirmsTheStorm(t *testing.T) {
	l, tr, clk := stormLimiter(t, &recorded{})
	gate := newFreezeGate(freezeName, clk, &frozenGauge{}, logr.Discard())
	gate.confirmStorm = l.ConfirmStorm
	storm(tr)
	require.Zero(t, l.Rate())

	cm := freezeMap(map[string]string{FreezeConfirmKey: ConfirmStorm})
	cm.ResourceVersion = "7"
	gate.set(cm)
	assert.False(t, gate.check().frozen)
	assert.Equal(t, 0.1, l.Rate(), "the rule's rate at once")

	// The clusters recover, then a second storm: the same version, read
	// again (a resync), does not confirm it.
	for i := range 12 {
		tr.Set(fmt.Sprintf("m%02d", i), false)
	}
	clk.Step(time.Minute)
	require.Equal(t, 0.5, l.Rate())
	storm(tr)
	require.Zero(t, l.Rate())
	gate.set(cm)
	assert.Zero(t, l.Rate(), "a confirmation left in place confirms no later storm")
	cm = cm.DeepCopy()
	cm.ResourceVersion = "8"
	gate.set(cm)
	assert.Equal(t, 0.1, l.Rate(), "a new version confirms again")

	// A freeze stays a freeze: it confirms nothing.
	typo := freezeMap(map[string]string{FreezeConfirmKey: "yes"})
	typo.ResourceVersion = "9"
	gate.set(typo)
	assert.True(t, gate.check().frozen)
}

// healthSeen is a ratelimit.Metrics that passes on each fleet health read.
type healthSeen chan ratelimit.Health

func (h healthSeen) FleetHealth(total, faulty int) {
	h <- ratelimit.Health{Total: total, Unhealthy: faulty}
}
func (h healthSeen) EvictionRate(float64) {}

// Clusters turning faulty 90s apart while no eviction waits are no storm:
// the follower reads each change as it comes. Without it the Limiter's
// first read, at the first eviction, sees them all at once.
func TestHealthFollowerTimesAStormFromTheChanges(t *testing.T) {
	for _, follow := range []bool{true, false} {
		t.Run(fmt.Sprintf("follow=%v", follow), func(t *testing.T) {
			seen := make(healthSeen, 16)
			clk := clocktesting.NewFakeClock(evictNow)
			tr := ratelimit.NewTracker()
			for i := range 20 {
				tr.Set(fmt.Sprintf("m%02d", i), false)
			}
			l, err := ratelimit.NewLimiter(ratelimit.DefaultConfig(), tr, ratelimit.WithClock(clk),
				ratelimit.WithMetrics(seen), ratelimit.WithLogger(logr.Discard()))
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			if follow {
				go func() { done <- healthFollower{src: tr, limiter: l, clock: clk}.Start(ctx) }()
			} else {
				done <- nil
			}
			turn := func(from, to int) {
				for i := from; i < to; i++ {
					tr.Set(fmt.Sprintf("m%02d", i), true)
				}
				if !follow {
					return
				}
				for h := range seen { // the follower's read of the last change
					if h.Unhealthy == to {
						return
					}
				}
			}
			require.Equal(t, 0.5, l.Rate()) // a first read, at evictNow
			turn(0, 6)
			clk.Step(90 * time.Second)
			turn(6, 12)
			assert.Equal(t, !follow, l.StormHold())
			cancel()
			require.NoError(t, <-done)
		})
	}
}

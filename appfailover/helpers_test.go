package appfailover_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/gracefulevict"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const (
	healthy   = gracefulevict.Healthy
	unhealthy = gracefulevict.Unhealthy
	unknown   = gracefulevict.Unknown
)

// at is t0 plus s seconds.
func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// policy builds a Policy or fails the test: window is
// decisionConditions.tolerationSeconds.
func policy(t testing.TB, window int32, o appfailover.Options) appfailover.Policy {
	t.Helper()
	p, err := appfailover.New(appfailover.Behavior{DecisionConditions: appfailover.DecisionConditions{TolerationSeconds: ptr.To(window)}}, o)
	require.NoError(t, err)
	return p
}

// event is the copy seen with a health (and a generation) from a second on.
type event struct {
	sec    int
	health gracefulevict.ResourceHealth
	gen    int64
}

// history is the observation at each second of [0, n) that events make.
func history(events []event, n int) []appfailover.Observation {
	obs := make([]appfailover.Observation, n)
	cur := appfailover.Observation{Health: unknown}
	j := 0
	for s := range n {
		for ; j < len(events) && events[j].sec <= s; j++ {
			cur = appfailover.Observation{Health: events[j].health, Generation: events[j].gen}
		}
		obs[s] = cur
	}
	return obs
}

// firstFailOver asks Decide every second, as a controller that never
// restarts and is told of every change at once would, and returns the first
// second whose answer is to fail over; -1 when none is.
func firstFailOver(p appfailover.Policy, obs []appfailover.Observation) int {
	var timer *appfailover.Timer
	for s, o := range obs {
		d := p.Decide("m1", timer, o, at(s))
		if d.FailOver {
			return s
		}
		timer = d.Timer
	}
	return -1
}

// eventDriven asks Decide only when the observation changes and when the
// last answer's After says, as a controller woken by watch events and
// RequeueAfter does, and returns the first second whose answer is to fail
// over; -1 when none is. Every instant it decides at is a whole second, or
// the test fails.
func eventDriven(t testing.TB, p appfailover.Policy, obs []appfailover.Observation) int {
	t.Helper()
	var timer *appfailover.Timer
	wake := -1
	for s, o := range obs {
		if s > 0 && o == obs[s-1] && s != wake {
			continue
		}
		d := p.Decide("m1", timer, o, at(s))
		if d.FailOver {
			return s
		}
		timer, wake = d.Timer, -1
		if d.After > 0 {
			require.Zero(t, d.After%time.Second, "After %v at second %d: %s", d.After, s, d.Reason)
			wake = s + int(d.After/time.Second)
		}
	}
	return -1
}

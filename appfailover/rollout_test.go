package appfailover_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/gracefulevict"
)

func TestBadRollout(t *testing.T) {
	obs := func(hs ...string) map[string]appfailover.Observation {
		m := map[string]appfailover.Observation{}
		for i := 0; i < len(hs); i += 2 {
			m[hs[i]] = appfailover.Observation{Health: map[string]gracefulevict.ResourceHealth{"H": healthy, "U": unhealthy, "?": unknown}[hs[i+1]]}
		}
		return m
	}
	for _, c := range []struct {
		name      string
		seen      map[string]appfailover.Observation
		failOver  []string
		inTransit []string
		threshold float64
		holds     bool
		why       string
	}{
		{name: "one cluster alone is never a rollout", seen: obs("a", "U"), threshold: 0.1},
		{name: "one of three", seen: obs("a", "U", "b", "H", "c", "H"), threshold: 0.5},
		{name: "two of four is not more than half", seen: obs("a", "U", "b", "U", "c", "H", "d", "H"), threshold: 0.5},
		{name: "two of three", seen: obs("a", "U", "b", "U", "c", "H"), threshold: 0.5, holds: true,
			why: "the application is unhealthy on 2 of its 3 clusters (a, b), more than the bad-rollout threshold 0.5: a bad rollout, not a bad cluster"},
		{name: "an Unknown copy past its window counts", seen: obs("a", "U", "b", "?", "c", "H"), failOver: []string{"b"}, threshold: 0.5, holds: true,
			why: "the application is unhealthy on 2 of its 3 clusters (a, b), more than the bad-rollout threshold 0.5: a bad rollout, not a bad cluster"},
		{name: "an Unknown copy within its window does not", seen: obs("a", "U", "b", "?", "c", "H"), threshold: 0.5},
		{name: "a cluster in transit counts, and is one of the clusters", seen: obs("a", "U", "c", "H"), inTransit: []string{"b"}, threshold: 0.5, holds: true,
			why: "the application is unhealthy on 2 of its 3 clusters (a, b), more than the bad-rollout threshold 0.5: a bad rollout, not a bad cluster"},
		{name: "a cluster in transit and seen counts once, as seen", seen: obs("a", "U", "b", "H", "c", "H"), inTransit: []string{"b", "b"}, threshold: 0.5},
		{name: "threshold 1 turns the hold off", seen: obs("a", "U", "b", "U"), threshold: 1},
		{name: "NaN turns the hold off", seen: obs("a", "U", "b", "U"), threshold: math.NaN()},
		{name: "threshold 0 holds on any two", seen: obs("a", "U", "b", "U", "c", "H", "d", "H", "e", "H"), threshold: 0, holds: true,
			why: "the application is unhealthy on 2 of its 5 clusters (a, b), more than the bad-rollout threshold 0: a bad rollout, not a bad cluster"},
		{name: "nothing seen", threshold: 0.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			holds, why := appfailover.BadRollout(c.seen, appfailover.Result{FailOver: c.failOver}, c.inTransit, c.threshold)
			assert.Equal(t, c.holds, holds)
			assert.Equal(t, c.why, why)
		})
	}
}

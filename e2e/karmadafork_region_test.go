//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/failoverkit/failover/ratelimit"
)

// regionOutage builds, in a suite of its own, a fleet of 11 clusters in
// three regions with region a down entirely: a0…a6 carry the NoExecute
// taint, b0, b1, c0 and c1 are healthy. 7 of 11 faulty is 64%, above the
// 55% threshold in a fleet of more than 10, so the fleet rule slows every
// eviction to the secondary rate. Eight bindings sit on region a's
// clusters, two on each of a0…a3. It starts the fork with the given
// disruption domain and returns the suite, its task log and the run.
func regionOutage(t *testing.T, name string, domain ratelimit.Domain, primary, secondary float64) (*suite, *taskLog, *forkRun) {
	s := newSuite(t, name)
	tasks := s.watchTasks()
	for _, c := range []struct {
		region string
		n      int
		down   bool
	}{{"a", 7, true}, {"b", 2, false}, {"c", 2, false}} {
		for i := range c.n {
			cs := clusterSpec{region: c.region}
			if c.down {
				cs.taints = []corev1.Taint{noExecute(time.Now())}
			}
			s.newCluster(fmt.Sprintf("%s-%s%d", name, c.region, i), cs)
		}
	}
	for i := range 4 {
		s.bindings(fmt.Sprintf("a%d-", i), 2, bindingSpec{clusters: []string{fmt.Sprintf("%s-a%d", name, i)}})
	}
	cfg := rate(primary, secondary)
	cfg.DisruptionDomain = domain
	r := s.start(name, forkOptions{Rate: cfg, EnableNoExecuteTaintEviction: true}, nil)
	return s, tasks, r
}

// evictedFromRegionA is the creation times of the tasks from region a's
// clusters, earliest first.
func evictedFromRegionA(name string, tasks *taskLog) []time.Time {
	var all []time.Time
	for i := range 4 {
		all = append(all, tasks.from(fmt.Sprintf("%s-a%d", name, i))...)
	}
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	return all
}

// testRegionOutage: with --disruption-domain=region the down region is in
// FullDisruption and its bindings leave at the primary rate; the same
// outage under the fleet rule, run beside it, leaves at the secondary rate.
func testRegionOutage(t *testing.T) {
	const primary, secondary = 4.0, 0.5
	// The fleet rule on the same outage, for comparison: 7 of 11 faulty.
	fleetRate := rate(primary, secondary).RateFor(ratelimit.Health{Total: 11, Unhealthy: 7})
	assert.Equal(t, secondary, fleetRate, "the fleet rule's rate for 7 of 11 faulty")

	t.Run("region", func(t *testing.T) {
		t.Parallel()
		_, tasks, r := regionOutage(t, "region", ratelimit.DomainRegion, primary, secondary)
		eventually(t, 20*time.Second, "region a's eight evictions", func() bool { return len(evictedFromRegionA("region", tasks)) == 8 })
		times := evictedFromRegionA("region", tasks)
		// 8 permits at 4/s span 1.75s, give or take a second of the
		// timestamps' truncation; at the fleet rule's 0.5/s, 14s.
		span := times[7].Sub(times[0])
		assert.GreaterOrEqual(t, span, 750*time.Millisecond, "8 evictions at %v/s took %v: faster than the primary rate", primary, span)
		assert.LessOrEqual(t, span, 3*time.Second, "8 evictions took %v: slower than the primary rate %v/s", span, primary)
		for _, d := range []struct{ domain, state string }{{"a", "FullDisruption"}, {"b", "Normal"}, {"c", "Normal"}} {
			assert.Equal(t, 1.0, r.metric(t, "domain_disruption_state", map[string]string{"domain": d.domain, "state": d.state}), "region %s's state", d.domain)
			assert.Equal(t, primary, r.metric(t, "domain_eviction_rate", map[string]string{"domain": d.domain}), "region %s's rate", d.domain)
		}
		assert.Equal(t, primary, r.metric(t, "eviction_rate", nil), "the total cap")
		t.Logf("measured, region rule: 8 evictions from the down region within %v (whole seconds; the fleet rule gives %v/s), tasks %v",
			span, fleetRate, times)
	})
	t.Run("fleet", func(t *testing.T) {
		t.Parallel()
		_, tasks, r := regionOutage(t, "fleetrule", ratelimit.DomainFleet, primary, secondary)
		eventually(t, 20*time.Second, "three evictions", func() bool { return len(evictedFromRegionA("fleetrule", tasks)) >= 3 })
		times := evictedFromRegionA("fleetrule", tasks)[:3]
		// Two intervals of 2s, give or take a second of truncation.
		span := times[2].Sub(times[0])
		assert.GreaterOrEqual(t, span, 3*time.Second, "3 evictions under the fleet rule took %v: faster than %v/s", span, secondary)
		assert.Equal(t, secondary, r.metric(t, "eviction_rate", nil), "the fleet rule's rate")
		t.Logf("measured, fleet rule: 3 evictions from the down region in %v (%.2f/s), tasks %v", span, perSecond(times), times)
	})
}

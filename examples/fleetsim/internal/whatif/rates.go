package whatif

import (
	"slices"
	"strings"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/ratelimit"
)

// rateModel is the controllers' own Limiter, played on a clock of the
// plan's over the failure's clusters turning faulty, one at a time at the
// moment each does: the plan asks it for each eviction's permit (its
// buckets, its rule, its storm hold), as the queues ask theirs, and
// restates none of it.
type rateModel struct {
	clk     *clocktesting.FakeClock
	tracker *ratelimit.Tracker
	limiter *ratelimit.Limiter
	domain  ratelimit.Domain
	// turns are the clusters that turn faulty and have not yet, in time
	// order.
	turns []turn
}

// turn is a cluster turning faulty at a moment.
type turn struct {
	at      time.Time
	cluster string
	domains []string
}

// newRateModel is the Limiter of cfg at start, on the fleet as it was
// before the failure, with the clusters of faultyAt to turn faulty then.
func newRateModel(cfg ratelimit.Config, before, after map[string]*clusterv1alpha1.Cluster, faultyAt map[string]time.Time, start time.Time) (*rateModel, error) {
	m := &rateModel{clk: clocktesting.NewFakeClock(start), tracker: ratelimit.NewTracker(), domain: cfg.DisruptionDomain}
	for _, name := range sortedKeys(before) {
		conv, err := karmada.FromCluster(before[name])
		if err != nil {
			continue // left out of the fleet, as the controllers' source leaves it
		}
		m.set(name, failover.IsFaulty(conv), m.domainsOf(after[name]))
	}
	for name, at := range faultyAt {
		m.turns = append(m.turns, turn{at: at, cluster: name, domains: m.domainsOf(after[name])})
	}
	slices.SortFunc(m.turns, func(a, b turn) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.cluster, b.cluster)
	})
	l, err := ratelimit.NewLimiter(cfg, m.tracker, ratelimit.WithClock(m.clk))
	if err != nil {
		return nil, err
	}
	m.limiter = l
	l.Refresh() // the fleet before the failure, read at start
	return m, nil
}

// domainsOf is the domains c counts in under the rule; nil under the fleet
// rule.
func (m *rateModel) domainsOf(c *clusterv1alpha1.Cluster) []string {
	if !m.domain.PerDomain() || c == nil {
		return nil
	}
	conv, err := karmada.FromCluster(c)
	if err != nil {
		return nil
	}
	return domainsOf(conv, m.domain)
}

func (m *rateModel) set(name string, faulty bool, domains []string) {
	if m.domain.PerDomain() {
		m.tracker.SetInDomains(name, faulty, domains...)
		return
	}
	m.tracker.Set(name, faulty)
}

// to moves the clock to t (never back), each cluster turning faulty by
// then read by the Limiter at its own moment, as the controllers' health
// source tells theirs.
func (m *rateModel) to(t time.Time) {
	for len(m.turns) > 0 && !m.turns[0].at.After(t) {
		tu := m.turns[0]
		m.turns = m.turns[1:]
		if tu.at.After(m.clk.Now()) {
			m.clk.SetTime(tu.at)
		}
		m.set(tu.cluster, true, tu.domains)
		m.limiter.Refresh()
	}
	if t.After(m.clk.Now()) {
		m.clk.SetTime(t)
	}
}

// nextTurn is when the next cluster turns faulty; zero when none will.
func (m *rateModel) nextTurn() time.Time {
	if len(m.turns) == 0 {
		return time.Time{}
	}
	return m.turns[0].at
}

// TakeDomainAt is the Limiter's at t, once the health has played to t:
// the plan's queues take their permits here (evictionqueue.Permits).
func (m *rateModel) TakeDomainAt(t time.Time, domains []string) (domain string, giveBack func(), ok bool, next time.Time) {
	m.to(t)
	return m.limiter.TakeDomainAt(t, domains)
}

// PacesByDomain is the Limiter's.
func (m *rateModel) PacesByDomain() bool { return m.limiter.PacesByDomain() }

// storm plays every cluster's turn and reports when a failure storm's hold
// began (the Limiter's StormHold), zero when none did.
func (m *rateModel) storm() time.Time {
	if m.limiter.StormHold() {
		return m.clk.Now()
	}
	for len(m.turns) > 0 {
		at := m.turns[0].at
		m.to(at)
		if m.limiter.StormHold() {
			return at
		}
	}
	return time.Time{}
}

// earliest is the earlier of a and b, zero standing for never.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

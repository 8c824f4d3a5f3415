package prescheduling

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/internal/nameset"
)

// scan holds one Check's view of the request and the outcome of its single
// pass over the fleet.
type scan struct {
	req *Request
	p   *compiled

	sched      nameset.Set // index in req.Scheduled
	evicting   nameset.Set
	evicted    []failover.TargetCluster // copies to replace: scheduled and evicting
	schedNames []string
	// replicas is the workload's spec.replicas as the schedule result
	// shows it: every copy's for Duplicated, their sum for Divided.
	replicas int32
	sum      int64 // Divided: the replicas of the schedule result, uncapped

	fleetSize int
	// byName: the passing clusters of every term are listed by name, each
	// name once, and carry their capacity (termScan.caps), as an Index
	// gives them.
	byName bool
	// Exclusions that do not depend on the affinity term.
	beingEvicted, alreadyRuns tally
	terms                     []termScan
}

// termScan is the outcome of the scan for one affinity term. A cluster the
// term does not select counts as not matching whatever else is wrong with it,
// so that a Reason names only the problems of clusters the placement wants.
type termScan struct {
	// passing are the clusters Karmada's filters let through, the remaining
	// ones and faulty ones included: the clusters its scheduler chooses
	// among.
	passing []*failover.Cluster
	// caps, when the scan is byName and the check has a capacity
	// function, are its answers for passing, one for one.
	caps                                  []spare
	noMatch, faulty, untolerated, noGroup tally
	// reduced: passing holds only the clusters the scheduler's choice can
	// reach (Index.reduce); what the check reads of the whole is then
	// given: cands, the candidates; total, how many clusters pass; sum,
	// their room (int32, as Karmada sums); first, the first few of their
	// names.
	reduced bool
	cands   []string
	total   int
	sum     int32
	first   []string
	// regions, for a selection by region, are each region's totals.
	regions map[string]regionTotals
}

func newScan(req *Request, p *compiled) *scan {
	s := &scan{
		req:      req,
		p:        p,
		evicting: nameset.New(req.Evicting),
		terms:    make([]termScan, len(p.terms)),
	}
	s.schedNames = names(req.Scheduled)
	s.sched = nameset.New(s.schedNames)
	var sum int64
	for _, t := range req.Scheduled {
		if s.evicting.Has(t.Name) {
			s.evicted = append(s.evicted, t)
		}
		if p.division == divideDuplicated {
			s.replicas = max(s.replicas, t.Replicas)
		} else {
			sum += int64(t.Replicas)
		}
	}
	if p.division != divideDuplicated {
		s.replicas = int32(min(sum, math.MaxInt32))
		s.sum = sum
	}
	return s
}

// replicaSum rejects a divided schedule result whose replicas sum past
// int32, which no Karmada workload can have: capped, the sum would let the
// check approve a schedule the scheduler cannot represent.
func (s *scan) replicaSum() error {
	if s.sum <= math.MaxInt32 {
		return nil
	}
	return fmt.Errorf("prescheduling: request.scheduled: the replicas sum to %d, past the most a workload has (%d)", s.sum, math.MaxInt32)
}

// duplicateScheduled reports a cluster listed twice in the schedule result.
func (s *scan) duplicateScheduled() error {
	if s.sched.Len() == len(s.schedNames) {
		return nil
	}
	for i, n := range s.schedNames {
		if j := s.sched.Index(n); j != i {
			return fmt.Errorf("prescheduling: request.scheduled[%d].name: %q is also request.scheduled[%d]", i, n, j)
		}
	}
	return nil
}

// run makes the one pass over the fleet, filtering it as Karmada's
// scheduler does for the binding the eviction leaves: the clusters in
// Evicting are out (its ClusterEviction filter); a cluster that keeps the
// workload passes the taint filter whatever its taints, any other must
// tolerate its NoSchedule and NoExecute taints; every cluster must match
// the term and have the fields the spread constraints group by.
func (s *scan) run(fleet []failover.Cluster) error {
	s.fleetSize = len(fleet)
	for ti := range s.terms {
		// Most of a fleet is usually a candidate: one allocation, not a
		// dozen as the slice grows.
		s.terms[ti].passing = make([]*failover.Cluster, 0, len(fleet))
	}
	dup := s.p.division == divideDuplicated
	for i := range fleet {
		c := &fleet[i]
		if c.Name == "" {
			return fmt.Errorf("prescheduling: fleet[%d].name is empty", i)
		}
		if s.evicting.Has(c.Name) {
			s.beingEvicted.add(c.Name, nil)
			continue
		}
		// Not being evicted from, so a scheduled cluster is a remaining one.
		keeps := s.sched.Has(c.Name)
		// A Duplicated copy that stays is named once, as running it.
		quiet := keeps && dup
		if quiet {
			s.alreadyRuns.add(c.Name, nil)
		}
		faulty := failover.IsFaulty(*c)
		var taint *corev1.Taint
		tolerated := true
		if !keeps {
			taint, tolerated = tolerates(s.p.tols, c)
		}
		group := s.missingGroup(c)
		for ti := range s.p.terms {
			if s.filter(ti, c, quiet, faulty, tolerated, taint, group) {
				s.terms[ti].passing = append(s.terms[ti].passing, c)
			}
		}
	}
	return nil
}

// filter is one term's filters for c, a cluster not being evicted from: it
// reports whether c passes, and tallies why not (see termScan).
func (s *scan) filter(ti int, c *failover.Cluster, quiet, faulty, tolerated bool, taint *corev1.Taint, group *spreadKey) bool {
	ts := &s.terms[ti]
	switch {
	case !s.p.terms[ti].m.Matches(c):
		if !quiet {
			ts.noMatch.add(c.Name, nil)
		}
	case !tolerated && faulty:
		ts.faulty.add(c.Name, func() string { return faultyDetail(c) })
	case !tolerated:
		ts.untolerated.add(c.Name, func() string { return taintString(taint) })
	case group != nil:
		if !quiet {
			ts.noGroup.add(c.Name, func() string { return groupDetail(group) })
		}
	default:
		if faulty && !quiet {
			ts.faulty.add(c.Name, func() string { return faultyDetail(c) })
		}
		return true
	}
	return false
}

func faultyDetail(c *failover.Cluster) string { return "taint " + taintString(faultyTaint(c)) }

func groupDetail(k *spreadKey) string {
	return fmt.Sprintf("no %s for spreadConstraints[%d]", k.singular(), k.index)
}

// missingGroup returns the first spread constraint c lacks the field of.
func (s *scan) missingGroup(c *failover.Cluster) *spreadKey { return s.p.missingGroup(c) }

func (p *compiled) missingGroup(c *failover.Cluster) *spreadKey {
	for i := range p.spread {
		if !p.spread[i].has(c) {
			return &p.spread[i]
		}
	}
	return nil
}

// passes reports whether c passes the filters of term ti as scan.run
// applies them, for a cluster that is not being evicted from; keeps says
// whether it keeps the workload, which lets it pass whatever its taints.
func (p *compiled) passes(ti int, c *failover.Cluster, keeps bool) bool {
	if !p.terms[ti].m.Matches(c) {
		return false
	}
	if !keeps {
		if _, ok := tolerates(p.tols, c); !ok {
			return false
		}
	}
	return p.missingGroup(c) == nil
}

func faultyTaint(c *failover.Cluster) *corev1.Taint {
	for i := range c.Taints {
		switch c.Taints[i].Effect {
		case corev1.TaintEffectNoExecute, failover.TaintEffectPreferNoExecute:
			return &c.Taints[i]
		}
	}
	return &corev1.Taint{}
}

func taintString(t *corev1.Taint) string {
	if t.Value != "" {
		return t.Key + "=" + t.Value + ":" + string(t.Effect)
	}
	return t.Key + ":" + string(t.Effect)
}

// singular names one group: "region", "label team".
func (k *spreadKey) singular() string {
	if k.field == "" {
		return "label " + k.label
	}
	return string(k.field)
}

// spare is a capacity function's answer for one cluster.
type spare struct {
	replicas int32
	known    bool
}

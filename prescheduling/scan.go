package prescheduling

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/internal/nameset"
)

// scan holds one Check's view of the request and the outcome of its single
// pass over the fleet.
type scan struct {
	req *Request
	p   *compiled

	sched    nameset.Set // index in req.Scheduled
	evicting nameset.Set
	evicted  []failover.TargetCluster // copies to replace: scheduled and evicting
	// remaining are the scheduled clusters that keep the workload, and
	// remainingClusters their fleet entries (nil when not in the fleet).
	remaining         []string
	remainingClusters []*failover.Cluster
	// remainingAt is, for each entry of req.Scheduled, its index in
	// remaining, or -1 for an evicted copy.
	remainingAt []int
	schedNames  []string

	fleetSize int
	// Exclusions that do not depend on the affinity term.
	beingEvicted, alreadyRuns tally
	terms                     []termScan
}

// termScan is the outcome of the scan for one affinity term. A cluster the
// term does not select counts as not matching whatever else is wrong with it,
// so that a Reason names only the problems of clusters the placement wants.
type termScan struct {
	cands                                              []*failover.Cluster
	noMatch, faulty, untolerated, noGroup, notWeighted tally
}

// unfit says why a cluster the affinity selects cannot take the workload.
type unfit uint8

const (
	fit unfit = iota
	isFaulty
	isUntolerated
	hasNoGroup
)

func newScan(req *Request, p *compiled) *scan {
	s := &scan{
		req:      req,
		p:        p,
		evicting: nameset.New(req.Evicting),
		terms:    make([]termScan, len(p.terms)),
	}
	s.schedNames = names(req.Scheduled)
	s.sched = nameset.New(s.schedNames)
	s.remainingAt = make([]int, len(req.Scheduled))
	s.remaining = make([]string, 0, len(req.Scheduled))
	for i, t := range req.Scheduled {
		s.remainingAt[i] = -1
		if s.evicting.Has(t.Name) {
			s.evicted = append(s.evicted, t)
		} else {
			s.remainingAt[i] = len(s.remaining)
			s.remaining = append(s.remaining, t.Name)
		}
	}
	s.remainingClusters = make([]*failover.Cluster, len(s.remaining))
	return s
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

// run makes the one pass over the fleet.
func (s *scan) run(fleet []failover.Cluster) error {
	s.fleetSize = len(fleet)
	for ti := range s.terms {
		// Most of a fleet is usually a candidate: one allocation, not a
		// dozen as the slice grows.
		s.terms[ti].cands = make([]*failover.Cluster, 0, len(fleet))
	}
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
		if j := s.sched.Index(c.Name); j >= 0 {
			s.remainingClusters[s.remainingAt[j]] = c
			if s.p.duplicated {
				s.alreadyRuns.add(c.Name, nil)
				continue
			}
		}
		why := fit
		var taint *corev1.Taint
		var group *spreadKey
		switch {
		case failover.IsFaulty(*c):
			why = isFaulty
		default:
			if t, ok := tolerates(s.p.tols, c); !ok {
				why, taint = isUntolerated, t
			} else if group = s.missingGroup(c); group != nil {
				why = hasNoGroup
			}
		}
		for ti := range s.p.terms {
			ts := &s.terms[ti]
			switch {
			case !s.p.terms[ti].m.Matches(c):
				ts.noMatch.add(c.Name, nil)
			case why == isFaulty:
				ts.faulty.add(c.Name, func() string { return "taint " + taintString(faultyTaint(c)) })
			case why == isUntolerated:
				ts.untolerated.add(c.Name, func() string { return taintString(taint) })
			case why == hasNoGroup:
				ts.noGroup.add(c.Name, func() string {
					return fmt.Sprintf("no %s for spreadConstraints[%d]", group.singular(), group.index)
				})
			case s.p.weights != nil && !anyMatches(s.p.weights, c):
				ts.notWeighted.add(c.Name, nil)
			default:
				ts.cands = append(ts.cands, c)
			}
		}
	}
	return nil
}

func (s *scan) missingGroup(c *failover.Cluster) *spreadKey {
	for i := range s.p.spread {
		if !s.p.spread[i].has(c) {
			return &s.p.spread[i]
		}
	}
	return nil
}

func anyMatches(ms []*failover.AffinityMatcher, c *failover.Cluster) bool {
	for _, m := range ms {
		if m.Matches(c) {
			return true
		}
	}
	return false
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

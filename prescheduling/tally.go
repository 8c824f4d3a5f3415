package prescheduling

import (
	"github.com/failoverkit/failover"
)

// The kinds of cluster a term's filters tell apart, for a cluster that is
// neither being evicted from nor keeps the workload, as scan.filter tallies
// them.
const (
	kindPasses uint8 = iota
	kindPassesFaulty
	kindNoMatch
	kindFaultyUntolerated
	kindUntolerated
	kindNoGroup
)

// kind is what term ti's filters make of c, a cluster that is neither
// being evicted from nor keeps the workload.
func (p *compiled) kind(ti int, c *failover.Cluster) uint8 {
	if !p.terms[ti].m.Matches(c) {
		return kindNoMatch
	}
	faulty := failover.IsFaulty(*c)
	if _, ok := tolerates(p.tols, c); !ok {
		if faulty {
			return kindFaultyUntolerated
		}
		return kindUntolerated
	}
	if p.missingGroup(c) != nil {
		return kindNoGroup
	}
	if faulty {
		return kindPassesFaulty
	}
	return kindPasses
}

// tally counts, for an answer that is not feasible, what scan.run counts:
// the fleet's size and the clusters each term rules out, with the first
// few of each named, from the kinds the memo keeps and, for the clusters
// the request names and the overrides, from the clusters themselves.
func (x *Index[R]) tally(s *scan, m *memo[R], sp []special[R], overrides []Override[R]) {
	s.fleetSize = len(x.byName)
	for _, o := range overrides {
		if _, ok := x.slots[o.Name]; ok {
			s.fleetSize--
		}
		if o.Cluster != nil {
			s.fleetSize++
		}
	}
	dup := s.p.division == divideDuplicated
	pos, held := make([]int, len(sp)), make([]bool, len(sp))
	for i := range sp {
		pos[i], held[i] = x.find(sp[i].name)
		if c := sp[i].c; c != nil {
			switch {
			case s.evicting.Has(c.Name):
				s.beingEvicted.add(c.Name, nil)
			case dup && s.sched.Has(c.Name):
				s.alreadyRuns.add(c.Name, nil)
			}
		}
	}
	for ti := range s.terms {
		kinds := m.kinds[ti]
		last := 0
		for i := range sp {
			x.tallyKinds(s, ti, kinds, last, pos[i])
			if last = pos[i]; held[i] {
				last++
			}
			if c := sp[i].c; c != nil && !s.evicting.Has(c.Name) {
				keeps := s.sched.Has(c.Name)
				taint, tolerated := tolerates(s.p.tols, c)
				if keeps {
					taint, tolerated = nil, true
				}
				s.filter(ti, c, keeps && dup, failover.IsFaulty(*c), tolerated, taint, s.p.missingGroup(c))
			}
		}
		x.tallyKinds(s, ti, kinds, last, len(kinds))
	}
}

// tallyWithin is tally for CheckWithin: the specials are the fleet.
func (x *Index[R]) tallyWithin(s *scan, sp []special[R]) {
	dup := s.p.division == divideDuplicated
	for i := range sp {
		c := sp[i].c
		if c == nil {
			continue
		}
		s.fleetSize++
		switch {
		case s.evicting.Has(c.Name):
			s.beingEvicted.add(c.Name, nil)
		case dup && s.sched.Has(c.Name):
			s.alreadyRuns.add(c.Name, nil)
		}
		for ti := range s.terms {
			if s.evicting.Has(c.Name) {
				continue
			}
			keeps := s.sched.Has(c.Name)
			taint, tolerated := tolerates(s.p.tols, c)
			if keeps {
				taint, tolerated = nil, true
			}
			s.filter(ti, c, keeps && dup, failover.IsFaulty(*c), tolerated, taint, s.p.missingGroup(c))
		}
	}
}

// tallyKinds tallies the clusters at positions lo to hi of byName, by
// their kinds: those past the few a Reason names are only counted.
func (x *Index[R]) tallyKinds(s *scan, ti int, kinds []uint8, lo, hi int) {
	ts := &s.terms[ti]
	for i := lo; i < hi; i++ {
		var t *tally
		switch kinds[i] {
		case kindNoMatch:
			t = &ts.noMatch
		case kindFaultyUntolerated, kindPassesFaulty:
			t = &ts.faulty
		case kindUntolerated:
			t = &ts.untolerated
		case kindNoGroup:
			t = &ts.noGroup
		default:
			continue
		}
		if len(t.samples) == maxSamples {
			t.n++
			continue
		}
		c := &x.byName[i].c
		switch kinds[i] {
		case kindNoMatch:
			t.add(c.Name, nil)
		case kindFaultyUntolerated, kindPassesFaulty:
			t.add(c.Name, func() string { return faultyDetail(c) })
		case kindUntolerated:
			t.add(c.Name, func() string {
				taint, _ := tolerates(s.p.tols, c)
				return taintString(taint)
			})
		case kindNoGroup:
			t.add(c.Name, func() string { return groupDetail(s.p.missingGroup(c)) })
		}
	}
}

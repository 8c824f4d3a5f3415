package prescheduling

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/failoverkit/failover"
)

// scan holds one Check's view of the request and the outcome of its single
// pass over the fleet.
type scan struct {
	req *Request
	p   *compiled

	sched    nameSet // index in req.Scheduled
	evicting nameSet
	evicted  []failover.TargetCluster // copies to replace: scheduled and evicting
	// remaining are the scheduled clusters that keep the workload, and
	// remainingClusters their fleet entries (nil when not in the fleet).
	remaining         []string
	remainingClusters []*failover.Cluster
	schedNames        []string

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

// tally counts the clusters ruled out for one reason and keeps a few of them
// to name in a Reason.
type tally struct {
	n       int
	samples []string
}

const maxSamples = 3

func (t *tally) add(name string, detail func() string) {
	t.n++
	if len(t.samples) < maxSamples {
		if detail != nil {
			name += " (" + detail() + ")"
		}
		t.samples = append(t.samples, name)
	}
}

func newScan(req *Request, p *compiled) *scan {
	s := &scan{
		req:      req,
		p:        p,
		evicting: newNameSet(req.Evicting),
		terms:    make([]termScan, len(p.terms)),
	}
	s.schedNames = names(req.Scheduled)
	s.sched = newNameSet(s.schedNames)
	for _, t := range req.Scheduled {
		if s.evicting.has(t.Name) {
			s.evicted = append(s.evicted, t)
		} else {
			s.remaining = append(s.remaining, t.Name)
		}
	}
	s.remainingClusters = make([]*failover.Cluster, len(s.remaining))
	return s
}

// duplicateScheduled reports a cluster listed twice in the schedule result.
func (s *scan) duplicateScheduled() error {
	for i, n := range s.schedNames {
		if j := s.sched.index(n); j != i {
			return fmt.Errorf("prescheduling: request.scheduled[%d].name: %q is also request.scheduled[%d]", i, n, j)
		}
	}
	return nil
}

// run makes the one pass over the fleet.
func (s *scan) run(fleet []failover.Cluster) error {
	s.fleetSize = len(fleet)
	remaining := newNameSet(s.remaining)
	for i := range fleet {
		c := &fleet[i]
		if c.Name == "" {
			return fmt.Errorf("prescheduling: fleet[%d].name is empty", i)
		}
		if s.evicting.has(c.Name) {
			s.beingEvicted.add(c.Name, nil)
			continue
		}
		if j := remaining.index(c.Name); j >= 0 {
			s.remainingClusters[j] = c
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
			case !s.p.terms[ti].m.matches(c):
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
		if s.p.spread[i].of(c) == "" {
			return &s.p.spread[i]
		}
	}
	return nil
}

func anyMatches(ms []*matcher, c *failover.Cluster) bool {
	for _, m := range ms {
		if m.matches(c) {
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

// exclusions says why the fleet's other clusters are not candidates of term
// ti, e.g. "member1 already runs it; member3 (taint x:NoExecute) is faulty".
func (s *scan) exclusions(ti int) string {
	ts := &s.terms[ti]
	var parts []string
	add := func(t *tally, one, many string) {
		if t.n == 0 {
			return
		}
		verb := one
		if t.n > 1 {
			verb = many
		}
		parts = append(parts, samples(t)+" "+verb)
	}
	add(&s.beingEvicted, "is being evicted from", "are being evicted from")
	add(&s.alreadyRuns, "already runs it", "already run it")
	add(&ts.faulty, "is faulty", "are faulty")
	add(&ts.untolerated, "has a NoSchedule taint the placement does not tolerate", "have NoSchedule taints the placement does not tolerate")
	add(&ts.noGroup, "cannot be put in a spread group", "cannot be put in spread groups")
	add(&ts.noMatch, "does not match "+s.p.terms[ti].field, "do not match "+s.p.terms[ti].field)
	add(&ts.notWeighted, "has no weight in replicaScheduling.weightPreference.staticWeightList", "have no weight in replicaScheduling.weightPreference.staticWeightList")
	return strings.Join(parts, "; ")
}

func samples(t *tally) string {
	if t.n > len(t.samples) {
		return strings.Join(t.samples, ", ") + fmt.Sprintf(" and %d more", t.n-len(t.samples))
	}
	return joinAnd(t.samples)
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// list names up to max of xs: "member1, member2 and 3 more".
func list(xs []string, max int) string {
	if len(xs) == 0 {
		return "none"
	}
	if len(xs) > max {
		return strings.Join(xs[:max], ", ") + fmt.Sprintf(" and %d more", len(xs)-max)
	}
	return joinAnd(xs)
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

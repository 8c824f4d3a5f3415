package prescheduling

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/failoverkit/failover"
)

// decide answers under term ti with the scheduler's own choice (model). It
// reports scheduled false when the scheduler would fail under this term, so
// that Check tries the next clusterAffinities term, as the scheduler does;
// when it schedules, the answer is final whatever the library makes of it.
func (s *scan) decide(ti int, c *Checker) (r Result, scheduled bool) {
	ts := &s.terms[ti]
	dup := s.p.division == divideDuplicated
	// One sort by name serves the candidates, the check for a name listed
	// twice and the scheduler's last tie-break.
	var order []int
	if s.byName {
		order = make([]int, len(ts.passing))
		for i := range order {
			order[i] = i
		}
	} else {
		order = sortedOrder(len(ts.passing), func(i int) string { return ts.passing[i].Name })
	}
	var cands []string
	if ts.reduced {
		cands = ts.cands // an Index's, which lists each cluster once
	}
	for k, i := range order {
		if ts.reduced {
			break
		}
		cl := ts.passing[i]
		if k > 0 && cl.Name == ts.passing[order[k-1]].Name {
			return invalid(fmt.Errorf("prescheduling: fleet lists cluster %q more than once", cl.Name)), false
		}
		if !failover.IsFaulty(*cl) && !(dup && s.sched.Has(cl.Name)) {
			cands = append(cands, cl.Name)
		}
	}
	r = Result{Candidates: cands}
	prefix := s.termPrefix(ti)
	m := s.model(ti, c, order)
	selected, receivers, f := m.schedule()
	switch {
	case f == nil && dup:
		return s.judgeDuplicated(ti, m, selected, r), true
	case f == nil:
		return s.judgeDivided(ti, m, receivers, r), true
	case f.reason == "" || len(cands) == 0:
		// Whatever else the scheduler would trip on, nothing can take it.
		r.Code, r.Reason = NoEligibleCluster, prefix+s.noneEligible(ti)
	case dup && len(cands) < len(s.evicted):
		r.Code, r.Reason = NoEligibleCluster, prefix+s.tooFew(ti, cands)
	case f.code == InsufficientCapacity:
		r.Code, r.Reason = f.code, prefix+f.reason
	case dup:
		r.Code, r.Reason = f.code, prefix+f.reason+" when replacing "+s.copiesWhat()
	default:
		r.Code, r.Reason = f.code, prefix+f.reason+" when moving "+s.evictedWhat()
	}
	return r, false
}

// judgeDuplicated: every evicted copy must be replaced, the scheduler's new
// result running the workload on as many clusters as before, not counting
// faulty ones it would add.
func (s *scan) judgeDuplicated(ti int, m *model, selected []*node, r Result) Result {
	prefix := s.termPrefix(ti)
	var added, faulty []*node
	runs := 0
	for _, n := range selected {
		switch {
		case n.local:
			runs++
		case n.faulty:
			faulty = append(faulty, n)
		default:
			runs++
			added = append(added, n)
		}
	}
	if runs >= len(s.req.Scheduled) {
		r.Feasible, r.Code, r.Moves = true, Feasible, moves(selected)
		r.Reason = fmt.Sprintf("%sfeasible: %s can replace %s%s", prefix, list(nodeNames(sortedNodes(added)), 5), s.copiesWhat(), noteOf(m.notes(selected)...))
		return r
	}
	// The scheduler keeps fewer copies: say why.
	if len(r.Candidates) < len(s.evicted) {
		r.Code, r.Reason = NoEligibleCluster, prefix+s.tooFew(ti, r.Candidates)
		return r
	}
	r.Code = SpreadConstraintUnsatisfiable
	why := s.selectionLimit(ti, m, selected)
	if len(faulty) > 0 {
		r.Code = NoEligibleCluster
		why = fmt.Sprintf("%s %s faulty", list(nodeNames(sortedNodes(faulty)), 5), isAre(len(faulty)))
	}
	r.Reason = fmt.Sprintf("%sKarmada's scheduler would run it on %s (%s), fewer than the %d it ran on, when replacing %s: %s",
		prefix, plural(runs, "cluster", "clusters"), list(nodeNames(sortedNodes(selected)), 5), len(s.req.Scheduled), s.copiesWhat(), why)
	return r
}

// selectionLimit says what kept the scheduler from selecting more clusters.
func (s *scan) selectionLimit(ti int, m *model, selected []*node) string {
	sel := &s.p.sel
	switch {
	case sel.region != nil:
		regions := map[string]bool{}
		for _, n := range selected {
			regions[n.c.Region] = true
		}
		names := slices.Sorted(maps.Keys(regions))
		at := "there is no cluster constraint"
		if sel.cluster != nil {
			at = fmt.Sprintf("spreadConstraints[%d] allows at most %s", sel.cluster.index, plural(sel.cluster.max, "cluster", "clusters"))
		}
		return fmt.Sprintf("it selects the fewest regions that hold enough clusters for spreadConstraints[%d], %s (%s), and %s", sel.region.index, sel.region.noun(len(names)), list(names, 5), at)
	case sel.cluster != nil && len(selected) < m.total:
		return fmt.Sprintf("spreadConstraints[%d] allows at most %s", sel.cluster.index, plural(sel.cluster.max, "cluster", "clusters"))
	}
	return s.why(ti)
}

// judgeDivided: the evicted replicas must all be placed (the scheduler has
// checked the room, but for a static weight division, which shares by
// weight whatever the room), none of them on a faulty cluster the workload
// does not run on yet. A faulty cluster the workload keeps may take some (as
// Karmada's scheduler gives them to the clusters it keeps first): it is
// being evicted from too, or will be, and refusing would leave two faulty
// clusters each waiting for the other.
func (s *scan) judgeDivided(ti int, m *model, receivers []*node, r Result) Result {
	prefix := s.termPrefix(ti)
	var faulty []*node
	for _, n := range receivers {
		if n.faulty && !n.local {
			faulty = append(faulty, n)
		}
	}
	if len(faulty) > 0 {
		r.Code = NoEligibleCluster
		r.Reason = fmt.Sprintf("%sKarmada's scheduler would put some of %s on %s, which %s faulty", prefix, s.evictedWhat(), list(nodeNames(sortedNodes(faulty)), 5), isAre(len(faulty)))
		return r
	}
	notes := m.notes(receivers)
	if m.capacity && m.p.division == divideStaticWeight {
		var over tally
		for _, n := range sortedNodes(receivers) {
			if n.known && n.gain > n.est {
				over.add(n.name, func() string { return fmt.Sprintf("room for %d", n.est) })
			}
		}
		if over.n > 0 {
			notes = append(notes, fmt.Sprintf("the static weights share whatever the room, and %s may get more replicas than %s room for, which would wait pending", samples(&over), pluralWord(over.n, "it has", "they have")))
		}
	}
	r.Feasible, r.Code, r.Moves = true, Feasible, moves(receivers)
	r.PlacedByRoom = m.p.division == divideAggregated || m.p.division == divideDynamicWeight
	r.Reason = fmt.Sprintf("%sfeasible: %s can take %s%s", prefix, list(nodeNames(sortedNodes(receivers)), 5), s.evictedWhat(), noteOf(notes...))
	return r
}

// moves lists the clusters of ns that gain replicas, by name, with the
// most each may gain.
func moves(ns []*node) []failover.TargetCluster {
	var out []failover.TargetCluster
	for _, n := range sortedNodes(ns) {
		if n.gain > 0 {
			out = append(out, failover.TargetCluster{Name: n.name, Replicas: n.gain})
		}
	}
	return out
}

// notes says what the answer assumed: capacities it did not know, and
// spread constraints the scheduler does not count.
func (m *model) notes(used []*node) []string {
	var out []string
	// A Duplicated placement without spread constraints goes to every
	// cluster it allows whatever their room: their room assumes nothing.
	if m.capacity && !(m.p.sel.all && m.p.division == divideDuplicated) {
		var unknown tally
		for _, n := range sortedNodes(used) {
			if !n.known {
				unknown.add(n.name, nil)
			}
		}
		if unknown.n > 0 {
			out = append(out, fmt.Sprintf("the unknown capacity of %s is assumed sufficient", samples(&unknown)))
		}
	}
	if k := m.p.sel.other; k != nil && !m.p.sel.all {
		out = append(out, fmt.Sprintf("Karmada v1.18's scheduler does not count the groups of spreadConstraints[%d] (by %s)", k.index, k.singular()))
	}
	return out
}

// tooFew says that fewer clusters than evicted copies can take a
// Duplicated workload.
func (s *scan) tooFew(ti int, cands []string) string {
	found := "no eligible cluster"
	if len(cands) > 0 {
		found = fmt.Sprintf("only %s (%s)", plural(len(cands), "eligible cluster", "eligible clusters"), list(cands, 5))
	}
	return fmt.Sprintf("%s outside %s to replace %s: %s", found, list(s.schedNames, 5), s.copiesWhat(), s.why(ti))
}

// noneEligible says why no cluster can take the workload.
func (s *scan) noneEligible(ti int) string {
	if s.p.division == divideDuplicated {
		return fmt.Sprintf("no eligible cluster outside %s to replace %s: %s", list(s.schedNames, 5), s.copiesWhat(), s.why(ti))
	}
	return fmt.Sprintf("no eligible cluster can take %s: %s", s.evictedWhat(), s.why(ti))
}

func (s *scan) copiesWhat() string {
	return fmt.Sprintf("the %s on %s", pluralWord(len(s.evicted), "copy", "copies"), list(names(s.evicted), 5))
}

func (s *scan) evictedReplicas() int64 {
	var n int64
	for _, t := range s.evicted {
		n += int64(t.Replicas)
	}
	return n
}

func (s *scan) evictedWhat() string {
	return fmt.Sprintf("the %s evicted from %s", plural64(s.evictedReplicas(), "replica", "replicas"), list(names(s.evicted), 5))
}

// noteOf appends the non-empty notes to a feasible Reason, in parentheses.
func noteOf(notes ...string) string {
	notes = slices.DeleteFunc(notes, func(n string) bool { return n == "" })
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, "; ") + ")"
}

func (s *scan) termPrefix(ti int) string {
	if s.p.terms[ti].name == "" {
		return ""
	}
	return s.p.terms[ti].field + ": "
}

// why says why the fleet offers no (or too few) candidates.
func (s *scan) why(ti int) string {
	if s.fleetSize == 0 {
		return "the fleet is empty"
	}
	ex := s.exclusions(ti)
	if ex == "" {
		return fmt.Sprintf("the fleet has %s", plural(s.fleetSize, "cluster", "clusters"))
	}
	return fmt.Sprintf("of %s, %s", plural(s.fleetSize, "cluster", "clusters"), ex)
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func plural64(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

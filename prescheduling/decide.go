package prescheduling

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/failoverkit/failover"
)

// duplicated decides a Duplicated placement under term ti: every evicted copy
// needs a cluster of its own that does not run the workload yet.
func (s *scan) duplicated(ti int) Result {
	ts := &s.terms[ti]
	cands, err := sortCandidates(ts.cands)
	if err != nil {
		return invalid(err)
	}
	r := Result{Candidates: cands}
	need := len(s.evicted)
	what := fmt.Sprintf("the %s on %s", pluralWord(need, "copy", "copies"), list(names(s.evicted), 5))
	prefix := s.termPrefix(ti)
	if len(cands) < need {
		found := "no eligible cluster"
		if len(cands) > 0 {
			found = fmt.Sprintf("only %s (%s)", plural(len(cands), "eligible cluster", "eligible clusters"), list(cands, 5))
		}
		r.Code = NoEligibleCluster
		r.Reason = fmt.Sprintf("%s%s outside %s to replace %s: %s", prefix, found, list(names(s.req.Scheduled), 5), what, s.why(ti))
		return r
	}
	v := s.p.plan.check(s.spreadCase(ts.cands, need))
	if !v.ok {
		r.Code = SpreadConstraintUnsatisfiable
		r.Reason = prefix + v.reason + " when replacing " + what
		return r
	}
	r.Feasible, r.Code = true, Feasible
	r.Reason = fmt.Sprintf("%sfeasible: %s can replace %s%s", prefix, list(cands, 5), what, noteOf(v.note))
	return r
}

// divided decides a Divided placement under term ti: the evicted replicas
// need eligible clusters, those already running the workload included, with
// room for them.
func (s *scan) divided(ti int, c *Checker) Result {
	ts := &s.terms[ti]
	cands, err := sortCandidates(ts.cands)
	if err != nil {
		return invalid(err)
	}
	r := Result{Candidates: cands}
	var evicted int64
	for _, t := range s.evicted {
		evicted += int64(t.Replicas)
	}
	what := fmt.Sprintf("the %s evicted from %s", plural64(evicted, "replica", "replicas"), list(names(s.evicted), 5))
	prefix := s.termPrefix(ti)
	if len(cands) == 0 {
		r.Code = NoEligibleCluster
		r.Reason = fmt.Sprintf("%sno eligible cluster can take %s: %s", prefix, what, s.why(ti))
		return r
	}

	// The replicas may all go to clusters that already run the workload
	// (kept); only when none is eligible must a new cluster be added.
	var added, kept []*failover.Cluster
	for _, cl := range ts.cands {
		if s.sched.Has(cl.Name) {
			kept = append(kept, cl)
		} else {
			added = append(added, cl)
		}
	}
	need := 0
	if len(kept) == 0 {
		need = 1
	}
	v := s.p.plan.check(s.spreadCase(added, need))
	if !v.ok {
		r.Code = SpreadConstraintUnsatisfiable
		r.Reason = prefix + v.reason + " when moving " + what
		return r
	}
	notes := []string{v.note}

	if c != nil && c.capacity != nil {
		// The scheduler may use every kept cluster and at most v.room added
		// ones: the added ones with the most spare capacity count.
		var spare int64
		var unknown tally
		for _, cl := range kept {
			n, known := c.capacity(cl.Name)
			if !known {
				unknown.add(cl.Name, nil)
				continue
			}
			spare += max(int64(n), 0)
		}
		room := min(v.room, len(added))
		spares := make([]int64, 0, len(added))
		for _, cl := range added {
			n, known := c.capacity(cl.Name)
			if !known {
				if room > 0 {
					unknown.add(cl.Name, nil)
				}
				continue
			}
			spares = append(spares, max(int64(n), 0))
		}
		var best int64
		if room < len(spares) {
			slices.SortFunc(spares, func(a, b int64) int { return cmp.Compare(b, a) })
			for _, n := range spares[:room] {
				best += n
			}
		} else {
			for _, n := range spares {
				best += n
			}
		}
		spare += best
		switch {
		case spare >= evicted:
		case unknown.n > 0:
			notes = append(notes, fmt.Sprintf("known spare capacity %d is short; the unknown capacity of %s is assumed sufficient", spare, samples(&unknown)))
		case room < len(spares):
			also := ""
			if len(kept) > 0 {
				also = fmt.Sprintf(" and %s it keeps (%s)", pluralWord(len(kept), "the one", "those"), list(clusterNames(kept), 5))
			}
			r.Code = InsufficientCapacity
			r.Reason = fmt.Sprintf("%sspreadConstraints[%d] allows at most %s and the workload keeps %d, so it can add at most %d; the %d eligible %s with the most spare capacity%s have room for %d of %s",
				prefix, s.p.plan.clusters.maxAt, plural(s.p.plan.clusters.max, "cluster", "clusters"), len(s.remaining), room,
				room, pluralWord(room, "cluster", "clusters"), also, spare, what)
			return r
		default:
			r.Code = InsufficientCapacity
			r.Reason = fmt.Sprintf("%sthe eligible clusters (%s) have spare capacity for %d of %s", prefix, list(cands, 5), spare, what)
			return r
		}
		if k := s.p.plan.kinds; len(k) > 0 && !s.p.plan.ignored {
			notes = append(notes, fmt.Sprintf("the library could not check the spare capacity %s by %s: the scheduler picks them by scores it cannot see", k[0].key.singular(), k[0].key.singular()))
		}
	}
	r.Feasible, r.Code = true, Feasible
	r.Reason = fmt.Sprintf("%sfeasible: %s can take %s%s", prefix, list(cands, 5), what, noteOf(notes...))
	return r
}

// spreadCase is the spread question of a term: the remaining clusters keep
// the workload, at least need of fresh are added.
func (s *scan) spreadCase(fresh []*failover.Cluster, need int) *spreadCase {
	return &spreadCase{remaining: s.remaining, remainingClusters: s.remainingClusters, fresh: fresh, need: need}
}

func clusterNames(cs []*failover.Cluster) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
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

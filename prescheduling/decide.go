package prescheduling

import (
	"fmt"

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
		r.Reason = fmt.Sprintf("%s%s outside %s to replace %s: %s", prefix, found, list(names(s.req.Scheduled), 5), what, s.why(ti))
		return r
	}
	if msg := s.checkSpread(ts.cands, need, true); msg != "" {
		r.Reason = prefix + msg + " when replacing " + what
		return r
	}
	r.Feasible = true
	r.Reason = fmt.Sprintf("%sfeasible: %s can replace %s", prefix, list(cands, 5), what)
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
		r.Reason = fmt.Sprintf("%sno eligible cluster can take %s: %s", prefix, what, s.why(ti))
		return r
	}

	// Spread: the replicas may all go to clusters that already run the
	// workload; only when none is eligible must a new group be added.
	var added []*failover.Cluster
	for _, cl := range ts.cands {
		if !s.sched.Has(cl.Name) {
			added = append(added, cl)
		}
	}
	need := 0
	if len(added) == len(ts.cands) {
		need = 1
	}
	if msg := s.checkSpread(added, need, false); msg != "" {
		r.Reason = prefix + msg + " when moving " + what
		return r
	}

	var note string
	if c != nil && c.capacity != nil {
		var spare int64
		var unknown tally
		for _, cl := range ts.cands {
			n, known := c.capacity(cl.Name)
			if !known {
				unknown.add(cl.Name, nil)
				continue
			}
			spare += max(int64(n), 0)
		}
		switch {
		case spare >= evicted:
		case unknown.n > 0:
			note = fmt.Sprintf(" (known spare capacity %d is short; the unknown capacity of %s is assumed sufficient)", spare, samples(&unknown))
		default:
			r.Reason = fmt.Sprintf("%sthe eligible clusters (%s) have spare capacity for %d of %s", prefix, list(cands, 5), spare, what)
			return r
		}
	}
	r.Feasible = true
	r.Reason = fmt.Sprintf("%sfeasible: %s can take %s%s", prefix, list(cands, 5), what, note)
	return r
}

// checkSpread checks every spread constraint against the remaining clusters
// plus cands, of which at least need are added; it returns why one cannot be
// met, or "". The maximum is checked only when checkMax is set.
func (s *scan) checkSpread(cands []*failover.Cluster, need int, checkMax bool) string {
	for i := range s.p.spread {
		k := &s.p.spread[i]
		rc := k.reachOf(s.remaining, s.remainingClusters, cands, need)
		if rc.hi < k.min {
			return fmt.Sprintf("spreadConstraints[%d] needs at least %s, but the remaining and eligible clusters span only %s",
				k.index, k.noun(k.min), k.noun(rc.hi))
		}
		if checkMax && k.max > 0 && rc.lo > k.max {
			where := ""
			if len(rc.have) > 0 {
				where = fmt.Sprintf(" (the workload already runs in %s)", list(rc.have, 5))
			}
			return fmt.Sprintf("spreadConstraints[%d] allows at most %s, but the eligible clusters would make it %d%s",
				k.index, k.noun(k.max), rc.lo, where)
		}
	}
	return ""
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

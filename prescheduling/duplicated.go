package prescheduling

import (
	"fmt"
	"slices"
	"strings"

	"github.com/failoverkit/failover"
)

// duplicated is the scheduler's choice for term ti of a Duplicated
// placement without spread constraints, when it is feasible: a copy on every
// cluster that passes the filters. The clusters it adds are the memo's
// healthy ones, but for those the specials decide, so the answer gives them
// as a [Fanout] over the memo's list, shared, and lists one by one only the
// faulty ones it adds and the specials the memo does not hold as healthy:
// its cost follows the specials, not the clusters the placement allows. ok
// is false when the answer needs the general way: the workload has no
// replicas, or the answer is not feasible.
func (x *Index[R]) duplicated(s *scan, m *memo[R], ti int, sp []special[R]) (r Result, ok bool) {
	p := m.p
	if p.division != divideDuplicated || !p.sel.all || s.replicas == 0 {
		return Result{}, false
	}
	base := &m.terms[ti]
	v := x.view(s, p, ti, base, sp)
	var moves []failover.TargetCluster
	var except []string
	runs := len(base.healthy)
	for i := range sp {
		name := sp[i].name
		_, healthy := slices.BinarySearch(base.healthy, name)
		local := s.sched.Has(name)
		faulty := v.in[i] && failover.IsFaulty(*sp[i].c)
		added := v.in[i] && !local && !faulty
		switch {
		case healthy && !added:
			except = append(except, name)
			runs--
		case !healthy && added:
			moves = append(moves, failover.TargetCluster{Name: name, Replicas: s.replicas})
			runs++
		}
		switch {
		case v.in[i] && local:
			runs++ // it keeps its copy, faulty or not
		case v.in[i] && faulty:
			moves = append(moves, failover.TargetCluster{Name: name, Replicas: s.replicas})
		}
	}
	if runs < len(s.req.Scheduled) {
		return Result{}, false
	}
	// The faulty clusters of the memo the scheduler adds a copy on too.
	for i, f := range base.faulty {
		if f && !v.gone[int32(i)] {
			moves = append(moves, failover.TargetCluster{Name: base.names[i], Replicas: s.replicas})
		}
	}
	slices.SortFunc(moves, func(a, b failover.TargetCluster) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(except)
	base.shared.Store(true)
	r = Result{Feasible: true, Code: Feasible, Candidates: v.cands, Moves: moves, AffinityName: p.terms[ti].name,
		Fanout: &Fanout{Clusters: base.healthy[:len(base.healthy):len(base.healthy)], Except: except, Replicas: s.replicas}}
	r.Reason = fmt.Sprintf("%sfeasible: %s can replace %s", s.termPrefix(ti), list(v.cands, 5), s.copiesWhat())
	return r, true
}

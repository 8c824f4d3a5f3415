package prescheduling

import (
	"slices"

	"github.com/failoverkit/failover"
)

// quickRoom bounds the clusters an Aggregated division may fill before
// Index.Check leaves the quick way (aggregated) for the general one; the
// quick way also takes at most quickRoom clusters named by the request.
const quickRoom = 8

// aggregated is the scheduler's choice for term ti of a Divided,
// Aggregated placement without spread constraints, when it is feasible:
// the clusters it fills are those it keeps, then those with the most room.
// When the scheduler's order of the candidates (score, room, name) is
// already in order of room, its unstable sort by room moves nothing, so the
// first few by room are its fill, and they are found without ordering the
// rest: from the room the Index remembers for the Capacity's Key, or in one
// pass. ok is false when the answer needs the general way: that order is
// not in order of room, the fill takes more than quickRoom clusters, or the
// answer is not feasible.
func (x *Index[R]) aggregated(s *scan, m *memo[R], ti int, sp []special[R], capacity Capacity[R]) (r Result, ok bool) {
	p := m.p
	if p.division != divideAggregated || !p.sel.all || s.replicas == 0 || len(sp) > quickRoom {
		return Result{}, false
	}
	mm := &model{s: s, p: p, r: s.replicas, capacity: capacity.Of != nil}
	base := &m.terms[ti]
	est := func(n int32, known bool) (int32, bool) {
		if capacity.Of == nil {
			return mm.estimated(0, false)
		}
		return mm.estimated(n, known)
	}
	room := func(rm R) (int32, bool) {
		if capacity.Of == nil {
			return est(0, false)
		}
		return est(capacity.Of(rm))
	}

	// The specials: where each falls among the memo's clusters, whether it
	// passes, and the candidates with them in place.
	S := len(sp)
	v := x.view(s, p, ti, base, sp)
	at, in, removed, cands := v.at, v.in, v.removed, v.cands

	// The clusters that pass, by rank (their order by name): the memo's at
	// position i rank i*(S+1)+S, the specials after the memo's before them.
	var sum int32 // int32, as Karmada sums
	count := v.count
	var locals, others []*node
	var gone []int // the positions of the memo's clusters the specials decide
	for i := range sp {
		if removed[i] {
			gone = append(gone, at[i])
		}
		if !in[i] {
			continue
		}
		o := &sp[i]
		n := &node{c: o.c, name: o.name, rank: at[i]*(S+1) + i, faulty: failover.IsFaulty(*o.c)}
		n.est, n.known = room(o.room)
		sum += n.est
		if j := s.sched.Index(o.name); j >= 0 {
			n.local, n.kept = true, s.req.Scheduled[j].Replicas
			locals = append(locals, n)
		} else {
			others = append(others, n)
		}
		n.avail = int64(n.est) + int64(n.kept)
	}
	var slab []node // the memo's clusters that may be filled, allocated at once
	memoNode := func(i int, e int32, known bool) *node {
		sl := base.slots[i]
		if len(slab) == cap(slab) {
			slab = make([]node, 0, 2*roomMemoTop)
		}
		slab = append(slab, node{c: &sl.c, name: sl.c.Name, rank: i*(S+1) + S, est: e, known: known, avail: int64(e), faulty: base.faulty[i]})
		return &slab[len(slab)-1]
	}
	if capacity.Key != "" || capacity.Of == nil {
		rm := base.roomMemo(capacity)
		sum += rm.sumKnown + mm.r*rm.others
		for i := range sp {
			if removed[i] {
				e, _ := est(rm.n[at[i]], rm.known[at[i]])
				sum -= e
			}
		}
		for _, list := range [][]int32{rm.byRoom[:min(len(rm.byRoom), roomMemoTop)], rm.wild[:min(len(rm.wild), roomMemoTop)]} {
			for _, i32 := range list {
				i := int(i32)
				if slices.Contains(gone, i) {
					continue
				}
				e, known := est(rm.n[i], rm.known[i])
				others = append(others, memoNode(i, e, known))
			}
		}
	} else {
		for i, rm := range base.rooms {
			e, known := room(rm)
			sum += e
			if slices.Contains(gone, i) {
				sum -= e
				continue
			}
			if len(others) < quickRoom+S || e > others[len(others)-1].est ||
				e == others[len(others)-1].est && i*(S+1)+S < others[len(others)-1].rank {
				others = append(others, memoNode(i, e, known))
				slices.SortFunc(others, byScore)
				others = others[:min(len(others), quickRoom+S)]
			}
		}
	}
	if count == 0 {
		return Result{}, false
	}
	slices.SortFunc(others, byScore)
	others = others[:min(len(others), quickRoom)]

	var assigned int32
	for _, n := range locals {
		assigned += n.kept
	}
	if assigned >= mm.r {
		return Result{}, false
	}
	target := mm.r - assigned
	if sum < target {
		// The scheduler fails under this term; the answer is final when
		// there is no other term to try and some candidate.
		if ti != len(p.terms)-1 || len(cands) == 0 {
			return Result{}, false
		}
		return Result{Candidates: cands, Code: InsufficientCapacity,
			Reason: s.termPrefix(ti) + s.short(x.firstNames(base, sp, in, at, removed, 5), count, int64(sum), int64(target))}, true
	}
	// The scheduler orders by room with an unstable sort the clusters it
	// has in the order of their score (those it keeps first), room and
	// name; on clusters already in order of room, that sort moves none.
	slices.SortFunc(locals, byScore)
	for i, n := range locals {
		if i > 0 && n.est > locals[i-1].est || len(others) > 0 && n.est < others[0].est {
			return Result{}, false
		}
	}
	ordered := make([]*node, 0, len(locals)+len(others))
	for _, n := range locals {
		if n.kept > 0 {
			ordered = append(ordered, n)
		}
	}
	for _, n := range locals {
		if n.kept <= 0 {
			ordered = append(ordered, n)
		}
	}
	ordered = append(ordered, others...)
	var acc int32
	filled := -1
	for i, n := range ordered {
		if acc += n.est; acc >= target {
			filled = i + 1
			break
		}
	}
	// others are the first of the clusters it does not keep in its order,
	// so a fill within them is its fill; one that needs more (or wraps
	// around) goes the general way.
	if filled < 0 {
		return Result{}, false
	}
	ordered = ordered[:filled]
	votes := make([]int64, len(ordered))
	for i, n := range ordered {
		votes[i] = int64(n.est)
	}
	receivers := mm.share(ordered, votes, target, false)
	for _, n := range receivers {
		if n.faulty && !n.local {
			return Result{}, false
		}
	}
	r = s.judgeDivided(ti, mm, receivers, Result{Candidates: cands})
	r.AffinityName = p.terms[ti].name
	return r, true
}

// firstNames are the first k names, by name, of the clusters that pass:
// the memo's, but for the specials, which pass as in says.
func (x *Index[R]) firstNames(base *passing[R], sp []special[R], in []bool, at []int, removed []bool, k int) []string {
	out := make([]string, 0, k)
	next := 0 // the next of the memo's
	for i := 0; i <= len(sp) && len(out) < k; i++ {
		end := len(base.names)
		if i < len(sp) {
			end = at[i]
		}
		for ; next < end && len(out) < k; next++ {
			out = append(out, base.names[next])
		}
		if i == len(sp) || len(out) == k {
			break
		}
		if removed[i] {
			next = at[i] + 1
		}
		if in[i] {
			out = append(out, sp[i].name)
		}
	}
	return out
}

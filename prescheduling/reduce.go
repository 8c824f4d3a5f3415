package prescheduling

import (
	"cmp"
	"iter"
	"math"
	"slices"
	"sort"

	"github.com/failoverkit/failover"
)

// A check reads of a term's clusters only those the scheduler's choice can
// reach, when the placement's choice is made among the first few of an
// order the Index keeps, so that a check costs what the scheduler picks,
// not the clusters a region-wide placement allows:
//
//   - a selection by a cluster spread constraint takes the first maxGroups
//     clusters in the scheduler's order (those the workload keeps, then by
//     room, then by name) and, for a Divided workload short of room, swaps
//     them, from the last, for the one with the most room among the rest:
//     a cluster it does not keep is swapped for none with more room, so
//     each swap takes the place of one it keeps, and the first maxGroups by
//     room it does not keep are all the selection can reach;
//   - a division by dynamic weights hands out seats by room (Webster), and
//     a division by static weights by weight: with k seats, a cluster
//     after the first k in that order, in either direction the scheduler
//     may break ties between names, cannot win one, as the k before it
//     each win theirs first.
//
// The Index keeps the order by room per Capacity (roomMemo) and by weight
// per placement (weightMemo) as clusters change and report. What else a
// check reads of the term — its candidates, how many clusters pass, the
// room they have in all, the first names a Reason lists — it reads from
// the memos whole. TestIndexAnswersAsCheck holds the answers to Check's on
// the whole fleet.

// reduce returns term ti's passing clusters cut to those the scheduler's
// choice can reach, with what the check reads of the whole, or false when
// the placement or the Capacity is not one it cuts (see above).
func (x *Index[R]) reduce(s *scan, m *memo[R], ti int, sp []special[R], capacity Capacity[R]) (termScan, bool) {
	p := m.p
	r := s.replicas
	base := &m.terms[ti]
	if r <= 0 || capacity.Key == "" && capacity.Of != nil {
		return termScan{}, false
	}
	var k int
	weighted := false
	switch {
	case p.sel.region != nil && !p.sel.all:
		return x.reduceByRegion(s, m, ti, sp, capacity)
	case p.sel.cluster != nil && p.sel.region == nil && !p.sel.all:
		k = p.sel.cluster.max
	case p.sel.all && p.division == divideDynamicWeight, p.sel.all && p.division == divideStaticWeight:
		// Seats: all the replicas by static weights, those not kept by
		// room; k at most the replicas either way.
		k, weighted = int(r), p.division == divideStaticWeight
	default:
		return termScan{}, false
	}
	if k > websterLimit || 2*k >= len(base.names) {
		return termScan{}, false // no cut worth making
	}
	v := x.view(s, p, ti, base, sp)
	rm := base.roomMemo(capacity)
	est := func(i int32) int32 {
		if isOther(rm.n[i], rm.known[i]) {
			return r
		}
		return max(rm.n[i], 0)
	}

	var keep []int32
	switch {
	case !weighted && len(rm.wild) == 0:
		keep = v.firstByRoom(rm.byRoom, est, k, p.division == divideDynamicWeight)
	case !weighted:
		keep = v.first(mergeByRoom(rm.byRoom, rm.wild, est, r), k, p.division == divideDynamicWeight)
	default:
		wm := base.weightMemo(p)
		switch weighs := wm.byWeight; {
		case slices.ContainsFunc(weighs, func(i int32) bool { return !v.gone[i] }):
			keep = v.first(func(yield func(int32, int64) bool) {
				for _, i := range weighs {
					if !yield(i, wm.weight[i]) {
						return
					}
				}
			}, k, true)
		case specialWeighs(v, p, sp):
			// Only the clusters the request names weigh anything: they
			// alone share the replicas.
		default:
			// No cluster weighs anything, so every one weighs 1: the
			// first and the last k by name.
			for i := 0; i < len(base.names) && len(keep) < k; i++ {
				if !v.gone[int32(i)] {
					keep = append(keep, int32(i))
				}
			}
			last := len(keep)
			for i := len(base.names) - 1; i >= 0 && len(keep) < last+k; i-- {
				if !v.gone[int32(i)] && !slices.Contains(keep[:last], int32(i)) {
					keep = append(keep, int32(i))
				}
			}
		}
	}

	return x.cut(s, base, sp, capacity, v, rm, keep), true
}

// cut is the termScan of base's clusters at the positions keep and the
// specials that pass, with what the check reads of the whole term.
func (x *Index[R]) cut(s *scan, base *passing[R], sp []special[R], capacity Capacity[R], v *termView, rm *roomMemo[R], keep []int32) termScan {
	r := s.replicas
	est := func(i int32) int32 {
		if isOther(rm.n[i], rm.known[i]) {
			return r
		}
		return max(rm.n[i], 0)
	}
	ts := termScan{reduced: true, total: v.count, cands: v.cands, first: x.firstNames(base, sp, v.in, v.at, v.removed, 5)}
	ts.sum = rm.sumKnown + r*rm.others // int32, wrapping, as Karmada sums
	for i := range sp {
		if v.removed[i] {
			ts.sum -= est(int32(v.at[i]))
		}
	}
	slices.Sort(keep)
	ts.passing = make([]*failover.Cluster, 0, len(keep)+len(sp))
	if capacity.Of != nil {
		ts.caps = make([]spare, 0, len(keep)+len(sp))
	}
	mm := &model{r: r}
	next := 0
	addSpecial := func(i int) {
		if !v.in[i] {
			return
		}
		o := &sp[i]
		ts.passing = append(ts.passing, o.c)
		var n int32
		var known bool
		if capacity.Of != nil {
			n, known = capacity.Of(o.room)
			ts.caps = append(ts.caps, spare{n, known})
		}
		e, _ := mm.estimated(n, known)
		ts.sum += e
	}
	for _, pos := range keep {
		for ; next < len(sp) && sp[next].name < base.names[pos]; next++ {
			addSpecial(next)
		}
		ts.passing = append(ts.passing, &base.slots[pos].c)
		if ts.caps != nil {
			ts.caps = append(ts.caps, spare{rm.n[pos], rm.known[pos]})
		}
	}
	for ; next < len(sp); next++ {
		addSpecial(next)
	}
	return ts
}

// reduceByRegion is reduce for a selection by region: of each region, the
// first clusters by room it does not keep, as many as the cluster
// constraint's maxGroups (the most the selection takes of one region)
// and, for a Divided workload, as many as the region's score reads before
// it stops (its room reaching the share of one region, its clusters the
// constraints' minGroups); and each region's totals for the rest of its
// score.
func (x *Index[R]) reduceByRegion(s *scan, m *memo[R], ti int, sp []special[R], capacity Capacity[R]) (termScan, bool) {
	p, r, base := m.p, s.replicas, &m.terms[ti]
	rk, ck := p.sel.region, p.sel.cluster
	cmin, cmax := 0, 0
	if ck != nil {
		cmin, cmax = ck.min, ck.max
	}
	v := x.view(s, p, ti, base, sp)
	rm := base.roomMemo(capacity)
	regions := base.regionRooms(rm)
	est := func(i int32) int32 {
		if isOther(rm.n[i], rm.known[i]) {
			return r
		}
		return max(rm.n[i], 0)
	}
	mm := &model{r: r}
	// What the specials that pass bring each region.
	totals := map[string]regionTotals{}
	type extra struct {
		locals, others int   // specials that keep the workload, and not
		avail          int64 // the room of the locals
	}
	extras := map[string]extra{}
	for i := range sp {
		if !v.in[i] {
			continue
		}
		c := sp[i].c
		var n int32
		var known bool
		if capacity.Of != nil {
			n, known = capacity.Of(sp[i].room)
		}
		e, _ := mm.estimated(n, known)
		avail, score := int64(e), int64(0)
		ex := extras[c.Region]
		if j := s.sched.Index(c.Name); j >= 0 {
			avail += int64(s.req.Scheduled[j].Replicas)
			score = 100
			ex.locals++
			ex.avail += avail
		} else {
			ex.others++
		}
		extras[c.Region] = ex
		t := totals[c.Region]
		t.size++
		t.avail += avail
		t.score += score
		if avail >= int64(r) {
			t.valid++
			t.validScore += score
		}
		totals[c.Region] = t
	}
	target := int64(math.Ceil(float64(r) / float64(rk.min)))
	clusterMin := max(rk.min, cmin)
	var keep []int32
	for name, g := range regions {
		t := totals[name]
		// The region's own clusters, but those the specials stand for.
		t.size += len(g.byRoom) + len(g.wild)
		t.avail += g.sumKnown + int64(r)*int64(len(g.wild))
		// Room for every replica: those of byRoom before the first with
		// less, and every wild one (whose room is the replicas).
		valid := sort.Search(len(g.byRoom), func(i int) bool { return rm.roomOf(g.byRoom[i]) < r })
		t.valid += int64(valid + len(g.wild))
		for i := range sp {
			if v.removed[i] && rm.regionOf[v.at[i]] == name {
				e := est(int32(v.at[i]))
				t.size--
				t.avail -= int64(e)
				if e >= r {
					t.valid--
				}
			}
		}
		if t.size == 0 {
			continue
		}
		totals[name] = t
		// How far the region's score reads, the clusters it keeps first:
		// up to where its room and clusters are enough (Divided), and the
		// most the selection takes of one region. With other specials
		// among the rest, which this does not place, a score that never
		// stops reads the whole region.
		ex := extras[name]
		count, avail := ex.locals, ex.avail
		need := max(cmax, 1)
		met := p.division == divideDuplicated
		walked, stop := 0, -1
		for pos, value := range mergeByRoom(g.byRoom, g.wild, est, r) {
			if v.gone[pos] {
				continue
			}
			walked++
			if !met {
				count++
				avail += value
				if met = count >= clusterMin && avail >= target; met {
					stop = walked
				}
			}
			if met && walked >= need {
				break
			}
		}
		take := max(need, stop)
		if !met && ex.others > 0 {
			take = walked
		}
		for pos := range mergeByRoom(g.byRoom, g.wild, est, r) {
			if take == 0 {
				break
			}
			if !v.gone[pos] {
				keep = append(keep, pos)
				take--
			}
		}
	}
	if 2*len(keep) >= len(base.names) {
		return termScan{}, false // no cut worth making
	}
	ts := x.cut(s, base, sp, capacity, v, rm, keep)
	ts.regions = totals
	return ts, true
}

// mergeByRoom yields the positions of byRoom and wild in the order of
// their room (wild ones taking r), most first, then by position, with
// their room.
func mergeByRoom(byRoom, wild []int32, est func(int32) int32, r int32) iter.Seq2[int32, int64] {
	return func(yield func(int32, int64) bool) {
		i, j := 0, 0
		for i < len(byRoom) || j < len(wild) {
			takeRoom := j == len(wild)
			if !takeRoom && i < len(byRoom) {
				e := est(byRoom[i])
				takeRoom = e > r || e == r && byRoom[i] < wild[j]
			}
			if takeRoom {
				if !yield(byRoom[i], int64(est(byRoom[i]))) {
					return
				}
				i++
				continue
			}
			if !yield(wild[j], int64(r)) {
				return
			}
			j++
		}
	}
}

// termView is where the specials of one check fall among a term's
// clusters, and what the whole term says with them in place.
type termView struct {
	// at and removed: each special's position among the memo's clusters,
	// and whether the memo holds it (the special stands for it); in:
	// whether the special passes the term's filters.
	at          []int
	removed, in []bool
	gone        map[int32]bool // the positions removed
	count       int            // the clusters that pass, specials included
	cands       []string       // the candidates, as Result.Candidates
}

// view works out where the specials fall among base, term ti's clusters,
// and the term's candidates and count with them in place.
func (x *Index[R]) view(s *scan, p *compiled, ti int, base *passing[R], sp []special[R]) *termView {
	dup := p.division == divideDuplicated
	v := &termView{at: make([]int, len(sp)), removed: make([]bool, len(sp)), in: make([]bool, len(sp)), count: len(base.names)}
	candidate := make([]bool, len(sp))
	share := true
	for i := range sp {
		o := &sp[i]
		v.at[i], v.removed[i] = slices.BinarySearch(base.names, o.name)
		v.in[i] = o.c != nil && !s.evicting.Has(o.name) && p.passes(ti, o.c, s.sched.Has(o.name))
		candidate[i] = v.in[i] && !failover.IsFaulty(*o.c) && !(dup && s.sched.Has(o.name))
		_, healthy := slices.BinarySearch(base.healthy, o.name)
		share = share && healthy == candidate[i]
		if v.removed[i] {
			v.count--
			if v.gone == nil {
				v.gone = map[int32]bool{}
			}
			v.gone[int32(v.at[i])] = true
		}
		if v.in[i] {
			v.count++
		}
	}
	if share {
		v.cands = base.healthy[:len(base.healthy):len(base.healthy)]
		base.shared.Store(true)
	} else {
		v.cands = make([]string, 0, len(base.healthy)+len(sp))
		last := 0
		for i := range sp {
			h, found := slices.BinarySearch(base.healthy[last:], sp[i].name)
			v.cands = append(v.cands, base.healthy[last:last+h]...)
			if last += h; found {
				last++
			}
			if candidate[i] {
				v.cands = append(v.cands, sp[i].name)
			}
		}
		v.cands = append(v.cands, base.healthy[last:]...)
	}
	if len(v.cands) == 0 {
		v.cands = nil // as Check gives none
	}
	return v
}

// first returns the positions of the first k of order, skipping those the
// specials stand for; with ties, also the last k of those that tie with
// the k-th, for a choice that may break ties between names in either
// direction.
func (v *termView) first(order iter.Seq2[int32, int64], k int, ties bool) []int32 {
	keep := make([]int32, 0, k)
	var run []int32 // the last k of the tie with the k-th beyond keep
	var boundary int64
	for pos, value := range order {
		if v.gone[pos] {
			continue
		}
		if len(keep) < k {
			keep, boundary = append(keep, pos), value
			continue
		}
		if !ties || value != boundary {
			break
		}
		if len(run) == k {
			copy(run, run[1:])
			run = run[:k-1]
		}
		run = append(run, pos)
	}
	return append(keep, run...)
}

// firstByRoom is first of byRoom alone, whose room (est) never grows along
// it: the run that ties with the k-th is found by a binary search instead
// of a walk, which in a fleet of clusters alike in room would be most of
// the term.
func (v *termView) firstByRoom(byRoom []int32, est func(int32) int32, k int, ties bool) []int32 {
	keep := make([]int32, 0, k)
	i := 0
	for ; i < len(byRoom) && len(keep) < k; i++ {
		if !v.gone[byRoom[i]] {
			keep = append(keep, byRoom[i])
		}
	}
	if !ties || len(keep) < k {
		return keep
	}
	boundary := est(keep[k-1])
	end := i + sort.Search(len(byRoom)-i, func(j int) bool { return est(byRoom[i+j]) < boundary })
	var run []int32
	for j := end - 1; j >= i && len(run) < k; j-- {
		if !v.gone[byRoom[j]] {
			run = append(run, byRoom[j])
		}
	}
	slices.Reverse(run)
	return append(keep, run...)
}

// specialWeighs reports whether one of the specials that pass weighs more
// than nothing by p's static weights.
func specialWeighs[R any](v *termView, p *compiled, sp []special[R]) bool {
	for i := range sp {
		if v.in[i] && weightOf(p, sp[i].c) > 0 {
			return true
		}
	}
	return false
}

// weightMemo is what a placement's static weight list gives each cluster
// of a passing list: its weight, the greatest of the entries that select
// it, and the clusters that weigh anything, by weight, most first, then by
// position.
type weightMemo struct {
	weight   []int64
	byWeight []int32
}

// weightMemo returns what the passing list remembers of p's weights,
// building it on the first question after a change to the list.
func (ps *passing[R]) weightMemo(p *compiled) *weightMemo {
	ps.capMu.Lock()
	defer ps.capMu.Unlock()
	if ps.weights != nil {
		return ps.weights
	}
	wm := &weightMemo{weight: make([]int64, len(ps.slots))}
	for i, sl := range ps.slots {
		wm.weight[i] = weightOf(p, &sl.c)
		if wm.weight[i] > 0 {
			wm.byWeight = append(wm.byWeight, int32(i))
		}
	}
	slices.SortFunc(wm.byWeight, func(a, b int32) int {
		if c := cmp.Compare(wm.weight[b], wm.weight[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	ps.weights = wm
	return wm
}

// weightOf is c's weight by p's static weight list (getStaticWeightInfoList):
// the greatest of the entries that select it, 0 when none does.
func weightOf(p *compiled, c *failover.Cluster) int64 {
	var w int64
	for _, e := range p.weights {
		if e.weight > w && e.m.Matches(c) {
			w = e.weight
		}
	}
	return w
}

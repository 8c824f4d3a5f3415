package prescheduling

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/failoverkit/failover"
)

// This file follows Karmada v1.18's scheduling algorithm (pkg/scheduler/core
// and its spreadconstraint package) step by step, for the binding the
// eviction leaves: the clusters that pass its filters (scan.run) are scored,
// ordered, selected by the spread constraints and given replicas, with the
// same arithmetic, so that the check answers for the choice the scheduler
// will make rather than for some choice. The steps are named after Karmada's
// functions so that a reader can hold the two side by side.

// node is a cluster the scheduler chooses among, with what its algorithm
// reads of it (ClusterDetailInfo).
type node struct {
	c    *failover.Cluster
	name string
	rank int // its place among the nodes by name
	// local: the cluster keeps the workload (it is in spec.clusters after
	// the eviction), which ClusterLocality scores 100, any other 0.
	local bool
	kept  int32 // the replicas it keeps
	// est is how many more replicas the estimator says it can take
	// (AllocatableReplicas); known is false when the capacity function does
	// not say, and est is then what Karmada assumes when no estimator
	// answers: the workload's replicas.
	est   int32
	known bool
	avail int64 // est plus kept (AvailableReplicas)
	// faulty clusters pass Karmada's filters when the placement tolerates
	// their NoExecute taint, or when they keep the workload; the library
	// never moves anything onto them.
	faulty bool
	// gain is the most replicas the division may add to it (assign).
	gain int32
}

func (n *node) score() int64 {
	if n.local {
		return 100
	}
	return 0
}

// byScore is sortClusters' order: score, then room, then name.
func byScore(a, b *node) int {
	if c := cmp.Compare(b.score(), a.score()); c != 0 {
		return c
	}
	if c := cmp.Compare(b.avail, a.avail); c != 0 {
		return c
	}
	return cmp.Compare(a.rank, b.rank)
}

// failure is why the scheduler would not schedule under a term.
type failure struct {
	code   Code
	reason string
}

// model is one term's run of the scheduler.
type model struct {
	s *scan
	p *compiled
	// r is spec.replicas; with r 0 the workload is not one Karmada counts
	// replicas for, and nothing is estimated.
	r        int32
	nodes    []*node // sorted byScore
	capacity bool    // a capacity function was given
	// total is how many clusters pass: len(nodes), but when nodes are
	// only those the choice can reach (termScan.reduced), whose room in
	// all (sum) and first names (first) are then given too.
	total   int
	reduced bool
	sum     int32
	first   []string
	// regions, when the nodes are only the first few of each region, are
	// each region's totals.
	regions map[string]regionTotals
}

func (s *scan) model(ti int, c *Checker, byName []int) *model {
	caps := s.terms[ti].caps
	ts := &s.terms[ti]
	m := &model{s: s, p: s.p, r: s.replicas, capacity: caps != nil || c != nil && c.capacity != nil}
	passing := ts.passing
	m.total = len(passing)
	if ts.reduced {
		m.total, m.reduced, m.sum, m.first, m.regions = ts.total, true, ts.sum, ts.first, ts.regions
	}
	m.nodes = make([]*node, len(passing))
	all := make([]node, len(passing))
	for k, i := range byName {
		cl := passing[i]
		n := &all[k]
		n.c, n.name, n.rank, n.faulty = cl, cl.Name, k, failover.IsFaulty(*cl)
		if j := s.sched.Index(cl.Name); j >= 0 {
			n.local, n.kept = true, s.req.Scheduled[j].Replicas
		}
		if caps != nil {
			n.est, n.known = m.estimated(caps[i].replicas, caps[i].known)
		} else {
			n.est, n.known = m.estimate(cl.Name, c)
		}
		n.avail = int64(n.est) + int64(n.kept)
		m.nodes[k] = n
	}
	if m.p.sel.all && m.p.division == divideDuplicated {
		// Every cluster is selected and given every replica: the order
		// decides nothing.
		return m
	}
	// In name order already, so that a stable sort needs no name.
	slices.SortStableFunc(m.nodes, func(a, b *node) int {
		if c := cmp.Compare(b.score(), a.score()); c != 0 {
			return c
		}
		return cmp.Compare(b.avail, a.avail)
	})
	return m
}

// estimate is calAvailableReplicas for one cluster.
func (m *model) estimate(name string, c *Checker) (int32, bool) {
	if m.r == 0 {
		// Not a workload: Karmada does not estimate, every cluster can.
		return math.MaxInt32, true
	}
	if m.capacity {
		return m.estimated(c.capacity(name))
	}
	return m.r, false
}

// estimated is estimate for the capacity function's answer n, known.
func (m *model) estimated(n int32, known bool) (int32, bool) {
	switch {
	case m.r == 0:
		return math.MaxInt32, true
	case !known:
		return m.r, false
	case n == math.MaxInt32:
		return m.r, true
	}
	return max(n, 0), true
}

// schedule runs the selection and the assignment. It returns the selected
// clusters and those that may be given replicas they do not have now, each
// with its gain; or why the scheduler fails.
func (m *model) schedule() (selected, receivers []*node, f *failure) {
	if m.total == 0 {
		return nil, nil, &failure{code: NoEligibleCluster}
	}
	selected, f = m.selectClusters()
	if f != nil {
		return nil, nil, f
	}
	receivers, f = m.assign(selected)
	return selected, receivers, f
}

// selectClusters is SelectBestClusters.
func (m *model) selectClusters() ([]*node, *failure) {
	sel := &m.p.sel
	switch {
	case sel.all:
		return m.nodes, nil
	case sel.region != nil:
		return m.byRegion()
	case sel.cluster != nil:
		return m.byCluster()
	}
	return nil, &failure{SpreadConstraintUnsatisfiable, fmt.Sprintf(
		"Karmada v1.18's scheduler selects clusters by a region or a cluster spread constraint, and spreadConstraints[%d] (by %s) is neither, so it places nothing",
		sel.other.index, sel.other.singular())}
}

// byCluster is selectBestClustersByCluster: the first maxGroups clusters in
// score order; for Divided, the last of them swapped, one by one, for the
// one with the most room among the rest while their room falls short of
// the replicas.
func (m *model) byCluster() ([]*node, *failure) {
	k := m.p.sel.cluster
	if m.total < k.min {
		return nil, &failure{SpreadConstraintUnsatisfiable, fmt.Sprintf("spreadConstraints[%d] needs at least %s, but the remaining and eligible clusters span only %s",
			k.index, plural(k.min, "cluster", "clusters"), plural(m.total, "cluster", "clusters"))}
	}
	n := min(len(m.nodes), k.max)
	if m.p.division == divideDuplicated {
		return m.nodes[:n], nil
	}
	ret, rest := slices.Clone(m.nodes[:n]), slices.Clone(m.nodes[n:])
	enough := func() bool {
		var sum int64
		for _, x := range ret {
			sum += x.avail
		}
		return sum >= int64(m.r)
	}
	for i := n - 1; !enough() && i >= 0; i-- {
		j, best := -1, ret[i].avail
		for l, x := range rest {
			if best < x.avail {
				j, best = l, x.avail
			}
		}
		if j >= 0 {
			ret[i], rest[j] = rest[j], ret[i]
		}
	}
	if !enough() {
		if n == 0 {
			return nil, m.noMaxGroups(k, "cluster")
		}
		var room int64
		for _, x := range ret {
			room += x.avail
		}
		return nil, &failure{InsufficientCapacity, fmt.Sprintf("spreadConstraints[%d] allows at most %s; the scheduler picks those the workload keeps, then those with the most room, and %s (%s) %s room for %d of its %d replicas",
			k.index, plural(k.max, "cluster", "clusters"), pluralWord(n, "the one it picks", fmt.Sprintf("the %d it picks", n)), list(nodeNames(sortedNodes(ret)), 5), pluralWord(n, "has", "have"), room, m.r)}
	}
	return ret, nil
}

func (m *model) noMaxGroups(k *spreadKey, what string) *failure {
	return &failure{SpreadConstraintUnsatisfiable, fmt.Sprintf("spreadConstraints[%d] (by %s) has no maxGroups, and Karmada v1.18's scheduler reads that as 0: it selects no %s", k.index, k.field, what)}
}

// region is a region's clusters, in score order, and its score
// (RegionInfo).
type region struct {
	name  string
	nodes []*node
	score int64
	// size is how many clusters the region has: len(nodes), but when
	// nodes are only the first few (model.regions gives the whole).
	size int
}

// regionTotals is what the score of a region reads of all its clusters,
// for a model whose regions list only the first few (termScan.reduced).
type regionTotals struct {
	size int
	// avail and score are the room (AvailableReplicas) and the scores of
	// all its clusters summed; valid counts those with room for every
	// replica, validScore sums their scores.
	avail, score, valid, validScore int64
}

// regionPath is a choice of regions (dfsPath).
type regionPath struct {
	id      int
	regions []*region // by score, then name
	score   int64
	value   int // clusters
}

// byRegion is selectBestClustersByRegion: the regions selectRegions picks,
// the best cluster of each, then the best of the rest up to the cluster
// constraint's maxGroups.
func (m *model) byRegion() ([]*node, *failure) {
	rk, ck := m.p.sel.region, m.p.sel.cluster
	var cmin, cmax int // a missing cluster constraint reads as zero
	if ck != nil {
		cmin, cmax = ck.min, ck.max
	}
	// Two passes, so that each region's list is allocated once.
	var regions []*region
	at := map[string]*region{}
	for _, n := range m.nodes {
		r := at[n.c.Region]
		if r == nil {
			r = &region{name: n.c.Region}
			at[r.name] = r
			regions = append(regions, r)
		}
		r.score++ // counts the clusters until the score is known
	}
	for _, r := range regions {
		r.nodes, r.score = make([]*node, 0, r.score), 0
	}
	for _, n := range m.nodes {
		r := at[n.c.Region]
		r.nodes = append(r.nodes, n)
	}
	for _, r := range regions {
		r.size = len(r.nodes)
		if t, ok := m.regions[r.name]; ok {
			r.size = t.size
		}
	}
	if len(regions) < rk.min {
		return nil, &failure{SpreadConstraintUnsatisfiable, fmt.Sprintf("spreadConstraints[%d] needs at least %s, but the remaining and eligible clusters span only %s",
			rk.index, rk.noun(rk.min), rk.noun(len(regions)))}
	}
	if rk.max == 0 {
		return nil, m.noMaxGroups(rk, "region")
	}
	for _, r := range regions {
		r.score = m.groupScore(r, rk.min)
	}
	paths, ok := findPaths(regions, rk.min, rk.max, cmin)
	if !ok {
		return nil, &failure{SpreadConstraintUnsatisfiable, fmt.Sprintf("spreadConstraints[%d] leaves more choices of regions than the library follows (%d); it cannot tell which the scheduler takes", rk.index, pathBudget)}
	}
	if len(paths) == 0 {
		return nil, m.noRegions(regions, rk, ck)
	}
	best := bestPath(paths)
	selected, rest := make([]*node, 0, len(best.regions)), make([]*node, 0, len(m.nodes))
	for _, r := range best.regions {
		selected = append(selected, r.nodes[0])
		rest = append(rest, r.nodes[1:]...)
	}
	if more := min(best.value, cmax) - len(selected); more > 0 {
		slices.SortFunc(rest, byScore)
		selected = append(selected, rest[:more]...)
	}
	return selected, nil
}

// noRegions says why no choice of regions holds the cluster constraint's
// minGroups.
func (m *model) noRegions(regions []*region, rk, ck *spreadKey) *failure {
	sizes := make([]int, len(regions))
	for i, r := range regions {
		sizes[i] = r.size
	}
	slices.SortFunc(sizes, func(a, b int) int { return b - a })
	n := min(rk.max, len(sizes))
	best := 0
	for _, v := range sizes[:n] {
		best += v
	}
	need := 0
	if ck != nil {
		need = ck.min
	}
	in, bestIs := rk.one(), fmt.Sprintf("the best region has %d", best)
	if n > 1 {
		in, bestIs = "at most "+rk.noun(rk.max), fmt.Sprintf("the best %s have %d", rk.noun(n), best)
	}
	at := -1
	if ck != nil {
		at = ck.index
	}
	return &failure{SpreadConstraintUnsatisfiable, fmt.Sprintf("spreadConstraints[%d] (at most %s) with spreadConstraints[%d] (at least %s) needs %d clusters in %s; %s",
		rk.index, rk.noun(rk.max), at, plural(need, "cluster", "clusters"), need, in, bestIs)}
}

// groupScore is calcGroupScore: for Duplicated, how many of the clusters
// have room for every replica, then their mean score; for Divided, how much
// of its share the group can hold, then the mean score of the clusters that
// hold it.
func (m *model) groupScore(g *region, minGroups int) int64 {
	const unit = 1000
	ns := g.nodes
	t, whole := m.regions[g.name]
	if m.p.division == divideDuplicated {
		var valid, sum int64
		for _, n := range ns {
			if n.avail >= int64(m.r) {
				valid++
				sum += n.score()
			}
		}
		if whole {
			valid, sum = t.valid, t.validScore
		}
		if valid == 0 {
			return 0
		}
		return valid*unit + sum/valid
	}
	target := int64(math.Ceil(float64(m.r) / float64(minGroups)))
	clusterMin := minGroups
	if ck := m.p.sel.cluster; ck != nil && ck.min > clusterMin {
		clusterMin = ck.min
	}
	var avail, score, valid int64
	met := false
	for _, n := range ns {
		avail += n.avail
		score += n.score()
		valid++
		if valid >= int64(clusterMin) && avail >= target {
			met = true
			break
		}
	}
	if !met && whole && len(ns) < g.size {
		// The first few are those up to where the scheduler stops, unless
		// it goes through them all: then it has summed the whole region.
		avail, score, valid = t.avail, t.score, int64(g.size)
	}
	if avail < target {
		return avail*unit + score/int64(g.size)
	}
	return target*unit + score/valid
}

// pathBudget bounds the search of findPaths, which may grow with the number
// of combinations of regions.
const pathBudget = 1 << 20

// findPaths is findFeasiblePaths: every choice of between lo and hi regions,
// in the scheduler's search order, that together hold target clusters and
// that no smaller choice on its way already does. ok is false when the
// search would go beyond pathBudget.
func findPaths(regions []*region, lo, hi, target int) (paths []*regionPath, ok bool) {
	groups := slices.Clone(regions)
	slices.SortFunc(groups, func(a, b *region) int {
		if c := cmp.Compare(a.size, b.size); c != 0 {
			return c
		}
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	var cur []*region
	budget := pathBudget
	var dfs func(sum, begin int) bool
	dfs = func(sum, begin int) bool {
		if budget--; budget < 0 {
			return false
		}
		if sum >= target && len(cur) >= lo && len(cur) <= hi {
			p := &regionPath{id: len(paths) + 1, regions: slices.Clone(cur)}
			for _, r := range p.regions {
				p.score += r.score
				p.value += r.size
			}
			slices.SortFunc(p.regions, func(a, b *region) int {
				if c := cmp.Compare(b.score, a.score); c != 0 {
					return c
				}
				return strings.Compare(a.name, b.name)
			})
			paths = append(paths, p)
			return true
		}
		if len(cur) >= hi {
			return true
		}
		for i := begin; i < len(groups); i++ {
			sum += groups[i].size
			cur = append(cur, groups[i])
			if !dfs(sum, i+1) {
				return false
			}
			// As Karmada: when every region is needed, the first descent
			// is the only choice.
			if len(groups) == lo {
				break
			}
			sum -= groups[i].size
			cur = cur[:len(cur)-1]
		}
		return true
	}
	ok = dfs(0, 0)
	return paths, ok
}

// bestPath is prioritizePaths: the best score, then the most clusters, then
// the first found; and a better path gives way to one that is a prefix of
// it.
func bestPath(paths []*regionPath) *regionPath {
	if len(paths) == 1 {
		return paths[0]
	}
	slices.SortFunc(paths, func(a, b *regionPath) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(b.value, a.value); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	best := paths[0]
	for _, p := range paths[1:] {
		if len(p.regions) < len(best.regions) && slices.EqualFunc(p.regions, best.regions[:len(p.regions)], func(a, b *region) bool { return a.name == b.name }) {
			best = p
		}
	}
	return best
}

// assign is AssignReplicas in its Steady mode. It returns the clusters that
// may be given replicas they do not have now, setting each one's gain; or
// why the scheduler fails. Which clusters a weighted division favours may
// depend on the binding's UID (the tie-breaker of its Webster allocation):
// without Request.ResourceUID, a cluster gains the most either tie-breaker
// gives it.
func (m *model) assign(selected []*node) ([]*node, *failure) {
	if len(selected) == 0 {
		// Only a cluster constraint without maxGroups selects none.
		return nil, m.noMaxGroups(m.p.sel.cluster, "cluster")
	}
	if m.r == 0 {
		// Not a workload: every selected cluster gets it, without replicas.
		if m.p.division == divideDuplicated {
			return selected, nil
		}
		return nil, nil
	}
	switch m.p.division {
	case divideDuplicated:
		var out []*node
		for _, n := range selected {
			if !n.local {
				n.gain = m.r
				out = append(out, n)
			}
		}
		return out, nil
	case divideStaticWeight:
		// All the replicas again, by weight, whatever the room.
		parties, weights := m.weighted(selected)
		return m.share(parties, weights, m.r, true), nil
	}
	// Aggregated and dynamic weights: the replicas of the clusters it keeps
	// and still selects stay; the rest go by room.
	var assigned int32
	for _, n := range selected {
		assigned += n.kept // 0 on a cluster that does not keep it
	}
	if assigned >= m.r {
		return nil, nil
	}
	target := m.r - assigned
	room := make(roomList, len(selected))
	copy(room, selected)
	sort.Sort(room)
	var sum int32 // int32, as Karmada sums
	for _, n := range room {
		sum += n.est
	}
	whole := m.reduced && m.p.sel.all // selected is every cluster that passes, cut
	if whole {
		sum = m.sum
	}
	if sum < target {
		if whole {
			return nil, &failure{InsufficientCapacity, m.s.short(m.first, m.total, int64(sum), int64(target))}
		}
		return nil, &failure{InsufficientCapacity, m.short(selected, int64(sum), int64(target))}
	}
	if m.p.division == divideAggregated {
		// The clusters it keeps first, then fill until the target is met.
		ordered := make([]*node, 0, len(room))
		for _, n := range room {
			if n.kept > 0 {
				ordered = append(ordered, n)
			}
		}
		for _, n := range room {
			if n.kept <= 0 {
				ordered = append(ordered, n)
			}
		}
		var acc int32
		for i, n := range ordered {
			if acc += n.est; acc >= target {
				room = ordered[:i+1]
				break
			}
		}
	}
	votes := make([]int64, len(room))
	for i, n := range room {
		votes[i] = int64(n.est)
	}
	return m.share(room, votes, target, false), nil
}

// share hands out seats among parties by votes as the Dispenser does, under
// the workload's tie-breaker, or both when its UID is not known, and
// returns the parties that gain replicas, each with its gain set. With
// whole, the seats are all the replicas, not only new ones, and a party
// gains what it gets beyond what it keeps. Beyond websterLimit seats, every
// party with votes may gain them all.
func (m *model) share(parties []*node, votes []int64, seats int32, whole bool) []*node {
	names := nodeNames(parties)
	gain := make([]int32, len(parties))
	falls := []bool{false, true}
	if uid := m.s.req.ResourceUID; uid != "" {
		// tieBreakerByUID: names descending when the FNV-1a hash of the
		// UID is odd.
		h := fnv.New32a()
		h.Write([]byte(uid))
		falls = []bool{h.Sum32()&1 == 1}
	}
	for _, desc := range falls {
		got, ok := websterSeats(seats, votes, names, desc)
		if !ok {
			for i := range parties {
				if votes[i] > 0 {
					gain[i] = seats
				}
			}
			break
		}
		for i, n := range got {
			if whole {
				n -= parties[i].kept
			}
			gain[i] = max(gain[i], n)
		}
	}
	var out []*node
	for i, n := range parties {
		if gain[i] > 0 {
			n.gain = gain[i]
			out = append(out, n)
		}
	}
	return out
}

// roomList sorts as Karmada's TargetClustersList does (sort.Sort, most room
// first), so that ties fall the same way.
type roomList []*node

func (a roomList) Len() int           { return len(a) }
func (a roomList) Swap(i, j int)      { a[i], a[j] = a[j], a[i] }
func (a roomList) Less(i, j int) bool { return a[i].est > a[j].est }

// weighted returns the selected clusters a static weight list gives a
// weight, and their weights (getStaticWeightInfoList): the greatest of the
// entries that select it; without a list, or when no entry selects any of
// them, all weigh 1.
func (m *model) weighted(selected []*node) ([]*node, []int64) {
	var out []*node
	var weights []int64
	if m.p.weights != nil {
		for _, n := range selected {
			var w int64
			for _, e := range m.p.weights {
				if e.weight > w && e.m.Matches(n.c) {
					w = e.weight
				}
			}
			if w > 0 {
				out = append(out, n)
				weights = append(weights, w)
			}
		}
	}
	if len(out) == 0 {
		out = selected
		weights = make([]int64, len(selected))
		for i := range weights {
			weights[i] = 1
		}
	}
	return out, weights
}

// short says that the clusters have room for fewer replicas than needed.
func (m *model) short(ns []*node, room, need int64) string {
	return m.s.short(nodeNames(sortedNodes(ns)), len(ns), room, need)
}

// short is model.short for total clusters, named by first (the first five
// by name, or all).
func (s *scan) short(first []string, total int, room, need int64) string {
	what := s.evictedWhat()
	if evicted := s.evictedReplicas(); need != evicted {
		what = fmt.Sprintf("the %d replicas to place (%s, and those of clusters the scheduler no longer selects)", need, what)
	}
	return fmt.Sprintf("the eligible clusters (%s) have spare capacity for %d of %s", listOf(first, total, 5), room, what)
}

func nodeNames(ns []*node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.name
	}
	return out
}

// sortedNodes returns ns sorted by name: by rank, in one pass over a mark
// per rank when there are many, as a whole fleet may be.
func sortedNodes(ns []*node) []*node {
	if len(ns) < 64 {
		out := slices.Clone(ns)
		slices.SortFunc(out, func(a, b *node) int { return cmp.Compare(a.rank, b.rank) })
		return out
	}
	top := 0
	for _, n := range ns {
		top = max(top, n.rank+1)
	}
	at := make([]*node, top)
	for _, n := range ns {
		at[n.rank] = n
	}
	out := make([]*node, 0, len(ns))
	for _, n := range at {
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}

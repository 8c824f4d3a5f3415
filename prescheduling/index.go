package prescheduling

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/failoverkit/failover"
)

// Index is a fleet kept for the check one cluster at a time, so that a
// check costs what the scheduler itself must look at rather than a pass
// over the fleet: feed it each cluster as an informer sees it ([Index.Set],
// [Index.SetRoom], [Index.Delete]) and ask [Index.Check], which answers
// exactly as [Checker.Check] does on the same clusters.
//
// For each placement it is asked about, an Index remembers which clusters
// pass the filters that do not depend on the request (each affinity term
// matches, the tolerations tolerate the NoSchedule and NoExecute taints,
// the spread constraints' fields are set), and keeps that up to date as
// clusters change: a change costs a few matches per placement remembered,
// a check a pass over those clusters without matching any. It remembers
// the placements asked about most recently, up to MaxPlacements.
//
// R is the caller's record of a cluster's room (for Karmada, its resource
// summary read once per report), which the [Capacity] given to Check turns
// into replicas of one workload: SetRoom replaces it and changes nothing
// else, and the answers remembered for a Capacity's Key follow it.
//
// An Index is safe for concurrent use; its zero value is empty and ready.
type Index[R any] struct {
	mu     sync.RWMutex
	slots  map[string]*slot[R]
	byName []*slot[R]

	// memoMu guards memos and the uses counter; a memo's lists change only
	// under mu held for writing, so a check reads them under mu held for
	// reading.
	memoMu sync.Mutex
	memos  map[string]*memo[R]
	uses   uint64
}

// keyBuffers hold a placement's key, its JSON, while an Index looks it up.
var keyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// MaxPlacements is how many placements an [Index] remembers the filters
// of; the one asked about least recently is forgotten first.
const MaxPlacements = 128

type slot[R any] struct {
	c      failover.Cluster
	room   R
	faulty bool
}

// memo is what an Index remembers of one placement: for each term, the
// clusters that pass its filters when they do not keep the workload.
type memo[R any] struct {
	p     *compiled
	terms []passing[R]
	// kinds are, for each term, what its filters make of every cluster
	// of the Index (a kind), by position in byName: what an answer that is
	// not feasible counts.
	kinds [][]uint8
	used  uint64
}

// passing lists clusters sorted by name, with what a check reads of each
// side by side, so that a pass over them reads memory in order.
type passing[R any] struct {
	slots  []*slot[R]
	names  []string
	rooms  []R
	faulty []bool
	// healthy are the names of those not faulty: the candidates. A check
	// whose candidates they are hands them out as they are (shared), and
	// they are copied before the next change.
	healthy []string
	shared  atomic.Bool
	// capMemos remember, by Capacity.Key, what a Capacity says of each
	// cluster of the list (capMu guards them in a check, which holds the
	// Index's lock only for reading); a change to the list forgets them, a
	// room report updates them.
	capMu    sync.Mutex
	capMemos map[string]*roomMemo[R]
	// weights, when the placement has been asked about since the list last
	// changed, are its static weights of each cluster (capMu guards it as
	// capMemos).
	weights *weightMemo
}

// set puts sl in the list, or takes it out, or updates its room.
func (ps *passing[R]) set(sl *slot[R], in bool) {
	name := sl.c.Name
	h, isHealthy := slices.BinarySearch(ps.healthy, name)
	if isHealthy != (in && !sl.faulty) && ps.shared.Swap(false) {
		ps.healthy = slices.Clone(ps.healthy)
	}
	switch {
	case in && !sl.faulty && !isHealthy:
		ps.healthy = slices.Insert(ps.healthy, h, name)
	case (!in || sl.faulty) && isHealthy:
		ps.healthy = slices.Delete(ps.healthy, h, h+1)
	}
	i, found := slices.BinarySearch(ps.names, name)
	if in || found {
		ps.capMemos, ps.weights = nil, nil
	}
	switch {
	case in && found:
		ps.rooms[i], ps.faulty[i] = sl.room, sl.faulty
	case in:
		ps.slots = slices.Insert(ps.slots, i, sl)
		ps.names = slices.Insert(ps.names, i, sl.c.Name)
		ps.rooms = slices.Insert(ps.rooms, i, sl.room)
		ps.faulty = slices.Insert(ps.faulty, i, sl.faulty)
	case found:
		ps.slots = slices.Delete(ps.slots, i, i+1)
		ps.names = slices.Delete(ps.names, i, i+1)
		ps.rooms = slices.Delete(ps.rooms, i, i+1)
		ps.faulty = slices.Delete(ps.faulty, i, i+1)
	}
}

// setRoom updates the room of sl if the list holds it.
func (ps *passing[R]) setRoom(sl *slot[R]) {
	if i, found := slices.BinarySearch(ps.names, sl.c.Name); found {
		ps.rooms[i] = sl.room
		for _, rm := range ps.capMemos {
			rm.setRoom(i, sl.room)
		}
	}
}

// Capacity is how [Index.Check] counts a cluster's room for one workload.
type Capacity[R any] struct {
	// Of gives, from a cluster's room, how many more replicas of the
	// workload it can take, and whether that is known, as [WithCapacity]'s
	// function does. Nil: no capacity is known.
	Of func(room R) (replicas int32, known bool)
	// Key names all that Of reads besides the room (for Karmada, what a
	// replica requests): Capacities with the same Key must answer alike.
	// With a Key, the Index remembers Of's answers for each placement and
	// keeps them current as rooms are reported, so that a check does not ask
	// Of about every candidate; empty, Of is asked on every check.
	Key string
}

// Override is a cluster read afresh that stands, for one [Index.Check], in
// place of the Index's copy of the cluster named Name.
type Override[R any] struct {
	// Name is the cluster's name.
	Name string
	// Cluster is the cluster as read; nil when it is gone, or cannot be a
	// target (its taints cannot be read).
	Cluster *failover.Cluster
	// Room is its room, for the capacity function.
	Room R
}

// Set records c and its room, replacing the cluster of the same name; c
// must not be modified afterwards. An empty name is an error.
func (x *Index[R]) Set(c failover.Cluster, room R) error {
	if c.Name == "" {
		return errors.New("prescheduling: Index.Set: cluster name is empty")
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	sl := x.slots[c.Name]
	i, _ := x.find(c.Name)
	added := sl == nil
	if added {
		if x.slots == nil {
			x.slots = map[string]*slot[R]{}
		}
		sl = &slot[R]{}
		x.slots[c.Name] = sl
		x.byName = slices.Insert(x.byName, i, sl)
	}
	sl.c, sl.room, sl.faulty = c, room, failover.IsFaulty(c)
	for _, m := range x.memos {
		for ti := range m.terms {
			k := m.p.kind(ti, &sl.c)
			if added {
				m.kinds[ti] = slices.Insert(m.kinds[ti], i, k)
			} else {
				m.kinds[ti][i] = k
			}
			m.terms[ti].set(sl, k <= kindPassesFaulty)
		}
	}
	return nil
}

// SetRoom replaces the room of the cluster named name, and reports whether
// the Index holds it; it leaves the cluster's filters as they are.
func (x *Index[R]) SetRoom(name string, room R) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	sl, ok := x.slots[name]
	if !ok {
		return false
	}
	sl.room = room
	for _, m := range x.memos {
		for ti := range m.terms {
			m.terms[ti].setRoom(sl)
		}
	}
	return true
}

// Delete forgets the cluster named name.
func (x *Index[R]) Delete(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	sl, ok := x.slots[name]
	if !ok {
		return
	}
	delete(x.slots, name)
	i, _ := x.find(name)
	x.byName = slices.Delete(x.byName, i, i+1)
	for _, m := range x.memos {
		for ti := range m.terms {
			m.kinds[ti] = slices.Delete(m.kinds[ti], i, i+1)
			m.terms[ti].set(sl, false)
		}
	}
}

// Len returns the number of clusters the Index holds.
func (x *Index[R]) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.slots)
}

func (x *Index[R]) find(name string) (int, bool) { return search(x.byName, name) }

func search[R any](list []*slot[R], name string) (int, bool) {
	return slices.BinarySearchFunc(list, name, func(s *slot[R], n string) int { return strings.Compare(s.c.Name, n) })
}

// memo returns what the Index remembers of p, building it on the first
// question. The caller holds mu for reading.
func (x *Index[R]) memo(p *Placement) (*memo[R], error) {
	buf := keyBuffers.Get().(*bytes.Buffer)
	defer keyBuffers.Put(buf)
	buf.Reset()
	if err := json.NewEncoder(buf).Encode(p); err != nil {
		return nil, fmt.Errorf("prescheduling: placement: %w", err)
	}
	x.memoMu.Lock()
	defer x.memoMu.Unlock()
	x.uses++
	if m, ok := x.memos[string(buf.Bytes())]; ok { // no copy of the key to look it up
		m.used = x.uses
		return m, nil
	}
	key := buf.String()
	cp, err := compile(p)
	if err != nil {
		return nil, err
	}
	m := &memo[R]{p: cp, terms: make([]passing[R], len(cp.terms)), kinds: make([][]uint8, len(cp.terms)), used: x.uses}
	for ti := range cp.terms {
		ps := &m.terms[ti]
		m.kinds[ti] = make([]uint8, len(x.byName))
		for i, sl := range x.byName {
			k := cp.kind(ti, &sl.c)
			m.kinds[ti][i] = k
			if k <= kindPassesFaulty {
				ps.slots = append(ps.slots, sl)
				ps.names = append(ps.names, sl.c.Name)
				ps.rooms = append(ps.rooms, sl.room)
				ps.faulty = append(ps.faulty, sl.faulty)
				if !sl.faulty {
					ps.healthy = append(ps.healthy, sl.c.Name)
				}
			}
		}
	}
	if len(x.memos) >= MaxPlacements {
		var old string
		for k, o := range x.memos {
			if old == "" || o.used < x.memos[old].used {
				old = k
			}
		}
		delete(x.memos, old)
	}
	if x.memos == nil {
		x.memos = map[string]*memo[R]{}
	}
	x.memos[key] = m
	return m, nil
}

// Check is [Checker.Check] on the Index's clusters, with overrides in
// place of theirs, sorted by name, and capacity in place of [WithCapacity]:
// the same Result, field by field. The filters the clusters pass are
// remembered per placement; the scheduler's choice is followed on the
// clusters that pass them, and for a Divided, Aggregated placement without
// spread constraints, on the few with the most room. An answer other than
// feasible, whose Reason counts what the fleet lacks, takes a pass over the
// fleet. The Result's Candidates may be shared with the Index and with
// other Results: read them, do not modify them.
func (x *Index[R]) Check(req Request, capacity Capacity[R], overrides ...Override[R]) Result {
	return x.check(req, capacity, false, overrides)
}

// CheckWithin is [Index.Check] on a few of the Index's clusters only: those
// req names (Scheduled and Evicting) and the overrides, as if the Index held
// no other. A caller that trusts only the clusters it read afresh asks it
// whether they, with those the workload runs on, are enough for the
// scheduler. Its cost follows the clusters named, not the Index.
func (x *Index[R]) CheckWithin(req Request, capacity Capacity[R], overrides ...Override[R]) Result {
	return x.check(req, capacity, true, overrides)
}

// check is Check, or with within CheckWithin.
func (x *Index[R]) check(req Request, capacity Capacity[R], within bool, overrides []Override[R]) Result {
	if err := validateRequest(&req); err != nil {
		return invalid(err)
	}
	if err := validateOverrides(overrides); err != nil {
		return invalid(err)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	m, err := x.memo(&req.Placement)
	if err != nil {
		return invalid(err)
	}
	s := newScan(&req, m.p)
	if err := errors.Join(s.duplicateScheduled(), s.replicaSum()); err != nil {
		return invalid(err)
	}
	if len(s.evicted) == 0 {
		return nothingToEvict(&req)
	}
	sp := x.specials(&req, overrides)
	if within {
		s.byName = true
		for ti := range s.terms {
			s.terms[ti] = x.passing(s, m, ti, sp, capacity, within)
		}
		x.tallyWithin(s, sp)
		return s.answer(nil)
	}
	if r, ok := x.aggregated(s, m, s.start(), sp, capacity); ok {
		return r
	}
	if r, ok := x.duplicated(s, m, s.start(), sp); ok {
		return r
	}
	s.byName = true
	for ti := range s.terms {
		ts, ok := x.reduce(s, m, ti, sp, capacity)
		if !ok {
			ts = x.passing(s, m, ti, sp, capacity, within)
		}
		s.terms[ti] = ts
	}
	// A feasible answer counts nothing of the fleet: the tally, a pass
	// over it, is for the Reason of one that is not, asked again with it.
	if r := s.answer(nil); r.Feasible {
		return r
	}
	x.tally(s, m, sp, overrides)
	return s.answer(nil)
}

func validateOverrides[R any](overrides []Override[R]) error {
	seen := make(map[string]int, len(overrides))
	for i, o := range overrides {
		switch {
		case o.Name == "":
			return fmt.Errorf("prescheduling: overrides[%d].name is empty", i)
		case o.Cluster != nil && o.Cluster.Name != o.Name:
			return fmt.Errorf("prescheduling: overrides[%d].cluster.name: %q is not the override's name %q", i, o.Cluster.Name, o.Name)
		}
		if j, dup := seen[o.Name]; dup {
			return fmt.Errorf("prescheduling: overrides[%d].name: %q is also overrides[%d]", i, o.Name, j)
		}
		seen[o.Name] = i
	}
	return nil
}

// special is a cluster whose part in one check the memo cannot tell: one
// the request evicts or schedules, or an override.
type special[R any] struct {
	name string
	c    *failover.Cluster // nil: not in the fleet
	room R
}

// specials lists the clusters the request names and the overrides, sorted
// by name, each as the check sees it.
func (x *Index[R]) specials(req *Request, overrides []Override[R]) []special[R] {
	out := make([]special[R], 0, len(req.Evicting)+len(req.Scheduled)+len(overrides))
	for _, o := range overrides {
		out = append(out, special[R]{name: o.Name, c: o.Cluster, room: o.Room})
	}
	add := func(name string) {
		if slices.ContainsFunc(out, func(s special[R]) bool { return s.name == name }) {
			return
		}
		sp := special[R]{name: name}
		if sl, ok := x.slots[name]; ok {
			sp.c, sp.room = &sl.c, sl.room
		}
		out = append(out, sp)
	}
	for _, n := range req.Evicting {
		add(n)
	}
	for _, t := range req.Scheduled {
		add(t.Name)
	}
	slices.SortFunc(out, func(a, b special[R]) int { return strings.Compare(a.name, b.name) })
	return out
}

// passing is term ti's clusters that pass the filters, sorted by name: the
// memo's, but for the specials, which are decided here; with within, the
// specials alone.
func (x *Index[R]) passing(s *scan, m *memo[R], ti int, sp []special[R], capacity Capacity[R], within bool) termScan {
	base := &m.terms[ti]
	size := len(sp)
	if !within {
		size += len(base.slots)
	}
	ts := termScan{passing: make([]*failover.Cluster, 0, size)}
	if capacity.Of != nil {
		ts.caps = make([]spare, 0, size)
	}
	copyBase := func(lo, hi int) {
		if within {
			return
		}
		for _, sl := range base.slots[lo:hi] {
			ts.passing = append(ts.passing, &sl.c)
		}
		if ts.caps != nil {
			for _, rm := range base.rooms[lo:hi] {
				ts.caps = append(ts.caps, capacityAnswer(capacity.Of(rm)))
			}
		}
	}
	last := 0
	for i := range sp {
		o := &sp[i]
		at, found := slices.BinarySearch(base.names[last:], o.name)
		copyBase(last, last+at)
		last += at
		if found {
			last++
		}
		if o.c == nil || s.evicting.Has(o.name) || !m.p.passes(ti, o.c, s.sched.Has(o.name)) {
			continue
		}
		ts.passing = append(ts.passing, o.c)
		if ts.caps != nil {
			ts.caps = append(ts.caps, capacityAnswer(capacity.Of(o.room)))
		}
	}
	copyBase(last, len(base.names))
	return ts
}

func capacityAnswer(n int32, known bool) spare { return spare{replicas: n, known: known} }

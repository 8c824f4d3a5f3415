package prescheduling

import (
	"cmp"
	"math"
	"slices"
)

// roomMemo is what a Capacity (by its Key) says of each cluster of a
// passing list, kept up to date as rooms are reported, and what a check
// reads of it without a pass over the list: the room summed, and the
// clusters in order of room, so that those with the most are a prefix.
type roomMemo[R any] struct {
	of    func(R) (int32, bool)
	n     []int32 // Of's answers, by position in the list
	known []bool
	// sumKnown is the int32 sum (wrapping, as Karmada sums) of the known
	// answers other than math.MaxInt32, each at least 0; others counts the
	// rest, whose room the check takes as the workload's replicas.
	sumKnown, others int32
	// byRoom are the positions of the known answers other than
	// math.MaxInt32, by their room (at least 0), most first, then by
	// position; wild are the positions of the rest, by position. A check
	// reads them under the Index's read lock, and only a room report,
	// under its write lock, changes them.
	byRoom, wild []int32
	// regions, once a selection by region has asked, are the same per
	// region; regionOf names each position's region. Built under the
	// passing list's capMu, kept by setRoom.
	regions  map[string]*regionRoom
	regionOf []string
}

// regionRoom is a roomMemo's order and sums within one region.
type regionRoom struct {
	byRoom, wild []int32
	// sumKnown sums the room (at least 0) of byRoom's; wild counts the
	// rest, whose room the check takes as the workload's replicas.
	sumKnown int64
}

// roomMemoTop is how many of the most room the quick way of an
// Aggregated division reads: enough for a check that leaves out up to
// quickRoom of them.
const roomMemoTop = 2 * quickRoom

// maxRoomMemos bounds the Capacities a passing list remembers.
const maxRoomMemos = 16

// isOther reports whether an answer counts as the workload's replicas.
func isOther(n int32, known bool) bool { return !known || n == math.MaxInt32 }

func (rm *roomMemo[R]) add(n int32, known bool, sign int32) {
	if isOther(n, known) {
		rm.others += sign
	} else {
		rm.sumKnown += sign * max(n, 0)
	}
}

// roomOf is the room the answer at position i orders by.
func (rm *roomMemo[R]) roomOf(i int32) int32 { return max(rm.n[i], 0) }

// byRoomOrder orders positions as byRoom holds them.
func (rm *roomMemo[R]) byRoomOrder(a, b int32) int {
	if c := cmp.Compare(rm.roomOf(b), rm.roomOf(a)); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// roomMemo returns what the passing list remembers for c, building it on
// the first question.
func (ps *passing[R]) roomMemo(c Capacity[R]) *roomMemo[R] {
	ps.capMu.Lock()
	defer ps.capMu.Unlock()
	key := c.Key
	if c.Of == nil {
		key = "" // every capacity unknown
	}
	if rm := ps.capMemos[key]; rm != nil {
		return rm
	}
	rm := &roomMemo[R]{of: c.Of, n: make([]int32, len(ps.names)), known: make([]bool, len(ps.names))}
	for i, r := range ps.rooms {
		if c.Of != nil {
			rm.n[i], rm.known[i] = c.Of(r)
		}
		rm.add(rm.n[i], rm.known[i], 1)
		if isOther(rm.n[i], rm.known[i]) {
			rm.wild = append(rm.wild, int32(i))
		} else {
			rm.byRoom = append(rm.byRoom, int32(i))
		}
	}
	slices.SortFunc(rm.byRoom, rm.byRoomOrder)
	if len(ps.capMemos) >= maxRoomMemos {
		clear(ps.capMemos)
	}
	if ps.capMemos == nil {
		ps.capMemos = map[string]*roomMemo[R]{}
	}
	ps.capMemos[key] = rm
	return rm
}

// setRoom is a room report for the cluster at position i: its answer
// leaves its place in the order (and in its region's) and takes the one
// its new room gives it.
func (rm *roomMemo[R]) setRoom(i int, r R) {
	var n int32
	var known bool
	if rm.of != nil {
		n, known = rm.of(r)
	}
	p := int32(i)
	var g *regionRoom
	if rm.regions != nil {
		g = rm.regions[rm.regionOf[i]]
	}
	rm.byRoom, rm.wild = rm.place(rm.byRoom, rm.wild, p, false)
	if g != nil {
		g.byRoom, g.wild = rm.place(g.byRoom, g.wild, p, false)
		if !isOther(rm.n[i], rm.known[i]) {
			g.sumKnown -= int64(rm.roomOf(p))
		}
	}
	rm.add(rm.n[i], rm.known[i], -1)
	rm.add(n, known, 1)
	rm.n[i], rm.known[i] = n, known
	rm.byRoom, rm.wild = rm.place(rm.byRoom, rm.wild, p, true)
	if g != nil {
		g.byRoom, g.wild = rm.place(g.byRoom, g.wild, p, true)
		if !isOther(n, known) {
			g.sumKnown += int64(rm.roomOf(p))
		}
	}
}

// place takes position p out of byRoom or wild, by its answer now, or
// with in puts it in.
func (rm *roomMemo[R]) place(byRoom, wild []int32, p int32, in bool) ([]int32, []int32) {
	if isOther(rm.n[p], rm.known[p]) {
		at, _ := slices.BinarySearch(wild, p)
		if in {
			return byRoom, slices.Insert(wild, at, p)
		}
		return byRoom, slices.Delete(wild, at, at+1)
	}
	at, _ := slices.BinarySearchFunc(byRoom, p, rm.byRoomOrder)
	if in {
		return slices.Insert(byRoom, at, p), wild
	}
	return slices.Delete(byRoom, at, at+1), wild
}

// regionRooms returns rm by region, building it on the first question.
func (ps *passing[R]) regionRooms(rm *roomMemo[R]) map[string]*regionRoom {
	ps.capMu.Lock()
	defer ps.capMu.Unlock()
	if rm.regions != nil {
		return rm.regions
	}
	regions := map[string]*regionRoom{}
	regionOf := make([]string, len(ps.slots))
	at := func(i int32) *regionRoom {
		name := ps.slots[i].c.Region
		regionOf[i] = name
		g := regions[name]
		if g == nil {
			g = &regionRoom{}
			regions[name] = g
		}
		return g
	}
	for _, i := range rm.byRoom {
		g := at(i)
		g.byRoom = append(g.byRoom, i)
		g.sumKnown += int64(rm.roomOf(i))
	}
	for _, i := range rm.wild {
		g := at(i)
		g.wild = append(g.wild, i)
	}
	rm.regions, rm.regionOf = regions, regionOf
	return regions
}

package main

import (
	"cmp"
	"container/heap"
	"slices"
)

// heads keep, for one queue, each disruption domain's pending items in the
// order the queue handles them (higher priority first, then first
// enqueued; an item pending again keeps its place), so that the driver
// knows the domains in the order of their head items without a pass over
// the queue: in time proportional to the domains, and to the items that
// left a line since.
type heads struct {
	seq   uint64
	place map[itemID]orderKey   // every item the queue holds, with its place
	lines map[string]*headsLine // by domain; an item no longer pending leaves lazily
}

type orderKey struct {
	priority int32
	seq      uint64
}

// before reports whether k is handled before o.
func (k orderKey) before(o orderKey) bool {
	if k.priority != o.priority {
		return k.priority > o.priority
	}
	return k.seq < o.seq
}

func newHeads() *heads {
	return &heads{place: map[itemID]orderKey{}, lines: map[string]*headsLine{}}
}

// added records a new item of domain, pending, behind every item before it.
func (h *heads) added(id itemID, priority int32, domain string) {
	h.seq++
	h.place[id] = orderKey{priority, h.seq}
	h.pending(id, domain)
}

// pending records that id, of domain, is pending again, in its place.
func (h *heads) pending(id itemID, domain string) {
	k, ok := h.place[id]
	if !ok {
		return
	}
	l := h.lines[domain]
	if l == nil {
		l = &headsLine{}
		h.lines[domain] = l
	}
	heap.Push(l, headsEntry{k, id})
}

// left records that id left the queue.
func (h *heads) left(id itemID) { delete(h.place, id) }

// domains lists the domains with a pending item (isPending says which
// items are), by their head items, in the order the queue handles them.
func (h *heads) domains(isPending func(itemID) bool) []string {
	type head struct {
		key    orderKey
		domain string
	}
	var hs []head
	for d, l := range h.lines {
		for l.Len() > 0 {
			top := (*l)[0]
			if k, ok := h.place[top.id]; ok && k == top.key && isPending(top.id) {
				break
			}
			heap.Pop(l) // taken, backing off (pushed again when it ends) or gone
		}
		if l.Len() == 0 {
			delete(h.lines, d)
			continue
		}
		hs = append(hs, head{(*l)[0].key, d})
	}
	slices.SortFunc(hs, func(a, b head) int {
		switch {
		case a.key.before(b.key):
			return -1
		case b.key.before(a.key):
			return 1
		}
		return cmp.Compare(a.domain, b.domain)
	})
	out := make([]string, len(hs))
	for i, x := range hs {
		out[i] = x.domain
	}
	return out
}

type headsEntry struct {
	key orderKey
	id  itemID
}

// headsLine is a min-heap of entries in handling order (container/heap).
type headsLine []headsEntry

func (l headsLine) Len() int           { return len(l) }
func (l headsLine) Less(i, j int) bool { return l[i].key.before(l[j].key) }
func (l headsLine) Swap(i, j int)      { l[i], l[j] = l[j], l[i] }
func (l *headsLine) Push(x any)        { *l = append(*l, x.(headsEntry)) }
func (l *headsLine) Pop() any {
	old := *l
	x := old[len(old)-1]
	*l = old[:len(old)-1]
	return x
}

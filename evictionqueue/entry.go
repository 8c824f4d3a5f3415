package evictionqueue

import (
	"cmp"
	"container/heap"
	"time"
)

// state is where an entry is in its life; pending and backing-off ones
// count in Len, and every state holds the entry's identity.
type state uint8

const (
	statePending    state = iota + 1 // in pending, waiting for a worker
	stateBackingOff                  // in delayed until due, then pending
	stateRunning                     // a handler call is running
	stateInFlight                    // in delayed until due (TTL), or until Complete
)

// entry is the store's record of one item.
type entry struct {
	item Item
	seq  uint64 // order of first enqueue; a retried item keeps it
	// enqueued is the first enqueue (latency metric) in Unix nanoseconds: 16
	// bytes less than a time.Time keeps an entry within 128 bytes.
	enqueued int64
	// due is the end of the backoff (stateBackingOff), the TTL deadline
	// (stateInFlight), or when the handler call began (stateRunning).
	due time.Time
	// index is the entry's position in delayed, or in its pending line
	// (see inRun); while running, the count of gate openings when the call
	// began (gates.opens).
	index    int32
	calls    int32 // handler calls so far
	failures int32 // errors and TTL expiries so far, counted against MaxRetries
	state    state
	inRun    bool // in its pending line's run, not its heap
	// cancelled: CancelCluster found it running or in flight, so a failure
	// or expiry drops it rather than evict from a recovered cluster; Add of
	// the item clears it.
	cancelled bool
	// completed: Complete came while the handler ran (the eviction finished
	// before ErrInProgress), or the item would wait for the TTL and be
	// evicted again.
	completed bool
	// dirty: Add came while the handler ran, a decision made meanwhile. A
	// call that would let the item leave makes it pending again instead,
	// as client-go's workqueue re-adds an item marked dirty while it was
	// processed.
	dirty bool

	ci *clusterIndex // the entry's cluster in the index
}

// orderKey is what the queue's order reads of an entry.
type orderKey struct {
	prio int32
	seq  uint64
}

func (e *entry) key() orderKey { return orderKey{e.item.Priority, e.seq} }

// compare is the queue's order, in one place: higher Priority first, then
// earlier first enqueue (seq). An item pending again after a backoff, a TTL
// or an interrupted call keeps its seq, so it goes back to its first place,
// ahead of items added after it.
func (k orderKey) compare(o orderKey) int {
	if c := cmp.Compare(o.prio, k.prio); c != 0 {
		return c
	}
	return cmp.Compare(k.seq, o.seq)
}

// compareOrder is orderKey.compare on entries.
func compareOrder(a, b *entry) int { return a.key().compare(b.key()) }

// compareDue is the delayed heap's order: the earliest deadline first, ties
// in processing order.
func compareDue(a, b *entry) int {
	if c := a.due.Compare(b.due); c != 0 {
		return c
	}
	return compareOrder(a, b)
}

// entryHeap is a container/heap of entries keeping each one's index, to
// remove it in O(log n): in processing order (a domain's pending entries),
// or by due time (byDue: the delayed heap).
type entryHeap struct {
	s     []*entry
	byDue bool
}

func (h *entryHeap) Len() int { return len(h.s) }

func (h *entryHeap) Less(i, j int) bool {
	if h.byDue {
		return compareDue(h.s[i], h.s[j]) < 0
	}
	return compareOrder(h.s[i], h.s[j]) < 0
}

func (h *entryHeap) Swap(i, j int) {
	h.s[i], h.s[j] = h.s[j], h.s[i]
	h.s[i].index, h.s[j].index = int32(i), int32(j)
}

func (h *entryHeap) Push(x any) {
	e := x.(*entry)
	e.index = int32(len(h.s))
	h.s = append(h.s, e)
}

func (h *entryHeap) Pop() any {
	last := len(h.s) - 1
	e := h.s[last]
	h.s[last] = nil // let the entry be collected
	h.s = h.s[:last]
	e.index = -1
	// Give memory back after a large drain, so a burst does not pin its peak.
	if c := cap(h.s); c > 1024 && len(h.s) < c/4 {
		h.s = append(make([]*entry, 0, c/2), h.s...)
	}
	return e
}

func (h *entryHeap) push(e *entry) { heap.Push(h, e) }

// peek returns the first entry, or nil.
func (h *entryHeap) peek() *entry {
	if len(h.s) == 0 {
		return nil
	}
	return h.s[0]
}

func (h *entryHeap) pop() *entry { return heap.Pop(h).(*entry) }

func (h *entryHeap) remove(i int) *entry { return heap.Remove(h, i).(*entry) }

// each calls f for every entry, in no particular order.
func (h *entryHeap) each(f func(*entry)) {
	for _, e := range h.s {
		f(e)
	}
}

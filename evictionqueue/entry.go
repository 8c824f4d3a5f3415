package evictionqueue

import (
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
	due      time.Time
	index    int32 // position in delayed, or in pending's bucket (see loc)
	calls    int32 // handler calls so far
	failures int32 // errors and TTL expiries so far, counted against MaxRetries
	state    state
	loc      uint8 // where in pending's bucket: locFIFO or locRetry
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

// entryHeap is a heap of entries keeping each one's index, to remove it in
// O(log n): by due time (byDue, the delayed heap) or in processing order (a
// bucket's retry heap).
type entryHeap struct {
	s     []*entry
	byDue bool
}

func (h *entryHeap) Len() int { return len(h.s) }

func (h *entryHeap) Less(i, j int) bool {
	a, b := h.s[i], h.s[j]
	if h.byDue && !a.due.Equal(b.due) {
		return a.due.Before(b.due)
	}
	return compareOrder(a, b) < 0
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

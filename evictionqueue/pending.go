package evictionqueue

import (
	"container/heap"
	"slices"
)

// pendingSet is the pending entries, in one pendingQueue, or with
// Config.DomainOf in one per disruption domain, so that a worker holding a
// permit for a domain takes that domain's head. A cluster's pending entries
// are filed under the domain DomainOf gave it when the store first held an
// item of it; move files them again when the caller says it changed.
type pendingSet struct {
	all      pendingQueue             // every pending entry, unless byDomain
	byDomain map[string]*pendingQueue // non-nil with Config.DomainOf
	domainOf func(cluster string) string
	n        int
	// epoch changes when a domain gains its first pending entry or loses
	// its last, for Queue.kickLocked to renew the waits for permits.
	epoch uint64
}

func (p *pendingSet) Len() int { return p.n }

func (p *pendingSet) queue(domain string) *pendingQueue {
	if p.byDomain == nil {
		return &p.all
	}
	q := p.byDomain[domain]
	if q == nil {
		q = &pendingQueue{}
		p.byDomain[domain] = q
		p.epoch++
	}
	return q
}

func (p *pendingSet) push(e *entry) {
	ci := e.ci
	if !ci.domainRead && p.domainOf != nil {
		ci.domain, ci.domainRead = p.domainOf(ci.name), true
	}
	ci.pending++
	p.queue(ci.domain).push(e)
	p.n++
}

func (p *pendingSet) remove(e *entry) {
	q := p.queue(e.ci.domain)
	q.remove(e)
	p.removed(e, q)
}

// pop removes and returns the head entry of domain, or of all when any is
// set; nil when there is none.
func (p *pendingSet) pop(domain string, any bool) *entry {
	q := p.byDomain[domain]
	switch {
	case p.byDomain == nil:
		q = &p.all
	case any:
		for _, c := range p.byDomain {
			if q == nil || compareOrder(c.peek(), q.peek()) < 0 {
				q = c
			}
		}
	}
	if q == nil || q.n == 0 {
		return nil
	}
	return p.removed(q.pop(), q)
}

// removed counts e, just taken out of q, as no longer pending.
func (p *pendingSet) removed(e *entry, q *pendingQueue) *entry {
	p.n--
	e.ci.pending--
	if p.byDomain != nil && q.n == 0 {
		delete(p.byDomain, e.ci.domain)
		p.epoch++
	}
	return e
}

// move files ci's pending entries under domain, DomainOf's new answer for
// it, in time proportional to the cluster's entries.
func (p *pendingSet) move(ci *clusterIndex, domain string) {
	if ci.domain == domain {
		return
	}
	var moved []*entry
	if ci.pending > 0 {
		for _, e := range ci.keys {
			if e.state == statePending {
				p.remove(e)
				moved = append(moved, e)
			}
		}
	}
	ci.domain = domain
	for _, e := range moved {
		p.push(e)
	}
}

// domains lists the domains with pending entries by their first entry, the
// order in which a worker prefers permits; without DomainOf, [""] or none.
func (p *pendingSet) domains() []string {
	if p.byDomain == nil {
		if p.n == 0 {
			return nil
		}
		return []string{""}
	}
	heads := make([]*entry, 0, len(p.byDomain))
	for _, q := range p.byDomain {
		heads = append(heads, q.peek())
	}
	slices.SortFunc(heads, compareOrder)
	out := make([]string, len(heads))
	for i, e := range heads {
		out[i] = e.ci.domain
	}
	return out
}

func (p *pendingSet) each(f func(*entry)) {
	if p.byDomain == nil {
		p.all.each(f)
		return
	}
	for _, q := range p.byDomain {
		q.each(f)
	}
}

// pendingQueue holds the pending entries in processing order: highest
// Priority first, lowest seq first among equals. Each priority has a bucket:
// entries added for the first time arrive in seq order and wait in a FIFO
// (O(1) in and out), the few pending again after a backoff, a TTL or an
// interrupted call carry an older seq and wait in a small heap; taking
// compares the two heads.
type pendingQueue struct {
	buckets map[int32]*bucket
	order   prioHeap // the buckets, highest priority first
	spare   *bucket  // the last bucket emptied, kept to reuse its FIFO's memory
	last    *bucket  // the bucket pushed to last: most pushes go to the same one
	n       int
}

// bucket holds the pending entries of one priority.
type bucket struct {
	prio    int32
	hidx    int      // position in pendingQueue.order
	fifo    []*entry // fresh entries from head on, in seq order; nil marks a removed one
	head    int
	dead    int    // nil slots in fifo[head:]
	tailSeq uint64 // seq of the last entry appended to fifo
	retry   entryHeap
	n       int
}

// Where a pending entry is within its bucket, in entry.loc.
const (
	locFIFO  = 1
	locRetry = 2
)

func (q *pendingQueue) Len() int { return q.n }

func (q *pendingQueue) push(e *entry) {
	p := e.item.Priority
	b := q.last
	if b == nil || b.prio != p {
		b = q.buckets[p]
	}
	if b == nil {
		if q.buckets == nil {
			q.buckets = make(map[int32]*bucket)
		}
		b = q.spare
		q.spare = nil
		if b == nil {
			b = &bucket{}
		}
		b.prio = p
		q.buckets[p] = b
		heap.Push(&q.order, b)
	}
	q.last = b
	q.n++
	b.n++
	if b.head == len(b.fifo) || e.seq > b.tailSeq {
		if len(b.fifo) == cap(b.fifo) && b.head >= len(b.fifo)/2 {
			b.shiftDown() // or a FIFO that never drains grows without end
		}
		e.loc, e.index = locFIFO, int32(len(b.fifo))
		b.fifo = append(b.fifo, e)
		b.tailSeq = e.seq
		return
	}
	e.loc = locRetry
	b.retry.push(e)
}

// pop removes and returns the first entry; the queue must not be empty.
func (q *pendingQueue) pop() *entry {
	b := q.order[0]
	e := b.take()
	q.n--
	if b.n == 0 {
		q.drop(b)
	}
	return e
}

// peek returns the first entry; the queue must not be empty.
func (q *pendingQueue) peek() *entry {
	e, _ := q.order[0].first()
	return e
}

// remove takes e, which must be pending, out of the queue.
func (q *pendingQueue) remove(e *entry) {
	b := q.buckets[e.item.Priority]
	if e.loc == locRetry {
		b.retry.remove(int(e.index))
	} else {
		b.fifo[e.index] = nil
		b.dead++
		if b.dead > 32 && b.dead > (len(b.fifo)-b.head)/2 {
			b.compact()
		}
	}
	e.loc, e.index = 0, -1
	b.n--
	q.n--
	if b.n == 0 {
		q.drop(b)
	}
}

// drop forgets an empty bucket.
func (q *pendingQueue) drop(b *bucket) {
	if q.last == b {
		q.last = nil
	}
	heap.Remove(&q.order, b.hidx)
	delete(q.buckets, b.prio)
	clear(b.fifo[b.head:])
	b.fifo, b.head, b.dead, b.tailSeq = b.fifo[:0], 0, 0, 0
	if cap(b.fifo) <= 1<<16 { // unless a burst made it large
		q.spare = b
	}
}

// each calls f for every pending entry, in no particular order.
func (q *pendingQueue) each(f func(*entry)) {
	for _, b := range q.order {
		for _, e := range b.fifo[b.head:] {
			if e != nil {
				f(e)
			}
		}
		for _, e := range b.retry.s {
			f(e)
		}
	}
}

// first returns the bucket's first entry, the FIFO's head or the retry
// heap's, and whether it is the heap's; it drops removed slots on the way.
func (b *bucket) first() (e *entry, retried bool) {
	for b.head < len(b.fifo) && b.fifo[b.head] == nil {
		b.head++
		b.dead--
	}
	if b.head < len(b.fifo) {
		e = b.fifo[b.head]
	}
	if r := b.retry.peek(); r != nil && (e == nil || r.seq < e.seq) {
		return r, true
	}
	return e, false
}

// take removes the bucket's first entry (see first).
func (b *bucket) take() *entry {
	e, retried := b.first()
	if retried {
		b.retry.pop()
	} else {
		b.fifo[b.head] = nil
		b.head++
		if b.head == len(b.fifo) { // drained: reuse the slice from its start
			b.fifo, b.head, b.dead = b.fifo[:0], 0, 0
		}
	}
	e.loc, e.index = 0, -1
	b.n--
	return e
}

// shiftDown moves fifo[head:] to the start of its array, reusing the head.
func (b *bucket) shiftDown() {
	n := copy(b.fifo, b.fifo[b.head:])
	clear(b.fifo[n:])
	b.fifo, b.head = b.fifo[:n], 0
	for i, e := range b.fifo {
		if e != nil {
			e.index = int32(i)
		}
	}
}

// compact drops the FIFO's removed slots, which would hold memory until the
// head reached them.
func (b *bucket) compact() {
	live := make([]*entry, 0, len(b.fifo)-b.head-b.dead)
	for _, e := range b.fifo[b.head:] {
		if e != nil {
			e.index = int32(len(live))
			live = append(live, e)
		}
	}
	b.fifo, b.head, b.dead = live, 0, 0
}

// prioHeap orders buckets highest priority first (container/heap).
type prioHeap []*bucket

func (h prioHeap) Len() int           { return len(h) }
func (h prioHeap) Less(i, j int) bool { return h[i].prio > h[j].prio }
func (h prioHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = i, j
}
func (h *prioHeap) Push(x any) {
	b := x.(*bucket)
	b.hidx = len(*h)
	*h = append(*h, b)
}
func (h *prioHeap) Pop() any {
	old := *h
	b := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return b
}

package evictionqueue

import "slices"

// pendingSet is the pending entries in processing order (compareOrder): one
// line, or with Config.DomainOf one line per disruption domain, so that a
// worker holding a permit for a domain takes that domain's head. A
// cluster's pending entries are filed under the domain DomainOf gave it
// when the store first had a pending item of it; move files them again
// when the caller says it changed.
type pendingSet struct {
	all      line             // every pending entry, unless byDomain
	byDomain map[string]*line // non-nil with Config.DomainOf
	// order is byDomain's lines by their head entries (compareOrder), the
	// order in which a worker prefers permits, kept as the heads change: a
	// worker lists the domains before each permit, and sorting them each
	// time cost 1.6 ms at 5,000 domains (BenchmarkPermitDomains/list).
	order    []*line
	domainOf func(cluster string) string
	n        int
	// epoch changes when a domain gains its first pending entry or loses
	// its last, for Queue.kickLocked to renew the waits for permits.
	epoch uint64
}

func (p *pendingSet) Len() int { return p.n }

// line returns domain's line, creating it when create is set; nil when
// there is none.
func (p *pendingSet) line(domain string, create bool) *line {
	if p.byDomain == nil {
		return &p.all
	}
	h := p.byDomain[domain]
	if h == nil && create {
		h = &line{domain: domain, pos: -1}
		p.byDomain[domain] = h
		p.epoch++
	}
	return h
}

func (p *pendingSet) push(e *entry) {
	ci := e.ci
	if !ci.domainRead && p.domainOf != nil {
		ci.domain, ci.domainRead = p.domainOf(ci.name), true
	}
	ci.pending++
	h := p.line(ci.domain, true)
	h.push(e)
	p.n++
	switch {
	case p.byDomain == nil:
	case h.pos < 0: // its first entry
		p.place(h)
	case h.peek() == e: // its new head: it may go ahead of others
		p.fix(h)
	}
}

// remove takes e, which must be pending, out of the set.
func (p *pendingSet) remove(e *entry) {
	h := p.line(e.ci.domain, false)
	head := p.byDomain != nil && h.peek() == e
	h.remove(e)
	p.removed(e, h)
	if head && h.pos >= 0 {
		p.fix(h)
	}
}

// pop removes and returns the head entry of domain, or of all when any is
// set; nil when there is none.
func (p *pendingSet) pop(domain string, any bool) *entry {
	var h *line
	switch {
	case p.byDomain == nil:
		h = &p.all
	case any:
		if len(p.order) > 0 {
			h = p.order[0]
		}
	default:
		h = p.byDomain[domain]
	}
	if h == nil || h.Len() == 0 {
		return nil
	}
	e := p.removed(h.pop(), h)
	if p.byDomain != nil && h.pos >= 0 {
		p.fix(h)
	}
	return e
}

// removed counts e, just taken out of h, as no longer pending.
func (p *pendingSet) removed(e *entry, h *line) *entry {
	p.n--
	e.ci.pending--
	if p.byDomain != nil && h.Len() == 0 {
		delete(p.byDomain, e.ci.domain)
		p.order = slices.Delete(p.order, h.pos, h.pos+1)
		p.renumber(h.pos, len(p.order))
		h.pos = -1
		p.epoch++
	}
	return e
}

// before reports whether line a's head comes before line b's.
func before(a, b *line) bool { return compareOrder(a.peek(), b.peek()) < 0 }

// place puts h, which has just got its first entry, into order.
func (p *pendingSet) place(h *line) {
	i, _ := slices.BinarySearchFunc(p.order, h, func(o, h *line) int { return compareOrder(o.peek(), h.peek()) })
	p.order = slices.Insert(p.order, i, h)
	p.renumber(i, len(p.order))
}

// fix moves h, in order, to its place after its head changed. The other
// lines stay sorted, so a binary search finds the place, and only the
// lines between its old and new places move.
func (p *pendingSet) fix(h *line) {
	i := h.pos
	switch {
	case i > 0 && before(h, p.order[i-1]): // ahead
		j, _ := slices.BinarySearchFunc(p.order[:i], h, func(o, h *line) int { return compareOrder(o.peek(), h.peek()) })
		copy(p.order[j+1:i+1], p.order[j:i])
		p.order[j] = h
		p.renumber(j, i+1)
	case i+1 < len(p.order) && before(p.order[i+1], h): // behind
		k, _ := slices.BinarySearchFunc(p.order[i+1:], h, func(o, h *line) int { return compareOrder(o.peek(), h.peek()) })
		j := i + k // h's place, after the k lines that come before it
		copy(p.order[i:j], p.order[i+1:j+1])
		p.order[j] = h
		p.renumber(i, j+1)
	}
}

// renumber sets the position of order's lines from i to j.
func (p *pendingSet) renumber(i, j int) {
	for k := i; k < j; k++ {
		p.order[k].pos = k
	}
}

// move files ci's pending entries under domain, DomainOf's new answer for
// it, in time proportional to the cluster's entries.
func (p *pendingSet) move(ci *clusterIndex, domain string) {
	if ci.domain == domain {
		return
	}
	var moved []*entry
	if ci.pending > 0 {
		for _, e := range ci.keys.all() {
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
// order in which a worker prefers permits, in time proportional to their
// number; without DomainOf, [""] or none.
func (p *pendingSet) domains() []string {
	if p.byDomain == nil {
		if p.n == 0 {
			return nil
		}
		return []string{""}
	}
	out := make([]string, len(p.order))
	for i, h := range p.order {
		out[i] = h.domain
	}
	return out
}

// each calls f for every pending entry, in no particular order.
func (p *pendingSet) each(f func(*entry)) {
	if p.byDomain == nil {
		p.all.each(f)
		return
	}
	for _, h := range p.byDomain {
		h.each(f)
	}
}

// line is one domain's pending entries in processing order: one heap by
// compareOrder, with one fast path that BenchmarkAddProcess pays for (a
// heap alone made Add+process about 3.5x client-go's workqueue). Most
// entries arrive in order, a fresh Add having the highest seq so far: one
// that sorts after the last one appended joins run, sorted by
// construction, O(1) in and out, as client-go's queue slice; the others (a
// retry, keeping its old seq; a higher priority) go to heap. The head is the
// first of the two heads, by the same comparison.
type line struct {
	domain string   // with Config.DomainOf: its domain, and its place in pendingSet.order
	pos    int      // -1 while not in order
	run    []*entry // run[head:] in order; nil marks a removed entry
	head   int
	dead   int      // nil slots in run[head:]
	tail   orderKey // the last entry appended to run
	heap   entryHeap
}

func (l *line) Len() int { return len(l.run) - l.head - l.dead + l.heap.Len() }

func (l *line) push(e *entry) {
	if n := len(l.run); n == 0 || l.tail.compare(e.key()) < 0 {
		if n == cap(l.run) && 2*(l.head+l.dead) >= n && n > 0 {
			l.compact() // or a line that never drains grows without end
		}
		e.inRun, e.index = true, int32(len(l.run))
		l.run = append(l.run, e)
		l.tail = e.key()
		return
	}
	e.inRun = false
	l.heap.push(e)
}

// first returns the head entry and whether it is run's, dropping removed
// slots on the way; nil when the line is empty.
func (l *line) first() (e *entry, inRun bool) {
	for l.head < len(l.run) && l.run[l.head] == nil {
		l.head++
		l.dead--
	}
	if l.head < len(l.run) {
		e, inRun = l.run[l.head], true
	}
	if h := l.heap.peek(); h != nil && (e == nil || compareOrder(h, e) < 0) {
		return h, false
	}
	return e, inRun
}

func (l *line) peek() *entry {
	e, _ := l.first()
	return e
}

// pop removes and returns the head entry; the line must not be empty.
func (l *line) pop() *entry {
	e, inRun := l.first()
	if !inRun {
		return l.heap.pop()
	}
	l.run[l.head] = nil
	l.head++
	if l.head == len(l.run) { // drained: start again at the array's start
		l.run, l.head, l.dead = l.run[:0], 0, 0
		if cap(l.run) > 1<<16 { // unless a burst made it large
			l.run = nil
		}
	}
	e.index = -1
	return e
}

// remove takes e, which must be in the line, out of it.
func (l *line) remove(e *entry) {
	if !e.inRun {
		l.heap.remove(int(e.index))
		return
	}
	l.run[e.index] = nil
	e.index = -1
	l.dead++
	if l.dead > 32 && 2*l.dead > len(l.run)-l.head {
		l.compact() // removed slots would hold memory until the head reached them
	}
}

// compact moves run's live entries to the start of its array.
func (l *line) compact() {
	n := 0
	for _, e := range l.run[l.head:] {
		if e != nil {
			e.index = int32(n)
			l.run[n] = e
			n++
		}
	}
	clear(l.run[n:])
	l.run, l.head, l.dead = l.run[:n], 0, 0
}

// each calls f for every entry, in no particular order.
func (l *line) each(f func(*entry)) {
	for _, e := range l.run[l.head:] {
		if e != nil {
			f(e)
		}
	}
	l.heap.each(f)
}

package evictionqueue

import "slices"

// pendingSet is the pending entries in processing order (compareOrder): one
// heap, or with Config.DomainOf one heap per disruption domain, so that a
// worker holding a permit for a domain takes that domain's head. A
// cluster's pending entries are filed under the domain DomainOf gave it
// when the store first held an item of it; move files them again when the
// caller says it changed.
type pendingSet struct {
	all      entryHeap             // every pending entry, unless byDomain
	byDomain map[string]*entryHeap // non-nil with Config.DomainOf
	domainOf func(cluster string) string
	n        int
	// epoch changes when a domain gains its first pending entry or loses
	// its last, for Queue.kickLocked to renew the waits for permits.
	epoch uint64
}

func (p *pendingSet) Len() int { return p.n }

// heap returns domain's heap, creating it when create is set; nil when
// there is none.
func (p *pendingSet) heap(domain string, create bool) *entryHeap {
	if p.byDomain == nil {
		return &p.all
	}
	h := p.byDomain[domain]
	if h == nil && create {
		h = &entryHeap{}
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
	p.heap(ci.domain, true).push(e)
	p.n++
}

// remove takes e, which must be pending, out of the set.
func (p *pendingSet) remove(e *entry) {
	h := p.heap(e.ci.domain, false)
	h.remove(int(e.index))
	p.removed(e, h)
}

// pop removes and returns the head entry of domain, or of all when any is
// set; nil when there is none.
func (p *pendingSet) pop(domain string, any bool) *entry {
	var h *entryHeap
	switch {
	case p.byDomain == nil:
		h = &p.all
	case any:
		for _, c := range p.byDomain {
			if h == nil || compareOrder(c.peek(), h.peek()) < 0 {
				h = c
			}
		}
	default:
		h = p.byDomain[domain]
	}
	if h == nil || h.Len() == 0 {
		return nil
	}
	return p.removed(h.pop(), h)
}

// removed counts e, just taken out of h, as no longer pending.
func (p *pendingSet) removed(e *entry, h *entryHeap) *entry {
	p.n--
	e.ci.pending--
	if p.byDomain != nil && h.Len() == 0 {
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
	for _, h := range p.byDomain {
		heads = append(heads, h.peek())
	}
	slices.SortFunc(heads, compareOrder)
	out := make([]string, len(heads))
	for i, e := range heads {
		out[i] = e.ci.domain
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

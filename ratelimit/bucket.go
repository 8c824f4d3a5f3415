package ratelimit

import (
	"math"
	"slices"
	"sort"
	"time"
)

// bucket is a token bucket of burst 1 whose rate can change, with rate 0 a
// pause. Like x/time/rate's ReserveN(t), every method takes the time instead
// of reading a clock, and nothing blocks or starts a goroutine; the Limiter
// guards a bucket with its lock and does the blocking.
//
// A permit is a slot on the clock. There are three ways to hold one:
//   - take: the next slot is now, and the caller has it at once;
//   - reserve: a place in line (a reservation) whose slot the bucket moves
//     when the rate changes, and which cancel gives back;
//   - promise: a slot fixed for good (DynamicRateLimiter.When hands it to a
//     workqueue, which cannot be told of a change). Reservations fit around
//     promises, and promises outlive a pause.
//
// Consecutive slots are at least one interval apart, so over any window t of
// constant rate r at most r×t + 1 permits fall in it. While paused no
// reservation has a slot, and no debt or credit builds up: the first slot
// after a resume is now (unless a promise is within one interval of it).
type bucket struct {
	rate     float64
	interval time.Duration // 1/rate rounded up, so the rate is never exceeded
	// last is the latest slot taken (or promise come); zero after a pause,
	// so that resuming starts afresh.
	last time.Time
	// promises are the promised slots still to come, in increasing order.
	promises []time.Time
	// head, tail: the reservations in line, in slot order.
	head, tail *reservation
	n          int
}

// reservation is a place in a bucket's line.
type reservation struct {
	slot       time.Time // when its permit is due; zero while paused
	prev, next *reservation
}

// setRate puts r in force at now: a pause forgets the past and unsets every
// reservation's slot; a positive rate re-times the line.
func (b *bucket) setRate(r float64, now time.Time) {
	b.rate = r
	if r <= 0 {
		// Promises stay: the first slot after a resume keeps one interval
		// from them, so the bound holds across the pause.
		b.last = time.Time{}
		for w := b.head; w != nil; w = w.next {
			w.slot = time.Time{}
		}
		return
	}
	b.interval = intervalFor(r)
	b.prune(now)
	from := b.after(now)
	for w := b.head; w != nil; w = w.next {
		w.slot, _ = b.fit(from)
		from = w.slot.Add(b.interval)
	}
}

// take hands out a permit at now if nobody is in line and the next slot is
// due.
func (b *bucket) take(now time.Time) bool {
	if b.rate <= 0 || b.head != nil {
		return false
	}
	b.prune(now)
	slot, _ := b.fit(b.after(now))
	if slot.After(now) {
		return false
	}
	b.last = slot
	return true
}

// reserve puts a new reservation at the end of the line.
func (b *bucket) reserve(now time.Time) *reservation {
	w := &reservation{}
	if b.rate > 0 {
		b.prune(now)
		w.slot, _ = b.fit(b.next(now))
	}
	w.prev = b.tail
	if b.tail != nil {
		b.tail.next = w
	} else {
		b.head = w
	}
	b.tail = w
	b.n++
	return w
}

// due reports whether w's slot has come at now; if so, w leaves the line
// holding its permit.
func (b *bucket) due(w *reservation, now time.Time) bool {
	if b.rate <= 0 || w.slot.After(now) {
		return false
	}
	b.remove(w)
	b.last = later(b.last, w.slot)
	return true
}

// cancel gives w's place back: each reservation behind it takes the slot of
// the one ahead, and the last slot becomes free for the next caller. It
// reports whether any reservation moved.
func (b *bucket) cancel(w *reservation) (moved bool) {
	moved = w.next != nil
	freed := w.slot
	for e := w.next; e != nil; e = e.next {
		e.slot, freed = freed, e.slot
	}
	b.remove(w)
	return moved
}

// promise fixes the next free slot for good and returns it; ok is false
// while paused, when nothing is promised.
func (b *bucket) promise(now time.Time) (slot time.Time, ok bool) {
	if b.rate <= 0 {
		return time.Time{}, false
	}
	b.prune(now)
	slot, i := b.fit(b.next(now))
	b.promises = slices.Insert(b.promises, i, slot)
	return slot, true
}

// nextFree is the slot a newcomer would get at now; zero while paused.
func (b *bucket) nextFree(now time.Time) time.Time {
	if b.rate <= 0 {
		return time.Time{}
	}
	b.prune(now)
	slot, _ := b.fit(b.next(now))
	return slot
}

// after is the earliest slot one interval after the last permit, not before
// now.
func (b *bucket) after(now time.Time) time.Time {
	if b.last.IsZero() {
		return now
	}
	return later(now, b.last.Add(b.interval))
}

// next is where a newcomer's slot search starts: behind the last permit and
// behind everyone in line. A newcomer may still fill a gap between promises
// that a faster rate has opened.
func (b *bucket) next(now time.Time) time.Time {
	from := b.after(now)
	if b.tail != nil {
		from = later(from, b.tail.slot.Add(b.interval))
	}
	return from
}

// fit returns the earliest t ≥ from at least one interval away from every
// promise, and the index in b.promises at which t keeps them sorted.
// Promises are sorted, so this is a binary search plus a walk over the
// promises t has to step past.
func (b *bucket) fit(from time.Time) (time.Time, int) {
	if len(b.promises) == 0 {
		return from, 0
	}
	p, iv := b.promises, b.interval
	i := sort.Search(len(p), func(i int) bool { return p[i].After(from.Add(-iv)) })
	t := from
	for ; i < len(p) && p[i].Before(t.Add(iv)); i++ {
		t = later(t, p[i].Add(iv))
	}
	return t, i
}

// prune retires the promises that have come: they count as taken permits.
func (b *bucket) prune(now time.Time) {
	if len(b.promises) == 0 {
		return
	}
	i := 0
	for i < len(b.promises) && !b.promises[i].After(now) {
		b.last = later(b.last, b.promises[i])
		i++
	}
	if i == len(b.promises) {
		b.promises = b.promises[:0] // keep the array
	} else if i > 0 {
		b.promises = b.promises[i:]
	}
}

func (b *bucket) remove(w *reservation) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		b.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		b.tail = w.prev
	}
	w.prev, w.next = nil, nil
	b.n--
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// maxInterval keeps slot arithmetic far from time.Time's limits for tiny rates.
const maxInterval = 100 * 365 * 24 * time.Hour

// intervalFor is 1/r rounded up to the nanosecond, so rounding never makes the
// bucket faster than r.
func intervalFor(r float64) time.Duration {
	iv := math.Ceil(float64(time.Second) / r)
	switch {
	case iv < 1:
		return 1
	case iv > float64(maxInterval):
		return maxInterval
	}
	return time.Duration(iv)
}

// The domain rule (domains.go) takes a permit from two buckets at once: the
// total's and a domain's (or the fleet rule's). Such buckets never hold
// reservations: their callers poll (slotAll tells them when to).

// slotAll is the earliest slot, not before now, that is free in every one
// of bs; zero when one of them is paused.
func slotAll(now time.Time, bs ...*bucket) time.Time {
	t := now
	for _, b := range bs {
		if b.rate <= 0 {
			return time.Time{}
		}
		b.prune(now)
		t = later(t, b.after(now))
	}
	// Each bucket's promises may push t on; stop once none does.
	for moved := true; moved; {
		moved = false
		for _, b := range bs {
			if u, _ := b.fit(t); u.After(t) {
				t, moved = u, true
			}
		}
	}
	return t
}

// takeAll takes a permit at now from every one of bs if each has one free.
func takeAll(now time.Time, bs ...*bucket) bool {
	slot := slotAll(now, bs...)
	if slot.IsZero() || slot.After(now) {
		return false
	}
	for _, b := range bs {
		b.last = later(b.last, slot)
	}
	return true
}

// promiseAll fixes the next slot free in every one of bs for good, in each.
func promiseAll(now time.Time, bs ...*bucket) (time.Time, bool) {
	slot := slotAll(now, bs...)
	if slot.IsZero() {
		return slot, false
	}
	for _, b := range bs {
		i := sort.Search(len(b.promises), func(i int) bool { return b.promises[i].After(slot) })
		b.promises = slices.Insert(b.promises, i, slot)
	}
	return slot, true
}

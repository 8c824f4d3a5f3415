package main

import (
	"container/heap"
	"time"
)

// backoffs are one queue's items backing off and when each backoff ends,
// as the driver learns them from the queue's outcomes (Retrying), so that
// it knows how many items are pending without asking the queue: only the
// backoffs that end after now count, which expire drops as the clock moves
// on, in time proportional to the backoffs that ended.
type backoffs struct {
	at     map[itemID]time.Time
	ending deadlines // every deadline set, some replaced or dropped since
}

func newBackoffs() *backoffs {
	return &backoffs{at: map[itemID]time.Time{}}
}

// set records that id backs off until at.
func (b *backoffs) set(id itemID, at time.Time) {
	b.at[id] = at
	heap.Push(&b.ending, deadline{at, id})
}

// drop records that id no longer backs off.
func (b *backoffs) drop(id itemID) { delete(b.at, id) }

// until returns when id's backoff ends, and whether it backs off.
func (b *backoffs) until(id itemID) (time.Time, bool) {
	at, ok := b.at[id]
	return at, ok
}

// expire drops the backoffs that ended by now.
func (b *backoffs) expire(now time.Time) {
	for len(b.ending) > 0 && !b.ending[0].at.After(now) {
		d := heap.Pop(&b.ending).(deadline)
		if at, ok := b.at[d.id]; ok && at.Equal(d.at) {
			b.drop(d.id)
		}
	}
}

// len is the number of items backing off, after expire.
func (b *backoffs) len() int { return len(b.at) }

// next is when the next backoff ends, after expire.
func (b *backoffs) next() (time.Time, bool) {
	for len(b.ending) > 0 {
		d := b.ending[0]
		if at, ok := b.at[d.id]; ok && at.Equal(d.at) {
			return d.at, true
		}
		heap.Pop(&b.ending) // replaced or dropped
	}
	return time.Time{}, false
}

type deadline struct {
	at time.Time
	id itemID
}

// deadlines is a min-heap of deadlines (container/heap).
type deadlines []deadline

func (d deadlines) Len() int           { return len(d) }
func (d deadlines) Less(i, j int) bool { return d[i].at.Before(d[j].at) }
func (d deadlines) Swap(i, j int)      { d[i], d[j] = d[j], d[i] }
func (d *deadlines) Push(x any)        { *d = append(*d, x.(deadline)) }
func (d *deadlines) Pop() any {
	old := *d
	x := old[len(old)-1]
	*d = old[:len(old)-1]
	return x
}

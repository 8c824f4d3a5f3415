package prescheduling

import (
	"container/heap"
)

// websterLimit bounds the seats websterSeats hands out one by one; beyond
// it the check assumes every party with votes may get some.
const websterLimit = 1 << 20

// websterSeats shares seats among parties by their votes as Karmada's
// Dispenser does (AllocateWebsterSeats in pkg/util/helper): one seat at a
// time to the party with the most votes per 2·seats+1, a tie to the party
// with fewer seats, then by name, ascending or, with desc, descending (which
// of the two depends on the binding's UID, which the library does not
// have). ok is false beyond websterLimit seats.
func websterSeats(seats int32, votes []int64, names []string, desc bool) (out []int32, ok bool) {
	if seats > websterLimit {
		return nil, false
	}
	var sum int64
	for _, v := range votes {
		sum += v
	}
	out = make([]int32, len(votes))
	if sum == 0 {
		// The Dispenser hands out nothing without votes.
		return out, true
	}
	q := &websterQueue{votes: votes, names: names, seats: out, desc: desc}
	for i := range votes {
		q.order = append(q.order, i)
	}
	heap.Init(q)
	for range seats {
		i := q.order[0]
		out[i]++
		heap.Fix(q, 0)
	}
	return out, true
}

type websterQueue struct {
	votes []int64
	names []string
	seats []int32
	desc  bool
	order []int // a heap of party indexes
}

func (q *websterQueue) Len() int      { return len(q.order) }
func (q *websterQueue) Swap(i, j int) { q.order[i], q.order[j] = q.order[j], q.order[i] }
func (q *websterQueue) Less(i, j int) bool {
	a, b := q.order[i], q.order[j]
	// The same float64 arithmetic as Karmada, so that ties are ties.
	pa := float64(q.votes[a]) / float64(2*q.seats[a]+1)
	pb := float64(q.votes[b]) / float64(2*q.seats[b]+1)
	if pa != pb {
		return pa > pb
	}
	if q.seats[a] != q.seats[b] {
		return q.seats[a] < q.seats[b]
	}
	if q.desc {
		return q.names[a] > q.names[b]
	}
	return q.names[a] < q.names[b]
}
func (q *websterQueue) Push(any) { panic("prescheduling: the Webster queue never grows") }
func (q *websterQueue) Pop() any { panic("prescheduling: the Webster queue never shrinks") }

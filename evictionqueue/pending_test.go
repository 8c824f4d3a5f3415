package evictionqueue

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPendingQueueMatchesASortedModel runs random pushes (fresh and
// returning), removals and pops against a sorted slice and checks that every
// pop returns the model's first entry, so FIFOs, retry heaps, removed slots,
// compaction and bucket reuse keep the processing order.
func TestPendingQueueMatchesASortedModel(t *testing.T) {
	for _, prios := range []int{1, 3, 50} {
		rng := rand.New(rand.NewPCG(1, uint64(prios)))
		var pq pendingQueue
		var model []*entry
		var out []*entry // popped entries that may come back (a retry)
		seq := uint64(0)
		for step := range 20000 {
			switch op := rng.IntN(10); {
			case op < 4: // a new item
				seq++
				e := &entry{seq: seq, item: Item{Priority: int32(rng.IntN(prios))}}
				pq.push(e)
				model = append(model, e)
			case op < 5 && len(out) > 0: // an item pending again with its old seq
				i := rng.IntN(len(out))
				e := out[i]
				out = slices.Delete(out, i, i+1)
				pq.push(e)
				model = append(model, e)
			case op < 7 && len(model) > 0: // a cancel
				i := rng.IntN(len(model))
				pq.remove(model[i])
				model = slices.Delete(model, i, i+1)
			case len(model) > 0:
				slices.SortFunc(model, compareOrder)
				got := pq.pop()
				if got != model[0] {
					t.Fatalf("priorities %d, step %d: pop = seq %d prio %d, want seq %d prio %d",
						prios, step, got.seq, got.item.Priority, model[0].seq, model[0].item.Priority)
				}
				model = model[1:]
				out = append(out, got)
			}
			if pq.Len() != len(model) {
				t.Fatalf("step %d: Len %d, model %d", step, pq.Len(), len(model))
			}
		}
		// Removed slots do not pin memory: each FIFO holds at most about
		// twice its live entries (plus a small constant).
		for _, b := range pq.order {
			if live := len(b.fifo) - b.head - b.dead; b.dead > 32 && b.dead > live {
				t.Errorf("bucket %d: %d removed slots for %d live entries", b.prio, b.dead, live)
			}
		}
	}
}

func TestPendingQueueGivesBackEmptyBuckets(t *testing.T) {
	var pq pendingQueue
	for p := range int32(1000) {
		e := &entry{seq: uint64(p) + 1, item: Item{Priority: p}}
		pq.push(e)
		pq.remove(e)
	}
	if len(pq.buckets) != 0 || len(pq.order) != 0 {
		t.Errorf("%d buckets, %d ordered, after every item left", len(pq.buckets), len(pq.order))
	}
}

// TestPendingQueueThatNeverDrainsKeepsItsMemory keeps one or two items
// pending while many pass through, as a queue that is never empty but never
// backed up does: the FIFO must reuse its consumed head instead of growing.
func TestPendingQueueThatNeverDrainsKeepsItsMemory(t *testing.T) {
	var pq pendingQueue
	seq := uint64(0)
	push := func() {
		seq++
		pq.push(&entry{seq: seq})
	}
	push()
	push()
	for i := range 100000 {
		if got := pq.pop(); got.seq != uint64(i+1) {
			t.Fatalf("pop %d = seq %d, want %d", i, got.seq, i+1)
		}
		push()
	}
	if b := pq.order[0]; cap(b.fifo) > 16 {
		t.Errorf("after 100000 items through a queue holding 2, the FIFO's array holds %d slots", cap(b.fifo))
	}
}

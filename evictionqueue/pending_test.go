package evictionqueue

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPendingSetMatchesASortedModel runs random pushes (fresh and
// returning), removals and pops against a sorted slice and checks that every
// pop returns the model's first entry (compareOrder), in one heap and in a
// heap per domain, so the heaps keep the processing order.
func TestPendingSetMatchesASortedModel(t *testing.T) {
	for _, domains := range []int{0, 3} {
		for _, prios := range []int{1, 3, 50} {
			rng := rand.New(rand.NewPCG(1, uint64(prios)))
			var ps pendingSet
			if domains > 0 {
				ps.byDomain = make(map[string]*line)
				ps.domainOf = func(c string) string { return c }
			}
			clusters := make([]*clusterIndex, max(domains, 1))
			for i := range clusters {
				clusters[i] = &clusterIndex{name: fmt.Sprint(i)}
			}
			var model []*entry
			var out []*entry // popped entries that may come back (a retry)
			seq := uint64(0)
			for step := range 20000 {
				switch op := rng.IntN(10); {
				case op < 4: // a new item
					seq++
					e := &entry{seq: seq, item: Item{Priority: int32(rng.IntN(prios))}, ci: clusters[rng.IntN(len(clusters))]}
					ps.push(e)
					model = append(model, e)
				case op < 5 && len(out) > 0: // an item pending again with its old seq
					i := rng.IntN(len(out))
					e := out[i]
					out = slices.Delete(out, i, i+1)
					ps.push(e)
					model = append(model, e)
				case op < 7 && len(model) > 0: // a cancel
					i := rng.IntN(len(model))
					ps.remove(model[i])
					model = slices.Delete(model, i, i+1)
				case len(model) > 0:
					slices.SortFunc(model, compareOrder)
					got := ps.pop("", true)
					if got != model[0] {
						t.Fatalf("domains %d, priorities %d, step %d: pop = seq %d prio %d, want seq %d prio %d",
							domains, prios, step, got.seq, got.item.Priority, model[0].seq, model[0].item.Priority)
					}
					model = model[1:]
					out = append(out, got)
				}
				if ps.Len() != len(model) {
					t.Fatalf("step %d: Len %d, model %d", step, ps.Len(), len(model))
				}
				// Removed slots do not pin memory: a run holds at most
				// about twice its live entries (plus a small constant).
				ps.each(func(*entry) {})
				for _, l := range append([]*line{&ps.all}, slices.Collect(maps.Values(ps.byDomain))...) {
					if live := len(l.run) - l.head - l.dead; l.dead > 32 && l.dead > live {
						t.Fatalf("step %d: %d removed slots for %d live entries", step, l.dead, live)
					}
					if l.Len() < 0 {
						t.Fatalf("step %d: a line of %d", step, l.Len())
					}
				}
			}
		}
	}
}

func TestPendingSetGivesBackEmptyDomains(t *testing.T) {
	ps := pendingSet{byDomain: make(map[string]*line), domainOf: func(c string) string { return c }}
	for i := range 1000 {
		e := &entry{seq: uint64(i) + 1, ci: &clusterIndex{name: fmt.Sprint(i)}}
		ps.push(e)
		ps.remove(e)
	}
	if len(ps.byDomain) != 0 {
		t.Errorf("%d domains kept after every item left", len(ps.byDomain))
	}
}

// TestPendingSetThatNeverDrainsKeepsItsMemory keeps one or two items
// pending while many pass through, as a queue that is never empty but never
// backed up does: the heap must not grow.
func TestPendingSetThatNeverDrainsKeepsItsMemory(t *testing.T) {
	var ps pendingSet
	ci := &clusterIndex{}
	seq := uint64(0)
	push := func() {
		seq++
		ps.push(&entry{seq: seq, ci: ci})
	}
	push()
	push()
	for i := range 100000 {
		if got := ps.pop("", true); got.seq != uint64(i+1) {
			t.Fatalf("pop %d = seq %d, want %d", i, got.seq, i+1)
		}
		push()
	}
	if c := cap(ps.all.run) + cap(ps.all.heap.s); c > 16 {
		t.Errorf("after 100000 items through a queue holding 2, the line's arrays hold %d slots", c)
	}
}

// TestPendingSetListsDomainsByTheirHeads runs random pushes (fresh and
// returning), removals and pops (of any domain, and of a named one) over
// 50 domains, and checks after each step that the domains are listed by
// their first entries (compareOrder), as a sorted model lists them: the
// order kept as heads change is the order a sort would give.
func TestPendingSetListsDomainsByTheirHeads(t *testing.T) {
	for _, prios := range []int{1, 3} {
		rng := rand.New(rand.NewPCG(2, uint64(prios)))
		ps := pendingSet{byDomain: make(map[string]*line), domainOf: func(c string) string { return c }}
		clusters := make([]*clusterIndex, 50)
		for i := range clusters {
			clusters[i] = &clusterIndex{name: fmt.Sprintf("d%02d", i)}
		}
		var model, out []*entry
		seq := uint64(0)
		want := func() []string {
			slices.SortFunc(model, compareOrder)
			var ds []string
			for _, e := range model {
				if !slices.Contains(ds, e.ci.domain) {
					ds = append(ds, e.ci.domain)
				}
			}
			return ds
		}
		for step := range 20000 {
			switch op := rng.IntN(10); {
			case op < 4:
				seq++
				e := &entry{seq: seq, item: Item{Priority: int32(rng.IntN(prios))}, ci: clusters[rng.IntN(len(clusters))]}
				ps.push(e)
				model = append(model, e)
			case op < 5 && len(out) > 0:
				i := rng.IntN(len(out))
				ps.push(out[i])
				model = append(model, out[i])
				out = slices.Delete(out, i, i+1)
			case op < 7 && len(model) > 0:
				i := rng.IntN(len(model))
				ps.remove(model[i])
				model = slices.Delete(model, i, i+1)
			case op < 8 && len(model) > 0: // the head of a named domain
				d := model[rng.IntN(len(model))].ci.domain
				got := ps.pop(d, false)
				slices.SortFunc(model, compareOrder)
				i := slices.IndexFunc(model, func(e *entry) bool { return e.ci.domain == d })
				if got != model[i] {
					t.Fatalf("priorities %d, step %d: pop(%s) = seq %d, want seq %d", prios, step, d, got.seq, model[i].seq)
				}
				model = slices.Delete(model, i, i+1)
				out = append(out, got)
			case len(model) > 0:
				got := ps.pop("", true)
				slices.SortFunc(model, compareOrder)
				if got != model[0] {
					t.Fatalf("priorities %d, step %d: pop = seq %d, want seq %d", prios, step, got.seq, model[0].seq)
				}
				model = model[1:]
				out = append(out, got)
			}
			if got, want := ps.domains(), want(); !slices.Equal(got, want) && (len(got) > 0 || len(want) > 0) {
				t.Fatalf("priorities %d, step %d: domains %v, want %v", prios, step, got, want)
			}
		}
	}
}

package evictionqueue

import (
	"context"
	"fmt"
	"testing"
)

func TestIndexDoesNotKeepEmptyClustersWithoutBound(t *testing.T) {
	q, err := New(Config{Name: "q"}, func(context.Context, Item) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	// 1000 clusters each hold one item for a while, then it leaves.
	for i := range 1000 {
		q.Add(item(fmt.Sprintf("c%d", i), "x"))
		q.mu.Lock()
		e := q.s.pending.pop("", true)
		q.s.leave(e, Succeeded, nil)
		q.mu.Unlock()
	}
	if n := len(q.s.index.clusters); n > keepEmpty+1 {
		t.Errorf("%d cluster indexes kept for 0 items", n)
	}
	// A recovered cluster's index goes at once.
	q.Add(item("down", "x"))
	q.CancelCluster("down")
	if _, ok := q.s.index.clusters["down"]; ok {
		t.Error("CancelCluster kept the recovered cluster's index")
	}
	// Kept empty clusters are reused, and counted right.
	q.Add(item("c999", "y"))
	if q.s.index.get("c999", "y") == nil || q.s.index.n != 1 {
		t.Errorf("after reuse: entries %d", q.s.index.n)
	}
	empty := 0
	for _, ci := range q.s.index.clusters {
		if ci.isEmpty {
			empty++
		}
	}
	if empty != q.s.index.empty {
		t.Errorf("%d empty cluster indexes, %d counted", empty, q.s.index.empty)
	}
}

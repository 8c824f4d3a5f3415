package controllers

import (
	"maps"
	"slices"
	"sync"

	"github.com/failoverkit/failover/evictionqueue"
)

// refusals are the items of one queue whose eviction the pre-scheduling
// check refused (nowhere to go), to decide again when the fleet changes so
// that the answer may change (a cluster recovers, gains room, loses a
// taint) and at the latest after EvictionOptions.RefusalRecheck: such an
// item leaves its queue, and nothing else would bring it back while the
// binding and the taints of its clusters stay as they are.
//
// The same type holds the items waiting for their binding's budget of
// clusters in transit and those an operator's freeze held back.
type refusals struct {
	mu    sync.Mutex
	items map[evictionqueue.Item]struct{}
	// size, when set (reportSize), is told the number of items after every
	// change of it, under mu: whoever changes the set, the last number told
	// is its size, so a gauge set from it is exact without its callers.
	size func(n int)
}

// reportSize tells size the number of items now and after every change.
func (r *refusals) reportSize(size func(n int)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.size = size
	size(len(r.items))
}

// changedLocked tells size the number of items if it is no longer was.
func (r *refusals) changedLocked(was int) {
	if r.size != nil && len(r.items) != was {
		r.size(len(r.items))
	}
}

func (r *refusals) add(it evictionqueue.Item) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.items == nil {
		r.items = map[evictionqueue.Item]struct{}{}
	}
	was := len(r.items)
	r.items[it] = struct{}{}
	r.changedLocked(was)
}

// forget drops it: evicted, or nothing left to decide.
func (r *refusals) forget(it evictionqueue.Item) {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := len(r.items)
	delete(r.items, it)
	r.changedLocked(was)
}

// forgetBinding drops every item of the binding key.
func (r *refusals) forgetBinding(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := len(r.items)
	maps.DeleteFunc(r.items, func(it evictionqueue.Item, _ struct{}) bool { return it.Key == key })
	r.changedLocked(was)
}

// forgetCluster drops every item of cluster, which recovered or is gone.
func (r *refusals) forgetCluster(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := len(r.items)
	maps.DeleteFunc(r.items, func(it evictionqueue.Item, _ struct{}) bool { return it.Cluster == cluster })
	r.changedLocked(was)
}

// list returns the items refused, in no order.
func (r *refusals) list() []evictionqueue.Item {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Keys(r.items))
}

// takeBinding drops every item of the binding key and returns them.
func (r *refusals) takeBinding(key string) []evictionqueue.Item {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := len(r.items)
	var out []evictionqueue.Item
	for it := range r.items {
		if it.Key == key {
			out = append(out, it)
			delete(r.items, it)
		}
	}
	r.changedLocked(was)
	return out
}

// takeAll drops every item and returns them.
func (r *refusals) takeAll() []evictionqueue.Item {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := len(r.items)
	out := slices.Collect(maps.Keys(r.items))
	r.items = nil
	r.changedLocked(was)
	return out
}

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
type refusals struct {
	mu    sync.Mutex
	items map[evictionqueue.Item]struct{}
}

func (r *refusals) add(it evictionqueue.Item) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.items == nil {
		r.items = map[evictionqueue.Item]struct{}{}
	}
	r.items[it] = struct{}{}
}

// forget drops it: evicted, or nothing left to decide.
func (r *refusals) forget(it evictionqueue.Item) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.items, it)
}

// forgetBinding drops every item of the binding key.
func (r *refusals) forgetBinding(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	maps.DeleteFunc(r.items, func(it evictionqueue.Item, _ struct{}) bool { return it.Key == key })
}

// forgetCluster drops every item of cluster, which recovered or is gone.
func (r *refusals) forgetCluster(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	maps.DeleteFunc(r.items, func(it evictionqueue.Item, _ struct{}) bool { return it.Cluster == cluster })
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
	var out []evictionqueue.Item
	for it := range r.items {
		if it.Key == key {
			out = append(out, it)
			delete(r.items, it)
		}
	}
	return out
}

// takeAll drops every item and returns them.
func (r *refusals) takeAll() []evictionqueue.Item {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Collect(maps.Keys(r.items))
	r.items = nil
	return out
}

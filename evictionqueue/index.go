package evictionqueue

import "iter"

// index finds every entry the queue holds by identity, in one small map per
// cluster rather than one large map: adds come in bursts per failed
// cluster, so a lookup usually hashes only the key, in a map that stays in
// cache; and CancelCluster visits exactly the cluster's map.
type index struct {
	clusters map[string]*clusterIndex
	// last is the cluster looked up last: adds come in bursts per
	// cluster, and without it Add+process costs about 1.1x client-go's
	// workqueue (BenchmarkAddProcess: 5.4-5.6 ms against 4.8-5.0 ms per
	// 20,000 items at best), above DESIGN's 1.0x.
	last *clusterIndex
	// empty counts clusters without entries kept for reuse (their items
	// drain and return): swept past keepEmpty and twice as many as the
	// others.
	empty int
	n     int // entries
}

// keepEmpty is how many empty cluster indexes are always allowed to stay.
const keepEmpty = 128

// clusterIndex holds one cluster's entries.
type clusterIndex struct {
	name string
	keys entrySet
	// pending counts the cluster's pending entries, all filed under domain
	// in pendingSet: its Config.DomainOf when last read (domainRead), when
	// the index was made or at Queue.DomainChanged.
	pending    int
	domain     string
	domainRead bool
	isEmpty    bool // counted in index.empty
}

// entrySet is one cluster's entries by key: a short slice, searched in
// order, while the cluster has at most fewKeys of them, then a map. When
// thousands of clusters fail with a few bindings each, a map per cluster
// (about 250 bytes even for one entry) made the queue keep 364 bytes per
// item against the 238 of Karmada's queue (BenchmarkScaleQueuedItem at
// 5,000 clusters x 10,000 bindings).
type entrySet struct {
	few  []*entry          // while many is nil
	many map[string]*entry // from the fewKeys+1-th entry on
}

// fewKeys is how many entries a cluster holds in a slice before a map.
const fewKeys = 16

func (s *entrySet) len() int {
	if s.many != nil {
		return len(s.many)
	}
	return len(s.few)
}

func (s *entrySet) get(key string) *entry {
	if s.many != nil {
		return s.many[key]
	}
	for _, e := range s.few {
		if e.item.Key == key {
			return e
		}
	}
	return nil
}

// put adds e, whose key the set does not hold.
func (s *entrySet) put(e *entry) {
	switch {
	case s.many != nil:
		s.many[e.item.Key] = e
	case len(s.few) < fewKeys:
		s.few = append(s.few, e)
	default:
		s.many = make(map[string]*entry)
		for _, o := range s.few {
			s.many[o.item.Key] = o
		}
		s.many[e.item.Key] = e
		s.few = nil
	}
}

// del drops the entry of key, if any.
func (s *entrySet) del(key string) {
	if s.many != nil {
		delete(s.many, key)
		return
	}
	for i, e := range s.few {
		if e.item.Key == key {
			last := len(s.few) - 1
			s.few[i] = s.few[last]
			s.few[last] = nil
			s.few = s.few[:last]
			return
		}
	}
}

// all yields every entry with its key, in no particular order; the loop
// may drop entries from the set as it goes.
func (s *entrySet) all() iter.Seq2[string, *entry] {
	return func(yield func(string, *entry) bool) {
		if s.many != nil {
			for k, e := range s.many {
				if !yield(k, e) {
					return
				}
			}
			return
		}
		var buf [fewKeys]*entry
		for _, e := range buf[:copy(buf[:], s.few)] {
			if !yield(e.item.Key, e) {
				return
			}
		}
	}
}

// cluster returns the cluster's index, creating it when create is set.
func (x *index) cluster(name string, create bool) *clusterIndex {
	if ci := x.last; ci != nil && ci.name == name {
		return ci
	}
	ci := x.clusters[name]
	if ci == nil {
		if !create {
			return nil
		}
		if x.clusters == nil {
			x.clusters = make(map[string]*clusterIndex)
		}
		ci = &clusterIndex{name: name}
		x.clusters[name] = ci
	}
	x.last = ci
	return ci
}

// get returns the entry of (cluster, key), or nil.
func (x *index) get(cluster, key string) *entry {
	if ci := x.cluster(cluster, false); ci != nil {
		return ci.keys.get(key)
	}
	return nil
}

// insert adds e, whose identity ci does not hold yet.
func (x *index) insert(ci *clusterIndex, e *entry) {
	if ci.isEmpty {
		ci.isEmpty = false
		x.empty--
	}
	ci.keys.put(e)
	e.ci = ci
	x.n++
}

// remove drops e.
func (x *index) remove(e *entry) {
	ci := e.ci
	ci.keys.del(e.item.Key)
	e.ci = nil
	x.n--
	if ci.keys.len() == 0 {
		ci.isEmpty = true
		x.empty++
		if x.empty > keepEmpty && x.empty > 2*(len(x.clusters)-x.empty) {
			x.sweep()
		}
	}
}

// release drops ci when it holds nothing, as after its cluster recovered.
func (x *index) release(ci *clusterIndex) {
	if ci == nil || ci.keys.len() > 0 || x.clusters[ci.name] != ci {
		return
	}
	delete(x.clusters, ci.name)
	if ci.isEmpty {
		ci.isEmpty = false
		x.empty--
	}
	if x.last == ci {
		x.last = nil
	}
}

// sweep drops every empty cluster index.
func (x *index) sweep() {
	for _, ci := range x.clusters {
		if ci.isEmpty {
			x.release(ci)
		}
	}
}

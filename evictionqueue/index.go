package evictionqueue

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
	name    string
	keys    map[string]*entry
	isEmpty bool // counted in index.empty
	// pending counts the cluster's pending entries, all filed under domain
	// in pendingSet: its Config.DomainOf when last read (domainRead), when
	// the index was made or at Queue.DomainChanged.
	pending    int
	domain     string
	domainRead bool
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
		ci = &clusterIndex{name: name, keys: make(map[string]*entry)}
		x.clusters[name] = ci
	}
	x.last = ci
	return ci
}

// get returns the entry of (cluster, key), or nil.
func (x *index) get(cluster, key string) *entry {
	if ci := x.cluster(cluster, false); ci != nil {
		return ci.keys[key]
	}
	return nil
}

// insert adds e, whose identity ci does not hold yet.
func (x *index) insert(ci *clusterIndex, e *entry) {
	if ci.isEmpty {
		ci.isEmpty = false
		x.empty--
	}
	ci.keys[e.item.Key] = e
	e.ci = ci
	x.n++
}

// remove drops e.
func (x *index) remove(e *entry) {
	ci := e.ci
	delete(ci.keys, e.item.Key)
	e.ci = nil
	x.n--
	if len(ci.keys) == 0 {
		ci.isEmpty = true
		x.empty++
		if x.empty > keepEmpty && x.empty > 2*(len(x.clusters)-x.empty) {
			x.sweep()
		}
	}
}

// release drops ci when it holds nothing, as after its cluster recovered.
func (x *index) release(ci *clusterIndex) {
	if ci == nil || len(ci.keys) > 0 || x.clusters[ci.name] != ci {
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

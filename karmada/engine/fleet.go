package engine

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/prescheduling"
)

// Fleet is the fleet as the pre-scheduling check and the [Ledger] read it,
// kept up to date one cluster at a time: feed it every Cluster an informer
// sees ([Fleet.Set], [Fleet.Delete]) and each is converted once per change,
// not once per eviction. At 5,000 clusters, listing and converting the
// fleet for each eviction costs tens of milliseconds; reading a Fleet's
// [FleetView] costs nothing until a cluster's converted form changes.
//
// As Kubernetes' scheduler cache keeps one converted record per node and
// refreshes its snapshot by generation, a Fleet keeps the converted
// clusters, sorted by name, in a view it builds again only after a change
// that the check can see (taints, labels, provider, region, zones,
// conditions). A cluster's resource summary, which Karmada reports every
// few seconds, is read live by [Fleet.Summary] and changes no view.
//
// [Fleet.Check] reads neither view nor list: the Fleet feeds a
// prescheduling.Index as it is fed, converted clusters on a change the check
// can see and their room on every summary report, so that a check costs
// what the scheduler itself looks at, not a pass over the fleet.
//
// A Fleet is safe for concurrent use. Its zero value is empty and ready.
type Fleet struct {
	mu       sync.RWMutex
	clusters map[string]*fleetSlot
	view     *FleetView // nil after a change the check can see
	index    prescheduling.Index[karmada.Room]
}

// fleetSlot holds a cluster's latest entry. A summary report replaces the
// entry in the slot, which views share, so they read it without the
// Fleet's lock.
type fleetSlot struct{ entry atomic.Pointer[fleetEntry] }

// fleetEntry is one cluster as the Fleet keeps it, never changed.
type fleetEntry struct {
	cluster *clusterv1alpha1.Cluster // as given to Set
	conv    failover.Cluster
	err     error        // FromCluster's: the cluster is left out of views
	room    karmada.Room // its resource summary's, read once
}

// FleetView is the converted fleet at one moment, shared by every caller
// until the next change: do not modify it.
type FleetView struct {
	// Clusters are the clusters that convert, sorted by name: the fleet
	// for prescheduling.Checker.Check.
	Clusters []failover.Cluster
	// Errors holds, by name, the clusters left out because they do not
	// convert (FromCluster's error): whose taints cannot be read is no
	// target.
	Errors map[string]error
	slots  map[string]*fleetSlot
}

// Capacity is [karmada.CapacityFrom] over the resource summaries as they are when
// asked, for the clusters of the view: it reads no lock, and computes a
// cluster's room once per summary report, not once per question. A
// cluster not in the view is unknown.
func (v *FleetView) Capacity(req *workv1alpha2.ReplicaRequirements) func(cluster string) (replicas int32, known bool) {
	needs := karmada.NeedsOf(req)
	return func(cluster string) (int32, bool) {
		sl, ok := v.slots[cluster]
		if !ok {
			return 0, false
		}
		return sl.entry.Load().room.MaxReplicas(needs), true
	}
}

// Set records c, as an informer's add or update gives it; c must not be
// modified afterwards (informers' objects are not). It reports whether the
// change is one the check can see, and the error, if any, for which c is
// left out of views.
func (f *Fleet) Set(c *clusterv1alpha1.Cluster) (changed bool, err error) {
	conv, err := karmada.FromCluster(c)
	e := &fleetEntry{cluster: c, conv: conv, err: err, room: karmada.RoomOf(c.Status.ResourceSummary)}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.clusters == nil {
		f.clusters = map[string]*fleetSlot{}
	}
	sl := f.clusters[c.Name]
	if sl == nil {
		sl = &fleetSlot{}
		f.clusters[c.Name] = sl
	}
	old := sl.entry.Swap(e)
	changed = old == nil || (old.err == nil) != (err == nil) || !apiequality.Semantic.DeepEqual(old.conv, conv)
	if changed {
		f.view = nil
	}
	switch {
	case err != nil:
		f.index.Delete(c.Name)
	case changed:
		if err := f.index.Set(conv, e.room); err != nil {
			return changed, err
		}
	default:
		f.index.SetRoom(c.Name, e.room)
	}
	return changed, err
}

// Delete forgets the cluster named name.
func (f *Fleet) Delete(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.clusters[name]; ok {
		delete(f.clusters, name)
		f.view = nil
		f.index.Delete(name)
	}
}

// Fresh is a cluster read afresh from the API server, converted once, which
// stands in for the Fleet's copy in [Fleet.Check]: the informer's cache may
// lag behind what a decision must rely on. Make one with [FreshCluster] or
// [GoneCluster].
type Fresh struct {
	o prescheduling.Override[karmada.Room]
}

// FreshCluster converts cl, read afresh. A cluster that does not convert
// stands for no target (whose taints cannot be read is none), and the error
// says why.
func FreshCluster(cl *clusterv1alpha1.Cluster) (Fresh, error) {
	fr := Fresh{o: prescheduling.Override[karmada.Room]{Name: cl.Name, Room: karmada.RoomOf(cl.Status.ResourceSummary)}}
	conv, err := karmada.FromCluster(cl)
	if err != nil {
		return fr, err
	}
	fr.o.Cluster = &conv
	return fr, nil
}

// GoneCluster stands for the cluster named name, which a fresh read did not
// find.
func GoneCluster(name string) Fresh {
	return Fresh{o: prescheduling.Override[karmada.Room]{Name: name}}
}

// Check is [prescheduling.Checker.Check] with [karmada.Capacity] on the Fleet as it
// is, with fresh in place of the Fleet's copies: the same Result as on a
// [FleetView] with them, but computed on the Fleet's index
// ([prescheduling.Index.Check]), whose Candidates must not be modified.
// requirements are the binding's spec.replicaRequirements. Clusters named
// twice in fresh are invalid input.
func (f *Fleet) Check(req prescheduling.Request, requirements *workv1alpha2.ReplicaRequirements, fresh ...Fresh) prescheduling.Result {
	needs := karmada.NeedsOf(requirements)
	capacity := prescheduling.Capacity[karmada.Room]{Of: func(r karmada.Room) (int32, bool) { return r.MaxReplicas(needs), true }, Key: needs.Key()}
	return f.index.Check(req, capacity, overrides(fresh)...)
}

// CheckWithin is [Fleet.Check] on a few clusters only: those req names
// (req.Scheduled and req.Evicting, as the Fleet holds them) and fresh, as
// if the Fleet held no other ([prescheduling.Index.CheckWithin]). It
// answers whether the clusters read fresh, with those the binding runs on,
// are enough for Karmada's scheduler: a placement it finds there it finds
// on any fleet that holds them (see [Evictor.Evict]). Its cost follows the
// clusters named, not the fleet.
func (f *Fleet) CheckWithin(req prescheduling.Request, requirements *workv1alpha2.ReplicaRequirements, fresh ...Fresh) prescheduling.Result {
	needs := karmada.NeedsOf(requirements)
	capacity := prescheduling.Capacity[karmada.Room]{Of: func(r karmada.Room) (int32, bool) { return r.MaxReplicas(needs), true }, Key: needs.Key()}
	return f.index.CheckWithin(req, capacity, overrides(fresh)...)
}

// overrides are the Index's overrides of fresh.
func overrides(fresh []Fresh) []prescheduling.Override[karmada.Room] {
	out := make([]prescheduling.Override[karmada.Room], len(fresh))
	for i := range fresh {
		out[i] = fresh[i].o
	}
	return out
}

// View returns the fleet as it is now, built again only if a cluster
// changed in a way the check can see since the last call.
func (f *Fleet) View() *FleetView {
	f.mu.RLock()
	v := f.view
	f.mu.RUnlock()
	if v != nil {
		return v
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.view != nil {
		return f.view
	}
	v = &FleetView{Clusters: make([]failover.Cluster, 0, len(f.clusters)), slots: make(map[string]*fleetSlot, len(f.clusters))}
	for name, sl := range f.clusters {
		e := sl.entry.Load()
		if e.err != nil {
			if v.Errors == nil {
				v.Errors = map[string]error{}
			}
			v.Errors[name] = e.err
			continue
		}
		v.Clusters = append(v.Clusters, e.conv)
		v.slots[name] = sl
	}
	slices.SortFunc(v.Clusters, func(a, b failover.Cluster) int { return cmp.Compare(a.Name, b.Name) })
	f.view = v
	return v
}

// Cluster returns the Cluster last Set under name.
func (f *Fleet) Cluster(name string) (*clusterv1alpha1.Cluster, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	sl, ok := f.clusters[name]
	if !ok {
		return nil, false
	}
	return sl.entry.Load().cluster, true
}

// Len returns the number of clusters the Fleet holds, converted or not.
func (f *Fleet) Len() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.clusters)
}

// Summary is a [karmada.Summaries] over the Fleet as it is when asked: the resource
// summary last Set for the cluster, and whether the Fleet has it.
func (f *Fleet) Summary(name string) (*clusterv1alpha1.ResourceSummary, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	sl, ok := f.clusters[name]
	if !ok {
		return nil, false
	}
	return sl.entry.Load().cluster.Status.ResourceSummary, true
}

// Name is the name of the cluster f stands for.
func (f Fresh) Name() string { return f.o.Name }

// resourceVersion returns the resourceVersion of the Cluster last Set
// under name, "" when there is none.
func (f *Fleet) resourceVersion(name string) string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if sl, ok := f.clusters[name]; ok {
		return sl.entry.Load().cluster.ResourceVersion
	}
	return ""
}

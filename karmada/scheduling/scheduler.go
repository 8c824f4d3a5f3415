package scheduling

import (
	"encoding/json"
	"reflect"
	"slices"
	"sync"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/scheduler/cache"
	"github.com/karmada-io/karmada/pkg/util"
	"github.com/karmada-io/karmada/pkg/util/helper"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
)

// A Scheduler schedules bindings on one fleet as Schedule does, for many
// bindings: it holds the fleet's clusters and is told of their changes one
// at a time (Set, Delete), so that a call does not load the fleet again.
// Its Schedule answers exactly as the package's Schedule on the clusters it
// holds (the same replicas on the same clusters, term and error; Karmada's
// own answer lists the clusters it keeps of the previous schedule in a
// map's order, which may differ from call to call), and cheaper:
//
//   - Karmada's cache copies the fleet into a snapshot once per change of
//     the fleet, not once per call: the algorithm only reads the clusters
//     of its snapshot (Karmada's general estimator, the one place that
//     changes a resource summary, changes a copy of it).
//   - It remembers its answers until the fleet changes: for an unchanged
//     fleet, Karmada v1.18's algorithm is a function of what it reads of
//     the binding, with neither randomness nor time in it (see Schedule).
//
// It is safe for concurrent use; calls are serialized, with the package's
// Schedule's too. Its memory is a copy of each cluster, a snapshot of them,
// and the answers remembered (at most maxAnswers).
type Scheduler struct {
	mu       sync.Mutex
	clusters clusterStore
	karmada  cache.Cache // Karmada's cache over clusters: its snapshots
	// snapshot is Karmada's of clusters; nil once they changed.
	snapshot *cache.Snapshot
	// answers are those given on clusters, by their input's JSON (which
	// equal inputs share; the input itself tells apart those it does not).
	answers map[string][]answer
	n       int // answers held, over all keys
}

// maxAnswers bounds a Scheduler's memory of answers: at the bound it
// forgets them all.
const maxAnswers = 1 << 14

// answer is one of a Scheduler's answers and its input.
type answer struct {
	in      input
	targets []workv1alpha2.TargetCluster
	term    string
	err     error
}

// NewScheduler returns a Scheduler on clusters (copies of them; of clusters
// of one name, the last).
func NewScheduler(clusters []*clusterv1alpha1.Cluster) *Scheduler {
	s := &Scheduler{clusters: clusterStore{}}
	for _, c := range clusters {
		s.clusters[c.Name] = c.DeepCopy()
	}
	s.karmada = cache.NewCache(s.clusters, toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{}), 0)
	return s
}

// Set adds cluster to the fleet, or replaces the fleet's cluster of its
// name with it (a copy of it: the caller may change its own after).
// Setting a cluster equal to the one held changes nothing.
func (s *Scheduler) Set(cluster *clusterv1alpha1.Cluster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.clusters[cluster.Name]; ok && reflect.DeepEqual(old, cluster) {
		return
	}
	s.clusters[cluster.Name] = cluster.DeepCopy()
	s.changed()
}

// Delete removes the cluster named name from the fleet, if it holds one.
func (s *Scheduler) Delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clusters[name]; !ok {
		return
	}
	delete(s.clusters, name)
	s.changed()
}

// changed forgets what the Scheduler knew of the fleet before it changed.
func (s *Scheduler) changed() {
	s.snapshot = nil
	s.answers, s.n = nil, 0
}

// Schedule schedules the binding with spec and status on the Scheduler's
// clusters as the package's Schedule does on them, and returns the same:
// the schedule result, the clusterAffinities term that produced it, or the
// scheduler's error. The result is the caller's to change.
//
// An answer is remembered, until the fleet changes, by its input, and given
// again for an equal input (reflect.DeepEqual). The input is what Karmada
// v1.18's algorithm reads of the binding (pkg/scheduler/core, its in-tree
// plugins, the general estimator), which is spec and status but for:
//   - spec.resource's namespace and name (read only for logs) and resource
//     version; of its UID only the tie-breaker Karmada's Dispenser makes
//     of it (helper.NewDispenser: the UID is read nowhere else, and the
//     tie-breaker is one of two orders of names);
//   - of spec.gracefulEvictionTasks all but their clusters (the
//     ClusterEviction filter reads no more); spec.requiredBy;
//   - of status all but the clusterAffinities term it names
//     (schedulerObservedAffinityName) and whether spec.rescheduleTriggeredAt
//     is after its lastScheduledTime (util.RescheduleRequired).
//
// Nothing else enters: the algorithm draws no random number and reads no
// clock but for its metrics; the order it gets clusters in (a map's, from
// Karmada's cache) does not show in its answer, as it sorts clusters,
// regions and paths by total orders ending in names, but for the order of
// the answer's list (util.MergeTargetClusters appends the clusters it keeps
// of the previous schedule from a map; a remembered answer keeps the order
// it was first given in); the bindings it may consult (workload affinity,
// assumed workloads) are none here. Karmada's feature gates and replica
// estimators are taken to be those the process started with.
func (s *Scheduler) Schedule(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) ([]workv1alpha2.TargetCluster, string, error) {
	if spec == nil || spec.Placement == nil {
		return nil, "", errNoPlacement
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in := inputOf(spec, status)
	key, keyErr := json.Marshal(in) // equal inputs, equal keys
	if keyErr == nil {
		for _, a := range s.answers[string(key)] {
			if reflect.DeepEqual(a.in, in) {
				return slices.Clone(a.targets), a.term, a.err
			}
		}
	}
	e, err := shared()
	if err != nil {
		return nil, "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.snapshot == nil {
		snapshot := s.karmada.Snapshot()
		s.snapshot = &snapshot
	}
	targets, term, err := e.schedule(s.snapshot, spec, status)
	if keyErr == nil {
		if s.n >= maxAnswers {
			s.answers, s.n = nil, 0
		}
		if s.answers == nil {
			s.answers = map[string][]answer{}
		}
		in.Spec = *in.Spec.DeepCopy()
		s.answers[string(key)] = append(s.answers[string(key)], answer{in, slices.Clone(targets), term, err})
		s.n++
	}
	return targets, term, err
}

// input is what Karmada's algorithm reads of a binding (Scheduler.Schedule).
type input struct {
	Spec workv1alpha2.ResourceBindingSpec
	// NamesDescending is the Dispenser's tie-breaker for spec.resource.uid:
	// in a tie, the later name first.
	NamesDescending bool
	Observed        string
	Reschedule      bool
}

// inputOf is what Karmada's algorithm reads of spec and status, sharing
// spec's fields.
func inputOf(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) input {
	in := input{Spec: *spec}
	in.Spec.Resource = workv1alpha2.ObjectReference{APIVersion: spec.Resource.APIVersion, Kind: spec.Resource.Kind}
	in.NamesDescending = helper.NewDispenser(0, nil, spec.Resource.UID).TieBreaker(helper.Party{Name: "b"}, helper.Party{Name: "a"})
	in.Spec.RequiredBy = nil
	if spec.GracefulEvictionTasks != nil {
		in.Spec.GracefulEvictionTasks = make([]workv1alpha2.GracefulEvictionTask, len(spec.GracefulEvictionTasks))
		for i, t := range spec.GracefulEvictionTasks {
			in.Spec.GracefulEvictionTasks[i] = workv1alpha2.GracefulEvictionTask{FromCluster: t.FromCluster}
		}
	}
	if status != nil {
		in.Observed = status.SchedulerObservedAffinityName
		in.Reschedule = util.RescheduleRequired(spec.RescheduleTriggeredAt, status.LastScheduledTime)
	}
	return in
}

// clusterStore is a Scheduler's clusters by name, listed to Karmada's cache.
type clusterStore map[string]*clusterv1alpha1.Cluster

// List lists the clusters selector selects.
func (st clusterStore) List(selector labels.Selector) ([]*clusterv1alpha1.Cluster, error) {
	out := make([]*clusterv1alpha1.Cluster, 0, len(st))
	for _, c := range st {
		if selector.Matches(labels.Set(c.Labels)) {
			out = append(out, c)
		}
	}
	return out, nil
}

// Get returns the cluster named name.
func (st clusterStore) Get(name string) (*clusterv1alpha1.Cluster, error) {
	c, ok := st[name]
	if !ok {
		return nil, apierrors.NewNotFound(clusterv1alpha1.Resource("cluster"), name)
	}
	return c, nil
}

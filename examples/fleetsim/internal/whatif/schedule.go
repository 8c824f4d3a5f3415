package whatif

import (
	"encoding/json"
	"slices"
	"sync"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"

	"github.com/failoverkit/failover/karmada/scheduling"
)

// karmadaScheduler places bindings by Karmada v1.18's own scheduling
// algorithm, run in process (the karmada module's package scheduling, which
// its differential test runs too), remembering its answers for the clusters
// of one plan.
type karmadaScheduler struct {
	mu      sync.Mutex
	version int // of the clusters the memo is for; 0: none
	// memo holds, for those clusters, the answers by what the algorithm
	// reads of a binding (memoKey): bindings of one policy on the same
	// clusters get the same answer, and each run of the algorithm copies
	// the whole fleet.
	memo map[string]memoized
}

type memoized struct {
	result []workv1alpha2.TargetCluster
	term   string
	err    error
}

// memoKey is what the algorithm reads of a binding: its spec but for the
// resource's name and namespace (its kind and API version filter
// clusters; its UID breaks ties in a Divided placement, so it is kept
// there), who requires it, and of its graceful eviction tasks only the
// clusters (which the ClusterEviction filter rules out); and the
// clusterAffinities term it resumes at. An error (unreachable: the types
// marshal) gives "", which is never memoized.
func memoKey(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) string {
	k := spec.DeepCopy()
	k.Resource.Name, k.Resource.Namespace, k.Resource.ResourceVersion = "", "", ""
	if !k.IsWorkload() || k.Placement == nil || k.Placement.ReplicaSchedulingType() != policyv1alpha1.ReplicaSchedulingTypeDivided {
		k.Resource.UID = ""
	}
	k.RequiredBy = nil
	for i := range k.GracefulEvictionTasks {
		k.GracefulEvictionTasks[i] = workv1alpha2.GracefulEvictionTask{FromCluster: k.GracefulEvictionTasks[i].FromCluster}
	}
	b, err := json.Marshal(struct {
		Spec     *workv1alpha2.ResourceBindingSpec
		Affinity string
	}{k, status.SchedulerObservedAffinityName})
	if err != nil {
		return ""
	}
	return string(b)
}

// placements is the process's one memo of the algorithm's answers, one
// plan's at a time (by version).
var placements = &karmadaScheduler{}

// planVersion tells the plans of one process apart, so that one plan never
// schedules on clusters another loaded.
var (
	planVersionMu sync.Mutex
	planVersion   int
)

func nextVersion() int {
	planVersionMu.Lock()
	defer planVersionMu.Unlock()
	planVersion++
	return planVersion
}

// schedule schedules spec on clusters as karmada-scheduler would, with
// clusterAffinities tried from status.schedulerObservedAffinityName on, the
// first that schedules winning (scheduling.Schedule), remembering the
// answer until version changes. It returns the result and the term used.
func (s *karmadaScheduler) schedule(version int, clusters []*clusterv1alpha1.Cluster, spec *workv1alpha2.ResourceBindingSpec,
	status *workv1alpha2.ResourceBindingStatus) ([]workv1alpha2.TargetCluster, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if version != s.version {
		s.version = version
		s.memo = map[string]memoized{}
	}
	key := memoKey(spec, status)
	if m, ok := s.memo[key]; ok && key != "" {
		return slices.Clone(m.result), m.term, m.err
	}
	result, term, err := scheduling.Schedule(clusters, spec, status)
	if key != "" {
		s.memo[key] = memoized{slices.Clone(result), term, err}
	}
	return result, term, err
}

package whatif

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	clusterlister "github.com/karmada-io/karmada/pkg/generated/listers/cluster/v1alpha1"
	"github.com/karmada-io/karmada/pkg/scheduler/cache"
	"github.com/karmada-io/karmada/pkg/scheduler/core"
	"github.com/karmada-io/karmada/pkg/scheduler/framework/plugins"
	toolscache "k8s.io/client-go/tools/cache"
)

// karmadaScheduler runs Karmada v1.18's scheduling algorithm in process, as
// karmada-scheduler runs it for one binding: pkg/scheduler/core's generic
// scheduler with the in-tree plugins (the registry karmada-scheduler starts
// with, feature gates at their defaults) over a cache of the clusters, with
// Karmada's general estimator over their resource summaries (the only one
// registered when no karmada-scheduler-estimator runs). The karmada
// module's differential test runs it the same way.
type karmadaScheduler struct {
	mu        sync.Mutex
	clusters  toolscache.Indexer
	algorithm core.ScheduleAlgorithm
	version   int // of the clusters loaded; 0: none
	// memo holds, for the clusters loaded, the answers by what the
	// algorithm reads of a binding (memoKey): bindings of one policy on
	// the same clusters get the same answer, and each run of the
	// algorithm copies the whole fleet.
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

// schedulerOnce is built once per process: Karmada's framework starts a
// metrics goroutine that never ends, so one per plan would pile them up.
var schedulerOnce = sync.OnceValues(func() (*karmadaScheduler, error) {
	s := &karmadaScheduler{clusters: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})}
	bindings := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	var err error
	s.algorithm, err = core.NewGenericScheduler(cache.NewCache(clusterlister.NewClusterLister(s.clusters), bindings, 0), plugins.NewInTreeRegistry())
	if err != nil {
		return nil, fmt.Errorf("whatif: Karmada's scheduler: %w", err)
	}
	return s, nil
})

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

// schedule schedules spec on clusters (loaded again only when version
// differs from the last call's) as karmada-scheduler would, with
// clusterAffinities tried from status.schedulerObservedAffinityName on, the
// first that schedules winning. It returns the result and the term used.
func (s *karmadaScheduler) schedule(version int, clusters []*clusterv1alpha1.Cluster, spec *workv1alpha2.ResourceBindingSpec,
	status *workv1alpha2.ResourceBindingStatus) ([]workv1alpha2.TargetCluster, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if version != s.version {
		items := make([]any, len(clusters))
		for i, c := range clusters {
			items[i] = c
		}
		if err := s.clusters.Replace(items, ""); err != nil {
			return nil, "", err
		}
		s.version = version
		s.memo = map[string]memoized{}
	}
	key := memoKey(spec, status)
	if m, ok := s.memo[key]; ok && key != "" {
		return slices.Clone(m.result), m.term, m.err
	}
	result, term, err := s.run(spec, status)
	if key != "" {
		s.memo[key] = memoized{slices.Clone(result), term, err}
	}
	return result, term, err
}

// run is the algorithm on one binding, with clusterAffinities tried as
// karmada-scheduler tries them.
func (s *karmadaScheduler) run(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) ([]workv1alpha2.TargetCluster, string, error) {
	// The algorithm may fill in defaults (static weights): work on copies.
	spec = spec.DeepCopy()
	st := status.DeepCopy()
	opts := &core.ScheduleAlgorithmOption{}
	ctx := context.Background()
	terms := spec.Placement.ClusterAffinities
	if terms == nil {
		r, err := s.algorithm.Schedule(ctx, spec, st, opts)
		return r.SuggestedClusters, "", err
	}
	i := 0
	for j := range terms {
		if terms[j].AffinityName == status.SchedulerObservedAffinityName {
			i = j
			break
		}
	}
	var first error
	for ; i < len(terms); i++ {
		st.SchedulerObservedAffinityName = terms[i].AffinityName
		r, err := s.algorithm.Schedule(ctx, spec, st, opts)
		if err == nil {
			return r.SuggestedClusters, terms[i].AffinityName, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = errors.New("no clusterAffinities term")
	}
	return nil, status.SchedulerObservedAffinityName, fmt.Errorf("every clusterAffinities term from %q on fails, the first with: %w",
		status.SchedulerObservedAffinityName, first)
}

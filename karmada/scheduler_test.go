package karmada_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	clusterlister "github.com/karmada-io/karmada/pkg/generated/listers/cluster/v1alpha1"
	"github.com/karmada-io/karmada/pkg/scheduler/cache"
	"github.com/karmada-io/karmada/pkg/scheduler/core"
	"github.com/karmada-io/karmada/pkg/scheduler/framework/plugins"
	toolscache "k8s.io/client-go/tools/cache"
)

// karmadaSchedule runs Karmada v1.18's scheduling algorithm in process, as
// karmada-scheduler runs it for one ResourceBinding: pkg/scheduler/core's
// generic scheduler with the default in-tree plugins (the registry
// karmada-scheduler starts with, feature gates at their defaults) over a
// cache snapshot of clusters, and, with clusterAffinities, the scheduler's
// own loop over the terms: from the one status.schedulerObservedAffinityName
// names onwards, the first that schedules wins
// (scheduleResourceBindingWithClusterAffinities in pkg/scheduler). It returns
// the schedule result and the term that produced it; an error is the
// scheduler's (of the first term tried, as Karmada reports it).
//
// Replica estimation is Karmada's general estimator over
// status.resourceSummary: the only estimator registered when no
// karmada-scheduler-estimator runs.
func karmadaSchedule(clusters []*clusterv1alpha1.Cluster, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) ([]workv1alpha2.TargetCluster, string, error) {
	s, err := inProcess()
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	items := make([]any, len(clusters))
	for i, c := range clusters {
		items[i] = c
	}
	if err := s.clusters.Replace(items, ""); err != nil {
		return nil, "", err
	}
	algorithm := s.algorithm
	// The algorithm may change what it is given (the static weight strategy
	// fills in default weights); the caller's spec stays as it was.
	spec = spec.DeepCopy()
	st := status.DeepCopy()
	opts := &core.ScheduleAlgorithmOption{}
	terms := spec.Placement.ClusterAffinities
	if terms == nil {
		r, err := algorithm.Schedule(context.Background(), spec, st, opts)
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
		r, err := algorithm.Schedule(context.Background(), spec, st, opts)
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
	return nil, status.SchedulerObservedAffinityName, fmt.Errorf("every clusterAffinities term from %q on failed, the first with: %w", status.SchedulerObservedAffinityName, first)
}

// scheduler is one generic scheduler over a cluster store that each call
// refills: Karmada's framework starts a metrics goroutine that never ends,
// so building one per call would pile them up.
type scheduler struct {
	mu        sync.Mutex
	clusters  toolscache.Indexer
	algorithm core.ScheduleAlgorithm
}

var inProcess = sync.OnceValues(func() (*scheduler, error) {
	s := &scheduler{clusters: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})}
	bindings := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	var err error
	s.algorithm, err = core.NewGenericScheduler(cache.NewCache(clusterlister.NewClusterLister(s.clusters), bindings, 0), plugins.NewInTreeRegistry())
	return s, err
})

// TestKarmadaScheduleRuns pins the harness itself to a result anyone can
// work out by hand, so that a broken harness cannot pass as a scheduler that
// places nothing: Duplicated over three clusters without constraints lands
// on all three, and a cluster in a graceful eviction task is left out.
func TestKarmadaScheduleRuns(t *testing.T) {
	var clusters []*clusterv1alpha1.Cluster
	for _, n := range []string{"m1", "m2", "m3"} {
		c := &clusterv1alpha1.Cluster{}
		c.Name = n
		c.Status.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}}}}
		clusters = append(clusters, c)
	}
	spec := &workv1alpha2.ResourceBindingSpec{
		Resource:  workv1alpha2.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "w"},
		Placement: &policyv1alpha1.Placement{},
	}
	got, _, err := karmadaSchedule(clusters, spec, &workv1alpha2.ResourceBindingStatus{})
	if err != nil {
		t.Fatal(err)
	}
	if names := targetNames(got); fmt.Sprint(names) != "[m1 m2 m3]" {
		t.Fatalf("scheduled on %v, want [m1 m2 m3]", names)
	}
	spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "m2"}}
	got, _, err = karmadaSchedule(clusters, spec, &workv1alpha2.ResourceBindingStatus{})
	if err != nil {
		t.Fatal(err)
	}
	if names := targetNames(got); fmt.Sprint(names) != "[m1 m3]" {
		t.Fatalf("with m2 evicted, scheduled on %v, want [m1 m3]", names)
	}
}

func targetNames(ts []workv1alpha2.TargetCluster) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	slices.Sort(out)
	return out
}

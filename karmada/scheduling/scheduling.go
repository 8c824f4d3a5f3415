// Package scheduling runs Karmada v1.18's own scheduling algorithm in
// process, as karmada-scheduler runs it for one binding: pkg/scheduler/core's
// generic scheduler with the in-tree plugins (the registry karmada-scheduler
// starts with, feature gates at their defaults) over the clusters given, and
// Karmada's general estimator over their resource summaries, the only
// estimator registered when no karmada-scheduler-estimator runs. With
// clusterAffinities it tries the terms as the scheduler's own loop does
// (scheduleResourceBindingWithClusterAffinities in pkg/scheduler).
//
// It is what the library's pre-scheduling check is held to (the karmada
// module's differential test) and what a planner or a simulation places
// bindings with (fleetsim's what-if planner): the scheduler's answer, not a
// second implementation of it.
//
// Schedule takes the fleet at each call. A Scheduler holds one fleet, told
// of its changes one cluster at a time, and answers the same, cheaper: it
// has Karmada copy the fleet once per change rather than once per call,
// and remembers its answers until the fleet changes.
//
// Karmada's framework starts a metrics goroutine that never ends when a
// scheduler is built, so the package builds one, at the first call, for the
// whole process; calls are serialized, a Scheduler's too. Tests that check for leaked
// goroutines ignore
// github.com/karmada-io/karmada/pkg/scheduler/framework/runtime.(*metricsRecorder).run.
package scheduling

import (
	"context"
	"errors"
	"fmt"
	"sync"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	clusterlister "github.com/karmada-io/karmada/pkg/generated/listers/cluster/v1alpha1"
	"github.com/karmada-io/karmada/pkg/scheduler/cache"
	"github.com/karmada-io/karmada/pkg/scheduler/core"
	"github.com/karmada-io/karmada/pkg/scheduler/framework/plugins"
	toolscache "k8s.io/client-go/tools/cache"
)

// LeakedGoroutine is the function of the goroutine Karmada's framework
// starts once per process and never ends: for goleak.IgnoreAnyFunction.
const LeakedGoroutine = "github.com/karmada-io/karmada/pkg/scheduler/framework/runtime.(*metricsRecorder).run"

// engine is the process's one generic scheduler. The algorithm takes its
// snapshot of the clusters from the engine's cache: a new one of the
// clusters store, which Schedule refills per call, deep-copied by Karmada's
// cache; or, for a call of a Scheduler's, the snapshot the Scheduler keeps
// (snapshot). Either way the bindings the algorithm may consult (Karmada's
// binding indexer and assigning cache) are the engine's, and stay empty.
type engine struct {
	mu       sync.Mutex
	clusters toolscache.Indexer
	// snapshot, when not nil, is the snapshot the call in progress
	// schedules on instead of one of clusters.
	snapshot  *cache.Snapshot
	algorithm core.ScheduleAlgorithm
}

// engineCache is Karmada's scheduler cache but for whose snapshot it
// hands out (engine.snapshot).
type engineCache struct {
	cache.Cache
	e *engine
}

// Snapshot is the snapshot of the call in progress: the Scheduler's, or else
// Karmada's of the clusters store.
func (c engineCache) Snapshot() cache.Snapshot {
	if c.e.snapshot != nil {
		return *c.e.snapshot
	}
	return c.Cache.Snapshot()
}

var shared = sync.OnceValues(func() (*engine, error) {
	e := &engine{clusters: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})}
	bindings := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	var err error
	e.algorithm, err = core.NewGenericScheduler(engineCache{cache.NewCache(clusterlister.NewClusterLister(e.clusters), bindings, 0), e}, plugins.NewInTreeRegistry())
	if err != nil {
		return nil, fmt.Errorf("scheduling: Karmada's generic scheduler: %w", err)
	}
	return e, nil
})

// Schedule schedules the binding with spec and status on clusters as
// karmada-scheduler would, and returns the schedule result and the
// clusterAffinities term that produced it (empty without
// clusterAffinities). With clusterAffinities the terms are tried from the
// one status.schedulerObservedAffinityName names on, and the first that
// schedules wins; when none does, the error is the first term's, as Karmada
// reports it. An error is the scheduler's (no cluster fits, say). Neither
// spec nor status is changed: the algorithm fills in defaults (static
// weights) on copies.
//
// Each call loads the clusters anew and Karmada's cache copies every one of
// them: to schedule many bindings on one fleet, a Scheduler is cheaper and
// answers the same.
func Schedule(clusters []*clusterv1alpha1.Cluster, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) ([]workv1alpha2.TargetCluster, string, error) {
	if spec == nil || spec.Placement == nil {
		return nil, "", errNoPlacement
	}
	e, err := shared()
	if err != nil {
		return nil, "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	items := make([]any, len(clusters))
	for i, c := range clusters {
		items[i] = c
	}
	if err := e.clusters.Replace(items, ""); err != nil {
		return nil, "", fmt.Errorf("scheduling: loading the clusters: %w", err)
	}
	return e.schedule(nil, spec, status)
}

var errNoPlacement = errors.New("scheduling: the binding has no spec.placement")

// schedule runs the algorithm on snapshot (nil: on the clusters store), as
// Schedule documents, with e.mu held.
func (e *engine) schedule(snapshot *cache.Snapshot, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) ([]workv1alpha2.TargetCluster, string, error) {
	e.snapshot = snapshot
	defer func() { e.snapshot = nil }()
	spec = spec.DeepCopy()
	st := &workv1alpha2.ResourceBindingStatus{}
	if status != nil {
		st = status.DeepCopy()
	}
	observed := st.SchedulerObservedAffinityName
	opts := &core.ScheduleAlgorithmOption{}
	ctx := context.Background()
	terms := spec.Placement.ClusterAffinities
	if terms == nil {
		r, err := e.algorithm.Schedule(ctx, spec, st, opts)
		return r.SuggestedClusters, "", err
	}
	i := 0
	for j := range terms {
		if terms[j].AffinityName == observed {
			i = j
			break
		}
	}
	var first error
	for ; i < len(terms); i++ {
		st.SchedulerObservedAffinityName = terms[i].AffinityName
		r, err := e.algorithm.Schedule(ctx, spec, st, opts)
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
	return nil, observed, fmt.Errorf("every clusterAffinities term from %q on failed, the first with: %w", observed, first)
}

package controllers

import (
	"cmp"
	"errors"
	"slices"

	"github.com/go-logr/logr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/ratelimit"
)

// FieldManager is the field manager of every write the controllers make.
const FieldManager = "failover"

// AddToScheme adds the kinds the controllers read and write: Kubernetes'
// own (Events) and Karmada v1.18's Cluster, policy and work kinds.
// karmada-controller-manager's scheme holds them already.
func AddToScheme(s *runtime.Scheme) error {
	return errors.Join(
		clientgoscheme.AddToScheme(s),
		clusterv1alpha1.Install(s),
		policyv1alpha1.Install(s),
		workv1alpha2.Install(s),
	)
}

// eventRecorder is the one method of controller-runtime's recorder used.
type eventRecorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// ClusterFaulty is fleet health's question, for
// ratelimit.NewInformerSource on a Cluster informer: a Cluster with a
// NoExecute or PreferNoExecute taint is faulty (failover.IsFaulty). One
// whose taints do not convert counts as faulty: it cannot be trusted as a
// target. Anything but a *Cluster is not counted faulty.
func ClusterFaulty(obj any) bool {
	c, ok := obj.(*clusterv1alpha1.Cluster)
	if !ok {
		return false
	}
	fc, err := karmada.FromCluster(c)
	if err != nil {
		return true
	}
	return failover.IsFaulty(fc)
}

// ClusterDomains returns the disruption domains a Cluster counts in under
// the rule d, for ratelimit.WithDomains: its region, its zones (spec.zones,
// else spec.zone) or its provider (ratelimit.DomainsOf). The result is
// never empty: [""] for a cluster without one, one that does not convert,
// anything but a *Cluster, and every cluster under the fleet rule.
func ClusterDomains(d ratelimit.Domain) func(obj any) []string {
	return func(obj any) []string {
		c, ok := obj.(*clusterv1alpha1.Cluster)
		if !ok {
			return []string{""}
		}
		fc, err := karmada.FromCluster(c)
		if err != nil {
			return []string{""}
		}
		if ds := ratelimit.DomainsOf(fc, d); len(ds) > 0 {
			return ds
		}
		return []string{""}
	}
}

// fleetView is the fleet as one check sees it: the Fleet's view, with the
// clusters read fresh from the API server over it. The view is shared by
// every check, so it is copied only when a fresh read differs from it.
type fleetView struct {
	fleet    *karmada.Fleet
	view     *karmada.FleetView
	clusters []failover.Cluster // the view's, or a copy with the fresh reads
	copied   bool
	// fresh holds the summaries of the clusters read fresh (nil for one
	// that is gone).
	fresh map[string]*clusterv1alpha1.ResourceSummary
}

func newFleetView(f *karmada.Fleet) *fleetView {
	v := f.View()
	return &fleetView{fleet: f, view: v, clusters: v.Clusters, fresh: map[string]*clusterv1alpha1.ResourceSummary{}}
}

// capacity is karmada.FleetView.Capacity, with the fresh reads' summaries
// over the view's.
func (f *fleetView) capacity(req *workv1alpha2.ReplicaRequirements) func(cluster string) (int32, bool) {
	viewed := f.view.Capacity(req)
	return func(name string) (int32, bool) {
		if s, ok := f.fresh[name]; ok {
			_, known := f.find(name)
			return karmada.MaxReplicas(s, req), known
		}
		return viewed(name)
	}
}

// find returns where the cluster named name is, or would be, in clusters.
func (f *fleetView) find(name string) (int, bool) {
	return slices.BinarySearchFunc(f.clusters, name, func(c failover.Cluster, n string) int { return cmp.Compare(c.Name, n) })
}

// own makes clusters a copy of its own before a change.
func (f *fleetView) own() {
	if !f.copied {
		f.clusters, f.copied = slices.Clone(f.clusters), true
	}
}

// put sets cl, read fresh, over the view. One that does not convert is
// left out, and logged: whose taints cannot be read is no target.
func (f *fleetView) put(cl *clusterv1alpha1.Cluster, logger logr.Logger) {
	f.fresh[cl.Name] = cl.Status.ResourceSummary
	i, ok := f.find(cl.Name)
	fc, err := karmada.FromCluster(cl)
	switch {
	case err != nil:
		logger.Error(err, "cluster left out of the fleet", "cluster", cl.Name)
		f.drop(cl.Name)
		f.fresh[cl.Name] = cl.Status.ResourceSummary
	case ok && apiequality.Semantic.DeepEqual(f.clusters[i], fc):
	case ok:
		f.own()
		f.clusters[i] = fc
	default:
		f.own()
		f.clusters = slices.Insert(f.clusters, i, fc)
	}
}

// drop takes the cluster named name out: it is gone.
func (f *fleetView) drop(name string) {
	f.fresh[name] = nil
	if i, ok := f.find(name); ok {
		f.own()
		f.clusters = slices.Delete(f.clusters, i, i+1)
	}
}

// summary is a karmada.Summaries: a fresh read's, else the Fleet's.
func (f *fleetView) summary(name string) (*clusterv1alpha1.ResourceSummary, bool) {
	if s, ok := f.fresh[name]; ok {
		_, known := f.find(name)
		return s, known || s != nil
	}
	return f.fleet.Summary(name)
}

// feedFleet keeps f up to date from a Cluster informer's events.
func feedFleet(f *karmada.Fleet, logger logr.Logger) toolscache.ResourceEventHandler {
	set := func(obj any) {
		if cl, ok := obj.(*clusterv1alpha1.Cluster); ok {
			if _, err := f.Set(cl); err != nil {
				logger.Error(err, "cluster left out of the fleet", "cluster", cl.Name)
			}
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if cl, ok := obj.(*clusterv1alpha1.Cluster); ok {
				f.Delete(cl.Name)
			}
		},
	}
}

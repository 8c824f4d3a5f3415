package controllers

import (
	"errors"

	"github.com/go-logr/logr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/prescheduling"
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

// fleetView is the fleet as one check sees it: the Fleet, with the clusters
// read fresh from the API server over it, which the check takes as
// overrides (karmada.Fresh) and which nothing copies the fleet for.
type fleetView struct {
	fleet *karmada.Fleet
	// view and clusters are the Fleet's view, for a whole-fleet reader
	// (predict); nil in a check's, which reads the Fleet's index.
	view     *karmada.FleetView
	clusters []failover.Cluster
	// fresh holds the summaries of the clusters read fresh (nil for one
	// that is gone), in whether each is in the fleet (read, and it
	// converts), and overrides what the check takes of them.
	fresh     map[string]*clusterv1alpha1.ResourceSummary
	in        map[string]bool
	overrides []karmada.Fresh
}

// newFleetView is the Fleet's view, for a reader of the whole fleet.
func newFleetView(f *karmada.Fleet) *fleetView {
	v := f.View()
	fv := checkView(f)
	fv.view, fv.clusters = v, v.Clusters
	return fv
}

// checkView is the Fleet as a check reads it, with no fresh read yet.
func checkView(f *karmada.Fleet) *fleetView {
	return &fleetView{fleet: f, fresh: map[string]*clusterv1alpha1.ResourceSummary{}, in: map[string]bool{}}
}

// capacity is karmada.Capacity over the Fleet's summaries, with the fresh
// reads' over them.
func (f *fleetView) capacity(req *workv1alpha2.ReplicaRequirements) func(cluster string) (int32, bool) {
	viewed := karmada.CapacityFrom(f.fleet.Summary, req)
	if f.view != nil {
		viewed = f.view.Capacity(req)
	}
	return func(name string) (int32, bool) {
		if s, ok := f.fresh[name]; ok {
			return karmada.MaxReplicas(s, req), f.in[name]
		}
		return viewed(name)
	}
}

// check is the Fleet's check with the fresh reads in place.
func (f *fleetView) check(req prescheduling.Request, requirements *workv1alpha2.ReplicaRequirements) prescheduling.Result {
	return f.fleet.Check(req, requirements, f.overrides...)
}

// put sets cl, read fresh, over the Fleet. One that does not convert is
// left out, and logged: whose taints cannot be read is no target.
func (f *fleetView) put(cl *clusterv1alpha1.Cluster, logger logr.Logger) {
	fr, err := karmada.FreshCluster(cl)
	if err != nil {
		logger.Error(err, "cluster left out of the fleet", "cluster", cl.Name)
	}
	f.set(cl.Name, fr, cl.Status.ResourceSummary, err == nil)
}

// drop takes the cluster named name out: it is gone.
func (f *fleetView) drop(name string) { f.set(name, karmada.GoneCluster(name), nil, false) }

func (f *fleetView) set(name string, fr karmada.Fresh, s *clusterv1alpha1.ResourceSummary, in bool) {
	if _, ok := f.fresh[name]; !ok {
		f.overrides = append(f.overrides, fr)
	} else {
		for i := range f.overrides {
			if f.overrides[i].Name() == name {
				f.overrides[i] = fr
			}
		}
	}
	f.fresh[name], f.in[name] = s, in
}

// summary is a karmada.Summaries: a fresh read's, else the Fleet's.
func (f *fleetView) summary(name string) (*clusterv1alpha1.ResourceSummary, bool) {
	if s, ok := f.fresh[name]; ok {
		return s, f.in[name] || s != nil
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

package controllers

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
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

// feedFleet keeps f up to date from a Cluster informer's events.
func feedFleet(f *engine.Fleet, logger logr.Logger) toolscache.ResourceEventHandler {
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

// catchUpFleet brings f's copy of the Cluster name up to the cache's, for a
// decision a change of that cluster woke: f's informer handler runs on a
// goroutine of its own and may not have applied the change yet, and a
// decision on the copy before it would wait for a wake-up that has already
// come. A copy read just before the handler applied a newer one would put f
// back: it is set again while the cache moves on (a few reads at most, as
// the cache only moves forward). It returns the cluster as set; false when
// the cache has none (gone) or cannot say.
func catchUpFleet(ctx context.Context, c client.Reader, f *engine.Fleet, name string, logger logr.Logger) (*clusterv1alpha1.Cluster, bool) {
	var last *clusterv1alpha1.Cluster
	for range 4 {
		var cl clusterv1alpha1.Cluster
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &cl); err != nil {
			return last, last != nil
		}
		if have, ok := f.Cluster(name); ok && have.ResourceVersion == cl.ResourceVersion {
			return &cl, true
		}
		if _, err := f.Set(&cl); err != nil {
			logger.Error(err, "cluster left out of the fleet", "cluster", name)
		}
		last = &cl
	}
	return last, true
}

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
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// fleetView is the fleet as one check sees it: Karmada's Clusters (for
// karmada.Capacity and the Ledger's summaries) and their conversions (for
// the check), some of them read fresh from the API server over the cache's.
type fleetView struct {
	clusters []clusterv1alpha1.Cluster
	conv     []failover.Cluster // conv[i] converts clusters[i]; no Name: it did not convert
	index    map[string]int
}

// listFleet lists the clusters from c and converts them. A cluster that
// does not convert is left out of the converted fleet, and logged: whose
// taints cannot be read is no target.
func listFleet(ctx context.Context, c client.Reader, logger logr.Logger) (*fleetView, error) {
	var list clusterv1alpha1.ClusterList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	f := &fleetView{clusters: list.Items, conv: make([]failover.Cluster, len(list.Items)), index: make(map[string]int, len(list.Items))}
	for i := range f.clusters {
		f.index[f.clusters[i].Name] = i
		f.conv[i] = convert(&f.clusters[i], logger)
	}
	return f, nil
}

// convert is karmada.FromCluster, logging a cluster that does not convert
// and returning it without a name.
func convert(cl *clusterv1alpha1.Cluster, logger logr.Logger) failover.Cluster {
	fc, err := karmada.FromCluster(cl)
	if err != nil {
		logger.Error(err, "cluster left out of the fleet", "cluster", cl.Name)
		return failover.Cluster{}
	}
	return fc
}

// put replaces the cluster of cl's name with cl, or adds it.
func (f *fleetView) put(cl *clusterv1alpha1.Cluster, logger logr.Logger) {
	i, ok := f.index[cl.Name]
	if !ok {
		i = len(f.clusters)
		f.index[cl.Name] = i
		f.clusters = append(f.clusters, clusterv1alpha1.Cluster{})
		f.conv = append(f.conv, failover.Cluster{})
	}
	f.clusters[i] = *cl
	f.conv[i] = convert(cl, logger)
}

// drop takes the cluster named name out: it is gone.
func (f *fleetView) drop(name string) {
	i, ok := f.index[name]
	if !ok {
		return
	}
	last := len(f.clusters) - 1
	f.clusters[i], f.conv[i] = f.clusters[last], f.conv[last]
	f.index[f.clusters[i].Name] = i
	f.clusters, f.conv = f.clusters[:last], f.conv[:last]
	delete(f.index, name)
}

// converted is the fleet for the check: the clusters that converted.
func (f *fleetView) converted() []failover.Cluster {
	out := make([]failover.Cluster, 0, len(f.conv))
	for _, c := range f.conv {
		if c.Name != "" {
			out = append(out, c)
		}
	}
	return out
}

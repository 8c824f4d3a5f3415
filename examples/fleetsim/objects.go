package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
)

// The simulated world as the Karmada objects the library's engine reads:
// each cluster a clusterv1alpha1.Cluster, recorded in the engine.Fleet
// when it changes (its conditions, its taints, the replicas it runs), and
// each binding a workv1alpha2.ResourceBinding or ClusterResourceBinding.
// fleetsim keeps its own record of both (clusterState, binding.gb) and
// writes it into these objects before the engine reads them, as a cluster
// status controller, the API server and the scheduler would.

// unknownCapacity is the pods a cluster without a known capacity reports
// as allocatable: room for any workload of a scenario, and small enough
// that the check can add up a fleet of them.
const unknownCapacity = 100000

// publish writes c into a new Cluster object and records it in the Fleet
// and the Scheduler:
// the object is never changed afterwards, as an informer's are not.
func (w *world) publish(c *clusterState) {
	capacity, ok := w.sc.Capacity[c.Name]
	if !ok {
		capacity = unknownCapacity
	}
	kc := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: c.Labels},
		Spec: clusterv1alpha1.ClusterSpec{
			Provider: c.Provider, Region: c.Region, Zone: c.Zone, Zones: c.Zones,
			Taints: append([]corev1.Taint(nil), c.Taints...),
		},
		Status: clusterv1alpha1.ClusterStatus{
			Conditions:     append([]metav1.Condition(nil), c.Conditions...),
			APIEnablements: w.apis,
			ResourceSummary: &clusterv1alpha1.ResourceSummary{
				Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(capacity), resource.DecimalSI)},
				Allocated:   corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(c.reported), resource.DecimalSI)},
			},
		},
	}
	c.kc = kc
	w.scheduler.Set(kc)
	if _, err := w.fleet.Set(kc); err != nil && w.fleetErr == nil {
		w.fleetErr = fmt.Errorf("fleetsim: cluster %s: %w", c.Name, err)
	}
}

// newObject makes the Karmada binding of spec, unscheduled, at generation 1.
// Its annotations are the placement Karmada's detector applied (which the
// taint manager reads the tolerations of) and the scenario's budget of
// clusters in transit.
func newObject(spec *bindingSpecResolved) (runtime.Object, error) {
	meta := metav1.ObjectMeta{Name: spec.Name, Namespace: spec.Namespace, Generation: 1, Annotations: map[string]string{}}
	// A binding without a placement was propagated by a policy with an
	// empty one, which Karmada's detector applies all the same.
	placement := spec.Karmada
	if placement == nil {
		placement = &policyv1alpha1.Placement{}
	}
	applied, err := json.Marshal(placement)
	if err != nil {
		return nil, err
	}
	meta.Annotations[karmada.AppliedPlacementAnnotation] = string(applied)
	if spec.Budget > 0 {
		meta.Annotations[karmada.MaxClustersInTransitAnnotation] = strconv.Itoa(int(spec.Budget))
	}
	res := spec.Resource
	res.UID = types.UID(spec.Kind + "/" + spec.key()) // Karmada's scheduler breaks ties by it
	bs := workv1alpha2.ResourceBindingSpec{Resource: res, Replicas: spec.Replicas, Placement: placement.DeepCopy(), Failover: spec.Failover.DeepCopy()}
	if spec.Kind == kindClusterResourceBinding {
		return &workv1alpha2.ClusterResourceBinding{ObjectMeta: meta, Spec: bs}, nil
	}
	return &workv1alpha2.ResourceBinding{ObjectMeta: meta, Spec: bs}, nil
}

// parts are the binding object's metadata, spec and status.
func (b *binding) parts() (metav1.Object, *workv1alpha2.ResourceBindingSpec, *workv1alpha2.ResourceBindingStatus) {
	switch o := b.obj.(type) {
	case *workv1alpha2.ClusterResourceBinding:
		return o, &o.Spec, &o.Status
	case *workv1alpha2.ResourceBinding:
		return o, &o.Spec, &o.Status
	}
	panic(fmt.Sprintf("fleetsim: binding %s: object %T", b.key(), b.obj))
}

// write writes fleetsim's record of b into its object: the schedule
// result, the tasks, the generation the API server gave the spec and the
// one the scheduler observed.
func (b *binding) write() {
	meta, spec, status := b.parts()
	karmada.ApplyBinding(spec, b.gb)
	meta.SetGeneration(b.gb.Generation)
	status.SchedulerObservedGeneration = b.gb.ObservedGeneration
}

// read is what the engine wrote into b's object: its schedule result and
// tasks.
func (b *binding) read() (gracefulevict.Binding, error) {
	if crb, ok := b.obj.(*workv1alpha2.ClusterResourceBinding); ok {
		return karmada.FromClusterResourceBinding(crb)
	}
	return karmada.FromResourceBinding(b.obj.(*workv1alpha2.ResourceBinding))
}

// apiEnablements lists the kinds of bindings as the APIs every cluster
// serves (Karmada's scheduler places a binding only where its kind is).
func apiEnablements(bindings []*bindingSpecResolved) []clusterv1alpha1.APIEnablement {
	var out []clusterv1alpha1.APIEnablement
	seen := map[[2]string]bool{}
	for _, b := range bindings {
		gv, kind := b.Resource.APIVersion, b.Resource.Kind
		if seen[[2]string{gv, kind}] {
			continue
		}
		seen[[2]string{gv, kind}] = true
		i := slices.IndexFunc(out, func(e clusterv1alpha1.APIEnablement) bool { return e.GroupVersion == gv })
		if i < 0 {
			out = append(out, clusterv1alpha1.APIEnablement{GroupVersion: gv})
			i = len(out) - 1
		}
		out[i].Resources = append(out[i].Resources, clusterv1alpha1.APIResource{Name: strings.ToLower(kind) + "s", Kind: kind})
	}
	return out
}

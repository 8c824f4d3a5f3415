package controllers

import (
	"context"
	"fmt"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
)

// clusterIndex indexes bindings by the clusters of their schedule result,
// so that a cluster's change finds its bindings without a full list. The
// name differs from the index Karmada registers on the same field, so both
// can live in one manager.
const clusterIndex = "failover.spec.clusters.name"

// kind is what the controllers need to know of ResourceBinding and
// ClusterResourceBinding, which share their spec and status types.
type kind struct {
	name   string // the Kind, for controller names
	queue  string // the eviction queue's name
	new    func() client.Object
	list   func() client.ObjectList
	spec   func(client.Object) *workv1alpha2.ResourceBindingSpec
	status func(client.Object) *workv1alpha2.ResourceBindingStatus
	toLib  func(client.Object) (gracefulevict.Binding, error)
	q      *evictionqueue.Queue // set by EvictionController.SetupWithManager
}

func resourceBindings() *kind {
	return &kind{
		name:  "resourcebinding",
		queue: ResourceBindingQueue,
		new:   func() client.Object { return &workv1alpha2.ResourceBinding{} },
		list:  func() client.ObjectList { return &workv1alpha2.ResourceBindingList{} },
		spec: func(o client.Object) *workv1alpha2.ResourceBindingSpec {
			return &o.(*workv1alpha2.ResourceBinding).Spec
		},
		status: func(o client.Object) *workv1alpha2.ResourceBindingStatus {
			return &o.(*workv1alpha2.ResourceBinding).Status
		},
		toLib: func(o client.Object) (gracefulevict.Binding, error) {
			return karmada.FromResourceBinding(o.(*workv1alpha2.ResourceBinding))
		},
	}
}

func clusterResourceBindings() *kind {
	return &kind{
		name:  "clusterresourcebinding",
		queue: ClusterResourceBindingQueue,
		new:   func() client.Object { return &workv1alpha2.ClusterResourceBinding{} },
		list:  func() client.ObjectList { return &workv1alpha2.ClusterResourceBindingList{} },
		spec: func(o client.Object) *workv1alpha2.ResourceBindingSpec {
			return &o.(*workv1alpha2.ClusterResourceBinding).Spec
		},
		status: func(o client.Object) *workv1alpha2.ResourceBindingStatus {
			return &o.(*workv1alpha2.ClusterResourceBinding).Status
		},
		toLib: func(o client.Object) (gracefulevict.Binding, error) {
			return karmada.FromClusterResourceBinding(o.(*workv1alpha2.ClusterResourceBinding))
		},
	}
}

// indexBindings registers clusterIndex for the kinds.
func indexBindings(ctx context.Context, mgr manager.Manager, kinds []*kind) error {
	for _, k := range kinds {
		err := mgr.GetFieldIndexer().IndexField(ctx, k.new(), clusterIndex, func(o client.Object) []string {
			spec := k.spec(o)
			out := make([]string, 0, len(spec.Clusters))
			for _, c := range spec.Clusters {
				out = append(out, c.Name)
			}
			return out
		})
		if err != nil {
			return fmt.Errorf("controllers: indexing %s by cluster: %w", k.name, err)
		}
	}
	return nil
}

// objectKey turns a queue item's key back into the binding's name.
func objectKey(key string) (types.NamespacedName, error) {
	n, err := cache.ParseObjectName(key)
	if err != nil {
		return types.NamespacedName{}, fmt.Errorf("controllers: binding key %q: %w", key, err)
	}
	return n.AsNamespacedName(), nil
}

// itemKey is the queue key of a binding: "namespace/name", or "name" for a
// cluster-scoped one.
func itemKey(o client.Object) string { return cache.MetaObjectToName(o).String() }

// resourceKind is the queue item's ResourceKind: the workload's APIVersion
// and Kind.
func resourceKind(spec *workv1alpha2.ResourceBindingSpec) string {
	return spec.Resource.APIVersion + "/" + spec.Resource.Kind
}

package fork

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
)

// clusterIndex indexes bindings by the clusters of their schedule result,
// so that a cluster's change finds its bindings without a full list.
const clusterIndex = "spec.clusters.name"

// AppliedPlacementAnnotation holds the placement Karmada's detector last
// applied to a binding (pkg/util.PolicyPlacementAnnotation); Karmada's taint
// manager reads the tolerations from it.
const AppliedPlacementAnnotation = "policy.karmada.io/applied-placement"

// kind is what the reconcilers need to know of ResourceBinding and
// ClusterResourceBinding, which share their spec and status types.
type kind struct {
	name  string
	new   func() client.Object
	list  func() client.ObjectList
	spec  func(client.Object) *workv1alpha2.ResourceBindingSpec
	toLib func(client.Object) (gracefulevict.Binding, error)
	queue *evictionqueue.Queue
}

func resourceBindings() *kind {
	return &kind{
		name: ResourceBindingQueue,
		new:  func() client.Object { return &workv1alpha2.ResourceBinding{} },
		list: func() client.ObjectList { return &workv1alpha2.ResourceBindingList{} },
		spec: func(o client.Object) *workv1alpha2.ResourceBindingSpec {
			return &o.(*workv1alpha2.ResourceBinding).Spec
		},
		toLib: func(o client.Object) (gracefulevict.Binding, error) {
			return karmada.FromResourceBinding(o.(*workv1alpha2.ResourceBinding))
		},
	}
}

func clusterResourceBindings() *kind {
	return &kind{
		name: ClusterResourceBindingQueue,
		new:  func() client.Object { return &workv1alpha2.ClusterResourceBinding{} },
		list: func() client.ObjectList { return &workv1alpha2.ClusterResourceBindingList{} },
		spec: func(o client.Object) *workv1alpha2.ResourceBindingSpec {
			return &o.(*workv1alpha2.ClusterResourceBinding).Spec
		},
		toLib: func(o client.Object) (gracefulevict.Binding, error) {
			return karmada.FromClusterResourceBinding(o.(*workv1alpha2.ClusterResourceBinding))
		},
	}
}

// indexBindings registers clusterIndex for both kinds.
func (f *forker) indexBindings(ctx context.Context, mgr manager.Manager) error {
	for _, k := range []*kind{resourceBindings(), clusterResourceBindings()} {
		err := mgr.GetFieldIndexer().IndexField(ctx, k.new(), clusterIndex, func(o client.Object) []string {
			spec := k.spec(o)
			out := make([]string, 0, len(spec.Clusters))
			for _, c := range spec.Clusters {
				out = append(out, c.Name)
			}
			return out
		})
		if err != nil {
			return fmt.Errorf("fork: indexing %s by cluster: %w", k.name, err)
		}
	}
	return nil
}

// objectKey turns a queue item's key back into the binding's name.
func objectKey(key string) (types.NamespacedName, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return types.NamespacedName{}, fmt.Errorf("fork: binding key %q: %w", key, err)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// itemKey is the queue key of a binding: "namespace/name", or "name" for a
// cluster-scoped one.
func itemKey(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// resourceKind is the queue item's ResourceKind: the workload's APIVersion
// and Kind.
func resourceKind(spec *workv1alpha2.ResourceBindingSpec) string {
	return spec.Resource.APIVersion + "/" + spec.Resource.Kind
}

// tolerations are the cluster tolerations of the placement Karmada applied
// to the binding: the applied-placement annotation, as Karmada's taint
// manager reads it, else spec.placement. A malformed annotation is an error
// naming it.
func tolerations(o client.Object, spec *workv1alpha2.ResourceBindingSpec) ([]corev1.Toleration, error) {
	if s, ok := o.GetAnnotations()[AppliedPlacementAnnotation]; ok && s != "" {
		var p policyv1alpha1.Placement
		if err := json.Unmarshal([]byte(s), &p); err != nil {
			return nil, fmt.Errorf("fork: annotation %s of %s: %w", AppliedPlacementAnnotation, itemKey(o), err)
		}
		return p.ClusterTolerations, nil
	}
	if spec.Placement != nil {
		return spec.Placement.ClusterTolerations, nil
	}
	return nil, nil
}

// failoverBehavior is spec.failover.cluster, converted. Its
// statePreservation, which the library does not carry, does not matter to
// the eviction decision, so that loss is accepted.
func failoverBehavior(spec *workv1alpha2.ResourceBindingSpec) (*failover.ClusterFailoverBehavior, error) {
	if spec.Failover == nil {
		return nil, nil
	}
	fb, err := karmada.FromClusterFailoverBehavior(spec.Failover.Cluster)
	var loss *karmada.LossError
	if errors.As(err, &loss) {
		err = nil
	}
	return fb, err
}

// scheduledOn reports whether the binding's schedule result names cluster.
func scheduledOn(spec *workv1alpha2.ResourceBindingSpec, cluster string) bool {
	for _, c := range spec.Clusters {
		if c.Name == cluster {
			return true
		}
	}
	return false
}

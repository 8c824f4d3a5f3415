package karmada

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/failoverkit/failover"
)

// FromCluster converts a Karmada Cluster into the library's: metadata.name
// and labels; spec.provider, region, zone, zones and taints;
// status.conditions. Zone and Zones are both carried; the library reads Zones
// when it is set, as Karmada does.
//
// The rest of the object (the API endpoint and credentials, sync mode,
// resource models, API enablements, node and resource summaries) is not part
// of failover.Cluster; the resource summary is read by [Capacity].
//
// A taint whose effect is not NoSchedule, PreferNoExecute or NoExecute, or
// whose key is not a qualified name, is an error naming it: the library
// would not know whether the taint makes the cluster faulty.
func FromCluster(c *clusterv1alpha1.Cluster) (failover.Cluster, error) {
	if c == nil {
		return failover.Cluster{}, fmt.Errorf("karmada: cluster is nil")
	}
	if err := validateTaints(c.Spec.Taints); err != nil {
		return failover.Cluster{}, fmt.Errorf("karmada: cluster %q: %w", c.Name, err)
	}
	out := failover.Cluster{
		Name:     c.Name,
		Labels:   maps.Clone(c.Labels),
		Provider: c.Spec.Provider,
		Region:   c.Spec.Region,
		Zone:     c.Spec.Zone,
		Zones:    slices.Clone(c.Spec.Zones),
		Taints:   copyTaints(c.Spec.Taints),
	}
	if c.Status.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(c.Status.Conditions))
		for i := range c.Status.Conditions {
			c.Status.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
	return out, nil
}

// ApplyClusterTaints sets c's spec.taints to taints, as a taint controller
// writes the list taintpolicy's Evaluator returns; no taint empties it. Every
// other field of c is left as it is. A taint FromCluster would refuse is an
// error, and c is then unchanged.
func ApplyClusterTaints(c *clusterv1alpha1.Cluster, taints []corev1.Taint) error {
	if c == nil {
		return fmt.Errorf("karmada: cluster is nil")
	}
	if err := validateTaints(taints); err != nil {
		return fmt.Errorf("karmada: cluster %q: %w", c.Name, err)
	}
	c.Spec.Taints = copyTaints(taints)
	return nil
}

// FromUnstructuredCluster is FromCluster for a cluster.karmada.io/v1alpha1
// Cluster read through a dynamic client. Fields that Karmada v1.18's Cluster
// does not define are ignored, as a typed client ignores them.
func FromUnstructuredCluster(u *unstructured.Unstructured) (failover.Cluster, error) {
	if u == nil {
		return failover.Cluster{}, fmt.Errorf("karmada: cluster is nil")
	}
	var c clusterv1alpha1.Cluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &c); err != nil {
		return failover.Cluster{}, fmt.Errorf("karmada: cluster %q: %w", u.GetName(), err)
	}
	return FromCluster(&c)
}

// ApplyUnstructuredTaints is ApplyClusterTaints for a Cluster read through a
// dynamic client. Only spec.taints is replaced, so an update sends back every
// other field exactly as the server returned it, those that Karmada v1.18
// does not define included. An object without content (a nil Object) is an
// error; a spec that is not an object is an error naming it.
func ApplyUnstructuredTaints(u *unstructured.Unstructured, taints []corev1.Taint) error {
	if u == nil || u.Object == nil {
		return fmt.Errorf("karmada: cluster is nil")
	}
	if err := validateTaints(taints); err != nil {
		return fmt.Errorf("karmada: cluster %q: %w", u.GetName(), err)
	}
	if spec, ok := u.Object["spec"].(map[string]any); ok && spec == nil {
		// A spec decoded as a nil map reads as an empty one; writing into
		// it would panic.
		u.Object["spec"] = map[string]any{}
	}
	if len(taints) == 0 {
		unstructured.RemoveNestedField(u.Object, "spec", "taints")
		return nil
	}
	list := make([]any, 0, len(taints))
	for i := range taints {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&taints[i])
		if err != nil {
			return fmt.Errorf("karmada: cluster %q: spec.taints[%d]: %w", u.GetName(), i, err)
		}
		list = append(list, m)
	}
	if err := unstructured.SetNestedSlice(u.Object, list, "spec", "taints"); err != nil {
		return fmt.Errorf("karmada: cluster %q: spec.taints: %w", u.GetName(), err)
	}
	return nil
}

// validateTaints refuses a taint the library cannot interpret.
func validateTaints(taints []corev1.Taint) error {
	for i := range taints {
		t := &taints[i]
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, failover.TaintEffectPreferNoExecute, corev1.TaintEffectNoExecute:
		default:
			return fmt.Errorf("spec.taints[%d].effect: unknown value %q (taint %q): want NoSchedule, PreferNoExecute or NoExecute", i, t.Effect, t.Key)
		}
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			return fmt.Errorf("spec.taints[%d].key: invalid value %q: %s", i, t.Key, strings.Join(errs, "; "))
		}
	}
	return nil
}

func copyTaints(taints []corev1.Taint) []corev1.Taint {
	if len(taints) == 0 {
		return nil
	}
	out := make([]corev1.Taint, len(taints))
	for i := range taints {
		taints[i].DeepCopyInto(&out[i])
	}
	return out
}

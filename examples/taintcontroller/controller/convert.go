package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/taintpolicy"
)

var (
	// ClusterGVR is Karmada's cluster.karmada.io/v1alpha1 Cluster resource.
	ClusterGVR = schema.GroupVersionResource{Group: "cluster.karmada.io", Version: "v1alpha1", Resource: "clusters"}
	// PolicyGVR is the policy.karmada.io/v1alpha1 ClusterTaintPolicy resource.
	PolicyGVR = schema.GroupVersionResource{Group: "policy.karmada.io", Version: "v1alpha1", Resource: "clustertaintpolicies"}
)

// clusterObject is the part of a Karmada Cluster object the controller reads.
type clusterObject struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Provider string         `json:"provider,omitempty"`
		Region   string         `json:"region,omitempty"`
		Zone     string         `json:"zone,omitempty"`
		Zones    []string       `json:"zones,omitempty"`
		Taints   []corev1.Taint `json:"taints,omitempty"`
	} `json:"spec"`
	Status struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
	} `json:"status"`
}

// ClusterFromUnstructured converts a Karmada Cluster object into the library's
// Cluster: metadata.name and labels, spec.provider, region, zone, zones and
// taints, and status.conditions.
func ClusterFromUnstructured(u *unstructured.Unstructured) (failover.Cluster, error) {
	var obj clusterObject
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &obj); err != nil {
		return failover.Cluster{}, fmt.Errorf("controller: cluster %q: %w", u.GetName(), err)
	}
	return failover.Cluster{
		Name:       obj.Metadata.Name,
		Labels:     obj.Metadata.Labels,
		Provider:   obj.Spec.Provider,
		Region:     obj.Spec.Region,
		Zone:       obj.Spec.Zone,
		Zones:      obj.Spec.Zones,
		Taints:     obj.Spec.Taints,
		Conditions: obj.Status.Conditions,
	}, nil
}

// setTaints replaces spec.taints of u with taints, leaving every other field
// as it was read, so an Update sends back exactly what the server returned
// except the taint list.
func setTaints(u *unstructured.Unstructured, taints []corev1.Taint) error {
	if len(taints) == 0 {
		unstructured.RemoveNestedField(u.Object, "spec", "taints")
		return nil
	}
	list := make([]any, 0, len(taints))
	for i := range taints {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&taints[i])
		if err != nil {
			return fmt.Errorf("controller: cluster %q: taint %q: %w", u.GetName(), taints[i].Key, err)
		}
		list = append(list, m)
	}
	return unstructured.SetNestedSlice(u.Object, list, "spec", "taints")
}

// PolicyFromUnstructured converts a ClusterTaintPolicy object into
// taintpolicy's type and validates it with taintpolicy's rules. Both the
// windowed form and Karmada's released form decode.
func PolicyFromUnstructured(u *unstructured.Unstructured) (taintpolicy.ClusterTaintPolicy, error) {
	var p taintpolicy.ClusterTaintPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &p); err != nil {
		return taintpolicy.ClusterTaintPolicy{}, fmt.Errorf("controller: policy %q: %w", u.GetName(), err)
	}
	if errs := p.Validate(); len(errs) > 0 {
		return taintpolicy.ClusterTaintPolicy{}, fmt.Errorf("controller: policy %q: %w", u.GetName(), errs.ToAggregate())
	}
	return p, nil
}

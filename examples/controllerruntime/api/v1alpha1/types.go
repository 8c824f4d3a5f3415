package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MemberCluster is one member cluster of the fleet. Something else (an agent
// in the member, a prober in the control plane) writes its status
// conditions; the example's cluster-taint controller writes its taints.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=`.spec.region`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Taints",type=string,JSONPath=`.spec.taints[*].key`
type MemberCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MemberClusterSpec   `json:"spec,omitempty"`
	Status MemberClusterStatus `json:"status,omitempty"`
}

// MemberClusterSpec is where the cluster runs and the taints it carries.
type MemberClusterSpec struct {
	// Provider, Region and Zones say where the cluster runs; ClusterTaintPolicy
	// targetCluster field selectors read them.
	// +optional
	Provider string `json:"provider,omitempty"`
	// +optional
	Region string `json:"region,omitempty"`
	// +optional
	Zones []string `json:"zones,omitempty"`

	// Taints keep workloads off the cluster (NoSchedule) or move them out
	// (PreferNoExecute, NoExecute). The cluster-taint controller adds and
	// removes those its policies list and leaves every other taint alone.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
}

// MemberClusterStatus is the cluster's observed state.
type MemberClusterStatus struct {
	// Conditions are the cluster's status conditions, such as Ready; their
	// lastTransitionTime is what the policies' windows count from.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MemberClusterList is a list of MemberClusters.
//
// +kubebuilder:object:root=true
type MemberClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MemberCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&MemberCluster{}, &MemberClusterList{})
}

package failover

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TaintEffectPreferNoExecute is the taint effect the cluster failover proposal
// adds between NoSchedule and NoExecute: no new workloads are scheduled to the
// cluster, and workloads already there are evicted only when they opt in to
// cluster failover (and when there is somewhere to go), unlike NoExecute, which
// evicts everything that does not tolerate it.
const TaintEffectPreferNoExecute corev1.TaintEffect = "PreferNoExecute"

// Cluster is a member cluster as the failover primitives see it: the parts of
// Karmada's cluster.karmada.io/v1alpha1 Cluster they read. Callers convert their
// own cluster objects into it.
//
// +k8s:deepcopy-gen=true
type Cluster struct {
	// Name is the cluster's unique name.
	Name string
	// Labels are the cluster object's labels, read by label selectors.
	Labels map[string]string
	// Provider, Region and Zone are read by field selectors and spread
	// constraints. Zone is Karmada's deprecated spec.zone; a cluster with
	// Zones set ignores it.
	Provider, Region, Zone string
	// Zones are the zones a cluster spans (Karmada's spec.zones). When set,
	// they replace Zone wherever the library reads a cluster's zone.
	Zones []string
	// Taints are the cluster's taints (spec.taints).
	Taints []corev1.Taint
	// Conditions are the cluster's status conditions (status.conditions).
	Conditions []metav1.Condition
}

// IsFaulty reports whether c carries a taint with effect NoExecute or
// PreferNoExecute, the taints that make workloads leave a cluster. A faulty
// cluster counts against fleet health and is never a migration target.
func IsFaulty(c Cluster) bool {
	for i := range c.Taints {
		switch c.Taints[i].Effect {
		case corev1.TaintEffectNoExecute, TaintEffectPreferNoExecute:
			return true
		}
	}
	return false
}

// Condition returns the condition of type t in c's status, or nil.
func (c *Cluster) Condition(t string) *metav1.Condition {
	for i := range c.Conditions {
		if c.Conditions[i].Type == t {
			return &c.Conditions[i]
		}
	}
	return nil
}

// TargetCluster is one entry of a schedule result: a cluster and, for divided
// workloads, the replicas assigned to it. Its JSON is that of Karmada's
// work.karmada.io/v1alpha2 TargetCluster.
type TargetCluster struct {
	// Name is the target cluster's name.
	Name string `json:"name"`
	// Replicas is the number of replicas assigned to the cluster; zero for
	// workloads that are not divided.
	Replicas int32 `json:"replicas,omitempty"`
}

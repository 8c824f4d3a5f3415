package prescheduling

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/failoverkit/failover"
)

// Placement is the part of a PropagationPolicy's placement the check reads.
// Its JSON is that of Karmada's policy/v1alpha1 Placement, so the placement of
// a PropagationPolicy decodes into it.
type Placement struct {
	// ClusterAffinity restricts the clusters the workload may run on; nil
	// allows every cluster. It cannot be set together with
	// ClusterAffinities.
	ClusterAffinity *failover.ClusterAffinity `json:"clusterAffinity,omitempty"`
	// ClusterAffinities are ordered groups of clusters: the scheduler starts
	// from the group it last used (Request.ObservedAffinityName) and moves
	// to the next only when it cannot schedule under one at all; the check
	// does the same, and Result.AffinityName names the group of a feasible
	// answer.
	ClusterAffinities []ClusterAffinityTerm `json:"clusterAffinities,omitempty"`
	// ClusterTolerations are matched against the NoSchedule and NoExecute
	// taints of clusters that do not run the workload yet, as Kubernetes
	// matches pod tolerations and as Karmada's scheduler filters. A cluster
	// with a NoExecute or PreferNoExecute taint is faulty, and nothing
	// moves onto it unless it already runs the workload, whatever it
	// tolerates.
	ClusterTolerations []corev1.Toleration `json:"clusterTolerations,omitempty"`
	// SpreadConstraints say over how many groups of clusters the workload
	// spreads, at most one per field. Karmada v1.18's scheduler selects by
	// the region and cluster constraints only: one by zone or provider only
	// rules out the clusters without that field, one by label is not read,
	// and without a region or cluster constraint it places nothing. The
	// check follows it.
	SpreadConstraints []SpreadConstraint `json:"spreadConstraints,omitempty"`
	// ReplicaScheduling says whether each cluster runs all replicas
	// (Duplicated) or a share of them (Divided). Nil means Duplicated.
	ReplicaScheduling *ReplicaSchedulingStrategy `json:"replicaScheduling,omitempty"`
}

// ClusterAffinityTerm is one named group of Placement.ClusterAffinities.
type ClusterAffinityTerm struct {
	// AffinityName names the group; required and unique within a placement.
	AffinityName string `json:"affinityName"`
	// ClusterAffinity selects the group's clusters.
	failover.ClusterAffinity `json:",inline"`
}

// SpreadFieldValue is a cluster field SpreadConstraint can group clusters by.
type SpreadFieldValue string

// The fields a workload can spread by.
const (
	SpreadByFieldCluster  SpreadFieldValue = "cluster"
	SpreadByFieldRegion   SpreadFieldValue = "region"
	SpreadByFieldZone     SpreadFieldValue = "zone"
	SpreadByFieldProvider SpreadFieldValue = "provider"
)

// SpreadConstraint bounds the number of cluster groups the workload runs in.
type SpreadConstraint struct {
	// SpreadByField groups clusters by a field. Empty, with SpreadByLabel
	// empty too, means by cluster. It cannot be set with SpreadByLabel.
	SpreadByField SpreadFieldValue `json:"spreadByField,omitempty"`
	// SpreadByLabel groups clusters by the value of this label key.
	SpreadByLabel string `json:"spreadByLabel,omitempty"`
	// MaxGroups is the most groups the workload may run in. Karmada v1.18's
	// scheduler reads 0 literally: a cluster constraint without maxGroups
	// selects no cluster (with a region constraint beside it, one per
	// region), a region constraint without it no region.
	MaxGroups int `json:"maxGroups,omitempty"`
	// MinGroups is the fewest groups the workload must run in; 0 means 1,
	// the default Karmada's admission webhook fills in.
	MinGroups int `json:"minGroups,omitempty"`
}

// ReplicaSchedulingType says how replicas are assigned to clusters.
type ReplicaSchedulingType string

// The replica scheduling types.
const (
	// ReplicaSchedulingTypeDuplicated runs all replicas on every selected
	// cluster.
	ReplicaSchedulingTypeDuplicated ReplicaSchedulingType = "Duplicated"
	// ReplicaSchedulingTypeDivided shares the replicas out among the
	// selected clusters.
	ReplicaSchedulingTypeDivided ReplicaSchedulingType = "Divided"
)

// ReplicaDivisionPreference says how Divided replicas are shared out.
type ReplicaDivisionPreference string

// The replica division preferences.
const (
	// ReplicaDivisionPreferenceAggregated uses as few clusters as possible.
	ReplicaDivisionPreferenceAggregated ReplicaDivisionPreference = "Aggregated"
	// ReplicaDivisionPreferenceWeighted shares by WeightPreference.
	ReplicaDivisionPreferenceWeighted ReplicaDivisionPreference = "Weighted"
)

// ReplicaSchedulingStrategy is Karmada's replicaScheduling.
type ReplicaSchedulingStrategy struct {
	// ReplicaSchedulingType is Duplicated or Divided. Empty means Divided,
	// the default Karmada's API server fills in when replicaScheduling is
	// present (a nil ReplicaScheduling, by contrast, means Duplicated).
	ReplicaSchedulingType ReplicaSchedulingType `json:"replicaSchedulingType,omitempty"`
	// ReplicaDivisionPreference is Aggregated or Weighted, for Divided.
	// Empty means Weighted, the default Karmada's admission webhook fills
	// in for a Divided placement.
	ReplicaDivisionPreference ReplicaDivisionPreference `json:"replicaDivisionPreference,omitempty"`
	// WeightPreference gives the weights of a Weighted division.
	WeightPreference *ClusterPreferences `json:"weightPreference,omitempty"`
}

// DynamicWeightFactor is the source of dynamic weights.
type DynamicWeightFactor string

// DynamicWeightByAvailableReplicas weighs clusters by the replicas they can
// still take.
const DynamicWeightByAvailableReplicas DynamicWeightFactor = "AvailableReplicas"

// ClusterPreferences gives the weights of a Weighted division.
type ClusterPreferences struct {
	// StaticWeightList weighs the clusters each entry selects; clusters no
	// entry selects get no replicas, unless no entry selects any cluster the
	// scheduler may use, when they all weigh the same (as in Karmada).
	// Ignored when DynamicWeight is set.
	StaticWeightList []StaticClusterWeight `json:"staticWeightList,omitempty"`
	// DynamicWeight derives weights from the clusters' state instead; every
	// eligible cluster may then take replicas.
	DynamicWeight DynamicWeightFactor `json:"dynamicWeight,omitempty"`
}

// StaticClusterWeight is one entry of a static weight list.
type StaticClusterWeight struct {
	// TargetCluster selects the clusters that get this weight.
	TargetCluster failover.ClusterAffinity `json:"targetCluster"`
	// Weight is at least 1.
	Weight int64 `json:"weight"`
}

// duplicated reports whether p schedules each cluster with all replicas.
func (p *Placement) duplicated() bool {
	return p.ReplicaScheduling == nil || p.ReplicaScheduling.ReplicaSchedulingType == ReplicaSchedulingTypeDuplicated
}

// division is how Karmada v1.18's scheduler assigns replicas to the
// clusters it selects (newAssignState in pkg/scheduler/core).
type division uint8

const (
	// divideDuplicated gives every selected cluster all replicas.
	divideDuplicated division = iota
	// divideAggregated fills the clusters with the most room first.
	divideAggregated
	// divideStaticWeight shares by the static weight list, whatever the
	// room; without weights, evenly.
	divideStaticWeight
	// divideDynamicWeight shares by the room each cluster has.
	divideDynamicWeight
)

// division returns how p divides replicas, with the defaults Karmada's API
// server and admission webhook fill in: replicaSchedulingType Divided when
// replicaScheduling is set, and a Divided placement without a preference
// Weighted.
func (p *Placement) division() division {
	rs := p.ReplicaScheduling
	switch {
	case p.duplicated():
		return divideDuplicated
	case rs.ReplicaDivisionPreference == ReplicaDivisionPreferenceAggregated:
		return divideAggregated
	case rs.WeightPreference != nil && rs.WeightPreference.DynamicWeight != "":
		return divideDynamicWeight
	}
	return divideStaticWeight
}

// spreadIgnored reports whether Karmada's scheduler ignores p's spread
// constraints: a Divided, Weighted placement without weights or with a
// static weight list (shouldIgnoreSpreadConstraint in Karmada v1.18's
// pkg/scheduler/core/spreadconstraint).
func (p *Placement) spreadIgnored() bool {
	if p.division() != divideStaticWeight {
		return false
	}
	wp := p.ReplicaScheduling.WeightPreference
	return wp == nil || len(wp.StaticWeightList) > 0
}

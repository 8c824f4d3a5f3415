package karmada

import (
	"fmt"
	"slices"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/prescheduling"
)

// FromPlacement converts a PropagationPolicy's (or a binding's) placement
// into the one the pre-scheduling check reads: cluster affinity or
// affinities, cluster tolerations, spread constraints and replica
// scheduling. A nil placement converts to the zero Placement (every cluster,
// Duplicated), as Karmada schedules it.
//
// The result is validated as prescheduling.Checker would: a selector that
// does not parse, an unknown spread field or replica scheduling type, or a
// toleration Kubernetes would refuse is an error naming the field and the
// value, with the zero Placement.
//
// Two Karmada v1.18 features are not modelled by the check and come back as
// a [*LossError] with the rest of the placement converted:
// placement.workloadAffinity (the scheduler further restricts or prefers
// clusters by the workloads already on them) and
// placement.clusterAffinities[i].overflowAffinities (the scheduler may also
// use these groups). A check run without them may answer otherwise than the
// scheduler would.
func FromPlacement(p *policyv1alpha1.Placement) (prescheduling.Placement, error) {
	return fromPlacement(p, true)
}

// fromPlacement is FromPlacement, validating the result only with
// validate: a caller whose check validates it (an Index, which compiles each
// placement once) need not pay for it on every eviction.
func fromPlacement(p *policyv1alpha1.Placement, validate bool) (prescheduling.Placement, error) {
	var out prescheduling.Placement
	if p == nil {
		return out, nil
	}
	lost := losses{object: "placement"}
	out.ClusterAffinity = fromAffinity(p.ClusterAffinity)
	if p.ClusterAffinities != nil {
		out.ClusterAffinities = make([]prescheduling.ClusterAffinityTerm, len(p.ClusterAffinities))
		for i := range p.ClusterAffinities {
			t := &p.ClusterAffinities[i]
			out.ClusterAffinities[i] = prescheduling.ClusterAffinityTerm{
				AffinityName:    t.AffinityName,
				ClusterAffinity: *fromAffinity(&t.ClusterAffinity),
			}
			if len(t.OverflowAffinities) > 0 {
				lost.add(fmt.Sprintf("placement.clusterAffinities[%d].overflowAffinities", i),
					"the check does not count the overflow groups' clusters as targets")
			}
		}
	}
	if p.ClusterTolerations != nil {
		out.ClusterTolerations = make([]corev1.Toleration, len(p.ClusterTolerations))
		for i := range p.ClusterTolerations {
			p.ClusterTolerations[i].DeepCopyInto(&out.ClusterTolerations[i])
		}
	}
	if p.SpreadConstraints != nil {
		out.SpreadConstraints = make([]prescheduling.SpreadConstraint, len(p.SpreadConstraints))
		for i, sc := range p.SpreadConstraints {
			out.SpreadConstraints[i] = prescheduling.SpreadConstraint{
				SpreadByField: prescheduling.SpreadFieldValue(sc.SpreadByField),
				SpreadByLabel: sc.SpreadByLabel,
				MaxGroups:     sc.MaxGroups,
				MinGroups:     sc.MinGroups,
			}
		}
	}
	out.ReplicaScheduling = fromReplicaScheduling(p.ReplicaScheduling)
	if p.WorkloadAffinity != nil {
		lost.add("placement.workloadAffinity", "the check does not know which clusters run the workload's affinity group")
	}
	if validate {
		if err := out.Validate(); err != nil {
			return prescheduling.Placement{}, fmt.Errorf("karmada: %w", err)
		}
	}
	return out, lost.err()
}

// fromAffinity copies a Karmada ClusterAffinity; the library's carries the
// same four fields.
func fromAffinity(a *policyv1alpha1.ClusterAffinity) *failover.ClusterAffinity {
	if a == nil {
		return nil
	}
	out := &failover.ClusterAffinity{
		LabelSelector:   a.LabelSelector.DeepCopy(),
		ClusterNames:    slices.Clone(a.ClusterNames),
		ExcludeClusters: slices.Clone(a.ExcludeClusters),
	}
	if a.FieldSelector != nil {
		out.FieldSelector = &failover.FieldSelector{}
		if a.FieldSelector.MatchExpressions != nil {
			out.FieldSelector.MatchExpressions = make([]corev1.NodeSelectorRequirement, len(a.FieldSelector.MatchExpressions))
			for i := range a.FieldSelector.MatchExpressions {
				a.FieldSelector.MatchExpressions[i].DeepCopyInto(&out.FieldSelector.MatchExpressions[i])
			}
		}
	}
	return out
}

func fromReplicaScheduling(rs *policyv1alpha1.ReplicaSchedulingStrategy) *prescheduling.ReplicaSchedulingStrategy {
	if rs == nil {
		return nil
	}
	out := &prescheduling.ReplicaSchedulingStrategy{
		ReplicaSchedulingType:     prescheduling.ReplicaSchedulingType(rs.ReplicaSchedulingType),
		ReplicaDivisionPreference: prescheduling.ReplicaDivisionPreference(rs.ReplicaDivisionPreference),
	}
	if wp := rs.WeightPreference; wp != nil {
		out.WeightPreference = &prescheduling.ClusterPreferences{DynamicWeight: prescheduling.DynamicWeightFactor(wp.DynamicWeight)}
		if wp.StaticWeightList != nil {
			out.WeightPreference.StaticWeightList = make([]prescheduling.StaticClusterWeight, len(wp.StaticWeightList))
			for i := range wp.StaticWeightList {
				w := &wp.StaticWeightList[i]
				out.WeightPreference.StaticWeightList[i] = prescheduling.StaticClusterWeight{
					TargetCluster: *fromAffinity(&w.TargetCluster),
					Weight:        w.Weight,
				}
			}
		}
	}
	return out
}

// FromClusterFailoverBehavior converts a PropagationPolicy's (or a
// binding's) spec.failover.cluster for failover.DecideEviction. Nil stays
// nil: the workload has not opted in, and a PreferNoExecute taint never
// evicts it.
//
// Karmada v1.18's ClusterFailoverBehavior has no tolerationSeconds (the
// proposal that adds PreferNoExecute does), so TolerationSeconds is nil,
// which the library reads as 300 seconds; a fork that adds the field sets it
// on the result. An unknown purge mode is an error naming it.
// failover.cluster.statePreservation does not bear on the decision: it is
// carried into the graceful eviction task by [PreservedLabelState].
func FromClusterFailoverBehavior(c *policyv1alpha1.ClusterFailoverBehavior) (*failover.ClusterFailoverBehavior, error) {
	if c == nil {
		return nil, nil
	}
	m := failover.PurgeMode(c.PurgeMode)
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("karmada: failover.cluster.purgeMode: %w", err)
	}
	return &failover.ClusterFailoverBehavior{PurgeMode: m}, nil
}

// PreschedulingRequest builds the pre-scheduling question for evicting a
// binding from the evicting clusters: spec.placement (by [FromPlacement],
// whose errors it returns, a [*LossError] with the rest of the request),
// spec.clusters as the schedule result, spec.resource.uid, and the clusters
// of spec.gracefulEvictionTasks added to Evicting (the scheduler never
// places the workload back on them). The term the scheduler last used is in
// the status: set ObservedAffinityName from
// status.schedulerObservedAffinityName.
func PreschedulingRequest(spec *workv1alpha2.ResourceBindingSpec, evicting ...string) (prescheduling.Request, error) {
	return preschedulingRequest(spec, true, evicting...)
}

// PreschedulingRequestUnvalidated is [PreschedulingRequest] without
// validating the placement, for a check that validates it itself (a
// prescheduling.Index, which compiles each placement once): it need not
// pay for the validation on every eviction. An invalid placement then
// comes back from the check, infeasible with Code
// prescheduling.InvalidRequest.
func PreschedulingRequestUnvalidated(spec *workv1alpha2.ResourceBindingSpec, evicting ...string) (prescheduling.Request, error) {
	return preschedulingRequest(spec, false, evicting...)
}

// preschedulingRequest is PreschedulingRequest, validating the placement
// only with validate (see fromPlacement).
func preschedulingRequest(spec *workv1alpha2.ResourceBindingSpec, validate bool, evicting ...string) (prescheduling.Request, error) {
	if spec == nil {
		return prescheduling.Request{}, fmt.Errorf("karmada: binding spec is nil")
	}
	p, err := fromPlacement(spec.Placement, validate)
	if err != nil && !isLoss(err) {
		return prescheduling.Request{}, err
	}
	out := prescheduling.Request{
		Placement:   p,
		Scheduled:   fromTargets(spec.Clusters),
		Evicting:    slices.Clone(evicting),
		ResourceUID: string(spec.Resource.UID),
	}
	for _, t := range spec.GracefulEvictionTasks {
		if !slices.Contains(out.Evicting, t.FromCluster) {
			out.Evicting = append(out.Evicting, t.FromCluster)
		}
	}
	return out, err
}

package clustertaint

import (
	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/examples/controllerruntime/api/v1alpha1"
)

// ToCluster is the part of a MemberCluster the library reads: what the
// policies' targetCluster selects on, the taints and the conditions. The
// slices and the map are mc's own, not copies: the library only reads them.
func ToCluster(mc *v1alpha1.MemberCluster) failover.Cluster {
	return failover.Cluster{
		Name:       mc.Name,
		Labels:     mc.Labels,
		Provider:   mc.Spec.Provider,
		Region:     mc.Spec.Region,
		Zones:      mc.Spec.Zones,
		Taints:     mc.Spec.Taints,
		Conditions: mc.Status.Conditions,
	}
}

package karmada_test

import (
	"slices"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"

	"github.com/failoverkit/failover/karmada/scheduling"
)

// karmadaSchedule is Karmada v1.18's scheduling algorithm, run in process
// as karmada-scheduler runs it for one binding (package scheduling): the
// schedule result and the clusterAffinities term that produced it.
func karmadaSchedule(clusters []*clusterv1alpha1.Cluster, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) ([]workv1alpha2.TargetCluster, string, error) {
	return scheduling.Schedule(clusters, spec, status)
}

func targetNames(ts []workv1alpha2.TargetCluster) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	slices.Sort(out)
	return out
}

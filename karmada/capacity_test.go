package karmada_test

import (
	"testing"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/failoverkit/failover/karmada"
)

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestMaxReplicas(t *testing.T) {
	summary := &clusterv1alpha1.ResourceSummary{
		Allocatable: list("cpu", "8", "memory", "32Gi", "pods", "110", "nvidia.com/gpu", "4"),
		Allocated:   list("cpu", "2", "memory", "8Gi", "pods", "20", "nvidia.com/gpu", "4"),
		Allocating:  list("cpu", "500m", "pods", "10"),
	}
	for _, tc := range []struct {
		name    string
		summary *clusterv1alpha1.ResourceSummary
		req     corev1.ResourceList
		nilReq  bool
		want    int32
	}{
		{name: "no requirements: bounded by pods left (110-20-10)", summary: summary, nilReq: true, want: 80},
		{name: "CPU in millicores: 5.5 cores left, 250m each", summary: summary, req: list("cpu", "250m"), want: 22},
		{name: "memory: 24Gi left, 5Gi each", summary: summary, req: list("memory", "5Gi"), want: 4},
		{name: "the tightest resource wins", summary: summary, req: list("cpu", "100m", "memory", "5Gi"), want: 4},
		{name: "pods bound a small request", summary: summary, req: list("cpu", "1m"), want: 80},
		{name: "a resource used up leaves no room", summary: summary, req: list("nvidia.com/gpu", "1"), want: 0},
		{name: "a resource the cluster does not report leaves no room", summary: summary, req: list("example.com/fpga", "1"), want: 0},
		{name: "a zero request does not bound", summary: summary, req: list("memory", "0"), want: 80},
		{name: "no summary yet: no room, as Karmada's estimator says", summary: nil, req: list("cpu", "1"), want: 0},
		{name: "pods over-allocated: no room", summary: &clusterv1alpha1.ResourceSummary{
			Allocatable: list("pods", "10"), Allocated: list("pods", "12")}, nilReq: true, want: 0},
		// Quantities past an int64 saturate instead of wrapping around
		// (issue #22's probe: 1e19 pods read as 0).
		{name: "huge pods saturate", summary: &clusterv1alpha1.ResourceSummary{
			Allocatable: list("pods", "1e19")}, nilReq: true, want: 2147483647},
		{name: "huge CPU in millicores saturates", summary: &clusterv1alpha1.ResourceSummary{
			Allocatable: list("pods", "100", "cpu", "1e17")}, req: list("cpu", "1"), want: 100},
		{name: "a huge request leaves no room", summary: summary, req: list("memory", "1e19"), want: 0},
		{name: "huge allocated leaves no room", summary: &clusterv1alpha1.ResourceSummary{
			Allocatable: list("pods", "100", "cpu", "8"), Allocated: list("cpu", "1e19")}, req: list("cpu", "1"), want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req *workv1alpha2.ReplicaRequirements
			if !tc.nilReq {
				req = &workv1alpha2.ReplicaRequirements{ResourceRequest: tc.req}
			}
			assert.Equal(t, tc.want, karmada.MaxReplicas(tc.summary, req))
		})
	}
}

// CapacityFrom reads a summary only for the clusters asked about: a check
// estimates the candidates, not the fleet.
func TestCapacityFromReadsWhenAsked(t *testing.T) {
	asked := map[string]int{}
	summaries := func(name string) (*clusterv1alpha1.ResourceSummary, bool) {
		asked[name]++
		if name == "gone" {
			return nil, false
		}
		return member(name, "R1", 7).Status.ResourceSummary, true
	}
	capacity := karmada.CapacityFrom(summaries, nil)
	n, known := capacity("a")
	assert.Equal(t, int32(7), n)
	assert.True(t, known)
	_, known = capacity("gone")
	assert.False(t, known)
	assert.Equal(t, map[string]int{"a": 1, "gone": 1}, asked)
}

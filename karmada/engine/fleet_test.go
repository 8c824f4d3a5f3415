package engine_test

import (
	"fmt"
	"testing"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
)

// A Fleet converts each cluster once per change and builds its view again
// only when the check could see the change: a resource summary report, the
// most frequent update by far, is read live and keeps the view.
func TestFleetViewFollowsChangesTheCheckSees(t *testing.T) {
	var f engine.Fleet
	b, a := member("b", "R1", 10), member("a", "R2", 10)
	for _, c := range []*clusterv1alpha1.Cluster{b, a} {
		changed, err := f.Set(c)
		require.NoError(t, err)
		assert.True(t, changed, "a new cluster")
	}
	v := f.View()
	require.Len(t, v.Clusters, 2)
	assert.Equal(t, "a", v.Clusters[0].Name, "sorted by name")
	assert.Same(t, v, f.View(), "nothing changed: the same view")

	report := b.DeepCopy()
	report.Status.ResourceSummary.Allocated[corev1.ResourcePods] = *report.Status.ResourceSummary.Allocatable.Pods()
	changed, err := f.Set(report)
	require.NoError(t, err)
	assert.False(t, changed, "a summary report")
	assert.Same(t, v, f.View(), "a summary report keeps the view")
	s, ok := f.Summary("b")
	require.True(t, ok)
	assert.Equal(t, int32(0), karmada.MaxReplicas(s, nil), "but the summary read is the new one")

	tainted := report.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}}
	changed, _ = f.Set(tainted)
	assert.True(t, changed, "a taint")
	v2 := f.View()
	assert.NotSame(t, v, v2)
	assert.Len(t, v2.Clusters[1].Taints, 1)

	bogus := tainted.DeepCopy()
	bogus.Spec.Taints[0].Effect = "Bogus"
	_, err = f.Set(bogus)
	require.Error(t, err)
	v3 := f.View()
	assert.Len(t, v3.Clusters, 1, "a cluster whose taints do not convert is no target")
	assert.Contains(t, v3.Errors, "b")

	f.Delete("a")
	assert.Empty(t, f.View().Clusters)
	_, ok = f.Summary("a")
	assert.False(t, ok, "gone")
	assert.Equal(t, 1, f.Len())
}

func ExampleFleet() {
	var f engine.Fleet
	for i := range 3 {
		c := &clusterv1alpha1.Cluster{}
		c.Name = fmt.Sprintf("member%d", 3-i)
		if _, err := f.Set(c); err != nil {
			fmt.Println(err)
		}
	}
	v := f.View()
	fmt.Println(len(v.Clusters), v.Clusters[0].Name)
	// Output: 3 member1
}

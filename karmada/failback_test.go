package karmada_test

import (
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover/failback"
	"github.com/failoverkit/failover/karmada"
)

// A failover adds its origin to the binding's record; origins the binding
// runs on again, or recorded under another placement, go; the caller's
// annotations are left as they were.
func TestRecordFailover(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	spec := &workv1alpha2.ResourceBindingSpec{
		Placement: &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1", "m2", "m3", "m4"}}},
		Clusters:  []workv1alpha2.TargetCluster{{Name: "m1", Replicas: 2}, {Name: "m3", Replicas: 1}},
	}
	fp := karmada.PlacementFingerprint(spec.Placement)
	at := func(m time.Duration) metav1.Time { return metav1.NewTime(now.Add(-m * time.Minute)) }
	old := failback.Record{
		{Cluster: "m2", At: at(30), Placement: fp},           // still away from m2: kept
		{Cluster: "m3", At: at(20), Placement: fp},           // back on m3: moot
		{Cluster: "m4", At: at(10), Placement: "0123456789"}, // another placement: moot
	}
	in := map[string]string{"other": "kept", karmada.FailedOverFromAnnotation: old.String()}

	out, err := karmada.RecordFailover(in, spec, "m1", now)
	require.NoError(t, err)
	assert.Equal(t, "kept", out["other"])
	assert.Equal(t, old.String(), in[karmada.FailedOverFromAnnotation], "the caller's map is not changed")
	rec, err := failback.ParseRecord(out[karmada.FailedOverFromAnnotation])
	require.NoError(t, err)
	require.Len(t, rec, 2)
	assert.Equal(t, "m2", rec[0].Cluster)
	assert.Equal(t, "m1", rec[1].Cluster)
	assert.True(t, rec[1].At.Time.Equal(now))
	assert.Equal(t, fp, rec[1].Placement)

	// A record that does not parse starts afresh, and says why.
	out, err = karmada.RecordFailover(map[string]string{karmada.FailedOverFromAnnotation: "[{"}, spec, "m1", now)
	assert.ErrorContains(t, err, "karmada: annotation failover.karmada.io/failed-over-from: failback: record \"[{\"")
	rec, perr := failback.ParseRecord(out[karmada.FailedOverFromAnnotation])
	require.NoError(t, perr)
	require.Len(t, rec, 1)
	assert.Equal(t, "m1", rec[0].Cluster)

	// No annotations at all.
	out, err = karmada.RecordFailover(nil, spec, "m3", now)
	require.NoError(t, err)
	assert.Contains(t, out[karmada.FailedOverFromAnnotation], `"cluster":"m3"`)
}

func TestPlacementFingerprint(t *testing.T) {
	a := &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}}}
	b := &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m2"}}}
	assert.Equal(t, karmada.PlacementFingerprint(a), karmada.PlacementFingerprint(a.DeepCopy()))
	assert.NotEqual(t, karmada.PlacementFingerprint(a), karmada.PlacementFingerprint(b))
	assert.Len(t, karmada.PlacementFingerprint(nil), 16)
}

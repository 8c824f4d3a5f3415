package karmada_test

import (
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/taintpolicy"
)

// Karmada's example Cluster (artifacts/example/cr_cluster.yaml), with the
// single deprecated zone.
const exampleCluster = `
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: cluster-foo
spec:
  syncMode: Push
  apiEndpoint: https://10.10.10.10:6339
  secretRef:
    namespace: karmada-cluster
    name: secret-foo
  provider: huaweicloud
  region: ap-southeast-1
  zone: az-1
`

// A multi-zone member as "kubectl get cluster -o yaml" shows it after the
// taint controller of the failover proposal tainted it (its member1 example).
const taintedCluster = `
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: member1
  labels:
    env: prod
spec:
  syncMode: Push
  apiEndpoint: https://172.18.0.4:6443
  provider: aws
  region: us-east-1
  zones: [us-east-1a, us-east-1b]
  taints:
  - effect: PreferNoExecute
    key: cluster.karmada.io/not-ready
    timeAdded: "2025-01-17T02:41:26Z"
  - effect: NoSchedule
    key: cluster.karmada.io/not-ready
status:
  kubernetesVersion: v1.31.0
  conditions:
  - lastTransitionTime: "2025-01-17T02:36:26Z"
    message: cluster is not reachable
    reason: ClusterNotReachable
    status: "False"
    type: Ready
  resourceSummary:
    allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
    allocated: {cpu: "2", memory: 8Gi, pods: "20"}
`

func TestFromCluster(t *testing.T) {
	added := metav1.NewTime(time.Date(2025, 1, 17, 2, 41, 26, 0, time.UTC).Local()) // as metav1.Time decodes
	notReady := metav1.Condition{
		Type: "Ready", Status: metav1.ConditionFalse, Reason: "ClusterNotReachable", Message: "cluster is not reachable",
		LastTransitionTime: metav1.NewTime(time.Date(2025, 1, 17, 2, 36, 26, 0, time.UTC).Local()),
	}
	for _, tc := range []struct {
		name string
		doc  string
		want failover.Cluster
	}{
		{"the deprecated single zone is carried", exampleCluster, failover.Cluster{
			Name: "cluster-foo", Provider: "huaweicloud", Region: "ap-southeast-1", Zone: "az-1",
		}},
		{"zones, labels, taints and conditions are carried", taintedCluster, failover.Cluster{
			Name: "member1", Labels: map[string]string{"env": "prod"}, Provider: "aws", Region: "us-east-1",
			Zones: []string{"us-east-1a", "us-east-1b"},
			Taints: []corev1.Taint{
				{Key: "cluster.karmada.io/not-ready", Effect: failover.TaintEffectPreferNoExecute, TimeAdded: &added},
				{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoSchedule},
			},
			Conditions: []metav1.Condition{notReady},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := karmada.FromCluster(decode[clusterv1alpha1.Cluster](t, tc.doc))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestFromClusterRefusesTaintsTheLibraryCannotInterpret(t *testing.T) {
	for _, tc := range []struct {
		name  string
		taint corev1.Taint
		want  string
	}{
		{"PreferNoSchedule, which Karmada refuses on clusters", corev1.Taint{Key: "a", Effect: corev1.TaintEffectPreferNoSchedule}, `spec.taints[1].effect: unknown value "PreferNoSchedule"`},
		{"no effect", corev1.Taint{Key: "a"}, `spec.taints[1].effect: unknown value ""`},
		{"a key that is not a qualified name", corev1.Taint{Key: "not a key", Effect: corev1.TaintEffectNoSchedule}, `spec.taints[1].key: invalid value "not a key"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := decode[clusterv1alpha1.Cluster](t, taintedCluster)
			c.Spec.Taints[1] = tc.taint
			_, err := karmada.FromCluster(c)
			require.Error(t, err)
			assert.Contains(t, err.Error(), `karmada: cluster "member1": `+tc.want)
		})
	}
	_, err := karmada.FromCluster(nil)
	assert.EqualError(t, err, "karmada: cluster is nil")
	assert.EqualError(t, karmada.ApplyClusterTaints(nil, nil), "karmada: cluster is nil")
	_, err = karmada.FromUnstructuredCluster(nil)
	assert.EqualError(t, err, "karmada: cluster is nil")
	assert.EqualError(t, karmada.ApplyUnstructuredTaints(nil, nil), "karmada: cluster is nil")
	_, err = karmada.PreschedulingRequest(nil, "member1")
	assert.EqualError(t, err, "karmada: binding spec is nil")
}

func TestFromClusterSharesNoMemory(t *testing.T) {
	c := decode[clusterv1alpha1.Cluster](t, taintedCluster)
	got, err := karmada.FromCluster(c)
	require.NoError(t, err)
	want, err := karmada.FromCluster(c.DeepCopy())
	require.NoError(t, err)

	c.Labels["env"] = "changed"
	c.Spec.Zones[0] = "changed"
	c.Spec.Taints[0].TimeAdded.Time = time.Time{}
	c.Status.Conditions[0].Status = metav1.ConditionTrue
	assert.Equal(t, want, got)
}

func TestApplyClusterTaintsRoundTrips(t *testing.T) {
	c := decode[clusterv1alpha1.Cluster](t, taintedCluster)
	before := c.DeepCopy()
	now := metav1.NewTime(time.Date(2025, 1, 17, 3, 0, 0, 0, time.UTC))
	taints := []corev1.Taint{{Key: "cluster.karmada.io/unreachable", Effect: corev1.TaintEffectNoExecute, TimeAdded: &now}}

	require.NoError(t, karmada.ApplyClusterTaints(c, taints))
	got, err := karmada.FromCluster(c)
	require.NoError(t, err)
	assert.Equal(t, taints, got.Taints)
	before.Spec.Taints = c.Spec.Taints
	assert.Equal(t, before, c, "only spec.taints changed")

	taints[0].Key = "changed"
	assert.Equal(t, "cluster.karmada.io/unreachable", c.Spec.Taints[0].Key, "the cluster keeps its own copy")

	require.NoError(t, karmada.ApplyClusterTaints(c, nil))
	assert.Nil(t, c.Spec.Taints)

	err = karmada.ApplyClusterTaints(c, []corev1.Taint{{Key: "a", Effect: "Bogus"}})
	assert.ErrorContains(t, err, `spec.taints[0].effect: unknown value "Bogus"`)
	assert.Nil(t, c.Spec.Taints, "a refused list leaves the cluster as it was")
}

// The taint controller's loop on typed objects: convert, evaluate the
// released policy, write back, convert again.
func TestEvaluatorTaintsWrittenBack(t *testing.T) {
	c := decode[clusterv1alpha1.Cluster](t, taintedCluster)
	c.Spec.Taints = nil
	p, err := karmada.FromClusterTaintPolicy(decode[policyv1alpha1.ClusterTaintPolicy](t, releasedPolicy))
	require.NoError(t, err)
	ev, err := taintpolicy.NewEvaluator([]taintpolicy.ClusterTaintPolicy{p})
	require.NoError(t, err)

	fc, err := karmada.FromCluster(c)
	require.NoError(t, err)
	res := ev.Evaluate(fc, time.Date(2025, 1, 17, 3, 0, 0, 0, time.UTC))
	require.NoError(t, karmada.ApplyClusterTaints(c, res.Taints))

	fc, err = karmada.FromCluster(c)
	require.NoError(t, err)
	assert.True(t, failover.IsFaulty(fc), "the NoExecute taint the policy adds makes the cluster faulty")
	assert.Len(t, c.Spec.Taints, 2)
}

func TestUnstructuredCluster(t *testing.T) {
	typed := decode[clusterv1alpha1.Cluster](t, taintedCluster)
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: obj}
	// A field a newer Karmada might serve: it must survive a write.
	require.NoError(t, unstructured.SetNestedField(u.Object, "kept", "spec", "fieldFromTheFuture"))

	got, err := karmada.FromUnstructuredCluster(u)
	require.NoError(t, err)
	want, err := karmada.FromCluster(typed)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	taints := []corev1.Taint{{Key: "cluster.karmada.io/unreachable", Effect: corev1.TaintEffectNoExecute}}
	require.NoError(t, karmada.ApplyUnstructuredTaints(u, taints))
	got, err = karmada.FromUnstructuredCluster(u)
	require.NoError(t, err)
	assert.Equal(t, taints, got.Taints)
	v, _, _ := unstructured.NestedString(u.Object, "spec", "fieldFromTheFuture")
	assert.Equal(t, "kept", v)

	require.NoError(t, karmada.ApplyUnstructuredTaints(u, nil))
	_, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "taints")
	assert.False(t, found, "no taints removes spec.taints")

	assert.ErrorContains(t, karmada.ApplyUnstructuredTaints(u, []corev1.Taint{{Key: "a", Effect: "Bogus"}}), `spec.taints[0].effect`)

	bare := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": map[string]any{"name": "bare"}}}
	got, err = karmada.FromUnstructuredCluster(bare)
	require.NoError(t, err)
	assert.Equal(t, failover.Cluster{Name: "bare"}, got, "no spec, no status: no taints, no conditions")

	require.NoError(t, unstructured.SetNestedField(u.Object, int64(3), "spec", "zones"))
	_, err = karmada.FromUnstructuredCluster(u)
	assert.ErrorContains(t, err, `karmada: cluster "member1"`, "a field of the wrong type is an error, not a panic")
}

// Objects with nil maps where a dynamic client would have decoded empty
// ones: a clear error or the write, never a panic (issue #22's probe).
func TestApplyUnstructuredTaintsNilMaps(t *testing.T) {
	taints := []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}
	assert.EqualError(t, karmada.ApplyUnstructuredTaints(&unstructured.Unstructured{}, taints), "karmada: cluster is nil")
	assert.EqualError(t, karmada.ApplyUnstructuredTaints(&unstructured.Unstructured{}, nil), "karmada: cluster is nil")

	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": map[string]any{"name": "m1"}, "spec": map[string]any(nil)}}
	require.NoError(t, karmada.ApplyUnstructuredTaints(u, taints))
	got, err := karmada.FromUnstructuredCluster(u)
	require.NoError(t, err)
	assert.Equal(t, taints, got.Taints)

	u.Object["spec"] = map[string]any(nil)
	require.NoError(t, karmada.ApplyUnstructuredTaints(u, nil), "no taints to remove from a nil spec")

	u.Object["spec"] = "not an object"
	assert.ErrorContains(t, karmada.ApplyUnstructuredTaints(u, taints), `karmada: cluster "m1": spec.taints: value cannot be set because .spec is not a map`)
}

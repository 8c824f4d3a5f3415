package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/taintpolicy"
)

func TestClusterFromUnstructured(t *testing.T) {
	added := metav1.NewTime(time.Date(2025, 1, 17, 2, 41, 26, 0, time.UTC).Local())
	lastTransition := metav1.NewTime(time.Date(2025, 1, 17, 2, 36, 26, 0, time.UTC).Local())
	tests := []struct {
		name    string
		obj     map[string]any
		want    failover.Cluster
		wantErr string
	}{
		{
			name: "every field the evaluator reads is converted",
			obj: map[string]any{
				"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
				"metadata": map[string]any{"name": "member1", "labels": map[string]any{"env": "prod"}},
				"spec": map[string]any{
					"apiEndpoint": "https://172.18.0.4:6443",
					"provider":    "aws", "region": "eu-west-1", "zone": "eu-west-1a", "zones": []any{"eu-west-1a", "eu-west-1b"},
					"taints": []any{map[string]any{
						"key": "cluster.karmada.io/not-ready", "effect": "PreferNoExecute", "timeAdded": "2025-01-17T02:41:26Z",
					}},
				},
				"status": map[string]any{"conditions": []any{map[string]any{
					"type": "Ready", "status": "False", "reason": "ClusterNotReachable",
					"message": "cluster is not reachable", "lastTransitionTime": "2025-01-17T02:36:26Z",
				}}},
			},
			want: failover.Cluster{
				Name: "member1", Labels: map[string]string{"env": "prod"},
				Provider: "aws", Region: "eu-west-1", Zone: "eu-west-1a", Zones: []string{"eu-west-1a", "eu-west-1b"},
				Taints: []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: failover.TaintEffectPreferNoExecute, TimeAdded: &added}},
				Conditions: []metav1.Condition{{
					Type: "Ready", Status: metav1.ConditionFalse, Reason: "ClusterNotReachable",
					Message: "cluster is not reachable", LastTransitionTime: lastTransition,
				}},
			},
		},
		{
			name: "a cluster without spec or status has no taints and no conditions",
			obj: map[string]any{
				"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
				"metadata": map[string]any{"name": "bare"},
			},
			want: failover.Cluster{Name: "bare"},
		},
		{
			name: "malformed taints are an error naming the cluster",
			obj: map[string]any{
				"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
				"metadata": map[string]any{"name": "broken"},
				"spec":     map[string]any{"taints": "not-a-list"},
			},
			wantErr: `controller: cluster "broken"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ClusterFromUnstructured(&unstructured.Unstructured{Object: tt.obj})
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestSetTaintsRoundTripsAndKeepsOtherFields(t *testing.T) {
	added := metav1.NewTime(time.Date(2025, 1, 17, 2, 41, 26, 0, time.UTC).Local())
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": "member1", "resourceVersion": "42"},
		"spec":     map[string]any{"apiEndpoint": "https://172.18.0.4:6443", "taints": []any{}},
	}}
	taints := []corev1.Taint{
		{Key: "example.com/maintenance", Value: "by-user", Effect: corev1.TaintEffectNoSchedule},
		{Key: "cluster.karmada.io/not-ready", Effect: failover.TaintEffectPreferNoExecute, TimeAdded: &added},
	}
	require.NoError(t, setTaints(u, taints))
	got, err := ClusterFromUnstructured(u)
	require.NoError(t, err)
	assert.Equal(t, taints, got.Taints)
	assert.Equal(t, "42", u.GetResourceVersion(), "the resourceVersion read must be the one sent back")
	endpoint, _, _ := unstructured.NestedString(u.Object, "spec", "apiEndpoint")
	assert.Equal(t, "https://172.18.0.4:6443", endpoint)

	require.NoError(t, setTaints(u, nil))
	_, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "taints")
	assert.False(t, found, "an empty taint list removes spec.taints")
}

func TestPolicyFromUnstructured(t *testing.T) {
	tests := []struct {
		name    string
		spec    map[string]any
		check   func(t *testing.T, p taintpolicy.ClusterTaintPolicy)
		wantErr []string
	}{
		{
			name: "windowed form decodes with its windows",
			spec: map[string]any{
				"targetCluster":   map[string]any{"clusterNames": []any{"member1"}},
				"matchConditions": []any{map[string]any{"conditionType": "Ready", "operator": "In", "statusValues": []any{"False", "Unknown"}}},
				"taintsToAdd": []any{map[string]any{
					"key": "cluster.karmada.io/not-ready", "effect": "PreferNoExecute",
					"addOnMatchSeconds": int64(30), "removeOnMismatchSeconds": int64(20),
				}},
			},
			check: func(t *testing.T, p taintpolicy.ClusterTaintPolicy) {
				require.Len(t, p.Spec.TaintsToAdd, 1)
				assert.Equal(t, int32(30), *p.Spec.TaintsToAdd[0].AddOnMatchSeconds)
				assert.Equal(t, int32(20), *p.Spec.TaintsToAdd[0].RemoveOnMismatchSeconds)
				assert.Equal(t, []string{"member1"}, p.Spec.TargetCluster.ClusterNames)
			},
		},
		{
			name: "released Karmada form decodes",
			spec: map[string]any{
				"targetClusters":     map[string]any{"clusterNames": []any{"member1"}},
				"addOnConditions":    []any{map[string]any{"conditionType": "Ready", "operator": "In", "statusValues": []any{"False"}}},
				"removeOnConditions": []any{map[string]any{"conditionType": "Ready", "operator": "In", "statusValues": []any{"True"}}},
				"taints":             []any{map[string]any{"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}},
			},
			check: func(t *testing.T, p taintpolicy.ClusterTaintPolicy) {
				assert.True(t, p.Spec.Released())
				require.Len(t, p.Spec.Taints, 1)
			},
		},
		{
			name: "an invalid operator is an error naming the policy and the field",
			spec: map[string]any{
				"matchConditions": []any{map[string]any{"conditionType": "Ready", "operator": "Exists", "statusValues": []any{"False"}}},
				"taintsToAdd":     []any{map[string]any{"key": "cluster.karmada.io/not-ready", "effect": "PreferNoExecute"}},
			},
			wantErr: []string{`controller: policy "p"`, "spec.matchConditions[0].operator", "Exists"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterTaintPolicy",
				"metadata": map[string]any{"name": "p"}, "spec": tt.spec,
			}}
			p, err := PolicyFromUnstructured(u)
			if tt.wantErr != nil {
				require.Error(t, err)
				for _, s := range tt.wantErr {
					assert.True(t, strings.Contains(err.Error(), s), "error %q lacks %q", err, s)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "p", p.Name)
			tt.check(t, p)
		})
	}
}

package controller

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/failoverkit/failover/taintpolicy"
)

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
			name: "released form: the windows of a Karmada fork's CRD extension are kept",
			spec: map[string]any{
				"addOnConditions": []any{map[string]any{"conditionType": "Ready", "operator": "In", "statusValues": []any{"False"}}},
				"taints": []any{map[string]any{
					"key": "cluster.karmada.io/not-ready", "effect": "PreferNoExecute",
					"addOnMatchSeconds": int64(30), "removeOnMismatchSeconds": int64(20),
				}},
			},
			check: func(t *testing.T, p taintpolicy.ClusterTaintPolicy) {
				require.Len(t, p.Spec.Taints, 1)
				require.NotNil(t, p.Spec.Taints[0].AddOnMatchSeconds)
				require.NotNil(t, p.Spec.Taints[0].RemoveOnMismatchSeconds)
				assert.Equal(t, int32(30), *p.Spec.Taints[0].AddOnMatchSeconds)
				assert.Equal(t, int32(20), *p.Spec.Taints[0].RemoveOnMismatchSeconds)
			},
		},
		{
			name: "released form: a field Karmada's type does not define is an error, not a silent drop",
			spec: map[string]any{
				"addOnConditions":   []any{map[string]any{"conditionType": "Ready", "operator": "In", "statusValues": []any{"False"}}},
				"taints":            []any{map[string]any{"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}},
				"tolerationSeconds": int64(30),
			},
			wantErr: []string{`controller: policy "p"`, `unknown field "spec.tolerationSeconds"`},
		},
		{
			name: "released form: an unknown effect is an error naming the field",
			spec: map[string]any{
				"addOnConditions": []any{map[string]any{"conditionType": "Ready", "operator": "In", "statusValues": []any{"False"}}},
				"taints":          []any{map[string]any{"key": "cluster.karmada.io/not-ready", "effect": "PreferNoSchedule"}},
			},
			wantErr: []string{`controller: policy "p"`, `karmada: cluster taint policy "p"`, "spec.taints[0].effect", "PreferNoSchedule"},
		},
		{
			name: "windowed form: an unknown field is an error",
			spec: map[string]any{
				"matchConditions": []any{map[string]any{"conditionType": "Ready", "operator": "In", "statusValues": []any{"False"}}},
				"taintsToAdd":     []any{map[string]any{"key": "cluster.karmada.io/not-ready", "effect": "PreferNoExecute", "addOnMatchSecond": int64(3)}},
			},
			wantErr: []string{`controller: policy "p"`, `unknown field "spec.taintsToAdd[0].addOnMatchSecond"`},
		},
		{
			name: "a policy mixing both forms is refused",
			spec: map[string]any{
				"matchConditions": []any{map[string]any{"conditionType": "Ready", "operator": "In", "statusValues": []any{"False"}}},
				"taints":          []any{map[string]any{"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}},
			},
			wantErr: []string{`controller: policy "p"`, "spec.matchConditions"},
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

package karmada_test

import (
	"strings"
	"testing"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/taintpolicy"
)

// The policy of Karmada's "Cluster Taint Management" user guide: taint a
// member that is not Ready so that nothing new lands there and what runs
// there leaves, and lift both taints when it is Ready again.
const releasedPolicy = `
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata:
  name: detect-cluster-notready
spec:
  targetClusters:
    clusterNames:
    - member1
    - member2
  addOnConditions:
  - conditionType: Ready
    operator: NotIn
    statusValues:
    - "True"
  removeOnConditions:
  - conditionType: Ready
    operator: In
    statusValues:
    - "True"
  taints:
  - key: cluster.karmada.io/not-ready
    effect: NoSchedule
  - key: cluster.karmada.io/not-ready
    effect: NoExecute
    value: down
`

func TestFromClusterTaintPolicyMatchesLoadPolicies(t *testing.T) {
	got, err := karmada.FromClusterTaintPolicy(decode[policyv1alpha1.ClusterTaintPolicy](t, releasedPolicy))
	require.NoError(t, err)

	// The same YAML read by taintpolicy's own loader: the two paths into
	// the library must agree field for field.
	want, err := taintpolicy.LoadPolicies(strings.NewReader(releasedPolicy))
	require.NoError(t, err)
	require.Len(t, want, 1)
	assert.Equal(t, want[0], got)
	assert.True(t, got.Spec.Released())
	assert.Equal(t, []string{"member1", "member2"}, got.Spec.TargetClusters.ClusterNames)
}

func TestFromClusterTaintPolicyRefusesWhatTaintpolicyRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*policyv1alpha1.ClusterTaintPolicy)
		want   string
	}{
		{"an unknown operator", func(p *policyv1alpha1.ClusterTaintPolicy) { p.Spec.AddOnConditions[0].Operator = "Exists" },
			`spec.addOnConditions[0].operator: Unsupported value: "Exists"`},
		{"an unknown taint effect", func(p *policyv1alpha1.ClusterTaintPolicy) { p.Spec.Taints[1].Effect = "PreferNoSchedule" },
			`spec.taints[1].effect: Unsupported value: "PreferNoSchedule"`},
		{"a malformed selector", func(p *policyv1alpha1.ClusterTaintPolicy) {
			p.Spec.TargetClusters.ClusterNames = nil
			p.Spec.TargetClusters.FieldSelector = &policyv1alpha1.FieldSelector{}
			p.Spec.TargetClusters.FieldSelector.MatchExpressions = append(p.Spec.TargetClusters.FieldSelector.MatchExpressions,
				nodeReq("country", "In", "cn"))
		}, `spec.targetClusters.fieldSelector.matchExpressions[0]: Invalid value: "country In cn": unknown field "country"`},
		{"no taints", func(p *policyv1alpha1.ClusterTaintPolicy) { p.Spec.Taints = nil }, `spec.taints`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := decode[policyv1alpha1.ClusterTaintPolicy](t, releasedPolicy)
			tc.mutate(p)
			_, err := karmada.FromClusterTaintPolicy(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), `karmada: cluster taint policy "detect-cluster-notready": `)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := karmada.FromClusterTaintPolicy(nil)
	assert.EqualError(t, err, "karmada: cluster taint policy is nil")
}

// unstructuredPolicy decodes doc as the manager's cache holds an object of
// a CRD: unstructured, with nothing dropped.
func unstructuredPolicy(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
	return &unstructured.Unstructured{Object: obj}
}

// withWindows is releasedPolicy as a fork with the CRD extension stores it.
var withWindows = strings.Replace(releasedPolicy, "    effect: NoSchedule\n",
	"    effect: NoSchedule\n    addOnMatchSeconds: 60\n    removeOnMismatchSeconds: 30\n", 1)

func TestFromUnstructuredClusterTaintPolicyKeepsTheWindows(t *testing.T) {
	got, err := karmada.FromUnstructuredClusterTaintPolicy(unstructuredPolicy(t, withWindows))
	require.NoError(t, err)
	want, err := taintpolicy.LoadPolicies(strings.NewReader(withWindows))
	require.NoError(t, err)
	require.Len(t, want, 1)
	assert.Equal(t, want[0], got)
	require.NotNil(t, got.Spec.Taints[0].AddOnMatchSeconds)
	require.NotNil(t, got.Spec.Taints[0].RemoveOnMismatchSeconds)
	assert.Equal(t, int32(60), *got.Spec.Taints[0].AddOnMatchSeconds)
	assert.Equal(t, int32(30), *got.Spec.Taints[0].RemoveOnMismatchSeconds)
	assert.Nil(t, got.Spec.Taints[1].AddOnMatchSeconds, "unset means no window")
}

// Without the extension the two paths agree: what Karmada's Go type reads
// is what the unstructured object holds.
func TestFromUnstructuredClusterTaintPolicyMatchesTheTypedConversion(t *testing.T) {
	typed := decode[policyv1alpha1.ClusterTaintPolicy](t, releasedPolicy)
	want, err := karmada.FromClusterTaintPolicy(typed)
	require.NoError(t, err)
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	require.NoError(t, err)
	got, err := karmada.FromUnstructuredClusterTaintPolicy(&unstructured.Unstructured{Object: obj})
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestFromUnstructuredClusterTaintPolicyRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want string
	}{
		{"a field the library has no place for",
			strings.Replace(withWindows, "addOnMatchSeconds: 60", "addOnMatchSeconds: 60\n    tolerationSeconds: 5", 1),
			`karmada: cluster taint policy "detect-cluster-notready": unknown field "spec.taints[0].tolerationSeconds"`},
		{"a negative window", strings.Replace(withWindows, "addOnMatchSeconds: 60", "addOnMatchSeconds: -1", 1),
			`karmada: cluster taint policy "detect-cluster-notready": spec.taints[0].addOnMatchSeconds: Invalid value: -1: must be at least 0`},
		{"a window that is not a number", strings.Replace(withWindows, "addOnMatchSeconds: 60", "addOnMatchSeconds: 1m", 1),
			`karmada: cluster taint policy "detect-cluster-notready": spec.taints[0].addOnMatchSeconds: "1m": want an integer (int32)`},
		{"an unknown taint effect", strings.Replace(withWindows, "effect: NoExecute", "effect: PreferNoSchedule", 1),
			`spec.taints[1].effect: Unsupported value: "PreferNoSchedule"`},
		{"another kind", strings.Replace(withWindows, "kind: ClusterTaintPolicy", "kind: PropagationPolicy", 1),
			`karmada: cluster taint policy "detect-cluster-notready": apiVersion "policy.karmada.io/v1alpha1", kind "PropagationPolicy": want "policy.karmada.io/v1alpha1", "ClusterTaintPolicy"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := karmada.FromUnstructuredClusterTaintPolicy(unstructuredPolicy(t, tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := karmada.FromUnstructuredClusterTaintPolicy(nil)
	assert.EqualError(t, err, "karmada: cluster taint policy is nil")
}

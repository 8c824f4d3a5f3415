package karmada_test

import (
	"strings"
	"testing"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

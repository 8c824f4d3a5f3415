package failover_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/failoverkit/failover"
)

func TestIsFaulty(t *testing.T) {
	cases := []struct {
		name    string
		effects []corev1.TaintEffect
		want    bool
	}{
		{"no taints is healthy", nil, false},
		{"NoSchedule alone does not make a cluster faulty", []corev1.TaintEffect{corev1.TaintEffectNoSchedule}, false},
		{"PreferNoSchedule alone does not make a cluster faulty", []corev1.TaintEffect{corev1.TaintEffectPreferNoSchedule}, false},
		{"NoExecute makes a cluster faulty", []corev1.TaintEffect{corev1.TaintEffectNoExecute}, true},
		{"PreferNoExecute makes a cluster faulty", []corev1.TaintEffect{failover.TaintEffectPreferNoExecute}, true},
		{"any faulty taint among others counts", []corev1.TaintEffect{corev1.TaintEffectNoSchedule, failover.TaintEffectPreferNoExecute}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := failover.Cluster{Name: "m1"}
			for _, e := range tc.effects {
				c.Taints = append(c.Taints, corev1.Taint{Key: "k", Effect: e})
			}
			assert.Equal(t, tc.want, failover.IsFaulty(c))
		})
	}
}

func TestClusterCondition(t *testing.T) {
	c := failover.Cluster{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse}}}
	require.NotNil(t, c.Condition("Ready"))
	assert.Equal(t, metav1.ConditionFalse, c.Condition("Ready").Status)
	assert.Nil(t, c.Condition("Missing"))
}

func TestClusterAffinityMatches(t *testing.T) {
	m1 := failover.Cluster{Name: "member1", Labels: map[string]string{"env": "prod"}, Provider: "aws", Region: "us-east-1", Zone: "us-east-1a"}
	m2 := failover.Cluster{Name: "member2", Labels: map[string]string{"env": "dev"}, Provider: "gcp", Region: "eu-west-1"}
	fieldIn := func(key string, op corev1.NodeSelectorOperator, values ...string) *failover.FieldSelector {
		return &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	cases := []struct {
		name     string
		affinity *failover.ClusterAffinity
		cluster  failover.Cluster
		want     bool
	}{
		{"nil affinity matches every cluster", nil, m1, true},
		{"empty affinity matches every cluster", &failover.ClusterAffinity{}, m2, true},
		{"listed name matches", &failover.ClusterAffinity{ClusterNames: []string{"member1"}}, m1, true},
		{"unlisted name does not match", &failover.ClusterAffinity{ClusterNames: []string{"member1"}}, m2, false},
		{"exclude wins over clusterNames", &failover.ClusterAffinity{ClusterNames: []string{"member1"}, ExcludeClusters: []string{"member1"}}, m1, false},
		{"label selector matches", &failover.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, m1, true},
		{"label selector rejects", &failover.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, m2, false},
		{"region In matches", &failover.ClusterAffinity{FieldSelector: fieldIn("region", corev1.NodeSelectorOpIn, "us-east-1")}, m1, true},
		{"region In rejects", &failover.ClusterAffinity{FieldSelector: fieldIn("region", corev1.NodeSelectorOpIn, "us-east-1")}, m2, false},
		{"provider NotIn", &failover.ClusterAffinity{FieldSelector: fieldIn("provider", corev1.NodeSelectorOpNotIn, "aws")}, m2, true},
		{"zone Exists matches a cluster with a zone", &failover.ClusterAffinity{FieldSelector: fieldIn("zone", corev1.NodeSelectorOpExists)}, m1, true},
		{"zone Exists rejects a cluster without one", &failover.ClusterAffinity{FieldSelector: fieldIn("zone", corev1.NodeSelectorOpExists)}, m2, false},
		{"every part must hold", &failover.ClusterAffinity{
			ClusterNames:  []string{"member1", "member2"},
			FieldSelector: fieldIn("region", corev1.NodeSelectorOpIn, "eu-west-1"),
		}, m1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.affinity.Matches(tc.cluster)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestClusterAffinityMalformedIsAnError(t *testing.T) {
	cases := []struct {
		name     string
		affinity failover.ClusterAffinity
		wantErr  string
	}{
		{"bad label operator", failover.ClusterAffinity{LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}}, "labelSelector"},
		{"In without values", failover.ClusterAffinity{LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn}}}}, "labelSelector"},
		{"unknown field key", failover.ClusterAffinity{FieldSelector: &failover.FieldSelector{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "country", Operator: corev1.NodeSelectorOpIn, Values: []string{"x"}}}}}, `unknown field "country"`},
		{"Gt is not a field operator", failover.ClusterAffinity{FieldSelector: &failover.FieldSelector{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpGt, Values: []string{"1"}}}}}, `operator "Gt"`},
		{"malformed selector on an excluded cluster still reported", failover.ClusterAffinity{ExcludeClusters: []string{"member1"}, FieldSelector: &failover.FieldSelector{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "country", Operator: corev1.NodeSelectorOpIn, Values: []string{"x"}}}}}, "country"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := tc.affinity.Matches(failover.Cluster{Name: "member1", Region: "r"})
			require.Error(t, err)
			assert.False(t, ok)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.Error(t, tc.affinity.Validate())
		})
	}
}

func TestClusterAffinityDecodesKarmadaJSON(t *testing.T) {
	const doc = `
clusterNames: [member1, member2]
exclude: [member3]
labelSelector:
  matchLabels: {env: prod}
fieldSelector:
  matchExpressions:
  - key: region
    operator: In
    values: [us-east-1]
`
	var a failover.ClusterAffinity
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &a))
	assert.Equal(t, []string{"member1", "member2"}, a.ClusterNames)
	assert.Equal(t, []string{"member3"}, a.ExcludeClusters)
	require.NotNil(t, a.FieldSelector)
	assert.Equal(t, "region", a.FieldSelector.MatchExpressions[0].Key)
}

func TestPurgeMode(t *testing.T) {
	cases := []struct {
		in      string
		want    failover.PurgeMode
		wantErr bool
	}{
		{"Directly", failover.PurgeModeDirectly, false},
		{"Gracefully", failover.PurgeModeGracefully, false},
		{"Never", failover.PurgeModeNever, false},
		{"Immediately", failover.PurgeModeDirectly, false},
		{"Graciously", failover.PurgeModeGracefully, false},
		{"", failover.PurgeModeGracefully, false},
		{"gracefully", "", true},
		{"Later", "", true},
	}
	for _, tc := range cases {
		t.Run("parse "+tc.in, func(t *testing.T) {
			got, err := failover.ParsePurgeMode(tc.in)
			if tc.wantErr {
				require.Error(t, err)
				assert.True(t, strings.Contains(err.Error(), `"`+tc.in+`"`), "error names the value: %v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestAffinityFieldAbsentSemantics(t *testing.T) {
	noZone := failover.Cluster{Name: "m", Region: "r1"}
	req := func(op corev1.NodeSelectorOperator, values ...string) *failover.ClusterAffinity {
		return &failover.ClusterAffinity{FieldSelector: &failover.FieldSelector{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: failover.ZoneField, Operator: op, Values: values}}}}
	}
	cases := []struct {
		name string
		a    *failover.ClusterAffinity
		want bool
	}{
		{"In never matches an absent field", req(corev1.NodeSelectorOpIn, "z1"), false},
		{"NotIn matches an absent field", req(corev1.NodeSelectorOpNotIn, "z1"), true},
		{"DoesNotExist matches an absent field", req(corev1.NodeSelectorOpDoesNotExist), true},
		{"Exists does not match an absent field", req(corev1.NodeSelectorOpExists), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := tc.a.Compile()
			require.NoError(t, err)
			assert.Equal(t, tc.want, m.Matches(&noZone))
		})
	}
}

func TestCompiledMatcherIgnoresLaterChanges(t *testing.T) {
	a := &failover.ClusterAffinity{ClusterNames: []string{"member1"}}
	m, err := a.Compile()
	require.NoError(t, err)
	a.ClusterNames[0] = "member2"
	assert.True(t, m.Matches(&failover.Cluster{Name: "member1"}), "the matcher keeps the names it was compiled with")
	assert.False(t, m.Matches(&failover.Cluster{Name: "member2"}))

	var nilAffinity *failover.ClusterAffinity
	all, err := nilAffinity.Compile()
	require.NoError(t, err)
	assert.True(t, all.Matches(&failover.Cluster{Name: "anything"}))
}

func TestClusterAffinityDeepCopySharesNothing(t *testing.T) {
	orig := &failover.ClusterAffinity{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
		FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: failover.RegionField, Operator: corev1.NodeSelectorOpIn, Values: []string{"r1"}}}},
		ClusterNames:    []string{"a"},
		ExcludeClusters: []string{"b"},
	}
	cp := orig.DeepCopy()
	require.Equal(t, orig, cp)
	cp.LabelSelector.MatchLabels["env"] = "dev"
	cp.FieldSelector.MatchExpressions[0].Values[0] = "r2"
	cp.ClusterNames[0] = "x"
	cp.ExcludeClusters[0] = "y"
	assert.Equal(t, "prod", orig.LabelSelector.MatchLabels["env"])
	assert.Equal(t, "r1", orig.FieldSelector.MatchExpressions[0].Values[0])
	assert.Equal(t, []string{"a"}, orig.ClusterNames)
	assert.Equal(t, []string{"b"}, orig.ExcludeClusters)
	assert.Nil(t, (*failover.ClusterAffinity)(nil).DeepCopy())
}

func TestAffinityLongNameLists(t *testing.T) {
	var names, exclude []string
	for i := range 100 {
		names = append(names, "member"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	exclude = append(exclude, names[:20]...)
	a := &failover.ClusterAffinity{ClusterNames: names, ExcludeClusters: exclude}
	m, err := a.Compile()
	require.NoError(t, err)
	assert.False(t, m.Matches(&failover.Cluster{Name: names[0]}), "excluded by a long exclude list")
	assert.True(t, m.Matches(&failover.Cluster{Name: names[50]}), "listed in a long clusterNames list")
	assert.False(t, m.Matches(&failover.Cluster{Name: "unlisted"}))
}

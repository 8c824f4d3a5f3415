package failover_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
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
	a := &failover.ClusterAffinity{ClusterNames: []string{"member1", "member3"}, ExcludeClusters: []string{"member3"}}
	m, err := a.Compile()
	require.NoError(t, err)
	a.ClusterNames[0] = "member2"
	a.ExcludeClusters[0] = "member1"
	assert.True(t, m.Matches(&failover.Cluster{Name: "member1"}), "the matcher keeps the names it was compiled with")
	assert.False(t, m.Matches(&failover.Cluster{Name: "member2"}))
	assert.False(t, m.Matches(&failover.Cluster{Name: "member3"}), "and the exclusions")

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

func TestClusterDeepCopySharesNothing(t *testing.T) {
	orig := &failover.Cluster{Name: "m1", Labels: map[string]string{"env": "prod"}, Zones: []string{"z1"},
		Taints:     []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{}}},
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse}}}
	cp := orig.DeepCopy()
	require.Equal(t, orig, cp)
	cp.Labels["env"] = "dev"
	cp.Zones[0] = "z2"
	cp.Taints[0].TimeAdded.Time = cp.Taints[0].TimeAdded.Add(1)
	cp.Conditions[0].Status = metav1.ConditionTrue
	assert.Equal(t, "prod", orig.Labels["env"])
	assert.Equal(t, []string{"z1"}, orig.Zones)
	assert.True(t, orig.Taints[0].TimeAdded.IsZero())
	assert.Equal(t, metav1.ConditionFalse, orig.Conditions[0].Status)
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

// A selector that does not parse is an *AffinityError whose Field is the path
// inside the affinity, so that a type embedding the affinity can name it by
// its own path; its message keeps the root package's prefix.
func TestAffinityErrorNamesTheField(t *testing.T) {
	expr := func(es ...corev1.NodeSelectorRequirement) *failover.FieldSelector {
		return &failover.FieldSelector{MatchExpressions: es}
	}
	region := corev1.NodeSelectorRequirement{Key: failover.RegionField, Operator: corev1.NodeSelectorOpIn, Values: []string{"eu"}}
	cases := []struct {
		name      string
		a         failover.ClusterAffinity
		wantField string
		wantErr   string
	}{
		{"label selector", failover.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "v"}}},
			"labelSelector", `failover: clusterAffinity.labelSelector: key: Invalid value: "bad key!"`},
		{"second expression's key", failover.ClusterAffinity{FieldSelector: expr(region, corev1.NodeSelectorRequirement{Key: "country", Operator: corev1.NodeSelectorOpIn, Values: []string{"fr"}})},
			"fieldSelector.matchExpressions[1].key", `failover: clusterAffinity.fieldSelector.matchExpressions[1].key: unknown field "country": want provider, region or zone`},
		{"operator", failover.ClusterAffinity{FieldSelector: expr(corev1.NodeSelectorRequirement{Key: failover.ZoneField, Operator: corev1.NodeSelectorOpGt, Values: []string{"1"}})},
			"fieldSelector.matchExpressions[0].operator", `failover: clusterAffinity.fieldSelector.matchExpressions[0].operator: unsupported operator "Gt": want In, NotIn, Exists or DoesNotExist`},
		{"In without values", failover.ClusterAffinity{FieldSelector: expr(corev1.NodeSelectorRequirement{Key: failover.RegionField, Operator: corev1.NodeSelectorOpIn})},
			"fieldSelector.matchExpressions[0]", `failover: clusterAffinity.fieldSelector.matchExpressions[0]: values: Invalid value`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.a.Compile()
			var ae *failover.AffinityError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tc.wantField, ae.Field)
			assert.ErrorContains(t, err, tc.wantErr)
			assert.Equal(t, "failover: clusterAffinity."+ae.Field+": "+ae.Err.Error(), err.Error())
			assert.ErrorAs(t, tc.a.Validate(), &ae)
		})
	}
}

// ClusterNames and ExcludeClusters tell every name apart exactly, whatever
// the size of the list: names differing only in one byte, empty names and
// one-byte names.
func TestAffinityNameListsOfEverySize(t *testing.T) {
	pool := []string{"", "a", "b", "ab", "xa1", "ya1", "member-00001", "xember-00001", "member-00011", "member-10001", "m"}
	for n := range len(pool) + 1 {
		listed := pool[:n]
		m, err := (&failover.ClusterAffinity{ClusterNames: listed}).Compile()
		require.NoError(t, err)
		ex, err := (&failover.ClusterAffinity{ExcludeClusters: listed}).Compile()
		require.NoError(t, err)
		for _, name := range append(pool, "c", "zz", "member-00002") {
			in := slices.Contains(listed, name)
			assert.Equal(t, in || n == 0, m.Matches(&failover.Cluster{Name: name}), "%q in clusterNames %q", name, listed)
			assert.Equal(t, !in, ex.Matches(&failover.Cluster{Name: name}), "%q in exclude %q", name, listed)
		}
	}
}

// affinityGen draws affinities and clusters from small pools, so that
// matches are frequent, malformed selectors included.
type affinityGen struct{ *rand.Rand }

func (g affinityGen) pick(xs ...string) string { return xs[g.IntN(len(xs))] }

var fuzzNames = []string{"", "a", "b", "xa1", "ya1", "member-00001", "member-00002", "member-00011", "xember-00001", "member-10001", "m"}

func (g affinityGen) names() []string {
	out := make([]string, g.IntN(len(fuzzNames)+2)) // up to 12: short lists and maps
	for i := range out {
		out[i] = g.pick(fuzzNames...)
	}
	return out
}

func (g affinityGen) affinity() *failover.ClusterAffinity {
	if g.IntN(8) == 0 {
		return nil
	}
	a := &failover.ClusterAffinity{}
	if g.IntN(2) == 0 {
		a.LabelSelector = &metav1.LabelSelector{}
		if g.IntN(2) == 0 {
			a.LabelSelector.MatchLabels = map[string]string{g.pick("env", "tier", "bad key!"): g.pick("prod", "gold", "")}
		}
		for range g.IntN(3) {
			a.LabelSelector.MatchExpressions = append(a.LabelSelector.MatchExpressions, metav1.LabelSelectorRequirement{
				Key:      g.pick("env", "tier", "zone"),
				Operator: metav1.LabelSelectorOperator(g.pick("In", "NotIn", "Exists", "DoesNotExist", "Near")),
				Values:   []string{g.pick("prod", "gold", "silver"), "dev"}[:g.IntN(3)]})
		}
	}
	if g.IntN(2) == 0 {
		a.FieldSelector = &failover.FieldSelector{}
		for range g.IntN(3) {
			a.FieldSelector.MatchExpressions = append(a.FieldSelector.MatchExpressions, corev1.NodeSelectorRequirement{
				Key:      g.pick(failover.ProviderField, failover.RegionField, failover.ZoneField, "country", ""),
				Operator: corev1.NodeSelectorOperator(g.pick("In", "NotIn", "Exists", "DoesNotExist", "Gt", "")),
				Values:   []string{g.pick("eu", "us", "aws", "eu-1a", "", "bad value!"), "gcp"}[:g.IntN(3)]})
		}
	}
	if g.IntN(2) == 0 {
		a.ClusterNames = g.names()
	}
	if g.IntN(2) == 0 {
		a.ExcludeClusters = g.names()
	}
	return a
}

func (g affinityGen) cluster() failover.Cluster {
	c := failover.Cluster{
		Name:     g.pick(append(fuzzNames, "c", "member-00003")...),
		Provider: g.pick("aws", "gcp", ""),
		Region:   g.pick("eu", "us", ""),
		Zone:     g.pick("eu-1a", "us-1a", ""),
		Labels:   map[string]string{"env": g.pick("prod", "dev")},
	}
	for range g.IntN(4) - 1 { // some clusters span zones, and then ignore Zone
		c.Zones = append(c.Zones, g.pick("eu-1a", "eu-1b", "us-1a", "gcp"))
	}
	if t := g.pick("gold", "silver", ""); t != "" {
		c.Labels["tier"] = t
	}
	return c
}

// referenceMatches is the documented semantics spelled out with
// apimachinery's own selectors, as Karmada evaluates an affinity: the field
// selector is a label selector over the fields a cluster has (non-empty
// ones), and the name lists are plain lists.
func referenceMatches(a *failover.ClusterAffinity, c failover.Cluster) (bool, error) {
	if a == nil {
		return true, nil
	}
	byLabel := labels.Everything()
	if a.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(a.LabelSelector)
		if err != nil {
			return false, err
		}
		byLabel = s
	}
	byField := labels.NewSelector()
	zones := c.Zones
	if len(zones) == 0 && c.Zone != "" {
		zones = []string{c.Zone}
	}
	zonesMatch := true
	if a.FieldSelector != nil {
		ops := map[corev1.NodeSelectorOperator]selection.Operator{corev1.NodeSelectorOpIn: selection.In, corev1.NodeSelectorOpNotIn: selection.NotIn,
			corev1.NodeSelectorOpExists: selection.Exists, corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist}
		for _, e := range a.FieldSelector.MatchExpressions {
			op, ok := ops[e.Operator]
			if !ok || (e.Key != failover.ProviderField && e.Key != failover.RegionField && e.Key != failover.ZoneField) {
				return false, fmt.Errorf("bad expression %v", e)
			}
			req, err := labels.NewRequirement(e.Key, op, e.Values)
			if err != nil {
				return false, err
			}
			if e.Key == failover.ZoneField {
				// Karmada's matchZones: zones are a list, not a field.
				zonesMatch = zonesMatch && referenceMatchZones(op, e.Values, zones)
				continue
			}
			byField = byField.Add(*req)
		}
	}
	fields := labels.Set{}
	for k, v := range map[string]string{failover.ProviderField: c.Provider, failover.RegionField: c.Region} {
		if v != "" {
			fields[k] = v
		}
	}
	return !slices.Contains(a.ExcludeClusters, c.Name) &&
		(len(a.ClusterNames) == 0 || slices.Contains(a.ClusterNames, c.Name)) &&
		byLabel.Matches(labels.Set(c.Labels)) && byField.Matches(fields) && zonesMatch, nil
}

// referenceMatchZones is Karmada v1.18's matchZones (pkg/util/selector.go)
// restated.
func referenceMatchZones(op selection.Operator, values, zones []string) bool {
	overlap := slices.ContainsFunc(zones, func(z string) bool { return slices.Contains(values, z) })
	switch op {
	case selection.In:
		return overlap
	case selection.NotIn:
		return !overlap
	case selection.Exists:
		return len(zones) > 0
	}
	return len(zones) == 0
}

// checkAgainstReference: Compile accepts exactly the affinities the
// reference accepts, its errors are *AffinityError, and the compiled matcher
// and Matches decide every cluster as the reference does.
func checkAgainstReference(t *testing.T, seed uint64) {
	g := affinityGen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	a := g.affinity()
	m, err := a.Compile()
	_, refErr := referenceMatches(a, failover.Cluster{})
	if (err == nil) != (refErr == nil) {
		t.Fatalf("seed %d: Compile error %v, reference error %v for %+v", seed, err, refErr, a)
	}
	if err != nil {
		if ae := (*failover.AffinityError)(nil); !errors.As(err, &ae) {
			t.Fatalf("seed %d: Compile error %v is not an *AffinityError", seed, err)
		}
		return
	}
	for range 8 {
		c := g.cluster()
		want, _ := referenceMatches(a, c)
		if got := m.Matches(&c); got != want {
			t.Fatalf("seed %d: compiled Matches(%+v) = %v, reference %v for %+v", seed, c, got, want, a)
		}
		if got, err := a.Matches(c); err != nil || got != want {
			t.Fatalf("seed %d: Matches(%+v) = %v, %v; reference %v for %+v", seed, c, got, err, want, a)
		}
	}
}

// FuzzAffinityAgreesWithReference explores seeds beyond the fixed ones
// TestAffinityAgreesWithReference runs.
func FuzzAffinityAgreesWithReference(f *testing.F) {
	f.Add(uint64(1))
	f.Add(uint64(0xfeed))
	f.Fuzz(checkAgainstReference)
}

// checkAgainstReference on a fixed range of seeds, so that every plain test
// run covers it.
func TestAffinityAgreesWithReference(t *testing.T) {
	for seed := range uint64(5000) {
		checkAgainstReference(t, seed)
	}
}

// TestAffinityZonesAsKarmadaMatchZones is Karmada v1.18's Test_matchZones
// table (pkg/util/selector_test.go) run through a zone field selector on a
// cluster that spans the table's zones.
func TestAffinityZonesAsKarmadaMatchZones(t *testing.T) {
	for _, tc := range []struct {
		name    string
		op      corev1.NodeSelectorOperator
		values  []string
		zones   []string
		matched bool
	}{
		{"empty zones for In operator", corev1.NodeSelectorOpIn, []string{"foo"}, nil, false},
		{"overlapping zones for In operator", corev1.NodeSelectorOpIn, []string{"foo"}, []string{"foo", "bar"}, true},
		{"all zones for In operator", corev1.NodeSelectorOpIn, []string{"foo", "bar"}, []string{"foo", "bar"}, true},
		{"empty zones for NotIn operator", corev1.NodeSelectorOpNotIn, []string{"foo"}, nil, true},
		{"partial zones for NotIn operator", corev1.NodeSelectorOpNotIn, []string{"foo"}, []string{"foo", "bar"}, false},
		{"empty zones for Exists operator", corev1.NodeSelectorOpExists, nil, nil, false},
		{"empty zones for DoesNotExist operator", corev1.NodeSelectorOpDoesNotExist, nil, nil, true},
		// Karmada's "unknown operator" (Gt) matches nothing; here it is an
		// error, which never matches either.
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &failover.ClusterAffinity{FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: failover.ZoneField, Operator: tc.op, Values: tc.values}}}}
			got, err := a.Matches(failover.Cluster{Name: "member1", Zones: tc.zones})
			require.NoError(t, err)
			assert.Equal(t, tc.matched, got)
		})
	}
	t.Run("unknown operator", func(t *testing.T) {
		a := &failover.ClusterAffinity{FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: failover.ZoneField, Operator: corev1.NodeSelectorOpGt}}}}
		got, err := a.Matches(failover.Cluster{Name: "member1", Zones: []string{"foo"}})
		assert.Error(t, err)
		assert.False(t, got)
	})
	t.Run("a cluster with zones ignores zone", func(t *testing.T) {
		a := &failover.ClusterAffinity{FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: failover.ZoneField, Operator: corev1.NodeSelectorOpIn, Values: []string{"legacy"}}}}}
		got, err := a.Matches(failover.Cluster{Name: "member1", Zone: "legacy", Zones: []string{"foo"}})
		require.NoError(t, err)
		assert.False(t, got)
		got, err = a.Matches(failover.Cluster{Name: "member1", Zone: "legacy"})
		require.NoError(t, err)
		assert.True(t, got, "without zones, zone is read")
	})
}

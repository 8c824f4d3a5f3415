package taintpolicy

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

// The evaluator's pre-parsed target must select exactly the clusters the
// root package's ClusterAffinity.Matches selects.
func TestTargetAgreesWithClusterAffinityMatches(t *testing.T) {
	req := func(key string, op corev1.NodeSelectorOperator, v ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: v}
	}
	affinities := []*failover.ClusterAffinity{
		nil,
		{},
		{ClusterNames: []string{"a", "b"}},
		{ExcludeClusters: []string{"b"}},
		{ClusterNames: []string{"a", "b"}, ExcludeClusters: []string{"b"}},
		{LabelSelector: &metav1.LabelSelector{}},
		{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
		{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"dev"}},
			{Key: "tier", Operator: metav1.LabelSelectorOpDoesNotExist},
		}}},
		{FieldSelector: &failover.FieldSelector{}},
		{FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{req(failover.RegionField, corev1.NodeSelectorOpIn, "eu", "us")}}},
		{FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{req(failover.ZoneField, corev1.NodeSelectorOpNotIn, "z1")}}},
		{FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{req(failover.ProviderField, corev1.NodeSelectorOpExists)}}},
		{FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{req(failover.ProviderField, corev1.NodeSelectorOpDoesNotExist)}}},
		{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
				req(failover.RegionField, corev1.NodeSelectorOpIn, "eu"), req(failover.ZoneField, corev1.NodeSelectorOpExists),
			}},
			ClusterNames:    []string{"a", "c"},
			ExcludeClusters: []string{"c"},
		},
	}
	var clusters []failover.Cluster
	for _, name := range []string{"a", "b", "c"} {
		for _, labels := range []map[string]string{nil, {"env": "prod"}, {"env": "dev", "tier": "1"}} {
			for _, region := range []string{"", "eu", "us"} {
				for _, zone := range []string{"", "z1"} {
					for _, provider := range []string{"", "aws"} {
						clusters = append(clusters, failover.Cluster{Name: name, Labels: labels, Region: region, Zone: zone, Provider: provider})
					}
				}
			}
		}
	}
	for i, a := range affinities {
		tg, err := compileTarget(a)
		if err != nil {
			t.Fatalf("affinity %d: %v", i, err)
		}
		for _, c := range clusters {
			want, err := a.Matches(c)
			if err != nil {
				t.Fatalf("affinity %d: %v", i, err)
			}
			if got := tg.matches(&c); got != want {
				t.Errorf("affinity %d, cluster %s: got %v, ClusterAffinity.Matches says %v", i, fmt.Sprintf("%+v", c), got, want)
			}
		}
	}
}

func TestCompileTargetRejectsWhatValidateRejects(t *testing.T) {
	bad := &failover.ClusterAffinity{FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "country", Operator: corev1.NodeSelectorOpIn, Values: []string{"fr"}},
	}}}
	if _, err := compileTarget(bad); err == nil {
		t.Fatal("compileTarget accepted a field selector on an unknown field")
	}
}

package failover_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/failoverkit/failover"
)

func ExampleIsFaulty() {
	c := failover.Cluster{Name: "member1", Taints: []corev1.Taint{
		{Key: "cluster.karmada.io/not-ready", Effect: failover.TaintEffectPreferNoExecute},
	}}
	fmt.Println(failover.IsFaulty(c))
	// Output: true
}

func ExampleClusterAffinity_Matches() {
	affinity := &failover.ClusterAffinity{
		FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: failover.RegionField, Operator: corev1.NodeSelectorOpIn, Values: []string{"eu-west-1"}},
		}},
		ExcludeClusters: []string{"member3"},
	}
	for _, c := range []failover.Cluster{
		{Name: "member1", Region: "eu-west-1"},
		{Name: "member2", Region: "us-east-1"},
		{Name: "member3", Region: "eu-west-1"},
	} {
		ok, err := affinity.Matches(c)
		fmt.Println(c.Name, ok, err)
	}
	// Output:
	// member1 true <nil>
	// member2 false <nil>
	// member3 false <nil>
}

func ExampleParsePurgeMode() {
	for _, s := range []string{"Immediately", "Graciously", "", "Soon"} {
		m, err := failover.ParsePurgeMode(s)
		fmt.Printf("%q -> %q %v\n", s, m, err)
	}
	// Output:
	// "Immediately" -> "Directly" <nil>
	// "Graciously" -> "Gracefully" <nil>
	// "" -> "Gracefully" <nil>
	// "Soon" -> "" failover: unknown purge mode "Soon": want Directly, Gracefully or Never (legacy Immediately, Graciously)
}

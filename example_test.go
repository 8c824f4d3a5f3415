package failover_test

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

func ExampleDecideEviction() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	added := &metav1.Time{Time: now.Add(-time.Minute)}
	notReady := []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute, TimeAdded: added}}
	tolerate := func(secs int64) []corev1.Toleration {
		return []corev1.Toleration{{Key: "cluster.karmada.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs}}
	}

	// No toleration: leave now.
	fmt.Printf("%+v\n", failover.DecideEviction(notReady, nil, nil, now))
	// Tolerated for 5 minutes from when the taint was added: ask again in 4.
	fmt.Printf("%+v\n", failover.DecideEviction(notReady, tolerate(300), nil, now))

	// PreferNoExecute moves only workloads that opted in to cluster failover.
	degraded := []corev1.Taint{{Key: "cluster.karmada.io/degraded", Effect: failover.TaintEffectPreferNoExecute, TimeAdded: added}}
	fmt.Println(failover.DecideEviction(degraded, nil, nil, now).Evict)
	fmt.Println(failover.DecideEviction(degraded, nil, &failover.ClusterFailoverBehavior{}, now).After)
	// Output:
	// {Evict:true After:0s Reason:taint cluster.karmada.io/not-ready:NoExecute is not tolerated}
	// {Evict:false After:4m0s Reason:taint cluster.karmada.io/not-ready:NoExecute added at 2026-01-01T11:59:00Z: clusterTolerations[0] tolerates it for 300s, which runs out in 4m0s}
	// false
	// 4m0s
}

package taintpolicy

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

// benchFleet is 10,000 clusters in 4 regions, 5% of them not ready, some
// carrying taints, all conditions with transition times; and 20 policies of
// both forms targeting them by labels, fields, names or not at all.
func benchFleet() ([]ClusterTaintPolicy, []failover.Cluster) {
	regions := []string{"eu-west-1", "eu-central-1", "us-east-1", "ap-south-1"}
	var policies []ClusterTaintPolicy
	for i := range 20 {
		var target *failover.ClusterAffinity
		switch i % 4 {
		case 0:
			target = &failover.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": fmt.Sprint(i % 3)}}}
		case 1:
			target = &failover.ClusterAffinity{FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: failover.RegionField, Operator: corev1.NodeSelectorOpIn, Values: regions[:2]},
			}}}
		case 2:
			target = &failover.ClusterAffinity{ExcludeClusters: []string{"c-1", "c-2", "c-3"}}
		}
		key := fmt.Sprintf("example.com/p%d", i%10)
		if i%5 == 4 {
			policies = append(policies, released(fmt.Sprintf("policy-%02d", i),
				[]MatchCondition{notIn("Ready", condTrue)}, []MatchCondition{in("Ready", condTrue)},
				Taint{Key: key, Effect: noSchedule}))
			policies[i].Spec.TargetClusters = target
			continue
		}
		p := windowed(fmt.Sprintf("policy-%02d", i),
			[]MatchCondition{in("Ready", condFalse, condUnknown), notIn("NetworkAvailable", condTrue)},
			toAdd(key, prefer, "", 300, 180))
		p.Spec.TargetCluster = target
		policies = append(policies, p)
	}
	clusters := make([]failover.Cluster, 10_000)
	for i := range clusters {
		ready, net := condTrue, condTrue
		if i%20 == 0 {
			ready, net = condFalse, condFalse
		}
		c := failover.Cluster{
			Name:     fmt.Sprintf("c-%d", i),
			Labels:   map[string]string{"tier": fmt.Sprint(i % 3), "team": "t"},
			Provider: "aws", Region: regions[i%4], Zone: "z",
			Conditions: []metav1.Condition{
				cond("Ready", ready, at(-time.Duration(i%900)*time.Second)),
				cond("NetworkAvailable", net, at(-time.Hour)),
				cond("KubeComponentsHealthy", condTrue, at(-time.Hour)),
			},
		}
		if i%40 == 0 {
			c.Taints = []corev1.Taint{taint("example.com/p0", prefer, "", at(-time.Hour)), taint("user", noSchedule, "", time.Time{})}
		}
		clusters[i] = c
	}
	return policies, clusters
}

// BenchmarkFleetPass is one full pass of Evaluate over 10,000 clusters with
// 20 policies (goal: under 100 ms on one core). ClusterAffinity.Matches, run
// beside it, is only the target matching a straightforward evaluator would
// do for every policy and cluster: the selectors re-parsed on each call.
func BenchmarkFleetPass(b *testing.B) {
	policies, clusters := benchFleet()
	b.Run("Evaluate", func(b *testing.B) {
		e := mustEvaluator(b, policies...)
		b.ReportAllocs()
		changed := 0
		for b.Loop() {
			changed = 0
			for i := range clusters {
				if r := e.Evaluate(clusters[i], t0); r.Changed() {
					changed++
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(clusters)), "ns/cluster")
		b.ReportMetric(float64(changed), "changed/pass")
	})
	b.Run("ClusterAffinity.Matches-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range clusters {
				for j := range policies {
					a := policies[j].Spec.TargetCluster
					if policies[j].Spec.Released() {
						a = policies[j].Spec.TargetClusters
					}
					if _, err := a.Matches(clusters[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(clusters)), "ns/cluster")
	})
}

// BenchmarkEvaluate is one Evaluate against the 20 policies, for the kinds of
// cluster a pass meets.
func BenchmarkEvaluate(b *testing.B) {
	policies, clusters := benchFleet()
	untimedCluster := clusters[20]
	untimedCluster.Conditions = []metav1.Condition{untimed("Ready", condFalse), untimed("NetworkAvailable", condFalse)}
	for _, tc := range []struct {
		name string
		c    failover.Cluster
	}{
		{"healthy", clusters[1]},
		{"not-ready", clusters[20]},
		{"not-ready-tainted", clusters[40]},
		{"untimed-conditions", untimedCluster},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := mustEvaluator(b, policies...)
			b.ReportAllocs()
			for b.Loop() {
				e.Evaluate(tc.c, t0)
			}
		})
	}
}

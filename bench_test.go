package failover_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/internal/cputime"
)

// benchAffinity selects by label and region, as a typical placement does.
var benchAffinity = &failover.ClusterAffinity{
	LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
	FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: failover.RegionField, Operator: corev1.NodeSelectorOpIn, Values: []string{"r1", "r2"}}}},
}

func benchFleet(n int) []failover.Cluster {
	fleet := make([]failover.Cluster, n)
	for i := range fleet {
		fleet[i] = failover.Cluster{Name: fmt.Sprintf("member%d", i), Region: fmt.Sprintf("r%d", i%3),
			Labels: map[string]string{"env": "prod"}}
	}
	return fleet
}

// BenchmarkAffinity compares matching a 1,000-cluster fleet through a
// compiled matcher against calling Matches, which parses per cluster.
func BenchmarkAffinity(b *testing.B) {
	fleet := benchFleet(1000)
	// A placement moving a workload off a few clusters excludes them by
	// name.
	excluding := *benchAffinity
	excluding.ExcludeClusters = []string{"member17", "member42", "member99"}
	for _, bc := range []struct {
		name string
		a    *failover.ClusterAffinity
	}{
		{"Compile once, match 1000", benchAffinity},
		{"Compile once, match 1000, exclude 3", &excluding},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			start, ok := cputime.Used()
			for b.Loop() {
				m, err := bc.a.Compile()
				if err != nil {
					b.Fatal(err)
				}
				for i := range fleet {
					m.Matches(&fleet[i])
				}
			}
			reportCPU(b, start, ok)
		})
	}
	b.Run("Matches per cluster, 1000", func(b *testing.B) {
		b.ReportAllocs()
		start, ok := cputime.Used()
		for b.Loop() {
			for i := range fleet {
				if _, err := benchAffinity.Matches(fleet[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportCPU(b, start, ok)
	})
}

// reportCPU reports the CPU time per operation since start, which the load
// of a shared machine inflates less than the wall clock.
func reportCPU(b *testing.B, start time.Duration, ok bool) {
	if end, ok2 := cputime.Used(); ok && ok2 {
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkDecideEviction: the common case, a cluster with no NoExecute or
// PreferNoExecute taint, allocates nothing; a faulty cluster pays for the
// Reason.
func BenchmarkDecideEviction(b *testing.B) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tols := []corev1.Toleration{{Key: "cluster.karmada.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}}
	f := &failover.ClusterFailoverBehavior{}
	for _, bc := range []struct {
		name   string
		taints []corev1.Taint
	}{
		{"Healthy", []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}},
		{"NoExecuteTolerated", []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: now}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = failover.DecideEviction(bc.taints, tols, f, now)
			}
		})
	}
}

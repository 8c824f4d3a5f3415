package whatif

import (
	"fmt"
	"testing"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"

	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

// benchInput is a fleet of n clusters in ten regions, each with room for
// 100 pods, and m bindings: half Duplicated over two regions, half
// Aggregated on one cluster.
func benchInput(b *testing.B, n, m int) *Input {
	b.Helper()
	in := &Input{}
	for i := range n {
		c := member(fmt.Sprintf("m%05d", i), fmt.Sprintf("r%d", i%10), 100)
		in.Clusters = append(in.Clusters, *c)
	}
	p, err := karmada.FromClusterTaintPolicy(releasedPolicy())
	if err != nil {
		b.Fatal(err)
	}
	in.Policies = []taintpolicy.ClusterTaintPolicy{p}
	dup := policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
		{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 2, MaxGroups: 2},
		{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 2, MaxGroups: 2}}}
	agg := policyv1alpha1.Placement{ReplicaScheduling: aggregated()}
	for i := range m {
		c := i % n
		var x *workv1alpha2.ResourceBinding
		if i%2 == 0 {
			x = rb(fmt.Sprintf("dup-%06d", i), 1, dup, on(in.Clusters[c].Name, 1), on(in.Clusters[(c+1)%n].Name, 1))
		} else {
			x = rb(fmt.Sprintf("agg-%06d", i), 2, agg, on(in.Clusters[c].Name, 2))
		}
		in.ResourceBindings = append(in.ResourceBindings, *x)
	}
	return in
}

// BenchmarkPlan plans a region's failure (a tenth of the fleet and of the
// bindings) at two sizes: what one run of --what-if costs once the objects
// are read. Karmada's scheduler, run once per binding that moves (bindings
// it cannot tell apart share a run), takes most of it, and each of its runs
// copies the whole fleet (its cache snapshot): the cost grows with
// bindings × clusters.
func BenchmarkPlan(b *testing.B) {
	for _, size := range []struct{ clusters, bindings int }{{100, 1000}, {300, 3000}} {
		b.Run(fmt.Sprintf("clusters=%d/bindings=%d", size.clusters, size.bindings), func(b *testing.B) {
			in := benchInput(b, size.clusters, size.bindings)
			f, err := ParseFailure("region=r3")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				r, err := Plan(in, Config{Failure: f, Rates: ratelimit.DefaultConfig(), EnableNoExecuteTaintEviction: true, Now: now})
				if err != nil {
					b.Fatal(err)
				}
				if r.Totals.Moves+r.Totals.Rescheduled == 0 {
					b.Fatalf("nothing moved: %+v", r.Totals)
				}
			}
		})
	}
}

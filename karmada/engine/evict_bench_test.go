package engine_test

import (
	"context"
	"fmt"
	"testing"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"

	"github.com/failoverkit/failover/karmada/engine"
)

// BenchmarkEvictorEvict is one eviction on the decision path, on plain
// objects as a simulation or a planner runs it (confirm nil): decide, check
// on the Fleet, hold room in the Ledger, write the task into the spec; the
// hold is given back after each, as a failed write would. At 100 and 5,000
// clusters, to show the path reads no more of a larger fleet.
func BenchmarkEvictorEvict(b *testing.B) {
	for _, n := range []int{100, 5000} {
		fleet, lost := evictWorld(b, func() []*clusterv1alpha1.Cluster {
			out := make([]*clusterv1alpha1.Cluster, n)
			for i := range out {
				out[i] = survivor(fmt.Sprintf("member-%05d", i), 8, int64(i%8))
			}
			return out
		}()...)
		ledger, err := engine.NewLedger()
		if err != nil {
			b.Fatal(err)
		}
		e := newEvictor(b, engine.EvictorOptions{Fleet: fleet, Ledger: ledger, EnableNoExecuteTaintEviction: true})
		rb := webBinding("web")
		b.Run(fmt.Sprintf("clusters/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				step, err := e.Evict(context.Background(), evictNow, "default/web", rb.DeepCopy(), lost, nil)
				if err != nil || step.Action != engine.EvictionEvict {
					b.Fatal(err, step.Action, step.Result.Reason)
				}
				step.Hold.Release()
			}
		})
	}
}

package engine_test

import (
	"fmt"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/prescheduling"
)

// BenchmarkLedgerAdmit is one Admit onto a survivor that already has held
// evictions in flight: 10, 1,000 and 10,000 of them, as in a regional
// outage whose evictions all go to the cluster with the most room. Each
// op admits one more eviction and releases it, so the number in flight
// stays put; what is held is summed per cluster as it changes, so the cost
// stays flat as evictions pile up.
func BenchmarkLedgerAdmit(b *testing.B) {
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, inFlight := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprint(inFlight), func(b *testing.B) {
			big := survivor("big", 1000000, 0)
			big.Status.ResourceSummary.Allocatable[corev1.ResourcePods] = *resource.NewQuantity(1000000, resource.DecimalSI)
			fleet := []*clusterv1alpha1.Cluster{big}
			summaries := karmada.SummariesOf(values(fleet))
			spec := oneReplica("web")
			r := prescheduling.Result{Feasible: true, Code: prescheduling.Feasible, PlacedByRoom: true,
				Moves: []failover.TargetCluster{{Name: "big", Replicas: 1}}}
			ledger, err := engine.NewLedger()
			if err != nil {
				b.Fatal(err)
			}
			for i := range inFlight {
				if !ledger.Admit(now, fmt.Sprintf("default/w%d", i), "lost", r, summaries, spec.ReplicaRequirements).Feasible {
					b.Fatal("not admitted")
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if !ledger.Admit(now, "default/web", "lost", r, summaries, spec.ReplicaRequirements).Feasible {
					b.Fatal("not admitted")
				}
				ledger.Release("default/web", "lost")
			}
		})
	}
}

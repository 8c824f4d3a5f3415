package prescheduling

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/internal/cputime"
)

// BenchmarkIndexCheck is the hard case of issue #28 at 100, 1,000 and
// 5,000 clusters: a Divided, Aggregated workload whose affinity selects the
// whole fleet (three regions, a tenth of it NoExecute tainted) leaves a
// tainted cluster, so that its candidates are the fleet. Index is
// Index.Check with the evicting cluster read afresh as an override, its
// Capacity keyed (the room remembered); IndexWithoutKey the same without a
// Key; Check is Checker.Check on the same clusters, listed by name, with
// the same capacity.
func BenchmarkIndexCheck(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		fleet := make([]failover.Cluster, n)
		for i := range fleet {
			c := failover.Cluster{Name: fmt.Sprintf("member-%05d", i), Region: fmt.Sprintf("region-%d", i%3),
				Labels: map[string]string{"team": "shop"}}
			if i%10 == 0 {
				c.Taints = []corev1.Taint{notReady}
			}
			fleet[i] = c
		}
		slices.SortFunc(fleet, func(a, b failover.Cluster) int { return cmp.Compare(a.Name, b.Name) })
		req := Request{
			Placement: Placement{
				ClusterAffinity: &failover.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}}},
				ReplicaScheduling: &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided,
					ReplicaDivisionPreference: ReplicaDivisionPreferenceAggregated},
			},
			Scheduled: []failover.TargetCluster{{Name: "member-00000", Replicas: 3}},
			Evicting:  []string{"member-00000"},
		}
		var x Index[indexRoom]
		for _, c := range fleet {
			if err := x.Set(c, 100000); err != nil {
				b.Fatal(err)
			}
		}
		evicting := fleet[0]
		over := Override[indexRoom]{Name: evicting.Name, Cluster: &evicting, Room: 100000}
		checker := mustChecker(WithCapacity(func(string) (int32, bool) { return 100000, true }))
		want := checker.Check(req, fleet)
		if !want.Feasible {
			b.Fatal(want.Reason)
		}
		b.Run(fmt.Sprintf("Index/%d", n), func(b *testing.B) {
			if got := x.Check(req, byRoom, over); !slices.Equal(got.Moves, want.Moves) {
				b.Fatalf("the Index moves %v, Check %v", got.Moves, want.Moves)
			}
			b.ReportAllocs()
			start, ok := cputime.Used()
			for b.Loop() {
				_ = x.Check(req, byRoom, over)
			}
			reportCPU(b, start, ok)
		})
		// Without a Key, the Index asks the capacity function about every
		// candidate on each check, in one pass.
		b.Run(fmt.Sprintf("IndexWithoutKey/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			start, ok := cputime.Used()
			for b.Loop() {
				_ = x.Check(req, Capacity[indexRoom]{Of: indexCapacity}, over)
			}
			reportCPU(b, start, ok)
		})
		b.Run(fmt.Sprintf("Check/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			start, ok := cputime.Used()
			for b.Loop() {
				_ = checker.Check(req, fleet)
			}
			reportCPU(b, start, ok)
		})
		// Refused: the workload asks for more room than the fleet has, and
		// the Reason counts what every cluster lacks.
		refused := req
		refused.Scheduled = []failover.TargetCluster{{Name: "member-00000", Replicas: math.MaxInt32}}
		if got, want := x.Check(refused, byRoom, over), checker.Check(refused, fleet); got.Feasible || got.Reason != want.Reason {
			b.Fatalf("refused: the Index says %q, Check %q", got.Reason, want.Reason)
		}
		b.Run(fmt.Sprintf("IndexRefused/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			start, ok := cputime.Used()
			for b.Loop() {
				_ = x.Check(refused, byRoom, over)
			}
			reportCPU(b, start, ok)
		})
		b.Run(fmt.Sprintf("CheckRefused/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			start, ok := cputime.Used()
			for b.Loop() {
				_ = checker.Check(refused, fleet)
			}
			reportCPU(b, start, ok)
		})
	}
}

// BenchmarkIndexChange is what an informer's event costs an Index of 5,000
// clusters that remembers one placement and its room for one Capacity:
// RoomReport a summary report (SetRoom), Taint a cluster tainted and
// recovered in turn (Set, which finds its filters again).
func BenchmarkIndexChange(b *testing.B) {
	var x Index[indexRoom]
	for i := range 5000 {
		if err := x.Set(failover.Cluster{Name: fmt.Sprintf("member-%05d", i)}, 100); err != nil {
			b.Fatal(err)
		}
	}
	req := Request{Placement: Placement{ReplicaScheduling: &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: ReplicaDivisionPreferenceAggregated}},
		Scheduled: []failover.TargetCluster{{Name: "member-00000", Replicas: 3}}, Evicting: []string{"member-00000"}}
	if r := x.Check(req, byRoom); !r.Feasible {
		b.Fatal(r.Reason)
	}
	b.Run("RoomReport/5000", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			x.SetRoom(fmt.Sprintf("member-%05d", i%5000), indexRoom(i%200))
			i++
		}
	})
	b.Run("Taint/5000", func(b *testing.B) {
		b.ReportAllocs()
		tainted := failover.Cluster{Name: "member-02500", Taints: []corev1.Taint{notReady}}
		healthy := failover.Cluster{Name: "member-02500"}
		i := 0
		for b.Loop() {
			c := healthy
			if i%2 == 0 {
				c = tainted
			}
			if err := x.Set(c, 100); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

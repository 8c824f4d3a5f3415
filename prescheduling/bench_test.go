package prescheduling

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/internal/cputime"
)

// benchFleet is n clusters in 10 regions, 30 zones and 3 providers, listed in
// no particular order (as a lister returns them); 2% are faulty and 2% carry
// a NoSchedule taint.
func benchFleet(n int) []failover.Cluster { return benchFleetIn(n, 10) }

// benchFleetIn is benchFleet with the clusters in regions regions.
func benchFleetIn(n, regions int) []failover.Cluster {
	rng := rand.New(rand.NewPCG(1, 2))
	fleet := make([]failover.Cluster, n)
	for i := range fleet {
		region := fmt.Sprintf("region-%d", i%regions)
		c := failover.Cluster{
			Name:     fmt.Sprintf("member-%05d", i),
			Provider: []string{"aws", "gcp", "azure"}[i%3],
			Region:   region,
			Zone:     fmt.Sprintf("%s-%c", region, 'a'+rune(i%3)),
			Labels:   map[string]string{"tier": []string{"gold", "silver", "bronze"}[i%3], "team": fmt.Sprintf("team-%d", i%20), "env": "prod"},
		}
		switch i % 50 {
		case 7:
			c.Taints = []corev1.Taint{notReady}
		case 11:
			c.Taints = []corev1.Taint{noSchedule}
		}
		fleet[i] = c
	}
	rng.Shuffle(len(fleet), func(i, j int) { fleet[i], fleet[j] = fleet[j], fleet[i] })
	return fleet
}

func benchRequest() Request {
	return Request{
		Placement: Placement{
			ClusterAffinity: &failover.ClusterAffinity{
				LabelSelector: &metav1.LabelSelector{
					MatchLabels:      map[string]string{"env": "prod"},
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"gold", "silver"}}},
				},
				FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "region", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"region-9"}}}},
				ExcludeClusters: []string{"member-00001", "member-00002"},
			},
			ClusterTolerations: []corev1.Toleration{{Key: notReady.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			SpreadConstraints:  []SpreadConstraint{{SpreadByField: SpreadByFieldRegion, MinGroups: 3, MaxGroups: 5}, {MinGroups: 3, MaxGroups: 3}},
		},
		Scheduled: []failover.TargetCluster{{Name: "member-00003"}, {Name: "member-00013"}, {Name: "member-00024"}},
		Evicting:  []string{"member-00013"},
	}
}

func BenchmarkCheck(b *testing.B) {
	fleet := benchFleet(5000)
	for _, bc := range []struct {
		name string
		req  func() Request
	}{
		{"Duplicated/5000", benchRequest},
		{"Divided/5000", func() Request {
			r := benchRequest()
			r.Placement.ReplicaScheduling = &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided}
			// Weighted evenly, the faulty clusters it tolerates would get
			// replicas too.
			r.Placement.ClusterTolerations = nil
			r.Scheduled = []failover.TargetCluster{{Name: "member-00003", Replicas: 4}, {Name: "member-00013", Replicas: 4}}
			return r
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := bc.req()
			c := mustChecker(WithCapacity(func(string) (int32, bool) { return 2, true }))
			if r := c.Check(req, fleet); !r.Feasible {
				b.Fatal(r.Reason)
			}
			b.ReportAllocs()
			start, ok := cputime.Used()
			for b.Loop() {
				_ = c.Check(req, fleet)
			}
			reportCPU(b, start, ok)
		})
	}
	// The baseline: the same eligibility decided with
	// failover.ClusterAffinity.Matches, which parses the selectors again for
	// every cluster, as a per-cluster filter does.
	b.Run("NaiveReparsePerCluster/5000", func(b *testing.B) {
		req := benchRequest()
		if got, want := naiveCandidates(req, fleet), mustChecker().Check(req, fleet).Candidates; !slices.Equal(got, want) {
			b.Fatalf("naive variant disagrees: %d vs %d candidates", len(got), len(want))
		}
		b.ReportAllocs()
		start, ok := cputime.Used()
		for b.Loop() {
			_ = naiveCandidates(req, fleet)
		}
		reportCPU(b, start, ok)
	})
}

// BenchmarkCheckSpread puts the joint spread check beside the plain
// Duplicated check it extends: 5,000 clusters in 20 regions, a workload on
// 2,500 of them (half of each region), one evicted.
// RegionAndCluster spreads by region [20,20] and by cluster [2500,2500]: the
// replacement must come from a region the workload already runs in.
func BenchmarkCheckSpread(b *testing.B) {
	fleet := benchFleetIn(5000, 20)
	var scheduled []failover.TargetCluster
	for i := range 5000 {
		if i/20%2 == 0 {
			scheduled = append(scheduled, failover.TargetCluster{Name: fmt.Sprintf("member-%05d", i)})
		}
	}
	plain := Request{Scheduled: scheduled, Evicting: []string{"member-00000"},
		Placement: Placement{ClusterTolerations: []corev1.Toleration{{Key: noSchedule.Key, Operator: corev1.TolerationOpExists}}}}
	spread := plain
	spread.Placement.SpreadConstraints = []SpreadConstraint{
		{SpreadByField: SpreadByFieldRegion, MinGroups: 20, MaxGroups: 20},
		{SpreadByField: SpreadByFieldCluster, MinGroups: 2500, MaxGroups: 2500},
	}
	for _, bc := range []struct {
		name string
		req  Request
	}{{"PlainDuplicated/5000", plain}, {"RegionAndCluster/5000", spread}} {
		b.Run(bc.name, func(b *testing.B) {
			c := mustChecker()
			if r := c.Check(bc.req, fleet); !r.Feasible {
				b.Fatal(r.Reason)
			}
			b.ReportAllocs()
			start, ok := cputime.Used()
			for b.Loop() {
				_ = c.Check(bc.req, fleet)
			}
			reportCPU(b, start, ok)
		})
	}
}

// reportCPU reports the CPU time per operation since start, which the load
// of a shared machine inflates less than the wall clock.
func reportCPU(b *testing.B, start time.Duration, ok bool) {
	if end, ok2 := cputime.Used(); ok && ok2 {
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}

func naiveCandidates(req Request, fleet []failover.Cluster) []string {
	var out []string
	for i := range fleet {
		c := &fleet[i]
		if slices.Contains(req.Evicting, c.Name) || slices.ContainsFunc(req.Scheduled, func(t failover.TargetCluster) bool { return t.Name == c.Name }) {
			continue
		}
		if failover.IsFaulty(*c) {
			continue
		}
		if _, ok := tolerates(req.Placement.ClusterTolerations, c); !ok {
			continue
		}
		if ok, err := req.Placement.ClusterAffinity.Matches(*c); err != nil || !ok {
			continue
		}
		if c.Region == "" {
			continue
		}
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}

// BenchmarkSortNames compares sortNames with slices.Sort on the candidate
// names of a 5,000-cluster fleet, in lister order.
func BenchmarkSortNames(b *testing.B) {
	var names []string
	for _, c := range benchFleet(5000) {
		names = append(names, c.Name)
	}
	buf := make([]string, len(names))
	b.Run("sortNames", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			copy(buf, names)
			sortNames(buf)
		}
	})
	b.Run("slices.Sort", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			copy(buf, names)
			slices.Sort(buf)
		}
	})
}

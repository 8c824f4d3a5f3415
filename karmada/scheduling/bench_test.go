package scheduling_test

import (
	"fmt"
	"testing"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/failoverkit/failover/karmada/scheduling"
)

// BenchmarkSchedule is one binding scheduled on 100, 1,000 and 5,000
// clusters, for each of scalePlacements, three ways side by side:
//
//   - reload: the package's Schedule, which loads the fleet and has
//     Karmada's cache copy it at each call;
//   - scheduler/new: a Scheduler, each call a binding it has not seen
//     (an eviction from a cluster the fleet does not have: the same work
//     for the algorithm), so the algorithm runs, on the Scheduler's
//     snapshot;
//   - scheduler/seen: a Scheduler, each call another binding stamped from
//     the same document (another name), so it answers from memory.
//
// Each Scheduler is new to its benchmark, its snapshot taken and the
// answer remembered before the clock starts.
func BenchmarkSchedule(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		fleet := scaleFleet(n)
		for _, p := range scalePlacements() {
			b.Run(fmt.Sprintf("%s/clusters=%d/reload", p.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := scheduling.Schedule(fleet, p.spec, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/clusters=%d/scheduler/new", p.name, n), func(b *testing.B) {
				b.ReportAllocs()
				s := scheduling.NewScheduler(fleet)
				spec := p.spec.DeepCopy()
				if _, _, err := s.Schedule(spec, nil); err != nil { // Karmada's snapshot, taken once
					b.Fatal(err)
				}
				i := 0
				for b.Loop() {
					i++
					spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: fmt.Sprintf("gone-%d", i)}}
					if _, _, err := s.Schedule(spec, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/clusters=%d/scheduler/seen", p.name, n), func(b *testing.B) {
				b.ReportAllocs()
				s := scheduling.NewScheduler(fleet)
				spec := p.spec.DeepCopy()
				if _, _, err := s.Schedule(spec, nil); err != nil { // the answer, remembered
					b.Fatal(err)
				}
				i := 0
				for b.Loop() {
					i++
					spec.Resource.Name = fmt.Sprintf("stamped-%d", i)
					if _, _, err := s.Schedule(spec, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkOutage is issue #29's scheduling on one Scheduler: 100,000
// bindings stamped from 6 documents placed on 5,000 clusters, a region (a
// quarter of the fleet) failing, one cluster at a time (NoExecute taint,
// not Ready), and 20,000 of the bindings on it scheduled again with their
// copies there in graceful eviction, as Karmada's failover leaves them.
func BenchmarkOutage(b *testing.B) {
	const bindings, replacements = 100_000, 20_000
	fleet := scaleFleet(5000)
	documents := outageDocuments()
	b.ReportAllocs()
	for b.Loop() {
		s := scheduling.NewScheduler(fleet)
		placed := make([][]workv1alpha2.TargetCluster, bindings)
		for i := range placed {
			spec := stamp(documents[i%len(documents)], i)
			targets, _, err := s.Schedule(spec, nil)
			if err != nil {
				b.Fatal(err)
			}
			placed[i] = targets
		}
		lost := map[string]bool{}
		for _, c := range fleet {
			if c.Spec.Region == "r0" {
				lost[c.Name] = true
				failed := c.DeepCopy()
				failed.Spec.Taints = []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}}
				failed.Status.Conditions[0].Status = metav1.ConditionFalse
				s.Set(failed)
			}
		}
		done, unplaced := 0, 0
		for i := 0; i < bindings && done < replacements; i++ {
			spec := stamp(documents[i%len(documents)], i)
			for _, t := range placed[i] {
				if lost[t.Name] {
					spec.GracefulEvictionTasks = append(spec.GracefulEvictionTasks, workv1alpha2.GracefulEvictionTask{FromCluster: t.Name, Reason: "TaintUntolerated", Producer: "failover"})
				} else {
					spec.Clusters = append(spec.Clusters, t)
				}
			}
			if len(spec.GracefulEvictionTasks) == 0 {
				continue
			}
			if _, _, err := s.Schedule(spec, nil); err != nil {
				unplaced++ // no room left: Karmada's answer too
			}
			done++
		}
		b.ReportMetric(float64(unplaced), "unplaced/op")
		if done < replacements {
			b.Fatalf("%d replacements, want %d", done, replacements)
		}
	}
}

// outageDocuments are the 6 documents BenchmarkOutage stamps bindings
// from: scalePlacements, and Divided by available replicas in two regions,
// Duplicated on 3 clusters, Aggregated over 2 to 4 clusters.
func outageDocuments() []*workv1alpha2.ResourceBindingSpec {
	var out []*workv1alpha2.ResourceBindingSpec
	for _, p := range scalePlacements() {
		out = append(out, p.spec)
	}
	inRegions := func(regions ...string) *policyv1alpha1.ClusterAffinity {
		return &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "region", Operator: metav1.LabelSelectorOpIn, Values: regions}}}}
	}
	regional := scalePlacements()[1].spec.DeepCopy()
	regional.Replicas = 12
	regional.Placement.ClusterAffinity = inRegions("r0", "r1")
	three := scalePlacements()[0].spec.DeepCopy()
	three.Placement.SpreadConstraints = []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 3, MaxGroups: 3}}
	aggregated := deployment("agg", 60, &policyv1alpha1.Placement{
		ClusterAffinity:   inRegions("r0", "r1"),
		SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 2, MaxGroups: 4}},
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated},
	})
	return append(out, regional, three, aggregated)
}

// stamp is binding i of document doc: its own name and UID.
func stamp(doc *workv1alpha2.ResourceBindingSpec, i int) *workv1alpha2.ResourceBindingSpec {
	spec := *doc
	spec.Resource.Name = fmt.Sprintf("%s-%d", doc.Resource.Name, i)
	spec.Resource.UID = types.UID(fmt.Sprintf("uid-%d", i))
	spec.Clusters, spec.GracefulEvictionTasks = nil, nil
	return &spec
}

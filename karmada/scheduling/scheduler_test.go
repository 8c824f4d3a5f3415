package scheduling_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/failoverkit/failover/karmada/scheduling"
)

// gen draws random fleets, changes to them and bindings, small enough that
// capacity, taints, spread constraints and affinities all decide often.
type gen struct{ r *rand.Rand }

func pickOf[T any](g gen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

// cluster is cluster number i, drawn anew.
func (g gen) cluster(i int) *clusterv1alpha1.Cluster {
	region := pickOf(g, "r1", "r2", "r3", "")
	c := scaleCluster(fmt.Sprintf("m%d", i), region, pickOf(g, "z1", "z2", "z3"), int64(g.r.IntN(9)))
	c.Labels["tier"] = pickOf(g, "gold", "silver")
	c.Spec.Provider = pickOf(g, "p1", "p2", "")
	switch g.r.IntN(6) {
	case 0:
		c.Spec.Zones = nil
	case 1:
		c.Spec.Zones = append(c.Spec.Zones, pickOf(g, "z4", "z5"))
	}
	switch g.r.IntN(10) {
	case 0:
		c.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
	case 1:
		c.Spec.Taints = []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}}
		c.Status.Conditions[0].Status = metav1.ConditionFalse
	}
	switch g.r.IntN(12) {
	case 0:
		c.Status.ResourceSummary = nil
	case 1:
		c.Status.APIEnablements = c.Status.APIEnablements[1:] // no Deployments
	case 2:
		now := metav1.NewTime(time.Unix(1e9, 0))
		c.DeletionTimestamp = &now
	}
	return c
}

// fleet is 1 to 10 clusters.
func (g gen) fleet() []*clusterv1alpha1.Cluster {
	out := make([]*clusterv1alpha1.Cluster, 1+g.r.IntN(10))
	for i := range out {
		out[i] = g.cluster(i + 1)
	}
	return out
}

// affinity selects clusters by label, field or name, or is nil.
func (g gen) affinity(n int) *policyv1alpha1.ClusterAffinity {
	switch g.r.IntN(4) {
	case 0:
		return nil
	case 1:
		return &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": pickOf(g, "gold", "silver")}}}
	case 2:
		return &policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: "region", Operator: pickOf(g, corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn), Values: []string{pickOf(g, "r1", "r2", "r3")}}}}}
	}
	a := &policyv1alpha1.ClusterAffinity{}
	for i := range n + 2 {
		if g.r.IntN(2) == 0 {
			a.ClusterNames = append(a.ClusterNames, fmt.Sprintf("m%d", i+1))
		}
	}
	return a
}

// placement is a placement Karmada's webhooks would admit.
func (g gen) placement(n int) *policyv1alpha1.Placement {
	p := &policyv1alpha1.Placement{}
	if g.r.IntN(4) == 0 {
		for _, name := range []string{"primary", "backup", "last"}[:1+g.r.IntN(3)] {
			a := g.affinity(n)
			if a == nil {
				a = &policyv1alpha1.ClusterAffinity{}
			}
			t := policyv1alpha1.ClusterAffinityTerm{AffinityName: name, ClusterAffinity: *a}
			if g.r.IntN(4) == 0 {
				t.OverflowAffinities = []policyv1alpha1.OverflowClusterAffinity{{AffinityName: name + "-overflow", ClusterAffinity: policyv1alpha1.ClusterAffinity{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "silver"}}}}}
			}
			p.ClusterAffinities = append(p.ClusterAffinities, t)
		}
	} else {
		p.ClusterAffinity = g.affinity(n)
	}
	if g.r.IntN(3) == 0 {
		p.ClusterTolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	groups := func() (int, int) {
		lo := 1 + g.r.IntN(3)
		return lo, lo + g.r.IntN(3)
	}
	switch g.r.IntN(4) {
	case 1:
		lo, hi := groups()
		p.SpreadConstraints = []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: lo, MaxGroups: hi}}
	case 2, 3:
		lo, hi := groups()
		clo, chi := groups()
		p.SpreadConstraints = []policyv1alpha1.SpreadConstraint{
			{SpreadByField: pickOf(g, policyv1alpha1.SpreadByFieldRegion, policyv1alpha1.SpreadByFieldZone, policyv1alpha1.SpreadByFieldProvider), MinGroups: lo, MaxGroups: hi},
			{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: clo, MaxGroups: chi},
		}
	}
	divided := func(pref policyv1alpha1.ReplicaDivisionPreference, wp *policyv1alpha1.ClusterPreferences) *policyv1alpha1.ReplicaSchedulingStrategy {
		return &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: pref, WeightPreference: wp}
	}
	switch g.r.IntN(6) {
	case 0:
		p.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}
	case 1:
		p.ReplicaScheduling = divided(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil)
	case 2:
		p.ReplicaScheduling = divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
			{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{fmt.Sprintf("m%d", 1+g.r.IntN(n))}}, Weight: int64(1 + g.r.IntN(3))},
			{TargetCluster: policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}}, Weight: 1},
		}})
	case 3, 4:
		p.ReplicaScheduling = divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas})
	case 5:
		p.ReplicaScheduling = divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)
	}
	return p
}

// binding is a Deployment (sometimes a ConfigMap) placed by a drawn
// placement, maybe scheduled before on some of the fleet's clusters, maybe
// with graceful eviction tasks, and a status naming a clusterAffinities
// term or none.
func (g gen) binding(n int) (*workv1alpha2.ResourceBindingSpec, *workv1alpha2.ResourceBindingStatus) {
	spec := deployment(pickOf(g, "a", "b", "c", "d"), int32(g.r.IntN(13)), g.placement(n))
	if g.r.IntN(5) == 0 {
		spec.Resource.APIVersion, spec.Resource.Kind = "v1", "ConfigMap"
		spec.Replicas, spec.ReplicaRequirements = 0, nil
	}
	for i := range n + 2 {
		if g.r.IntN(3) == 0 {
			spec.Clusters = append(spec.Clusters, workv1alpha2.TargetCluster{Name: fmt.Sprintf("m%d", i+1), Replicas: int32(g.r.IntN(4))})
		}
	}
	if len(spec.Clusters) > 0 && g.r.IntN(3) == 0 {
		from := spec.Clusters[g.r.IntN(len(spec.Clusters))].Name
		created := metav1.NewTime(time.Unix(int64(g.r.IntN(1000)), 0))
		spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: from, Reason: "TaintUntolerated", Producer: "x", CreationTimestamp: &created}}
	}
	status := &workv1alpha2.ResourceBindingStatus{}
	if len(spec.Placement.ClusterAffinities) > 0 && g.r.IntN(2) == 0 {
		status.SchedulerObservedAffinityName = spec.Placement.ClusterAffinities[g.r.IntN(len(spec.Placement.ClusterAffinities))].AffinityName
	}
	if g.r.IntN(6) == 0 {
		at, last := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(int64(50+g.r.IntN(100)), 0))
		spec.RescheduleTriggeredAt, status.LastScheduledTime = &at, &last
	}
	if g.r.IntN(8) == 0 {
		status = nil
	}
	return spec, status
}

// twin is the binding of another object stamped from the same document:
// another name and UID, its eviction tasks of other reasons and times,
// another binding requiring it. Karmada's algorithm reads none of that but
// the UID's tie-breaker, so a Scheduler may answer it from memory.
func twin(g gen, spec *workv1alpha2.ResourceBindingSpec) *workv1alpha2.ResourceBindingSpec {
	t := spec.DeepCopy()
	t.Resource.Name = fmt.Sprintf("twin-%d", g.r.IntN(1000))
	t.Resource.UID = types.UID(fmt.Sprintf("uid-%d", g.r.IntN(1000)))
	t.Resource.ResourceVersion = "7"
	for i := range t.GracefulEvictionTasks {
		t.GracefulEvictionTasks[i].Reason, t.GracefulEvictionTasks[i].CreationTimestamp = "ApplicationFailure", nil
	}
	t.RequiredBy = []workv1alpha2.BindingSnapshot{{Namespace: "default", Name: "other"}}
	return t
}

// neighbours are bindings that differ from spec and status in one thing
// Karmada's algorithm reads: the cluster an eviction is from, the
// clusterAffinities term resumed at, whether a rescheduling was asked for
// since the last schedule, the replicas, the previous schedule, the kind.
// Asked after spec, each would get spec's answer from a memory that did
// not tell them apart.
func neighbours(g gen, n int, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) []asked {
	var out []asked
	with := func(change func(*workv1alpha2.ResourceBindingSpec, *workv1alpha2.ResourceBindingStatus)) {
		sp, st := spec.DeepCopy(), status.DeepCopy()
		if st == nil {
			st = &workv1alpha2.ResourceBindingStatus{}
		}
		change(sp, st)
		out = append(out, asked{sp, st})
	}
	with(func(sp *workv1alpha2.ResourceBindingSpec, _ *workv1alpha2.ResourceBindingStatus) {
		sp.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: fmt.Sprintf("m%d", 1+g.r.IntN(n))}}
	})
	if terms := spec.Placement.ClusterAffinities; len(terms) > 1 {
		with(func(_ *workv1alpha2.ResourceBindingSpec, st *workv1alpha2.ResourceBindingStatus) {
			st.SchedulerObservedAffinityName = terms[len(terms)-1].AffinityName
		})
	}
	with(func(sp *workv1alpha2.ResourceBindingSpec, st *workv1alpha2.ResourceBindingStatus) {
		at, last := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(50, 0))
		if st.LastScheduledTime != nil && st.LastScheduledTime.Before(&at) {
			last = metav1.NewTime(time.Unix(150, 0))
		}
		sp.RescheduleTriggeredAt, st.LastScheduledTime = &at, &last
	})
	with(func(sp *workv1alpha2.ResourceBindingSpec, _ *workv1alpha2.ResourceBindingStatus) { sp.Replicas++ })
	with(func(sp *workv1alpha2.ResourceBindingSpec, _ *workv1alpha2.ResourceBindingStatus) {
		if len(sp.Clusters) == 0 {
			sp.Clusters = []workv1alpha2.TargetCluster{{Name: fmt.Sprintf("m%d", 1+g.r.IntN(n)), Replicas: 2}}
		} else {
			sp.Clusters[0].Replicas++
		}
	})
	with(func(sp *workv1alpha2.ResourceBindingSpec, _ *workv1alpha2.ResourceBindingStatus) {
		sp.Resource.APIVersion, sp.Resource.Kind = "v1", "ConfigMap"
	})
	return out
}

// asked is a binding asked of a Scheduler.
type asked struct {
	spec   *workv1alpha2.ResourceBindingSpec
	status *workv1alpha2.ResourceBindingStatus
}

// A Scheduler answers as Schedule does on the clusters it holds, over many
// random fleets, each changed one cluster at a time (a cluster drawn anew,
// a new cluster, a cluster deleted, or a cluster set equal to the one
// held), and many random bindings, each asked twice, as its twin and as
// its neighbours, and all asked again after the next change: the same
// targets, the same term, the same error or none.
func TestSchedulerAnswersAsSchedule(t *testing.T) {
	fleets, steps, bindings := 60, 5, 3
	if testing.Short() {
		fleets = 15
	}
	var scheduled, failed int
	for seed := range fleets {
		g := gen{rand.New(rand.NewPCG(uint64(seed), 29))}
		fleet := g.fleet()
		held := map[string]*clusterv1alpha1.Cluster{} // the test's own copies
		for _, c := range fleet {
			held[c.Name] = c.DeepCopy()
		}
		s := scheduling.NewScheduler(fleet)
		next := len(fleet) + 1
		var before []asked // the last step's
		for step := range steps {
			if step > 0 {
				switch g.r.IntN(4) {
				case 0:
					c := g.cluster(next)
					next++
					held[c.Name] = c.DeepCopy()
					s.Set(c)
					c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: "after", Effect: corev1.TaintEffectNoSchedule}) // not the Scheduler's
				case 1:
					name := "m0" // none: deleting it changes nothing
					if len(held) > 0 && g.r.IntN(4) > 0 {
						name = slices.Sorted(maps.Keys(held))[g.r.IntN(len(held))]
					}
					delete(held, name)
					s.Delete(name)
				case 2:
					c := g.cluster(1 + g.r.IntN(next))
					held[c.Name] = c.DeepCopy()
					s.Set(c)
				case 3:
					for _, c := range held {
						s.Set(c.DeepCopy())
						break
					}
				}
			}
			clusters := slices.Collect(maps.Values(held))
			asks := before
			for range bindings {
				spec, status := g.binding(next)
				asks = append(asks, asked{spec, status}, asked{spec, status}, asked{twin(g, spec), status})
				asks = append(asks, neighbours(g, next, spec, status)...)
			}
			for _, a := range asks {
				spec := a.spec.DeepCopy()
				want, wantTerm, wantErr := scheduling.Schedule(clusters, a.spec, a.status)
				got, gotTerm, gotErr := s.Schedule(a.spec, a.status)
				if !reflect.DeepEqual(spec, a.spec) {
					t.Fatalf("seed %d step %d: Scheduler.Schedule changed the caller's spec", seed, step)
				}
				if !equalTargets(got, want) || gotTerm != wantTerm || errString(gotErr) != errString(wantErr) {
					t.Fatalf("seed %d step %d: Scheduler.Schedule = %v, %q, %v; Schedule = %v, %q, %v\nspec: %+v\nstatus: %+v",
						seed, step, got, gotTerm, gotErr, want, wantTerm, wantErr, a.spec, a.status)
				}
				if wantErr == nil && len(want) > 0 {
					scheduled++
					got[0].Replicas += 100 // the caller's: the next answer is not changed
				} else {
					failed++
				}
			}
			before = asks[len(before):]
		}
	}
	// Not vacuous: both answers are common.
	if total := scheduled + failed; scheduled < total/4 || failed < total/10 {
		t.Fatalf("%d scheduled, %d not: the generator no longer tests both", scheduled, failed)
	}
	t.Logf("%d scheduled, %d not", scheduled, failed)
}

// equalTargets is whether a and b place the same replicas on the same
// clusters. Not in the same order: Karmada's own answer lists the clusters
// of the previous schedule that it keeps in a map's order
// (util.MergeTargetClusters), so Schedule's order can change from one call
// to the next.
func equalTargets(a, b []workv1alpha2.TargetCluster) bool {
	byName := func(ts []workv1alpha2.TargetCluster) []workv1alpha2.TargetCluster {
		return slices.SortedFunc(slices.Values(ts), func(x, y workv1alpha2.TargetCluster) int { return strings.Compare(x.Name, y.Name) })
	}
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(byName(a), byName(b)))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A Scheduler with no placement fails as Schedule does.
func TestSchedulerWithoutPlacement(t *testing.T) {
	s := scheduling.NewScheduler(configMapClusters("eu1"))
	_, _, want := scheduling.Schedule(configMapClusters("eu1"), configMap(nil), nil)
	if _, _, err := s.Schedule(configMap(nil), nil); err == nil || err.Error() != want.Error() {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

// A Scheduler remembers its inputs, not the caller's spec: a spec changed
// in place after a call is a new input.
func TestSchedulerCallerChangesSpec(t *testing.T) {
	fleet := scaleFleet(12)
	s := scheduling.NewScheduler(fleet)
	spec := scalePlacements()[1].spec // Divided by available replicas
	spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member-00001", Replicas: 30}}
	for _, change := range []func(){
		func() {},
		func() { spec.Clusters[0].Replicas = 2 },
		func() {
			spec.Placement.ClusterAffinity = &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member-00002", "member-00003"}}
		},
		func() { spec.Placement.ClusterAffinity.ClusterNames[0] = "member-00004" },
	} {
		change()
		want, _, wantErr := scheduling.Schedule(fleet, spec, nil)
		got, _, err := s.Schedule(spec, nil)
		if !equalTargets(got, want) || errString(err) != errString(wantErr) {
			t.Fatalf("Scheduler.Schedule = %v, %v; Schedule = %v, %v", got, err, want, wantErr)
		}
	}
}

// A Scheduler may be called and told of changes from several goroutines at
// once (the race detector watches), and Schedule alongside it.
func TestSchedulerConcurrent(t *testing.T) {
	fleet := scaleFleet(40)
	s := scheduling.NewScheduler(fleet)
	spec := scalePlacements()[0].spec
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := range 20 {
				c := fleet[(w*20+i)%len(fleet)].DeepCopy()
				c.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
				switch w {
				case 0:
					s.Set(c)
				case 1:
					if _, _, err := s.Schedule(spec, nil); err != nil {
						t.Error(err)
					}
				case 2:
					if _, _, err := scheduling.Schedule(fleet, spec, nil); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
}

package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/internal/cputime"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
)

// The benchmarks of this file measure the eviction controller side by side
// with Karmada v1.18's own taint manager on the placements fleets have
// (issue 36), not on one easy shape: each shape's bindings are allowed
// anywhere in their region (a label-selected affinity over a fifth of the
// fleet), or over the fleet with spread constraints, or under
// clusterAffinities terms, Duplicated or Divided (Aggregated, dynamic or
// static weights), on one to three clusters each. A tenth of the bindings
// are on member-00000, the tainted cluster whose taint is acted on.
//
// By default they run at the size CI can afford (1,000 clusters × 5,000
// bindings); FAILOVER_BENCH_SCALE=full runs 1,000 and 5,000 clusters ×
// 50,000 bindings, and FAILOVER_BENCH_SHAPES (a comma-separated list) picks
// shapes:
//
//	cd karmada && FAILOVER_BENCH_SCALE=full go test -run '^$' -bench 'Shapes' -benchtime 1x -timeout 0 ./controllers/
//
// Besides decisions/s and cpu-ns/eviction, each run reports the requests
// the controller sent the API server per eviction: reads/eviction (GET and
// LIST) and writes/eviction (UPDATE), counted on the fake API server. Both
// taint managers read their cache for the rest.

// shape is a kind of placement, with what makes a binding of it.
type shape struct {
	name string
	// binding makes the i-th binding of the shape on clusters, the first
	// of which is the cluster it is evicted from.
	binding func(i int, clusters []string) (*policyv1alpha1.Placement, []workv1alpha2.TargetCluster)
}

// shapeRegions is the number of regions of a shaped fleet: a region-wide
// affinity selects a fifth of the fleet.
const shapeRegions = 5

// regionLabel labels each cluster of a shaped fleet with its region, as
// fleets select them.
const regionLabel = "topology.example.io/region"

func regionAffinity(region int) *policyv1alpha1.ClusterAffinity {
	return &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{regionLabel: fmt.Sprintf("region-%d", region)}}}
}

func dividedBy(pref policyv1alpha1.ReplicaDivisionPreference, weights *policyv1alpha1.ClusterPreferences) *policyv1alpha1.ReplicaSchedulingStrategy {
	return &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: pref, WeightPreference: weights}
}

// spreadTargets divides replicas over clusters, the first taking the rest.
func spreadTargets(clusters []string, replicas int32) []workv1alpha2.TargetCluster {
	out := make([]workv1alpha2.TargetCluster, len(clusters))
	n := int32(len(clusters))
	for i, c := range clusters {
		out[i] = workv1alpha2.TargetCluster{Name: c, Replicas: replicas / n}
	}
	out[0].Replicas += replicas % n
	return out
}

// dupTargets puts a whole copy of replicas on each cluster.
func dupTargets(clusters []string, replicas int32) []workv1alpha2.TargetCluster {
	out := make([]workv1alpha2.TargetCluster, len(clusters))
	for i, c := range clusters {
		out[i] = workv1alpha2.TargetCluster{Name: c, Replicas: replicas}
	}
	return out
}

var shapes = []shape{
	// Duplicated anywhere in the region, with no spread constraint: the
	// scheduler puts a copy on every cluster of the region, so the check's
	// answer moves replicas to a thousand clusters at 5,000.
	{"duplicated-region", func(i int, cl []string) (*policyv1alpha1.Placement, []workv1alpha2.TargetCluster) {
		return &policyv1alpha1.Placement{ClusterAffinity: regionAffinity(0),
			ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}}, dupTargets(cl, 2)
	}},
	// Duplicated in the region on as many clusters as it runs on: a
	// cluster spread constraint caps the copies.
	{"duplicated-capped", func(i int, cl []string) (*policyv1alpha1.Placement, []workv1alpha2.TargetCluster) {
		n := len(cl)
		return &policyv1alpha1.Placement{ClusterAffinity: regionAffinity(0),
			SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: n, MaxGroups: n}},
			ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}}, dupTargets(cl, 2)
	}},
	{"aggregated-region", func(i int, cl []string) (*policyv1alpha1.Placement, []workv1alpha2.TargetCluster) {
		return &policyv1alpha1.Placement{ClusterAffinity: regionAffinity(0),
			ReplicaScheduling: dividedBy(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil)}, spreadTargets(cl, int32(3+i%4))
	}},
	{"dynamic-region", func(i int, cl []string) (*policyv1alpha1.Placement, []workv1alpha2.TargetCluster) {
		return &policyv1alpha1.Placement{ClusterAffinity: regionAffinity(0),
			ReplicaScheduling: dividedBy(policyv1alpha1.ReplicaDivisionPreferenceWeighted,
				&policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas})}, spreadTargets(cl, int32(3+i%4))
	}},
	// Static weights by zone within the region.
	{"static-zones", func(i int, cl []string) (*policyv1alpha1.Placement, []workv1alpha2.TargetCluster) {
		zone := func(z string) policyv1alpha1.ClusterAffinity {
			return policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}}}
		}
		return &policyv1alpha1.Placement{ClusterAffinity: regionAffinity(0),
			ReplicaScheduling: dividedBy(policyv1alpha1.ReplicaDivisionPreferenceWeighted, &policyv1alpha1.ClusterPreferences{
				StaticWeightList: []policyv1alpha1.StaticClusterWeight{
					{TargetCluster: zone("region-0-a"), Weight: 2}, {TargetCluster: zone("region-0-b"), Weight: 1}, {TargetCluster: zone("region-0-c"), Weight: 1}}}),
		}, spreadTargets(cl, int32(3+i%4))
	}},
	// Anywhere in the fleet, in one region and on at most three of its
	// clusters.
	{"spread-region", func(i int, cl []string) (*policyv1alpha1.Placement, []workv1alpha2.TargetCluster) {
		return &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"team": "shop"}}},
			SpreadConstraints: []policyv1alpha1.SpreadConstraint{
				{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 1, MaxGroups: 1},
				{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 1, MaxGroups: 3}},
			ReplicaScheduling: dividedBy(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil)}, spreadTargets(cl, int32(3+i%4))
	}},
	// Duplicated over two zones of the region, on as many clusters as it
	// runs on.
	{"spread-zone", func(i int, cl []string) (*policyv1alpha1.Placement, []workv1alpha2.TargetCluster) {
		n := len(cl)
		return &policyv1alpha1.Placement{ClusterAffinity: regionAffinity(0),
			SpreadConstraints: []policyv1alpha1.SpreadConstraint{
				{SpreadByField: policyv1alpha1.SpreadByFieldZone, MinGroups: 1, MaxGroups: 2},
				{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: n, MaxGroups: n}},
			ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}}, dupTargets(cl, 2)
	}},
	// A primary region and a backup one (clusterAffinities).
	{"affinity-terms", func(i int, cl []string) (*policyv1alpha1.Placement, []workv1alpha2.TargetCluster) {
		return &policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
			{AffinityName: "primary", ClusterAffinity: *regionAffinity(0)},
			{AffinityName: "backup", ClusterAffinity: *regionAffinity(1)}},
			ReplicaScheduling: dividedBy(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil)}, spreadTargets(cl, int32(3+i%4))
	}},
}

// shapesToRun are the shapes FAILOVER_BENCH_SHAPES names, else all.
func shapesToRun(b *testing.B) []shape {
	want := os.Getenv("FAILOVER_BENCH_SHAPES")
	if want == "" {
		return shapes
	}
	var out []shape
	for _, name := range strings.Split(want, ",") {
		found := false
		for _, s := range shapes {
			if s.name == name {
				out, found = append(out, s), true
			}
		}
		if !found {
			b.Fatalf("FAILOVER_BENCH_SHAPES: no shape %q", name)
		}
	}
	return out
}

// shapeSizes are the sizes to run: FAILOVER_BENCH_SCALE=full for 1,000 and
// 5,000 clusters × 50,000 bindings, else 1,000 × 5,000.
func shapeSizes() []scaleSize {
	if os.Getenv("FAILOVER_BENCH_SCALE") != "full" {
		return []scaleSize{{1000, 5000}}
	}
	return []scaleSize{{1000, 50000}, {5000, 50000}}
}

// shapedClusters are n clusters in shapeRegions regions of three zones
// each, labelled with their region and the team, member-00000 in region-0;
// every eleventh one from member-00000 NoExecute tainted, so that a tenth
// of each region is. Each reports room for more replicas than every
// eviction of a run moves (100,000 pods and 10,000 CPUs besides what it
// runs, a little more on some), so that no eviction waits for the room
// the ones before it hold: the pacing is out of the way.
func shapedClusters(n int) []*clusterv1alpha1.Cluster {
	added := metav1.NewTime(evictNow)
	out := make([]*clusterv1alpha1.Cluster, n)
	for i := range n {
		region := fmt.Sprintf("region-%d", i%shapeRegions)
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("member-%05d", i),
			Labels: map[string]string{"team": "shop", regionLabel: region}}}
		c.Spec.Region = region
		c.Spec.Zones = []string{fmt.Sprintf("%s-%c", region, 'a'+rune(i/shapeRegions%3))}
		c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
			Allocatable: corev1.ResourceList{
				corev1.ResourcePods: *resource.NewQuantity(10000000+int64(i%7)*100, resource.DecimalSI),
				corev1.ResourceCPU:  *resource.NewQuantity(1000000, resource.DecimalSI),
			},
			Allocated: corev1.ResourceList{
				corev1.ResourcePods: *resource.NewQuantity(9900000, resource.DecimalSI),
				corev1.ResourceCPU:  *resource.NewQuantity(990000, resource.DecimalSI),
			},
		}
		c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue}}
		if i%11 == 0 {
			c.Spec.Taints = []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}}
		}
		out[i] = c
	}
	return out
}

// shapedBindings are the size's bindings of shape sh: the first tenth on
// member-00000 and one or two healthy clusters of its region beside it,
// the others on healthy clusters of region-0 (where every shape but
// spread-region puts them), typed as the manager's cache returns them.
func shapedBindings(s scaleSize, sh shape) []*workv1alpha2.ResourceBinding {
	// The healthy clusters of region-0, in order.
	var healthy []string
	for i := 0; i < s.clusters; i += shapeRegions {
		if i%11 != 0 {
			healthy = append(healthy, fmt.Sprintf("member-%05d", i))
		}
	}
	gvk := schema.GroupVersionKind{Group: workv1alpha2.GroupName, Version: workv1alpha2.GroupVersion.Version, Kind: "ResourceBinding"}
	out := make([]*workv1alpha2.ResourceBinding, s.bindings)
	for i := range out {
		on := make([]string, 0, 3)
		if i < s.onTainted() {
			on = append(on, "member-00000")
		}
		for k := 0; len(on) < 1+i%3; k++ {
			on = append(on, healthy[(i*3+k)%len(healthy)])
		}
		p, targets := sh.binding(i, on)
		applied, err := json.Marshal(p)
		if err != nil {
			panic(err)
		}
		name := fmt.Sprintf("web-%05d", i)
		replicas := int32(0)
		if p.ReplicaScheduling.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingTypeDivided {
			for _, t := range targets {
				replicas += t.Replicas
			}
		} else {
			replicas = targets[0].Replicas
		}
		rb := &workv1alpha2.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name,
				Annotations: map[string]string{karmada.AppliedPlacementAnnotation: string(applied)}},
			Spec: workv1alpha2.ResourceBindingSpec{
				Resource:  workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: name, UID: types.UID("uid-" + name)},
				Placement: p,
				Replicas:  replicas,
				ReplicaRequirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m")}},
				Clusters: targets,
			},
		}
		rb.SetGroupVersionKind(gvk)
		out[i] = rb
	}
	return out
}

// shapeEnds counts the evictions off member-00000 and the items that left
// the library's queue without one, and closes done when they add up to want.
type shapeEnds struct {
	evicted, other atomic.Int64
	want           int64
	done           chan struct{}
}

func (e *shapeEnds) end(n *atomic.Int64) {
	n.Add(1)
	if e.evicted.Load()+e.other.Load() == e.want {
		close(e.done)
	}
}

// apiCount counts the requests sent to the fake API server.
type apiCount struct{ reads, writes atomic.Int64 }

// shapedWorld is the fake API server holding the size's clusters and its
// bindings of shape sh, indexed by cluster for both taint managers; ev
// counts its evictions off member-00000, n the requests it serves.
func shapedWorld(b *testing.B, s scaleSize, sh shape, ev *shapeEnds, n *apiCount) client.WithWatch {
	b.Helper()
	var objs []client.Object
	for _, c := range shapedClusters(s.clusters) {
		objs = append(objs, c)
	}
	for _, rb := range shapedBindings(s, sh) {
		objs = append(objs, rb)
	}
	return benchAPIServer(b, objs, func() { n.reads.Add(1) }, func() { n.writes.Add(1) }, func() { ev.end(&ev.evicted) })
}

// BenchmarkShapes is issue 36's eviction decisions per second with the
// pacing out of the way, per placement shape: the bindings on
// member-00000 (a tenth of the size's) evicted by Karmada's taint manager
// and by the library's, as BenchmarkScaleEvictions runs them, each on a
// fresh fake API server holding the size's clusters and bindings. Both
// read a cache made before the clock starts; the library's fresh reads go
// to the fake API server.
func BenchmarkShapes(b *testing.B) {
	ctx := context.Background()
	for _, s := range shapeSizes() {
		m := s.onTainted()
		for _, sh := range shapesToRun(b) {
			run := func(b *testing.B, prepare func(c client.WithWatch, cc *cacheClient, ev *shapeEnds) (start, stop func())) {
				var elapsed, cpu time.Duration
				var reads, writes, evicted int64
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					ev := &shapeEnds{want: int64(m), done: make(chan struct{})}
					n := &apiCount{}
					c := shapedWorld(b, s, sh, ev, n)
					start, stop := prepare(c, newCacheClient(b, c), ev)
					goruntime.GC()
					n.reads.Store(0)
					n.writes.Store(0)
					cpu0, _ := cputime.Used()
					began := time.Now()
					b.StartTimer()
					start()
					select {
					case <-ev.done:
					case <-time.After(30 * time.Minute):
						b.Fatalf("%d of %d evicted or not in 30 minutes", ev.evicted.Load()+ev.other.Load(), m)
					}
					b.StopTimer()
					elapsed += time.Since(began)
					evicted += ev.evicted.Load()
					cpu1, _ := cputime.Used()
					cpu += cpu1 - cpu0
					reads += n.reads.Load()
					writes += n.writes.Load()
					stop()
					b.StartTimer()
				}
				evictions := float64(evicted)
				b.ReportMetric(float64(int64(b.N*m)-evicted)/float64(b.N), "not-evicted")
				b.ReportMetric(evictions/elapsed.Seconds(), "decisions/s")
				b.ReportMetric(float64(cpu.Nanoseconds())/evictions, "cpu-ns/eviction")
				b.ReportMetric(float64(reads)/evictions, "reads/eviction")
				b.ReportMetric(float64(writes)/evictions, "writes/eviction")
			}
			b.Run(fmt.Sprintf("karmada/%s/%v", sh.name, s), func(b *testing.B) {
				run(b, func(_ client.WithWatch, cc *cacheClient, _ *shapeEnds) (func(), func()) {
					tm := karmadaTaintManager(cc, 1)
					stop := startKarmada(b, tm)
					return func() {
						if _, err := tm.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "member-00000"}}); err != nil {
							b.Fatal(err)
						}
					}, stop
				})
			})
			b.Run(fmt.Sprintf("library/%s/%v", sh.name, s), func(b *testing.B) {
				run(b, func(c client.WithWatch, cc *cacheClient, ev *shapeEnds) (func(), func()) {
					ctrl, k := libraryTaintManager(b, cc)
					ctrl.reader = c
					q, err := evictionqueue.New(evictionqueue.Config{Name: k.queue, OnOutcome: func(o evictionqueue.Outcome) {
						switch o.Kind {
						case evictionqueue.Abandoned, evictionqueue.Skipped, evictionqueue.Failed, evictionqueue.Succeeded:
							ev.end(&ev.other)
						}
					}}, ctrl.evictHandler(k))
					if err != nil {
						b.Fatal(err)
					}
					k.q = q
					runCtx, cancel := context.WithCancel(logr.NewContext(ctx, logr.Discard()))
					stopped := make(chan struct{})
					go func() { defer close(stopped); _ = q.Run(runCtx) }()
					return func() { queueTainted(b, ctrl, k) }, func() { cancel(); <-stopped }
				})
			})
		}
	}
}

// BenchmarkShapeDecision is one eviction's decision alone, per shape, at
// 1,000 and 5,000 clusters: engine.Evictor.Evict on the controller's
// Fleet and Ledger, its fresh reads answered from memory, with no API
// server, for each binding on member-00000 in turn. It is the library's
// own share of BenchmarkShapes' cpu-ns/eviction.
func BenchmarkShapeDecision(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 5000} {
		s := scaleSize{clusters: n, bindings: 10 * 2000}
		clusters := shapedClusters(n)
		byName := make(map[string]*clusterv1alpha1.Cluster, n)
		for _, c := range clusters {
			byName[c.Name] = c
		}
		confirm := func(_ context.Context, names []string) ([]*clusterv1alpha1.Cluster, error) {
			out := make([]*clusterv1alpha1.Cluster, len(names))
			for i, name := range names {
				out[i] = byName[name]
			}
			return out, nil
		}
		for _, sh := range shapesToRun(b) {
			bindings := shapedBindings(s, sh)[:s.onTainted()]
			b.Run(fmt.Sprintf("%s/%d", sh.name, n), func(b *testing.B) {
				fleet := &engine.Fleet{}
				for _, c := range clusters {
					if _, err := fleet.Set(c); err != nil {
						b.Fatal(err)
					}
				}
				ledger, err := engine.NewLedger()
				if err != nil {
					b.Fatal(err)
				}
				ev, err := engine.NewEvictor(engine.EvictorOptions{Fleet: fleet, Ledger: ledger, EnableNoExecuteTaintEviction: true})
				if err != nil {
					b.Fatal(err)
				}
				i, reads := 0, 0
				b.ReportAllocs()
				for b.Loop() {
					rb := bindings[i%len(bindings)].DeepCopy()
					key := "shop/" + rb.Name
					step, err := ev.Evict(ctx, evictNow, key, rb, byName["member-00000"], confirm)
					if err != nil || step.Action != engine.EvictionEvict {
						b.Fatalf("%s: %v %v: %s", key, step.Action, err, step.Result.Reason)
					}
					step.Hold.Release()
					reads += step.Reads
					i++
				}
				b.ReportMetric(float64(reads)/float64(i), "reads/decision")
			})
		}
	}
}

//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/failoverkit/failover/karmada"
)

// The scale run (issue 36): a regional outage at a fork's scale on a real
// kube-apiserver and etcd, with the real karmada-scheduler, played once
// with stock karmada-controller-manager's taint manager and once with the
// library's eviction controller (examples/karmadafork, the fork's
// controllers in a manager of their own), each on an API server of its own
// holding the same objects. Opt-in, outside CI's budget:
//
//	FAILOVER_E2E_SCALE=1 bash hack/e2e-binaries.sh   # adds karmada-controller-manager
//	FAILOVER_E2E_SCALE=1 go test -tags e2e -run TestScaleRegionalOutage -timeout 0 -v ./e2e/
//
// (hack/scale-run.sh does both). FAILOVER_E2E_SCALE_CLUSTERS and
// FAILOVER_E2E_SCALE_BINDINGS size it (1,000 and 10,000 by default),
// FAILOVER_E2E_SCALE_RATE sets --resource-eviction-rate (25), and
// FAILOVER_E2E_SCALE_ONLY=karmada or fork plays one side.
//
// The fleet is in five regions; each binding is allowed in one region and
// runs on one to three of its clusters, under the placements of
// karmada/controllers' BenchmarkShapes (Duplicated capped by a cluster
// spread constraint, Aggregated, dynamic and static weights, spread by
// region and by zone, clusterAffinities terms). Half of region-0's
// clusters fail at once (a NoExecute taint, as a ClusterTaintPolicy writes
// it, and Ready False). Both sides run with --enable-no-execute-taint-
// eviction, the same rate and the same client rate (--kube-api-qps 500,
// --kube-api-burst 1000: an eviction of the library's sends about three
// requests); Karmada's taint manager with its Failover feature gate on,
// as it needs, and otherwise its defaults (three workers, and its
// controllers' rate limiter, which holds it to some ten evictions a
// second whatever the rate set); the fork with --eviction-workers 8
// (FAILOVER_E2E_SCALE_WORKERS), as one worker's three requests a round
// trip each would hold it below the rate on a loaded API server (16
// workers write no faster: at a rate of 25, 23.7 a second with 8, 22.6
// with 16, none of their tries put off; the machine is the bound). On two
// cores that etcd, the API server, the scheduler and the controller share,
// the fork writes about 33 evictions a second at most (at a rate of 50):
// the default rate of the run is what that machine holds, 25.
//
// The run reports, for each side: the evictions and the rate they were
// written at, the time to drain, the requests the controller sent per
// eviction by verb and the conflicts among them (its own client's
// rest_client_requests_total), its CPU and peak memory, the API server's
// request latency for bindings and clusters, and the evictions the
// scheduler could not place.

type scaleConfig struct {
	clusters, bindings int
	rate               int
}

func TestScaleRegionalOutage(t *testing.T) {
	if os.Getenv("FAILOVER_E2E_SCALE") == "" {
		t.Skip("opt-in: FAILOVER_E2E_SCALE=1 (hack/scale-run.sh)")
	}
	cfg := scaleConfig{
		clusters: scaleEnv(t, "FAILOVER_E2E_SCALE_CLUSTERS", 1000),
		bindings: scaleEnv(t, "FAILOVER_E2E_SCALE_BINDINGS", 10000),
		rate:     scaleEnv(t, "FAILOVER_E2E_SCALE_RATE", 25),
	}
	cm := filepath.Join(filepath.Dir(env.bin.scheduler), "karmada-controller-manager")
	if _, err := os.Stat(cm); err != nil {
		t.Fatalf("%s not found: run FAILOVER_E2E_SCALE=1 bash hack/e2e-binaries.sh first", cm)
	}
	fork := buildExample(t, filepath.Join("..", "examples", "karmadafork"))
	var results []scaleResult
	for _, side := range []string{"karmada", "fork"} {
		if only := os.Getenv("FAILOVER_E2E_SCALE_ONLY"); only != "" && only != side {
			continue
		}
		t.Run(side, func(t *testing.T) {
			bin := cm
			if side == "fork" {
				bin = fork
			}
			results = append(results, runOutage(t, cfg, side, bin))
		})
	}
	t.Logf("\n%s", scaleTable(cfg, results))
}

func scaleEnv(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "%s=%q", name, v)
	return n
}

// scaleResult is one side's run.
type scaleResult struct {
	side                   string
	expected, evicted      int
	refused, unplaced      int
	drain                  time.Duration
	rate                   float64
	requests               map[string]float64 // by verb, per eviction
	conflicts              float64            // per eviction
	deferred               float64            // per eviction: tries put off and made again
	skipped                float64            // per eviction: tries that found nothing to do, each a permit spent
	cpu                    time.Duration      // the controller's, over the drain
	peakRSS                int64              // bytes
	latencyP50, latencyP99 map[string]time.Duration
}

const scaleRegions = 5

func scaleClusterName(i int) string { return fmt.Sprintf("member-%05d", i) }

func runOutage(t *testing.T, cfg scaleConfig, side, bin string) scaleResult {
	start := time.Now()
	e, err := startEnvWith(env.bin, func(ctx context.Context, e *apiEnv) error {
		if err := e.installCRDs(ctx, filepath.Join("..", "examples", "taintcontroller", "crds")); err != nil {
			return err
		}
		if err := e.installKarmadaCRDs(ctx); err != nil {
			return err
		}
		// karmada-controller-manager's resource interpreter waits for
		// these before it starts any controller.
		bases, err := karmadaCRDBases(ctx)
		if err != nil {
			return err
		}
		files, err := filepath.Glob(filepath.Join(bases, "config", "*.yaml"))
		if err != nil || len(files) == 0 {
			return fmt.Errorf("e2e: no config.karmada.io CRDs in %s: %v", bases, err)
		}
		return e.createCRDs(ctx, files)
	})
	if e != nil {
		t.Cleanup(func() {
			if t.Failed() {
				e.dumpLogs()
			}
			e.stop()
		})
	}
	require.NoError(t, err)
	setup := rest.CopyConfig(e.config)
	setup.QPS, setup.Burst = 2000, 4000
	c, err := client.New(setup, client.Options{Scheme: scheme(t)})
	require.NoError(t, err)
	ctx := context.Background()
	for _, ns := range []string{"karmada-system", "karmada-cluster", "shop"} {
		require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
	}

	// The fleet: Push clusters (Karmada's cluster controller then expects
	// no Lease of them), each Ready with room for 100,000 pods.
	parallel(t, cfg.clusters, 32, func(i int) error {
		region := fmt.Sprintf("region-%d", i%scaleRegions)
		cl := &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: scaleClusterName(i), Labels: map[string]string{"team": "shop", scaleRegionLabel: region}},
			Spec: clusterv1alpha1.ClusterSpec{
				SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://" + scaleClusterName(i) + ".invalid:6443",
				Region: region, Zones: []string{fmt.Sprintf("%s-%c", region, 'a'+rune(i/scaleRegions%3))},
			},
		}
		if err := c.Create(ctx, cl); err != nil {
			return err
		}
		readyCondition(&cl.Status, metav1.ConditionTrue)
		cl.Status.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "apps/v1",
			Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}}}
		cl.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
			Allocatable: corev1.ResourceList{
				corev1.ResourcePods: *resource.NewQuantity(1000000+int64(i%7)*100, resource.DecimalSI),
				corev1.ResourceCPU:  *resource.NewQuantity(100000, resource.DecimalSI),
			},
			Allocated: corev1.ResourceList{
				corev1.ResourcePods: *resource.NewQuantity(900000, resource.DecimalSI),
				corev1.ResourceCPU:  *resource.NewQuantity(90000, resource.DecimalSI),
			},
		}
		return c.Status().Update(ctx, cl)
	})

	// The bindings, already scheduled, routed to the e2e's scheduler.
	var expected atomic.Int64
	failed := func(name string) bool {
		i, _ := strconv.Atoi(strings.TrimPrefix(name, "member-"))
		return i%scaleRegions == 0 && (i/scaleRegions)%2 == 0
	}
	parallel(t, cfg.bindings, 32, func(i int) error {
		rb := scaleBinding(i, cfg.clusters)
		for _, tc := range rb.Spec.Clusters {
			if failed(tc.Name) {
				expected.Add(1)
			}
		}
		return c.Create(ctx, rb)
	})
	t.Logf("%s: %d clusters and %d bindings stored in %v; %d placements on the clusters that will fail", side, cfg.clusters, cfg.bindings,
		time.Since(start).Round(time.Second), expected.Load())

	// The scheduler observes every binding before the outage, leaving each
	// where it is: the outage's reschedules are then all it does.
	health := freeAddr(t)
	require.NoError(t, e.start("karmada-scheduler", e.bin.scheduler,
		"--kubeconfig="+filepath.Join(e.dir, "kubeconfig"), "--leader-elect=false", "--scheduler-name="+schedulerName,
		"--enable-scheduler-estimator=false", "--metrics-bind-address=0", "--health-probe-bind-address="+health,
		"--kube-api-qps=500", "--kube-api-burst=1000"))
	require.NoError(t, e.waitHTTP("karmada-scheduler", "http://"+health+"/healthz", nil, ""))
	observed := func() int {
		var list workv1alpha2.ResourceBindingList
		require.NoError(t, c.List(ctx, &list, client.InNamespace("shop")))
		n := 0
		for i := range list.Items {
			if list.Items[i].Status.SchedulerObservedGeneration == list.Items[i].Generation {
				n++
			}
		}
		return n
	}
	scheduled := time.Now()
	require.NoError(t, waitFor(30*time.Minute, func() bool { return observed() == cfg.bindings }), "the scheduler to observe every binding")
	t.Logf("%s: the scheduler observed every binding in %v", side, time.Since(scheduled).Round(time.Second))

	// The controller, as an operator runs it.
	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	args := []string{
		"--kubeconfig=" + filepath.Join(e.dir, "kubeconfig"),
		"--leader-elect=false",
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=" + probeAddr,
		"--enable-no-execute-taint-eviction=true",
		"--resource-eviction-rate=" + strconv.Itoa(cfg.rate),
		"--kube-api-qps=500", "--kube-api-burst=1000",
		"--v=1",
	}
	if side == "karmada" {
		args = append(args, "--controllers=cluster", "--feature-gates=Failover=true",
			"--cluster-monitor-grace-period=1h", "--cluster-startup-grace-period=1h")
	} else {
		// Karmada's taint manager runs three workers; one of the library's
		// queue, three requests at an API server's latency under this
		// load, writes some 23 evictions a second, short of 50.
		args = append(args, "--secondary-resource-eviction-rate="+strconv.Itoa(cfg.rate), "--eviction-workers="+strconv.Itoa(scaleEnv(t, "FAILOVER_E2E_SCALE_WORKERS", 8)))
	}
	require.NoError(t, e.start(side+"-controller", bin, args...))
	proc := e.procs[len(e.procs)-1]
	require.NoError(t, e.waitHTTP(side+"-controller", "http://"+probeAddr+"/healthz", nil, ""))
	time.Sleep(5 * time.Second) // its caches sync; nothing is faulty yet

	// Who placed what: a watch of the bindings, counting the placements on
	// the failed clusters as they go.
	informers, err := cache.New(e.config, cache.Options{Scheme: scheme(t)})
	require.NoError(t, err)
	inf, err := informers.GetInformer(ctx, &workv1alpha2.ResourceBinding{})
	require.NoError(t, err)
	var mu sync.Mutex
	left := map[string]map[string]bool{} // binding -> failed clusters it still runs on
	var evictedAt []time.Time
	track := func(obj any, initial bool) {
		rb, ok := obj.(*workv1alpha2.ResourceBinding)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		on := left[rb.Name]
		if initial && on == nil {
			on = map[string]bool{}
			for _, tc := range rb.Spec.Clusters {
				if failed(tc.Name) {
					on[tc.Name] = true
				}
			}
			left[rb.Name] = on
			return
		}
		for name := range on {
			if !rb.Spec.TargetContains(name) {
				delete(on, name)
				evictedAt = append(evictedAt, time.Now())
			}
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { track(obj, true) },
		UpdateFunc: func(_, obj any) { track(obj, false) },
	})
	require.NoError(t, err)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() { _ = informers.Start(watchCtx) }()
	require.True(t, informers.WaitForCacheSync(ctx))

	before := scrapeScale(t, "http://"+metricsAddr+"/metrics")
	apiBefore := scrapeAPIServer(t, e)
	cpuBefore := procCPU(t, proc.cmd.Process.Pid)

	// The outage: half of region-0's clusters fail at once.
	outage := time.Now()
	added := metav1.NewTime(outage)
	parallel(t, cfg.clusters, 32, func(i int) error {
		name := scaleClusterName(i)
		if !failed(name) {
			return nil
		}
		// Stock Karmada's cluster controller writes the Cluster too (its
		// NoSchedule taint): a conflict reads it again.
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cl clusterv1alpha1.Cluster
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &cl); err != nil {
				return err
			}
			taint := corev1.Taint{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}
			if !slices.ContainsFunc(cl.Spec.Taints, func(x corev1.Taint) bool { return x.MatchTaint(&taint) }) {
				taint.TimeAdded = &added
				cl.Spec.Taints = append(cl.Spec.Taints, taint)
				if err := c.Update(ctx, &cl); err != nil {
					return err
				}
			}
			readyCondition(&cl.Status, metav1.ConditionFalse)
			return c.Status().Update(ctx, &cl)
		})
	})
	t.Logf("%s: the outage written in %v", side, time.Since(outage).Round(time.Millisecond))

	// Drained when every placement on a failed cluster has gone, or none
	// went for a minute (the rest have nowhere to go).
	remaining := func() (n int, last time.Time) {
		mu.Lock()
		defer mu.Unlock()
		for _, on := range left {
			n += len(on)
		}
		if len(evictedAt) > 0 {
			last = evictedAt[len(evictedAt)-1]
		}
		return n, last
	}
	budget := time.Duration(float64(expected.Load())/float64(cfg.rate)*float64(time.Second))*3 + 2*time.Minute
	require.NoError(t, waitFor(budget, func() bool {
		n, last := remaining()
		return n == 0 || !last.IsZero() && time.Since(last) > time.Minute
	}), "the failed clusters to drain")
	cpuAfter := procCPU(t, proc.cmd.Process.Pid)
	after := scrapeScale(t, "http://"+metricsAddr+"/metrics")
	apiAfter := scrapeAPIServer(t, e)

	mu.Lock()
	r := scaleResult{side: side, expected: int(expected.Load()), evicted: len(evictedAt)}
	if r.evicted > 0 {
		r.drain = evictedAt[len(evictedAt)-1].Sub(outage)
		if r.evicted > 1 {
			r.rate = float64(r.evicted-1) / evictedAt[len(evictedAt)-1].Sub(evictedAt[0]).Seconds()
		}
	}
	mu.Unlock()
	n, _ := remaining()
	r.refused = n
	r.requests = map[string]float64{}
	for verb, v := range after.requests {
		if r.evicted > 0 {
			r.requests[verb] = (v - before.requests[verb]) / float64(r.evicted)
		}
	}
	if r.evicted > 0 {
		r.conflicts = (after.conflicts - before.conflicts) / float64(r.evicted)
		r.deferred = (after.deferred - before.deferred) / float64(r.evicted)
		r.skipped = (after.skipped - before.skipped) / float64(r.evicted)
	}
	r.cpu = cpuAfter - cpuBefore
	r.peakRSS = procPeakRSS(t, proc.cmd.Process.Pid)
	r.latencyP50, r.latencyP99 = apiLatency(apiBefore, apiAfter)
	// The scheduler places the evicted replicas after the evictions:
	// counted once it has seen every binding as last written.
	require.NoError(t, waitFor(10*time.Minute, func() bool { return observed() == cfg.bindings }), "the scheduler to catch up")
	r.unplaced = unplaced(t, c)
	return r
}

// unplaced counts the bindings the scheduler could not place after the
// outage: evicted, and fewer replicas or clusters scheduled than the
// workload has.
func unplaced(t *testing.T, c client.Client) int {
	var list workv1alpha2.ResourceBindingList
	require.NoError(t, c.List(context.Background(), &list, client.InNamespace("shop")))
	n := 0
	for i := range list.Items {
		rb := &list.Items[i]
		if len(rb.Spec.GracefulEvictionTasks) == 0 {
			continue
		}
		var sum int32
		for _, tc := range rb.Spec.Clusters {
			sum += tc.Replicas
		}
		copies := 1 // a Duplicated binding's: its cluster spread constraint's minGroups
		for _, sc := range rb.Spec.Placement.SpreadConstraints {
			if sc.SpreadByField == policyv1alpha1.SpreadByFieldCluster {
				copies = max(sc.MinGroups, 1)
			}
		}
		divided := rb.Spec.Placement.ReplicaSchedulingType() == policyv1alpha1.ReplicaSchedulingTypeDivided
		if divided && sum < rb.Spec.Replicas || !divided && len(rb.Spec.Clusters) < copies {
			n++
		}
	}
	return n
}

const scaleRegionLabel = "topology.example.io/region"

// scaleBinding is the i-th binding: in region i%5, under the i-th shape, on
// one to three healthy-or-failing clusters of its region.
func scaleBinding(i, clusters int) *workv1alpha2.ResourceBinding {
	region := i % scaleRegions
	perRegion := clusters / scaleRegions
	var on []string
	for k := range 1 + i%3 {
		on = append(on, scaleClusterName(((i/scaleRegions+k*7)%perRegion)*scaleRegions+region))
	}
	affinity := func(r int) policyv1alpha1.ClusterAffinity {
		return policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{scaleRegionLabel: fmt.Sprintf("region-%d", r)}}}
	}
	in := affinity(region)
	divided := func(pref policyv1alpha1.ReplicaDivisionPreference, w *policyv1alpha1.ClusterPreferences) *policyv1alpha1.ReplicaSchedulingStrategy {
		return &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: pref, WeightPreference: w}
	}
	dup := &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}
	n := len(on)
	var p policyv1alpha1.Placement
	switch i / scaleRegions % 7 {
	case 0:
		p = policyv1alpha1.Placement{ClusterAffinity: &in, ReplicaScheduling: dup,
			SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: n, MaxGroups: n}}}
	case 1:
		p = policyv1alpha1.Placement{ClusterAffinity: &in, ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil)}
	case 2:
		p = policyv1alpha1.Placement{ClusterAffinity: &in, ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			&policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas})}
	case 3:
		zone := func(z string) policyv1alpha1.ClusterAffinity {
			return policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}}}
		}
		r := fmt.Sprintf("region-%d", region)
		p = policyv1alpha1.Placement{ClusterAffinity: &in, ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			&policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
				{TargetCluster: zone(r + "-a"), Weight: 2}, {TargetCluster: zone(r + "-b"), Weight: 1}, {TargetCluster: zone(r + "-c"), Weight: 1}}})}
	case 4:
		p = policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}}},
			SpreadConstraints: []policyv1alpha1.SpreadConstraint{
				{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 1, MaxGroups: 1},
				{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 1, MaxGroups: 3}},
			ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil)}
	case 5:
		p = policyv1alpha1.Placement{ClusterAffinity: &in, ReplicaScheduling: dup,
			SpreadConstraints: []policyv1alpha1.SpreadConstraint{
				{SpreadByField: policyv1alpha1.SpreadByFieldZone, MinGroups: 1, MaxGroups: 2},
				{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: n, MaxGroups: n}}}
	default:
		p = policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
			{AffinityName: "primary", ClusterAffinity: in}, {AffinityName: "backup", ClusterAffinity: affinity((region + 1) % scaleRegions)}},
			ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil)}
	}
	name := fmt.Sprintf("web-%05d", i)
	replicas := int32(3 + i%4)
	var targets []workv1alpha2.TargetCluster
	for k, cl := range on {
		r := replicas
		if p.ReplicaScheduling != dup {
			r = replicas / int32(n)
			if k == 0 {
				r += replicas % int32(n)
			}
		}
		targets = append(targets, workv1alpha2.TargetCluster{Name: cl, Replicas: r})
	}
	applied, _ := json.Marshal(&p)
	return &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name,
			Labels:      map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "scale"},
			Annotations: map[string]string{karmada.AppliedPlacementAnnotation: string(applied)}},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource:            workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: name, UID: types.UID("uid-" + name)},
			Placement:           &p,
			Replicas:            replicas,
			ReplicaRequirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			Clusters:            targets,
			SchedulerName:       schedulerName,
		},
	}
}

// parallel runs do(0..n-1) on workers goroutines, failing the test on the
// first error.
func parallel(t *testing.T, n, workers int, do func(i int) error) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func waitFor(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil
}

// scaleMetrics are what a controller's client reports of its requests.
type scaleMetrics struct {
	requests  map[string]float64 // by method
	conflicts float64
	// deferred counts the fork's evictions put off and tried again
	// (eviction_processing_total{result="deferred"}: waiting for room, a
	// fresh read, a binding's budget); stock Karmada defers none.
	deferred float64
	// skipped counts the fork's tries that found nothing to do
	// (eviction_processing_total{result="skipped"}: the binding had left
	// the cluster, or tolerates its taints now), each after its permit.
	skipped float64
}

// scrapeScale reads client-go's rest_client_requests_total{code, method}
// and the eviction queues' deferrals from a controller's /metrics.
func scrapeScale(t *testing.T, url string) scaleMetrics {
	t.Helper()
	m := scaleMetrics{requests: map[string]float64{}}
	for _, s := range scrapeText(t, url, nil) {
		if s.name == "eviction_processing_total" && s.labels["result"] == "deferred" {
			m.deferred += s.value
		}
		if s.name == "eviction_processing_total" && s.labels["result"] == "skipped" {
			m.skipped += s.value
		}
		if s.name != "rest_client_requests_total" {
			continue
		}
		m.requests[s.labels["method"]] += s.value
		if s.labels["code"] == "409" {
			m.conflicts += s.value
		}
	}
	return m
}

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrapeText reads the samples of a Prometheus text exposition.
func scrapeText(t *testing.T, url string, header http.Header) []sample {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header = header
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a self-signed throwaway server on loopback
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	var out []sample
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		s := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexByte(line, '{'); i >= 0 {
			s.name = line[:i]
			j := strings.LastIndexByte(line, '}')
			for _, kv := range splitLabels(line[i+1 : j]) {
				if k, v, ok := strings.Cut(kv, "="); ok {
					s.labels[k] = strings.Trim(v, `"`)
				}
			}
			rest = strings.TrimSpace(line[j+1:])
		} else {
			s.name, rest, _ = strings.Cut(line, " ")
		}
		if f := strings.Fields(rest); len(f) > 0 {
			s.value, _ = strconv.ParseFloat(f[0], 64)
		}
		out = append(out, s)
	}
	return out
}

// splitLabels splits a label set at the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// apiHistograms are the API server's request latency buckets, by verb and
// resource: le -> count.
type apiHistograms map[string]map[float64]float64

func scrapeAPIServer(t *testing.T, e *apiEnv) apiHistograms {
	t.Helper()
	h := apiHistograms{}
	for _, s := range scrapeText(t, e.config.Host+"/metrics", http.Header{"Authorization": {"Bearer " + e.config.BearerToken}}) {
		if s.name != "apiserver_request_duration_seconds_bucket" {
			continue
		}
		res := s.labels["resource"]
		if res != "resourcebindings" && res != "clusters" {
			continue
		}
		key := s.labels["verb"] + " " + res
		le, err := strconv.ParseFloat(s.labels["le"], 64)
		if err != nil {
			le = math.Inf(1)
		}
		if h[key] == nil {
			h[key] = map[float64]float64{}
		}
		h[key][le] += s.value
	}
	return h
}

// apiLatency estimates each verb's 50th and 99th percentile latency over
// the run, from the buckets' growth (the bucket's upper bound).
func apiLatency(before, after apiHistograms) (p50, p99 map[string]time.Duration) {
	p50, p99 = map[string]time.Duration{}, map[string]time.Duration{}
	for key, buckets := range after {
		var les []float64
		for le := range buckets {
			les = append(les, le)
		}
		sort.Float64s(les)
		total := buckets[math.Inf(1)] - before[key][math.Inf(1)]
		if total < 10 {
			continue
		}
		quantile := func(q float64) time.Duration {
			for _, le := range les {
				if buckets[le]-before[key][le] >= q*total {
					return time.Duration(le * float64(time.Second))
				}
			}
			return 0
		}
		p50[key], p99[key] = quantile(0.5), quantile(0.99)
	}
	return p50, p99
}

// procCPU is the user and system CPU time the process pid has used.
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const hz = 100 // USER_HZ
	return time.Duration(utime+stime) * time.Second / hz
}

// procPeakRSS is the most memory the process pid has held (VmHWM).
func procPeakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	data, err := io.ReadAll(f)
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// scaleTable prints the runs side by side.
func scaleTable(cfg scaleConfig, rs []scaleResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d clusters x %d bindings, half of region-0 lost, --resource-eviction-rate=%d\n", cfg.clusters, cfg.bindings, cfg.rate)
	row := func(what string, f func(r scaleResult) string) {
		fmt.Fprintf(&b, "| %-48s |", what)
		for _, r := range rs {
			fmt.Fprintf(&b, " %-22s |", f(r))
		}
		b.WriteString("\n")
	}
	row("", func(r scaleResult) string { return r.side })
	row("placements on the failed clusters", func(r scaleResult) string { return strconv.Itoa(r.expected) })
	row("evictions written", func(r scaleResult) string { return strconv.Itoa(r.evicted) })
	row("left where they were (nowhere to go)", func(r scaleResult) string { return strconv.Itoa(r.refused) })
	row("evicted and not placed by the scheduler", func(r scaleResult) string { return strconv.Itoa(r.unplaced) })
	row("achieved rate (/s)", func(r scaleResult) string { return fmt.Sprintf("%.1f", r.rate) })
	row("time to drain", func(r scaleResult) string { return r.drain.Round(100 * time.Millisecond).String() })
	verbs := map[string]bool{}
	for _, r := range rs {
		for v := range r.requests {
			verbs[v] = true
		}
	}
	for _, v := range slices.Sorted(func(yield func(string) bool) {
		for v := range verbs {
			if !yield(v) {
				return
			}
		}
	}) {
		row("requests per eviction, "+v, func(r scaleResult) string { return fmt.Sprintf("%.2f", r.requests[v]) })
	}
	row("conflicts (409) per eviction", func(r scaleResult) string { return fmt.Sprintf("%.3f", r.conflicts) })
	row("tries put off and made again, per eviction", func(r scaleResult) string { return fmt.Sprintf("%.3f", r.deferred) })
	row("tries with nothing to do, per eviction", func(r scaleResult) string { return fmt.Sprintf("%.3f", r.skipped) })
	row("controller CPU over the drain", func(r scaleResult) string { return r.cpu.Round(10 * time.Millisecond).String() })
	row("controller CPU per eviction", func(r scaleResult) string {
		if r.evicted == 0 {
			return "-"
		}
		return (r.cpu / time.Duration(r.evicted)).Round(time.Microsecond).String()
	})
	row("controller peak memory (MiB)", func(r scaleResult) string { return strconv.FormatInt(r.peakRSS>>20, 10) })
	keys := map[string]bool{}
	for _, r := range rs {
		for k := range r.latencyP99 {
			keys[k] = true
		}
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}) {
		row("API server latency p50 / p99, "+k, func(r scaleResult) string {
			return fmt.Sprintf("%v / %v", r.latencyP50[k], r.latencyP99[k])
		})
	}
	return b.String()
}

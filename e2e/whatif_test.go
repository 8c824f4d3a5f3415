//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// whatIfPlan is the part of fleetsim --what-if --json the test compares
// (examples/fleetsim/REFERENCE.md, "The --what-if --json schema").
type whatIfPlan struct {
	SchemaVersion string `json:"schemaVersion"`
	Failure       struct {
		Clusters []string `json:"clusters"`
	} `json:"failure"`
	Evictions []struct {
		Kind      string   `json:"kind"`
		Binding   string   `json:"binding"`
		Cluster   string   `json:"cluster"`
		Outcome   string   `json:"outcome"`
		Code      string   `json:"code"`
		Reason    string   `json:"reason"`
		AtSeconds *float64 `json:"atSeconds"`
		To        []struct {
			Name     string `json:"name"`
			Replicas int32  `json:"replicas"`
		} `json:"to"`
	} `json:"evictions"`
	Drain struct {
		Seconds *float64 `json:"seconds"`
		Why     string   `json:"why"`
	} `json:"drain"`
}

// TestWhatIf proves fleetsim's what-if planner against the real thing: on
// the e2e API server, with Karmada's own karmada-scheduler and the fork's
// controllers, it builds examples/fleetsim, asks it (--what-if --json,
// the admin kubeconfig) what a regional outage would do, then causes that
// outage and lets the controllers and the scheduler act. For each binding
// on the failed region it compares the prediction with what happened:
// moved to the same clusters (and replicas, when Divided), or left where
// it was (refused by the check, or tolerating the taint). It prints the
// agreement and each difference, and wants at least 95%.
func TestWhatIf(t *testing.T) {
	noLeaks(t)
	ensureForkManifests(t)
	startKarmadaScheduler(t)
	s := newSuite(t, "whatif")

	// Three regions; east fails. The survivors have room for different
	// numbers of pods, so that Aggregated and dynamically weighted
	// bindings land by room.
	rooms := map[string]int64{"wi-e1": 20, "wi-e2": 20, "wi-e3": 20, "wi-w1": 30, "wi-w2": 60, "wi-s1": 40, "wi-s2": 25}
	region := func(c string) string { return map[byte]string{'e': "wi-east", 'w': "wi-west", 's': "wi-south"}[c[3]] }
	names := slices.Sorted(maps.Keys(rooms))
	for _, c := range names {
		s.member(c, region(c), rooms[c])
	}
	east := []string{"wi-e1", "wi-e2", "wi-e3"}
	s.releasedPolicy(names...)

	all := s.suiteClusters()
	dup := func(n int) policyv1alpha1.Placement {
		return policyv1alpha1.Placement{ClusterAffinity: all, SpreadConstraints: spreadOver(n), ReplicaScheduling: duplicated}
	}
	var bindings []string
	add := func(name string, replicas int32, p policyv1alpha1.Placement, on ...string) {
		s.scheduledBinding(name, replicas, p, on...)
		bindings = append(bindings, name)
	}
	// Duplicated over two regions: the copy in east must go to the third
	// region, to whichever cluster the scheduler prefers there.
	pairs := [][2]string{{"wi-e1", "wi-w1"}, {"wi-e2", "wi-w2"}, {"wi-e3", "wi-s1"}, {"wi-e1", "wi-s2"}, {"wi-e2", "wi-s1"}}
	for i := range 10 {
		p := pairs[i%len(pairs)]
		add(fmt.Sprintf("dup-%d", i), 2, dup(2), p[0], p[1])
	}
	// Aggregated on one east cluster: all to the roomiest survivor.
	for i := range 6 {
		add(fmt.Sprintf("agg-%d", i), 3, policyv1alpha1.Placement{ClusterAffinity: all, ReplicaScheduling: aggregated}, east[i%3])
	}
	// Weighted by available replicas, half in east.
	dynamic := &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
		WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}}
	add("weighted-0", 4, policyv1alpha1.Placement{ClusterAffinity: all, ReplicaScheduling: dynamic}, "wi-e1", "wi-w2")
	add("weighted-1", 6, policyv1alpha1.Placement{ClusterAffinity: all, ReplicaScheduling: dynamic}, "wi-e3", "wi-s1")
	// More replicas than the survivors have room for (155): refused.
	add("huge", 200, policyv1alpha1.Placement{ClusterAffinity: all, ReplicaScheduling: aggregated}, "wi-e2")
	// Nowhere to go: pinned to east; three regions wanted, two left.
	pinned := &policyv1alpha1.ClusterAffinity{LabelSelector: all.LabelSelector, ClusterNames: []string{"wi-e1", "wi-e2"}}
	add("pinned", 1, policyv1alpha1.Placement{ClusterAffinity: pinned, ReplicaScheduling: duplicated}, "wi-e1", "wi-e2")
	add("three-regions", 1, dup(3), "wi-e1", "wi-w1", "wi-s1")
	// A ClusterResourceBinding, through the fork's queue for them.
	crbName := s.name + "-crb"
	s.scheduledClusterBinding(crbName, 2, policyv1alpha1.Placement{ClusterAffinity: all, ReplicaScheduling: aggregated}, "wi-e1")
	bindings = append(bindings, "crb/"+crbName)
	// Tolerates the failure's taint for good: stays.
	add("tolerant", 1, policyv1alpha1.Placement{ClusterAffinity: all, SpreadConstraints: spreadOver(1), ReplicaScheduling: duplicated, ClusterTolerations: []corev1.Toleration{
		{Key: forkTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}}, "wi-e3")

	// get reads a binding by its key: a ResourceBinding's name, or crb/
	// and a ClusterResourceBinding's, read into a ResourceBinding.
	get := func(key string) *workv1alpha2.ResourceBinding {
		name, isCRB := strings.CutPrefix(key, "crb/")
		if !isCRB {
			return s.getBinding(name)
		}
		var crb workv1alpha2.ClusterResourceBinding
		require.NoError(t, s.c.Get(ctxFor(t), client.ObjectKey{Name: name}, &crb))
		return &workv1alpha2.ResourceBinding{ObjectMeta: crb.ObjectMeta, Spec: crb.Spec, Status: crb.Status}
	}
	before := map[string]*workv1alpha2.ResourceBinding{}
	for _, b := range bindings {
		before[b] = get(b)
	}

	// The prediction, from the built binary, before anything fails.
	bin := buildFleetsim(t)
	plan := planWhatIf(t, bin, "region=wi-east", "--enable-no-execute-taint-eviction", "--resource-eviction-rate", "5", "--secondary-resource-eviction-rate", "5")
	require.Equal(t, east, plan.Failure.Clusters)
	predicted := plan.predictions(s.ns, crbName)
	require.ElementsMatch(t, bindings, slices.Collect(maps.Keys(predicted)), "the plan covers every binding on east")
	if plan.Drain.Seconds != nil {
		t.Logf("planned: drain in %.0fs: %s", *plan.Drain.Seconds, plan.Drain.Why)
	}
	// The same plan as a person reads it (fleetsim's README shows it),
	// and drawn.
	figure := filepath.Join(t.TempDir(), "plan.png")
	table := exec.Command(bin, "--what-if", "--kubeconfig", filepath.Join(env.dir, "kubeconfig"), "--fail", "region=wi-east",
		"--enable-no-execute-taint-eviction", "--resource-eviction-rate", "5", "--secondary-resource-eviction-rate", "5", "--plot", figure)
	out, err := table.CombinedOutput()
	require.NoError(t, err, "fleetsim --what-if: %s", out)
	t.Logf("fleetsim --what-if --fail region=wi-east:\n%s", out)
	drawn, err := os.Stat(figure)
	require.NoError(t, err, "--plot drew nothing")
	require.Positive(t, drawn.Size())

	// Bad input against the real server: a user without rights (the
	// server refuses with 403) and a region the fleet does not have each
	// end with their exit code and nothing on stdout.
	nobody := filepath.Join(t.TempDir(), "nobody.kubeconfig")
	kc, err := clientcmd.LoadFromFile(filepath.Join(env.dir, "kubeconfig"))
	require.NoError(t, err)
	for _, a := range kc.AuthInfos {
		a.Impersonate = "whatif-nobody"
	}
	require.NoError(t, clientcmd.WriteToFile(*kc, nobody))
	for _, bad := range []struct {
		kubeconfig, fail string
		code             int
		says             string
	}{
		{nobody, "region=wi-east", 5, "forbidden"},
		{filepath.Join(env.dir, "kubeconfig"), "region=wi-north", 3, `no cluster is in region "wi-north"`},
	} {
		var bout, berr bytes.Buffer
		cmd := exec.Command(bin, "--what-if", "--kubeconfig", bad.kubeconfig, "--fail", bad.fail)
		cmd.Stdout, cmd.Stderr = &bout, &berr
		err := cmd.Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "fleetsim --what-if --fail %s: %s", bad.fail, bout.String())
		require.Equal(t, bad.code, exit.ExitCode(), "exit code; stderr: %s", berr.String())
		require.Contains(t, berr.String(), bad.says)
		require.Empty(t, bout.String(), "a partial plan on stdout")
		t.Logf("bad input: exit %d: %s", exit.ExitCode(), strings.TrimSpace(berr.String()))
	}

	// The outage, and what the fork and karmada-scheduler do.
	log := s.watchFailover(east...)
	s.playMembers(nil, 0)
	s.start("whatif", forkOptions{Rate: rate(5, 5), EnableNoExecuteTaintEviction: true}, nil)
	s.notReady(east...)
	s.waitTaint(east...)
	onEast := func(rb *workv1alpha2.ResourceBinding) bool {
		return slices.ContainsFunc(rb.Spec.Clusters, func(tc workv1alpha2.TargetCluster) bool { return slices.Contains(east, tc.Name) })
	}
	settled := func(name string) bool {
		rb := get(name)
		if !onEast(rb) {
			return complete(rb, len(before[name].Spec.Clusters)) && rb.Status.SchedulerObservedGeneration == rb.Generation
		}
		return false
	}
	// Wait for every binding predicted to move to have moved (a wrong
	// prediction times out here and is counted below), then watch the
	// rest a little longer: a refusal is decided within the same queue.
	var moving []string
	for _, b := range bindings {
		if moves(predicted[b].outcome) {
			moving = append(moving, b)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && slices.ContainsFunc(moving, func(b string) bool { return !settled(b) }) {
		time.Sleep(100 * time.Millisecond)
	}
	quiet := time.Now().Add(3 * time.Second)
	for time.Now().Before(quiet) {
		time.Sleep(100 * time.Millisecond)
	}

	agree, diffs := s.compareWithPlan(bindings, before, predicted, get, onEast)
	if want, got, n, ok := drainSpans(predicted, bindings, log); ok {
		t.Logf("measured: time to drain %d evictions of ResourceBindings: planned %s from the first to the last, took %s", n, ms(want), ms(got))
	}

	share := float64(agree) / float64(len(bindings))
	t.Logf("measured: what-if agreement %d of %d bindings on the failed region (%.1f%%): landed where predicted or refused as predicted",
		agree, len(bindings), 100*share)
	for _, d := range diffs {
		t.Logf("difference: %s", d)
	}
	for _, b := range bindings {
		t.Logf("predicted %s: %s %s %v", b, predicted[b].outcome, predicted[b].code, predicted[b].to)
	}
	require.GreaterOrEqual(t, share, 0.95, "what-if agreement below 95%%")
}

// fleetsimBuild is examples/fleetsim, built once for every test that runs
// it (a link of some seconds, each time, on a loaded machine).
var fleetsimBuild struct {
	once sync.Once
	bin  string
	out  []byte
	err  error
}

// buildFleetsim builds examples/fleetsim, the first time, into the
// directory of the API server the tests share, and returns the binary's
// path.
func buildFleetsim(t *testing.T) string {
	t.Helper()
	b := &fleetsimBuild
	b.once.Do(func() {
		b.bin = filepath.Join(env.dir, "fleetsim")
		build := exec.Command("go", "build", "-o", b.bin, ".")
		build.Dir = "../examples/fleetsim"
		b.out, b.err = build.CombinedOutput()
	})
	require.NoError(t, b.err, "building examples/fleetsim: %s", b.out)
	return b.bin
}

// planWhatIf asks bin (fleetsim) for the --json plan of fail on the e2e
// API server, with args added.
func planWhatIf(t *testing.T, bin, fail string, args ...string) whatIfPlan {
	t.Helper()
	var stdout, stderr bytes.Buffer
	run := exec.Command(bin, append([]string{"--what-if", "--kubeconfig", filepath.Join(env.dir, "kubeconfig"), "--fail", fail, "--json"}, args...)...)
	run.Stdout, run.Stderr = &stdout, &stderr
	require.NoError(t, run.Run(), "fleetsim --what-if: %s", stderr.String())
	var plan whatIfPlan
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &plan), "the plan: %s", stdout.String())
	return plan
}

// prediction is what a plan says of one binding.
type prediction struct {
	outcome, code, reason string
	to                    map[string]int32
	at                    []float64 // when its evictions go, seconds after the failure
}

// predictions are the plan's, by binding: the name of a ResourceBinding of
// namespace ns, crb/ and the name of the ClusterResourceBinding crb.
func (plan *whatIfPlan) predictions(ns, crb string) map[string]prediction {
	predicted := map[string]prediction{}
	for _, e := range plan.Evictions {
		name, ok := strings.CutPrefix(e.Binding, ns+"/")
		if e.Kind == "ClusterResourceBinding" {
			name, ok = "crb/"+e.Binding, e.Binding == crb
		}
		if !ok {
			continue // another suite's
		}
		// A binding on several failed clusters has an eviction from each:
		// it moves if any of them moves.
		p, seen := predicted[name]
		if !seen {
			p = prediction{outcome: e.Outcome, code: e.Code, reason: e.Reason, to: map[string]int32{}}
		} else if moves(e.Outcome) {
			p.outcome, p.code = e.Outcome, e.Code
		}
		for _, x := range e.To {
			p.to[x.Name] += x.Replicas
		}
		if e.AtSeconds != nil {
			p.at = append(p.at, *e.AtSeconds)
		}
		predicted[name] = p
	}
	return predicted
}

// moves reports whether a plan's outcome leaves the failed clusters.
func moves(outcome string) bool {
	return outcome == "moves" || outcome == "waits" || outcome == "rescheduled"
}

// landed is where a binding's replicas went since before: the clusters it
// gained, with their replicas, and, when Divided, the replicas each
// cluster it kept gained.
func landed(before, now *workv1alpha2.ResourceBinding) map[string]int32 {
	was := map[string]int32{}
	for _, tc := range before.Spec.Clusters {
		was[tc.Name] = tc.Replicas
	}
	divided := now.Spec.Placement.ReplicaSchedulingType() == policyv1alpha1.ReplicaSchedulingTypeDivided
	got := map[string]int32{}
	for _, tc := range now.Spec.Clusters {
		old, ok := was[tc.Name]
		switch {
		case !ok:
			got[tc.Name] = tc.Replicas
		case divided && tc.Replicas > old:
			got[tc.Name] = tc.Replicas - old
		}
	}
	return got
}

// compareWithPlan counts the bindings that did what the plan predicted:
// moved, off every failed cluster (onFailed false), to the clusters and
// replicas predicted, or left where they were. diffs says how each other
// one differs.
func (s *suite) compareWithPlan(bindings []string, before map[string]*workv1alpha2.ResourceBinding, predicted map[string]prediction,
	get func(string) *workv1alpha2.ResourceBinding, onFailed func(*workv1alpha2.ResourceBinding) bool) (agree int, diffs []string) {
	for _, b := range bindings {
		p, rb := predicted[b], get(b)
		got := landed(before[b], rb)
		// Evicted or rescheduled, it has left every failed cluster (its
		// tasks may have ended since: the test reports the new copies
		// Healthy); refused or tolerating, it runs where it did.
		moved := !onFailed(rb)
		var ok bool
		switch {
		case moves(p.outcome):
			ok = moved && maps.Equal(p.to, got)
		case p.outcome == "refused" || p.outcome == "stays":
			ok = slices.Equal(slices.Sorted(slices.Values(targets(&rb.Spec))), slices.Sorted(slices.Values(targets(&before[b].Spec))))
		}
		if ok {
			agree++
			continue
		}
		actual := fmt.Sprintf("now on %v with %d tasks", targets(&rb.Spec), len(rb.Spec.GracefulEvictionTasks))
		if moved {
			actual = fmt.Sprintf("moved to %v", got)
		}
		var warn []string
		for _, e := range s.events(rb.Name) {
			if e.Type == corev1.EventTypeWarning {
				warn = append(warn, e.Reason+": "+e.Note)
			}
		}
		diffs = append(diffs, fmt.Sprintf("%s: predicted %s %s to %v at %v s (%s); really %s; Warning Events: %v",
			b, p.outcome, p.code, p.to, p.at, p.reason, actual, warn))
	}
	return agree, diffs
}

// drainSpans are the planned and the measured time from the first eviction
// of a ResourceBinding of names to the last, as the plan times them and as
// the tasks' creation shows them, and how many there are; ok is false when
// some were not seen evicted.
func drainSpans(predicted map[string]prediction, names []string, log *failoverLog) (planned, measured time.Duration, n int, ok bool) {
	var at []float64
	var evictedNames []string
	for _, b := range names {
		if o := predicted[b].outcome; (o == "moves" || o == "waits") && !strings.HasPrefix(b, "crb/") {
			evictedNames = append(evictedNames, b)
			at = append(at, predicted[b].at...)
		}
	}
	if len(at) < 2 {
		return 0, 0, len(at), false
	}
	log.mu.Lock()
	evicted, ok := log.times(log.evicted, evictedNames)
	log.mu.Unlock()
	if !ok {
		return 0, 0, len(at), false
	}
	planned = time.Duration((slices.Max(at) - slices.Min(at)) * float64(time.Second))
	return planned, evicted[len(evicted)-1].Sub(evicted[0]), len(at), true
}

// ensureForkManifests applies examples/karmadafork/deploy/rbac.yaml, as
// TestKarmadaFork does, unless it is there already: the fork's replicas
// impersonate its ServiceAccount.
func ensureForkManifests(t *testing.T) {
	t.Helper()
	ctx := ctxFor(t)
	c := adminClient(t)
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: forkNamespace}})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	for _, obj := range readManifests(t, "rbac.yaml") {
		if err := c.Create(ctx, obj); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "creating %s %s", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName())
		}
	}
}

// scheduledClusterBinding is scheduledBinding for a ClusterResourceBinding:
// created already placed on the clusters on, routed to the e2e's
// karmada-scheduler, which must see it and leave it there.
func (s *suite) scheduledClusterBinding(name string, replicas int32, p policyv1alpha1.Placement, on ...string) {
	t := s.t
	t.Helper()
	crb := &workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: s.labels()}}
	crb.Labels[policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel] = "e2e-" + s.name
	crb.Spec = workv1alpha2.ResourceBindingSpec{
		Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: s.ns, Name: name,
			UID: types.UID("uid-" + name)},
		Placement: &p, Replicas: replicas, SchedulerName: schedulerName,
	}
	crb.Annotations = s.appliedPlacement(&crb.Spec)
	per := replicas / int32(len(on))
	for _, c := range on {
		crb.Spec.Clusters = append(crb.Spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: per})
	}
	require.NoError(t, s.c.Create(ctxFor(t), crb))
	var got workv1alpha2.ClusterResourceBinding
	eventually(t, 20*time.Second, "karmada-scheduler to see "+name, func() bool {
		require.NoError(t, s.c.Get(ctxFor(t), client.ObjectKey{Name: name}, &got))
		return got.Status.SchedulerObservedGeneration == got.Generation
	})
	require.ElementsMatch(t, on, targets(&got.Spec), "karmada-scheduler moved %s before any failure", name)
}

package whatif

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/scheduling"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

func TestMain(m *testing.M) {
	// Karmada's scheduling framework starts a metrics goroutine that never
	// ends (one per process: package scheduling).
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction(scheduling.LeakedGoroutine))
}

const notReadyNoExecute = "cluster.karmada.io/not-ready"

var now = time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)

// member is a joined, Ready cluster in region with the Deployment API and
// room for room more pods.
func member(name, region string, room int64) *clusterv1alpha1.Cluster {
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"fleet": "test"}}}
	c.Spec.Region = region
	c.Spec.Zones = []string{region + "-a"}
	c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue,
		Reason: "ClusterReady", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	c.Status.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "apps/v1",
		Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}}}
	c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(110, resource.DecimalSI)},
		Allocated:   corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(110-room, resource.DecimalSI)},
	}
	return c
}

// releasedPolicy taints every cluster NoExecute while Ready is False, as
// Karmada's released ClusterTaintPolicy does.
func releasedPolicy() *policyv1alpha1.ClusterTaintPolicy {
	return &policyv1alpha1.ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "not-ready"},
		Spec: policyv1alpha1.ClusterTaintPolicySpec{
			AddOnConditions: []policyv1alpha1.MatchCondition{{ConditionType: clusterv1alpha1.ClusterConditionReady,
				Operator: policyv1alpha1.MatchConditionOpIn, StatusValues: []metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionUnknown}}},
			RemoveOnConditions: []policyv1alpha1.MatchCondition{{ConditionType: clusterv1alpha1.ClusterConditionReady,
				Operator: policyv1alpha1.MatchConditionOpIn, StatusValues: []metav1.ConditionStatus{metav1.ConditionTrue}}},
			Taints: []policyv1alpha1.Taint{{Key: notReadyNoExecute, Effect: corev1.TaintEffectNoExecute}},
		},
	}
}

// rb is a ResourceBinding for a Deployment scheduled on targets, with its
// placement applied (the annotation the taint manager reads).
func rb(name string, replicas int32, p policyv1alpha1.Placement, targets ...workv1alpha2.TargetCluster) *workv1alpha2.ResourceBinding {
	b := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	b.Spec = workv1alpha2.ResourceBindingSpec{
		Resource:  workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Placement: &p, Replicas: replicas, Clusters: targets,
	}
	applied, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	b.Annotations = map[string]string{karmada.AppliedPlacementAnnotation: string(applied)}
	return b
}

// crb is a ClusterResourceBinding of a Deployment-like workload with
// replicas on targets.
func crb(name string, p policyv1alpha1.Placement, targets ...workv1alpha2.TargetCluster) *workv1alpha2.ClusterResourceBinding {
	b := rb(name, 1, p, targets...)
	return &workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: b.Annotations}, Spec: b.Spec}
}

func on(name string, replicas int32) workv1alpha2.TargetCluster {
	return workv1alpha2.TargetCluster{Name: name, Replicas: replicas}
}

func aggregated() *policyv1alpha1.ReplicaSchedulingStrategy {
	return &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated}
}

// fleetObjects is a fleet of two regions: east (e1, e2, e3) fails; west
// has room for 5 pods on w1, 3 on w2, none on w3.
func fleetObjects() []client.Object {
	all := &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "test"}}}
	return []client.Object{
		member("e1", "east", 50), member("e2", "east", 50), member("e3", "east", 50),
		member("w1", "west", 5), member("w2", "west", 3), member("w3", "west", 0),
		releasedPolicy(),
		// Duplicated on one cluster of each region: the copy on e1 needs
		// another west cluster (spread by cluster, two of them).
		rb("dup", 1, policyv1alpha1.Placement{ClusterAffinity: all, SpreadConstraints: []policyv1alpha1.SpreadConstraint{
			{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 2, MaxGroups: 2}}}, on("e1", 1), on("w3", 1)),
		// Pinned to e2: nowhere to go.
		rb("pinned", 1, policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"e2"}}}, on("e2", 1)),
		// Tolerates the taint for good: not evicted. But Karmada's
		// scheduler schedules a Duplicated binding again when a cluster
		// changes, and by the summaries (a cluster that is not Ready has no
		// room for it) moves its one copy to w1 itself.
		rb("tolerant", 1, policyv1alpha1.Placement{ClusterAffinity: all, ClusterTolerations: []corev1.Toleration{
			{Key: notReadyNoExecute, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 1, MaxGroups: 1},
				{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 1, MaxGroups: 1}}},
			on("e3", 1)),
		// Aggregated workloads on e3 (and e2), taken in this order, the
		// ClusterResourceBinding's queue taking its turn after agg-a. The
		// scheduler puts each on the roomiest cluster by the summaries it
		// sees: agg-a's 3 on w1 (room 5), then the ClusterResourceBinding's
		// 1; agg-b's 3 would go there too, but the Ledger holds 4 of w1's 5
		// for those, so it waits for the summaries, and so do agg-c and
		// agg-d. Once the summaries show them, w1 is full and agg-b goes to
		// w2 (room 3); agg-c, waiting again for agg-b's room, and agg-d then
		// find too little room and are refused.
		rb("agg-a", 3, policyv1alpha1.Placement{ClusterAffinity: all, ReplicaScheduling: aggregated()}, on("e3", 3)),
		rb("agg-b", 3, policyv1alpha1.Placement{ClusterAffinity: all, ReplicaScheduling: aggregated()}, on("e3", 3)),
		rb("agg-c", 2, policyv1alpha1.Placement{ClusterAffinity: all, ReplicaScheduling: aggregated()}, on("e3", 2)),
		rb("agg-d", 4, policyv1alpha1.Placement{ClusterAffinity: all, ReplicaScheduling: aggregated()}, on("e2", 4)),
		// A ClusterResourceBinding (a cluster-scoped workload) goes
		// through a queue of its own.
		crb("namespaces", policyv1alpha1.Placement{ClusterAffinity: all, ReplicaScheduling: aggregated()}, on("e1", 1)),
		// Not on a failed cluster at all.
		rb("west-only", 1, policyv1alpha1.Placement{ClusterAffinity: all}, on("w1", 1)),
	}
}

func newFake(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func readAndPlan(t *testing.T, c client.Reader, f string, opts ...func(*Config)) *Report {
	t.Helper()
	in, err := Read(context.Background(), c, "fake", nil)
	if err != nil {
		t.Fatal(err)
	}
	failure, err := ParseFailure(f)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Failure: failure, Rates: ratelimit.DefaultConfig(), EnableNoExecuteTaintEviction: true, Now: now}
	for _, o := range opts {
		o(&cfg)
	}
	r, err := Plan(in, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func byBinding(r *Report) map[string]Eviction {
	out := map[string]Eviction{}
	for _, e := range r.Evictions {
		out[e.Binding+"@"+e.Cluster] = e
	}
	return out
}

// TestPlanRegionalOutage plays east's outage and checks each binding's fate
// as the controllers and Karmada's scheduler would decide it.
func TestPlanRegionalOutage(t *testing.T) {
	r := readAndPlan(t, newFake(t, fleetObjects()...), "region=east")
	if got := strings.Join(r.Failure.Clusters, ","); got != "e1,e2,e3" {
		t.Fatalf("failed clusters %s, want e1,e2,e3", got)
	}
	for _, tn := range r.Taints {
		if !tn.Faulty || len(tn.Added) != 1 || tn.Added[0].Key != notReadyNoExecute || tn.Added[0].Policy != "not-ready" {
			t.Errorf("%s: taints %+v, want the not-ready NoExecute taint of policy not-ready", tn.Cluster, tn)
		}
	}
	ev := byBinding(r)
	t.Logf("\n%s", table(t, r))
	if e := ev["namespaces@e1"]; e.Kind != KindClusterResourceBinding || e.Outcome != OutcomeMoves || len(e.To) != 1 || e.To[0].Name != "w1" {
		t.Errorf("the ClusterResourceBinding: %+v, want moves to w1, second in line", e)
	}
	if _, ok := ev["default/west-only@w1"]; ok {
		t.Error("a binding on no failed cluster is planned")
	}
	want := map[string]struct {
		outcome, code string
		to            string
	}{
		"default/dup@e1":      {OutcomeMoves, "Feasible", "w1×1"},
		"default/pinned@e2":   {OutcomeRefused, "NoEligibleCluster", ""},
		"default/tolerant@e3": {OutcomeRescheduled, CodeRescheduled, "w1×1"},
		"default/agg-a@e3":    {OutcomeMoves, "Feasible", "w1×3"},
		"default/agg-b@e3":    {OutcomeWaits, "Feasible", "w2×3"},
		"default/agg-c@e3":    {OutcomeRefused, "InsufficientCapacity", ""},
		"default/agg-d@e2":    {OutcomeRefused, "InsufficientCapacity", ""},
	}
	for k, w := range want {
		e, ok := ev[k]
		if !ok {
			t.Errorf("%s: not planned", k)
			continue
		}
		var to []string
		for _, x := range e.To {
			to = append(to, fmt.Sprintf("%s×%d", x.Name, x.Replicas))
		}
		if e.Outcome != w.outcome || e.Code != w.code || strings.Join(to, ",") != w.to {
			t.Errorf("%s: %s %s to %v (%s), want %s %s to %s", k, e.Outcome, e.Code, to, e.Reason, w.outcome, w.code, w.to)
		}
	}
	if len(r.Evictions) != len(want)+1 {
		t.Errorf("%d evictions planned, want %d", len(r.Evictions), len(want))
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "3 evictions wait for room") }) {
		t.Errorf("notes %q: want one saying the 3 waits depend on the queue's order", r.Notes)
	}
	if e := ev["default/agg-b@e3"]; e.Round != 2 || !strings.Contains(e.Reason, "waited for room (w1 has room for 1 of 3") {
		t.Errorf("agg-b: round %d, %q: want round 2, having waited for w1's room", e.Round, e.Reason)
	}
	// The survivors' room: w1 takes agg-a's 3, the ClusterResourceBinding's
	// 1 and the two Duplicated copies, which land whatever the room (w1 is
	// overcommitted by 1); w2 takes agg-b's 3.
	rooms := map[string]Room{}
	for _, c := range r.Clusters {
		rooms[c.Name] = c
	}
	if w1 := rooms["w1"]; w1.PodsBefore != 5 || w1.Arriving != 6 || w1.PodsAfter != 0 || w1.Bindings != 4 {
		t.Errorf("w1's room %+v, want 5 before, 6 arriving, 0 after, 4 bindings", w1)
	}
	if w2 := rooms["w2"]; w2.PodsBefore != 3 || w2.Arriving != 3 || w2.PodsAfter != 0 || w2.Bindings != 1 {
		t.Errorf("w2's room %+v, want 3 before, 3 arriving, 0 after, 1 binding", w2)
	}
	if _, ok := rooms["e1"]; ok {
		t.Error("a failed cluster is listed among the survivors")
	}
	// 3 of 6 faulty: 50% ≤ 55%, the primary rate 0.5/s. Three evictions
	// go at once, two seconds apart; agg-b, held back at 2s, is tried again
	// when the room of the first (agg-a, at 0s) is given back, one report
	// (10s) after its task ended, and the report at 10s shows w1 full.
	if r.Rate.PerSecond != 0.5 || r.Rate.StormHoldSeconds != 0 {
		t.Errorf("rate %+v, want 0.5/s and no storm", r.Rate)
	}
	if r.Drain.Evictions != 4 || r.Drain.Seconds == nil || *r.Drain.Seconds != 10 {
		t.Errorf("drain %+v (seconds %v), want 4 evictions, the last at 10s", r.Drain, deref(r.Drain.Seconds))
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func table(t *testing.T, r *Report) string {
	var b bytes.Buffer
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestPlanWithoutPolicyMovesNothing: with no ClusterTaintPolicy, a failed
// cluster only gets the cluster controller's NoSchedule taint, which evicts
// nothing, and the plan says so.
func TestPlanWithoutPolicyMovesNothing(t *testing.T) {
	objs := slices.DeleteFunc(fleetObjects(), func(o client.Object) bool { _, ok := o.(*policyv1alpha1.ClusterTaintPolicy); return ok })
	r := readAndPlan(t, newFake(t, objs...), "clusters=e1")
	if len(r.Taints) != 1 || r.Taints[0].Faulty || !strings.Contains(r.Taints[0].Note, "no ClusterTaintPolicy taints it") {
		t.Fatalf("taints %+v, want e1 not faulty and a note that no policy taints it", r.Taints)
	}
	if r.Totals.Moves+r.Totals.Waits+r.Totals.Refused != 0 || r.Drain.Evictions != 0 {
		t.Errorf("totals %+v, drain %+v: want nothing evicted", r.Totals, r.Drain)
	}
}

// TestPlanNoExecuteDisabled: without --enable-no-execute-taint-eviction a
// NoExecute taint evicts nothing, as in Karmada, and each binding says why.
func TestPlanNoExecuteDisabled(t *testing.T) {
	r := readAndPlan(t, newFake(t, fleetObjects()...), "clusters=e1", func(c *Config) { c.EnableNoExecuteTaintEviction = false })
	e := byBinding(r)["default/dup@e1"]
	if e.Outcome != OutcomeStays || e.Code != CodeNoExecuteDisabled {
		t.Errorf("dup: %s %s, want stays %s", e.Outcome, e.Code, CodeNoExecuteDisabled)
	}
	// Nothing moves from e1 (the ClusterResourceBinding and dup stay), and
	// the plan says it is the default that decides it, and how to change it.
	if !strings.HasPrefix(r.Hint, "nothing moves: 2 of 2 evictions stay only because") || !strings.Contains(r.Hint, "--controller-flags") {
		t.Errorf("hint %q: want one saying nothing moves because NoExecute eviction is off, and how to plan with it on", r.Hint)
	}
	if on := readAndPlan(t, newFake(t, fleetObjects()...), "clusters=e1"); on.Hint != "" {
		t.Errorf("with NoExecute eviction on, hint %q: want none", on.Hint)
	}
}

// TestPlanPlacesAsTheSummariesReport: Karmada's scheduler places each
// eviction by the resource summaries as last reported, so a burst of
// Aggregated evictions goes to the roomiest survivor until the next report
// shows it filling, and then to the other, as in a fork; the plan plays
// the reports every StatusUpdateFrequency and times each eviction at the
// rate.
func TestPlanPlacesAsTheSummariesReport(t *testing.T) {
	all := &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "test"}}}
	objs := []client.Object{member("e1", "east", 50), member("e2", "east", 0), member("e3", "east", 0),
		member("w1", "west", 10), member("w2", "west", 9), member("w3", "west", 0), releasedPolicy()}
	for i := range 6 {
		objs = append(objs, rb(fmt.Sprintf("agg-%d", i), 2, policyv1alpha1.Placement{ClusterAffinity: all, ReplicaScheduling: aggregated()}, on("e1", 2)))
	}
	r := readAndPlan(t, newFake(t, objs...), "clusters=e1", func(c *Config) {
		c.Rates.ResourceEvictionRate = 1
		c.StatusUpdateFrequency = 2500 * time.Millisecond
	})
	t.Logf("\n%s", table(t, r))
	// At 0, 1 and 2 s, w1 (room 10) is the roomiest; the report at 2.5 s
	// shows its 6 pods taken (room 4), so at 3 and 4 s w2 (9); the report
	// at 5 s shows w2's 4 (room 5), still the roomiest at 5 s.
	want := []string{"w1", "w1", "w1", "w2", "w2", "w2"}
	for i, w := range want {
		e := byBinding(r)[fmt.Sprintf("default/agg-%d@e1", i)]
		if e.Outcome != OutcomeMoves || len(e.To) != 1 || e.To[0].Name != w || e.To[0].Replicas != 2 || e.AtSeconds == nil || *e.AtSeconds != float64(i) {
			t.Errorf("agg-%d: %s to %+v at %v s (%s), want moves to %s×2 at %d s", i, e.Outcome, e.To, deref(e.AtSeconds), e.Reason, w, i)
		}
	}
	if r.Drain.Seconds == nil || *r.Drain.Seconds != 5 {
		t.Errorf("drain %+v, want the last eviction 5 s after the failure", r.Drain)
	}
	// Reported all at once at the end (the old model's rounds), the Ledger
	// would have sent five to w1, one to w2.
	if r.Totals.Waits != 0 {
		t.Errorf("totals %+v: want none held back, the reports free the Ledger's room", r.Totals)
	}
}

// TestPlanSmallFleetPauses: 4 of 6 clusters faulty in a fleet of at most
// 10 pauses evictions; the plan says which would go where when resumed,
// and gives no drain time.
func TestPlanSmallFleetPauses(t *testing.T) {
	r := readAndPlan(t, newFake(t, fleetObjects()...), "clusters=e1,e2,e3,w3")
	if r.Rate.PerSecond != 0 || !r.Drain.Paused || r.Drain.Seconds != nil {
		t.Fatalf("rate %+v, drain %+v: want paused, no drain time", r.Rate, r.Drain)
	}
	if e := byBinding(r)["default/agg-a@e3"]; e.Outcome != OutcomePaused || e.AtSeconds != nil || !strings.HasPrefix(e.Reason, "the rate rule pauses evictions") {
		t.Errorf("agg-a: %+v, want paused, saying why", e)
	}
	// Every eviction has an outcome, those that would wait for room when the
	// rule resumes included.
	for _, e := range r.Evictions {
		if e.Outcome == "" {
			t.Errorf("%s@%s: no outcome (%s %s)", e.Binding, e.Cluster, e.Code, e.Reason)
		}
	}
}

// TestPlanStormHolds: with a storm threshold below the failure, every
// eviction waits the storm's confirmation period.
func TestPlanStormHolds(t *testing.T) {
	r := readAndPlan(t, newFake(t, fleetObjects()...), "region=east", func(c *Config) {
		c.Rates.StormThreshold = 0.3
	})
	if r.Rate.StormHoldSeconds != 300 {
		t.Fatalf("storm hold %v s, want 300 (3 of 6 faulty at once, above 0.3)", r.Rate.StormHoldSeconds)
	}
	if e := byBinding(r)["default/dup@e1"]; e.AtSeconds == nil || *e.AtSeconds < 300 {
		t.Errorf("dup evicted at %v s, want after the 300 s hold", deref(e.AtSeconds))
	}
}

// TestPlanRegionRule: under --disruption-domain=region, east in
// FullDisruption evicts at the primary rate while west is Normal.
func TestPlanRegionRule(t *testing.T) {
	r := readAndPlan(t, newFake(t, fleetObjects()...), "region=east", func(c *Config) { c.Rates.DisruptionDomain = ratelimit.DomainRegion })
	if len(r.Rate.Domains) != 1 || r.Rate.Domains[0].Name != "east" || r.Rate.Domains[0].State != "FullDisruption" || r.Rate.Domains[0].PerSecond != 0.5 {
		t.Fatalf("domains %+v, want east in FullDisruption at 0.5/s", r.Rate.Domains)
	}
}

// TestPlanZone: a zone's failure fails the clusters wholly in it.
func TestPlanZone(t *testing.T) {
	r := readAndPlan(t, newFake(t, fleetObjects()...), "zone=west-a")
	if got := strings.Join(r.Failure.Clusters, ","); got != "w1,w2,w3" {
		t.Errorf("zone=west-a fails %s, want w1,w2,w3", got)
	}
}

// TestBadInput: each bad --fail, and a failure naming nothing the fleet
// has, is an ExitError with its code and the value named.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct{ fail, want string }{
		{"east", `"east": want region=NAME`},
		{"planet=earth", `"planet" is not region, zone or clusters`},
		{"clusters=a,,b", "an empty name"},
		{"region=", "an empty name"},
	} {
		_, err := ParseFailure(tc.fail)
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != ExitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--fail %q: %v, want exit %d and %q", tc.fail, err, ExitUsage, tc.want)
		}
	}
	in, err := Read(context.Background(), newFake(t, fleetObjects()...), "fake", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ fail, want string }{
		{"region=north", `no cluster is in region "north" (the control plane has 6 clusters; its regions: east, west)`},
		{"zone=east-b", `no cluster is in zone "east-b"`},
		{"clusters=e1,x9", `no cluster is named "x9"`},
	} {
		f, err := ParseFailure(tc.fail)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Plan(in, Config{Failure: f, Rates: ratelimit.DefaultConfig(), Now: now})
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != ExitUnknownName || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--fail %s: %v, want exit %d and %q", tc.fail, err, ExitUnknownName, tc.want)
		}
	}
}

// TestReadRefused: a 403 on any list is ExitForbidden naming what was
// listed; nothing is planned on what was read before.
func TestReadRefused(t *testing.T) {
	c := interceptor.NewClient(newFake(t, fleetObjects()...), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			if _, ok := l.(*workv1alpha2.ResourceBindingList); ok {
				return apierrors.NewForbidden(schema.GroupResource{Group: "work.karmada.io", Resource: "resourcebindings"}, "", errors.New("RBAC: no"))
			}
			return c.List(ctx, l, opts...)
		},
	})
	in, err := Read(context.Background(), c, "https://karmada:5443", nil)
	var ee *ExitError
	if in != nil || !errors.As(err, &ee) || ee.Code != ExitForbidden || !strings.Contains(err.Error(), "listing ResourceBindings on https://karmada:5443: forbidden") {
		t.Fatalf("got %v, %v: want no input and exit %d naming the ResourceBindings", in, err, ExitForbidden)
	}
}

// TestConnectUnreachable: a server nobody listens on is ExitUnreachable.
func TestConnectUnreachable(t *testing.T) {
	path := t.TempDir() + "/kubeconfig"
	kc := "apiVersion: v1\nkind: Config\nclusters: [{name: k, cluster: {server: \"http://127.0.0.1:1\"}}]\n" +
		"users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\ncurrent-context: c\n"
	if err := writeFile(path, kc); err != nil {
		t.Fatal(err)
	}
	c, server, err := Connect(path)
	if err == nil {
		_, err = Read(context.Background(), c, server, nil)
	}
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitUnreachable || !strings.Contains(err.Error(), "http://127.0.0.1:1") {
		t.Fatalf("got %v, want exit %d naming the server", err, ExitUnreachable)
	}
	if _, _, err := Connect(t.TempDir() + "/missing"); !errors.As(err, &ee) || ee.Code != ExitUnreachable || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing kubeconfig: %v, want exit %d naming it", err, ExitUnreachable)
	}
}

// pager serves lists a page at a time, as an API server does with Limit
// and Continue, which the fake client ignores.
type pager struct {
	client.Reader
	limits []int64
}

func (p *pager) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	p.limits = append(p.limits, lo.Limit)
	if err := p.Reader.List(ctx, l); err != nil {
		return err
	}
	start := 0
	if lo.Continue != "" {
		fmt.Sscan(lo.Continue, &start)
	}
	items, err := metaItems(l)
	if err != nil {
		return err
	}
	end := min(start+int(lo.Limit), len(items))
	if err := setItems(l, items[start:end]); err != nil {
		return err
	}
	if end < len(items) {
		l.SetContinue(fmt.Sprint(end))
		rest := int64(len(items) - end)
		l.SetRemainingItemCount(&rest)
	} else {
		l.SetContinue("")
		l.SetRemainingItemCount(nil)
	}
	return nil
}

// TestReadPagesAndShowsProgress: a list longer than a page is read page by
// page to the end, with a progress line.
func TestReadPagesAndShowsProgress(t *testing.T) {
	objs := fleetObjects()
	for i := range PageSize + 100 {
		objs = append(objs, rb(fmt.Sprintf("many-%04d", i), 1, policyv1alpha1.Placement{}, on("w1", 1)))
	}
	p := &pager{Reader: newFake(t, objs...)}
	var progress bytes.Buffer
	in, err := Read(context.Background(), p, "fake", &progress)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.ResourceBindings) != PageSize+108 {
		t.Fatalf("read %d ResourceBindings, want %d", len(in.ResourceBindings), PageSize+108)
	}
	if slices.ContainsFunc(p.limits, func(l int64) bool { return l != PageSize }) {
		t.Errorf("limits %v, want every list to ask for %d", p.limits, PageSize)
	}
	out := progress.String()
	if !strings.Contains(out, "500 ResourceBindings (of about 608)") || !strings.Contains(out, "608 ResourceBindings") || !strings.HasSuffix(out, "\n") {
		t.Errorf("progress %q: want the count after each page, with the estimate, ending the line", out)
	}
}

// TestPlanWindowsAndTolerationSeconds: a windowed policy adds its
// PreferNoExecute taint only after addOnMatchSeconds; a binding that opted
// in with spec.failover.cluster leaves 300 s after that (Karmada's
// default), one that did not stays.
func TestPlanWindowsAndTolerationSeconds(t *testing.T) {
	in, err := Read(context.Background(), newFake(t, fleetObjects()...), "fake", nil)
	if err != nil {
		t.Fatal(err)
	}
	sixty := int32(60)
	in.Policies = []taintpolicy.ClusterTaintPolicy{{
		TypeMeta:   metav1.TypeMeta{APIVersion: taintpolicy.APIVersion, Kind: taintpolicy.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "windowed"},
		Spec: taintpolicy.ClusterTaintPolicySpec{
			MatchConditions: []taintpolicy.MatchCondition{{ConditionType: clusterv1alpha1.ClusterConditionReady,
				Operator: taintpolicy.MatchConditionOpIn, StatusValues: []metav1.ConditionStatus{metav1.ConditionFalse}}},
			TaintsToAdd: []taintpolicy.TaintToAdd{{Key: notReadyNoExecute, Effect: failover.TaintEffectPreferNoExecute, AddOnMatchSeconds: &sixty}},
		},
	}}
	for i := range in.ResourceBindings {
		if in.ResourceBindings[i].Name == "agg-a" {
			in.ResourceBindings[i].Spec.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeGracefully}}
		}
	}
	f, err := ParseFailure("clusters=e3")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Plan(in, Config{Failure: f, Rates: ratelimit.DefaultConfig(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Taints) != 1 || len(r.Taints[0].Added) != 1 || r.Taints[0].Added[0].AfterSeconds != 60 || r.Taints[0].Added[0].Policy != "windowed" {
		t.Fatalf("taints %+v, want the PreferNoExecute taint of policy windowed after 60 s", r.Taints)
	}
	ev := byBinding(r)
	if e := ev["default/agg-a@e3"]; e.Outcome != OutcomeMoves || e.AtSeconds == nil || *e.AtSeconds != 360 {
		t.Errorf("agg-a: %s at %v s, want moves at 360 s (60 s window + 300 s default tolerationSeconds)", e.Outcome, deref(e.AtSeconds))
	}
	if e := ev["default/agg-b@e3"]; e.Outcome != OutcomeStays || e.Code != CodeTolerated {
		t.Errorf("agg-b without spec.failover.cluster: %s %s, want stays (a PreferNoExecute taint moves only bindings that opted in)", e.Outcome, e.Code)
	}
}

// TestQueueOrder: items due together go by key, the two kinds' queues
// taking turns; an item due later waits its turn.
func TestQueueOrder(t *testing.T) {
	mk := func(kind, key string, due int) *item {
		return &item{b: &binding{kind: kind, key: key}, cluster: "c", due: now.Add(time.Duration(due) * time.Second)}
	}
	items := []*item{
		mk(KindResourceBinding, "ns/c", 0), mk(KindClusterResourceBinding, "z", 0), mk(KindResourceBinding, "ns/a", 0),
		mk(KindResourceBinding, "ns/b", 0), mk(KindClusterResourceBinding, "y", 0), mk(KindResourceBinding, "ns/early", -5),
		mk(KindClusterResourceBinding, "later", 60),
	}
	var got []string
	for _, it := range queueOrder(items) {
		got = append(got, it.b.key)
	}
	if want := "ns/early ns/a y ns/b z ns/c later"; strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
}

// A binding on two failed clusters with a budget of one cluster in transit
// (karmada.MaxClustersInTransitAnnotation) moves off the first; the second
// waits for the first's graceful eviction task to end, as the eviction
// controller's decision path (engine.Evictor.Evict) has it, and counts in
// no drain.
func TestPlanHonoursTheTransitBudget(t *testing.T) {
	all := &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "test"}}}
	spread := policyv1alpha1.Placement{ClusterAffinity: all, ReplicaScheduling: aggregated()}
	budgeted := rb("budgeted", 2, spread, on("e1", 1), on("e2", 1))
	budgeted.Annotations[karmada.MaxClustersInTransitAnnotation] = "1"
	free := rb("free", 2, spread, on("e1", 1), on("e2", 1))
	// A fleet large enough that two failed clusters slow nothing.
	objs := []client.Object{member("e1", "east", 50), member("e2", "east", 50), releasedPolicy(), budgeted, free}
	for i := range 10 {
		objs = append(objs, member(fmt.Sprintf("w%d", i), "west", 50))
	}
	r := readAndPlan(t, newFake(t, objs...), "region=east")
	ev := byBinding(r)
	t.Logf("\n%s", table(t, r))
	if e := ev["default/budgeted@e1"]; e.Outcome != OutcomeMoves {
		t.Errorf("budgeted from e1: %s (%s), want moves", e.Outcome, e.Reason)
	}
	if e := ev["default/budgeted@e2"]; e.Outcome != OutcomeWaitsForBudget || e.Code != CodeTransitBudget || !strings.Contains(e.Reason, "1 of at most 1 clusters") {
		t.Errorf("budgeted from e2: %s %s (%s), want waits-for-budget: e1 is in transit", e.Outcome, e.Code, e.Reason)
	}
	for _, k := range []string{"default/free@e1", "default/free@e2"} {
		if e := ev[k]; e.Outcome != OutcomeMoves {
			t.Errorf("%s: %s (%s), want moves: no budget", k, e.Outcome, e.Reason)
		}
	}
	if r.Totals.WaitsForBudget != 1 || r.Drain.Evictions != 3 {
		t.Errorf("totals %+v, drain of %d: want 1 waiting for its budget, 3 evictions drained", r.Totals, r.Drain.Evictions)
	}
}

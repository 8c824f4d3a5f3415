package whatif

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover/failback"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

// down is c failed an hour ago: Ready False, tainted NoExecute.
func down(c *clusterv1alpha1.Cluster) *clusterv1alpha1.Cluster {
	c.Status.Conditions[0].Status = metav1.ConditionFalse
	c.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-time.Hour))
	c.Spec.Taints = []corev1.Taint{{Key: notReadyNoExecute, Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: now.Add(-time.Hour)}}}
	return c
}

// failedBack is a binding of 2 replicas that failed over from origin to
// w1 under placement p, observing term.
func failedBack(name, origin string, p policyv1alpha1.Placement, term string) workv1alpha2.ResourceBinding {
	b := rb(name, 2, p, on("w1", 2))
	rec := failback.Record{}.Add(failback.Origin{Cluster: origin, At: metav1.NewTime(now.Add(-time.Hour)), Placement: karmada.PlacementFingerprint(b.Spec.Placement)})
	b.Annotations[karmada.FailedOverFromAnnotation] = rec.String()
	b.Status.SchedulerObservedAffinityName = term
	return *b
}

// The east region recovers: the bindings that prefer it go back once the
// window has passed, one at a time as the cap and the assumed start-up
// let them, to the first term's roomiest cluster; one whose placement by
// room prefers where it runs is not placed; one whose annotation turns
// failback off is off; one that never failed over from east is not listed.
func TestPlanRecovery(t *testing.T) {
	east := []string{"e1", "e2"}
	terms := policyv1alpha1.Placement{
		ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
			{AffinityName: "home", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: east}},
			{AffinityName: "fallback", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"w1"}}},
		},
		ReplicaScheduling: aggregated(),
	}
	byRoom := policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"e2", "w1"}}, ReplicaScheduling: aggregated()}
	off := failedBack("off", "e1", terms, "fallback")
	off.Annotations[karmada.FailbackWindowAnnotation] = "0"
	policy, err := karmada.FromClusterTaintPolicy(releasedPolicy())
	if err != nil {
		t.Fatal(err)
	}
	in := &Input{
		Clusters: []clusterv1alpha1.Cluster{*down(member("e1", "east", 50)), *down(member("e2", "east", 5)), *member("w1", "west", 100)},
		Policies: []taintpolicy.ClusterTaintPolicy{policy},
		ResourceBindings: []workv1alpha2.ResourceBinding{
			failedBack("a", "e1", terms, "fallback"), failedBack("b", "e2", terms, "fallback"),
			failedBack("roomier-west", "e2", byRoom, ""), off, *rb("never-moved", 2, byRoom, on("w1", 2)),
		},
	}
	recovery, err := ParseFailure("region=east")
	if err != nil {
		t.Fatal(err)
	}
	r, err := PlanRecovery(in, RecoveryConfig{Recovery: recovery, Rates: ratelimit.DefaultConfig(), Window: 10 * time.Minute, MaxInFlight: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Failback{}
	for _, f := range r.Failbacks {
		got[f.Binding] = f
	}
	if len(got) != 4 {
		t.Fatalf("want the 4 bindings that failed over from east, got %+v", r.Failbacks)
	}
	want := map[string]struct {
		outcome string
		at      float64
		to      string
	}{
		"default/a":            {FailbackBack, 600, "e1:2"},
		"default/b":            {FailbackBack, 660, "e1:2"}, // the cap of 1: after a's assumed minute; e1 is the roomier of the first term
		"default/roomier-west": {FailbackNotPlaced, 0, "w1:2"},
		"default/off":          {FailbackOff, 0, ""},
	}
	for k, w := range want {
		f := got[k]
		var to []string
		for _, t := range f.To {
			to = append(to, t.Name+":"+string(rune('0'+t.Replicas)))
		}
		if f.Outcome != w.outcome || f.AtSeconds != w.at || strings.Join(to, ",") != w.to {
			t.Errorf("%s: %s at %vs to %v (%s), want %s at %vs to %s", k, f.Outcome, f.AtSeconds, to, f.Reason, w.outcome, w.at, w.to)
		}
	}
	if r.Totals != (RecoveryTotals{Back: 2, NotPlaced: 1, Off: 1}) || r.DoneSeconds != 660 {
		t.Errorf("totals %+v, done at %vs", r.Totals, r.DoneSeconds)
	}
	var b strings.Builder
	if err := WriteRecoveryTable(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"what if region=east recovers now", "default/a", "2 back, 1 not placed, 0 waiting, 1 off; the last goes 11m0s after the recovery"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the table lacks %q:\n%s", s, b.String())
		}
	}

	// Without the cap, the rate paces them: 2 s apart at 0.5/s.
	r, err = PlanRecovery(in, RecoveryConfig{Recovery: recovery, Rates: ratelimit.DefaultConfig(), Window: 10 * time.Minute, MaxInFlight: 10, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if r.DoneSeconds != 602 {
		t.Errorf("without the cap the last goes at %vs, want 602 (two permits at 0.5/s)", r.DoneSeconds)
	}
}

// TestRecoveryJSONMatchesReference: the --recover --json output decodes
// strictly into RecoveryReport, and REFERENCE.md documents exactly its
// fields.
func TestRecoveryJSONMatchesReference(t *testing.T) {
	r := &RecoveryReport{Failbacks: []Failback{{To: []Target{{Name: "e1", Replicas: 2}}, Leaving: []string{"w1"}}}, Notes: []string{}}
	var out bytes.Buffer
	if err := WriteRecoveryJSON(&out, r); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	dec.DisallowUnknownFields()
	var back RecoveryReport
	if err := dec.Decode(&back); err != nil {
		t.Fatalf("the output does not decode strictly into RecoveryReport: %v", err)
	}
	have, doc := jsonPaths("", reflect.TypeFor[RecoveryReport]()), documentedIn(t, "The `--what-if --recover --json` schema")
	slices.Sort(have)
	slices.Sort(doc)
	if have, doc = slices.Compact(have), slices.Compact(doc); !slices.Equal(have, doc) {
		t.Errorf("the output's fields %v, documented in %s: %v", have, reference, doc)
	}
}

// A plan made after the recovery counts the window from the origin's Ready
// lastTransitionTime, not from the plan's moment.
func TestPlanRecoveryCountsFromTheRecovery(t *testing.T) {
	terms := policyv1alpha1.Placement{
		ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
			{AffinityName: "home", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"e1"}}},
			{AffinityName: "fallback", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"w1"}}},
		},
		ReplicaScheduling: aggregated(),
	}
	e1 := member("e1", "east", 50)
	e1.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-4 * time.Minute)) // Ready 4 minutes ago
	in := &Input{Clusters: []clusterv1alpha1.Cluster{*e1, *member("w1", "west", 100)},
		ResourceBindings: []workv1alpha2.ResourceBinding{failedBack("a", "e1", terms, "fallback")}}
	recovery, err := ParseFailure("clusters=e1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := PlanRecovery(in, RecoveryConfig{Recovery: recovery, Rates: ratelimit.DefaultConfig(), Window: 10 * time.Minute, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Failbacks) != 1 || r.Failbacks[0].Outcome != FailbackBack || r.Failbacks[0].AtSeconds != 360 {
		t.Errorf("want back 6 minutes after the plan (10 after the recovery 4 minutes ago), got %+v", r.Failbacks)
	}
}

package taintpolicy

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

// TestGoldenDetectClusterNotReady plays the proposal's example policy,
// loaded from its YAML, against three clusters over time, feeding each
// result back as a controller would, and compares every decision with the
// hand-written expectations in testdata/detect-cluster-not-ready.golden.
func TestGoldenDetectClusterNotReady(t *testing.T) {
	e, err := NewEvaluator(loadFile(t, "detect-cluster-not-ready.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	clock := func(hms string) time.Time {
		tm, err := time.Parse(time.DateTime, "2025-01-17 "+hms)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	// member1's Ready condition: status from each time on.
	member1 := []struct {
		from   string
		status metav1.ConditionStatus
	}{
		{"02:36:26", condFalse}, {"02:45:00", condTrue}, {"02:50:00", condUnknown}, {"02:53:00", condTrue},
	}
	readyOf := map[string]metav1.Condition{
		"member2": cond("Ready", condTrue, clock("02:00:00")),
		"member3": cond("Ready", condFalse, clock("02:36:26")),
	}
	taints := map[string][]corev1.Taint{"member3": {{Key: "maintenance", Effect: noSchedule}}}

	var got []string
	for _, hms := range []string{"02:36:26", "02:41:25", "02:41:26", "02:45:00", "02:47:59", "02:48:00", "02:50:00", "02:53:00", "02:55:00"} {
		now := clock(hms)
		for _, m := range member1 {
			if !clock(m.from).After(now) {
				readyOf["member1"] = cond("Ready", m.status, clock(m.from))
			}
		}
		for _, name := range []string{"member1", "member2", "member3"} {
			ready := readyOf[name]
			r := e.Evaluate(failover.Cluster{Name: name, Conditions: []metav1.Condition{ready}, Taints: taints[name]}, now)
			taints[name] = r.Taints
			got = append(got, fmt.Sprintf("%s %s Ready=%s since %s: taints=%s added=%s removed=%s requeue=%s",
				hms, name, ready.Status, ready.LastTransitionTime.Format(time.TimeOnly),
				goldenTaints(r.Taints), goldenTaints(r.Added), goldenTaints(r.Removed), r.RequeueAfter))
		}
	}

	raw, err := os.ReadFile("testdata/detect-cluster-not-ready.golden")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if !strings.HasPrefix(line, "#") {
			want = append(want, line)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d decisions, golden file has %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("decision %d:\n got  %s\n want %s", i+1, got[i], want[i])
		}
	}
}

func goldenTaints(taints []corev1.Taint) string {
	parts := make([]string, len(taints))
	for i, t := range taints {
		parts[i] = t.Key + ":" + string(t.Effect)
		if t.TimeAdded != nil {
			parts[i] += "@" + t.TimeAdded.UTC().Format(time.TimeOnly)
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

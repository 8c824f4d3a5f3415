package taintpolicy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the moment of the proposal's example: member1's Ready turns False.
var t0 = time.Date(2025, 1, 17, 2, 36, 26, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func sec(n int) time.Duration { return time.Duration(n) * time.Second }

func cond(typ string, status metav1.ConditionStatus, since time.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, LastTransitionTime: metav1.Time{Time: since}}
}

func untimed(typ string, status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status}
}

func in(typ string, s ...metav1.ConditionStatus) MatchCondition {
	return MatchCondition{ConditionType: typ, Operator: MatchConditionOpIn, StatusValues: s}
}

func notIn(typ string, s ...metav1.ConditionStatus) MatchCondition {
	return MatchCondition{ConditionType: typ, Operator: MatchConditionOpNotIn, StatusValues: s}
}

const (
	condTrue    = metav1.ConditionTrue
	condFalse   = metav1.ConditionFalse
	condUnknown = metav1.ConditionUnknown
	notReady    = "cluster.karmada.io/not-ready"
	prefer      = failover.TaintEffectPreferNoExecute
	noSchedule  = corev1.TaintEffectNoSchedule
)

func ptr32(v int32) *int32 { return &v }

// toAdd is a windowed taint; zero windows mean the defaults.
func toAdd(key string, effect corev1.TaintEffect, value string, add, remove int32) TaintToAdd {
	t := TaintToAdd{Key: key, Effect: effect, Value: value}
	if add > 0 {
		t.AddOnMatchSeconds = ptr32(add)
	}
	if remove > 0 {
		t.RemoveOnMismatchSeconds = ptr32(remove)
	}
	return t
}

func windowed(name string, match []MatchCondition, taints ...TaintToAdd) ClusterTaintPolicy {
	return ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       ClusterTaintPolicySpec{MatchConditions: match, TaintsToAdd: taints},
	}
}

func released(name string, add, remove []MatchCondition, taints ...Taint) ClusterTaintPolicy {
	return ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       ClusterTaintPolicySpec{AddOnConditions: add, RemoveOnConditions: remove, Taints: taints},
	}
}

// notReadyPolicy is the proposal's detect-cluster-not-ready without a target.
func notReadyPolicy() ClusterTaintPolicy {
	return windowed("detect-cluster-not-ready",
		[]MatchCondition{in("Ready", condFalse, condUnknown)},
		toAdd(notReady, prefer, "", 300, 180))
}

func taint(key string, effect corev1.TaintEffect, value string, added time.Time) corev1.Taint {
	t := corev1.Taint{Key: key, Effect: effect, Value: value}
	if !added.IsZero() {
		t.TimeAdded = &metav1.Time{Time: added}
	}
	return t
}

func mustEvaluator(t testing.TB, policies ...ClusterTaintPolicy) *Evaluator {
	t.Helper()
	e, err := NewEvaluator(policies)
	if err != nil {
		t.Fatalf("NewEvaluator: %v", err)
	}
	return e
}

// show renders taints compactly: key=value:Effect@offset-from-t0.
func show(taints []corev1.Taint) string {
	parts := make([]string, len(taints))
	for i, t := range taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		s += ":" + string(t.Effect)
		if t.TimeAdded != nil {
			s += "@" + t.TimeAdded.Sub(t0).String()
		}
		parts[i] = s
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func showResult(r Result) string {
	return fmt.Sprintf("taints=%s added=%s removed=%s requeue=%s", show(r.Taints), show(r.Added), show(r.Removed), r.RequeueAfter)
}

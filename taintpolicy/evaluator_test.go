package taintpolicy

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

type evalCase struct {
	name     string
	policies []ClusterTaintPolicy // default: notReadyPolicy
	conds    []metav1.Condition
	taints   []corev1.Taint
	now      time.Time
	want     string // showResult
}

func runEvalCases(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			policies := tc.policies
			if policies == nil {
				policies = []ClusterTaintPolicy{notReadyPolicy()}
			}
			e := mustEvaluator(t, policies...)
			c := failover.Cluster{Name: "member1", Conditions: tc.conds, Taints: tc.taints}
			got := showResult(e.Evaluate(c, tc.now))
			if got != tc.want {
				t.Errorf("Evaluate:\n got  %s\n want %s", got, tc.want)
			}
		})
	}
}

func TestEvaluateWindowsAtTheirBoundaries(t *testing.T) {
	present := []corev1.Taint{taint(notReady, prefer, "", at(-time.Hour))}
	runEvalCases(t, []evalCase{
		{
			name:  "matched for 299s: not added yet, requeued for the last second",
			conds: []metav1.Condition{cond("Ready", condFalse, t0)},
			now:   at(sec(299)),
			want:  "taints=[] added=[] removed=[] requeue=1s",
		},
		{
			name:  "matched for exactly 300s: added with TimeAdded now",
			conds: []metav1.Condition{cond("Ready", condFalse, t0)},
			now:   at(sec(300)),
			want:  "taints=[cluster.karmada.io/not-ready:PreferNoExecute@5m0s] added=[cluster.karmada.io/not-ready:PreferNoExecute@5m0s] removed=[] requeue=0s",
		},
		{
			name:  "matched just now: requeued for the whole window",
			conds: []metav1.Condition{cond("Ready", condUnknown, t0)},
			now:   t0,
			want:  "taints=[] added=[] removed=[] requeue=5m0s",
		},
		{
			name:   "matched and present: kept with its own TimeAdded",
			conds:  []metav1.Condition{cond("Ready", condFalse, t0)},
			taints: present,
			now:    at(sec(10)),
			want:   "taints=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] added=[] removed=[] requeue=0s",
		},
		{
			name:   "unmatched for 179s: kept, requeued for the last second",
			conds:  []metav1.Condition{cond("Ready", condTrue, t0)},
			taints: present,
			now:    at(sec(179)),
			want:   "taints=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] added=[] removed=[] requeue=1s",
		},
		{
			name:   "unmatched for exactly 180s: removed",
			conds:  []metav1.Condition{cond("Ready", condTrue, t0)},
			taints: present,
			now:    at(sec(180)),
			want:   "taints=[] added=[] removed=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] requeue=0s",
		},
		{
			name:  "unmatched and absent: no window matters",
			conds: []metav1.Condition{cond("Ready", condTrue, t0)},
			now:   at(sec(10)),
			want:  "taints=[] added=[] removed=[] requeue=0s",
		},
		{
			name: "own windows: 10s to add",
			policies: []ClusterTaintPolicy{windowed("p", []MatchCondition{in("Ready", condFalse)},
				toAdd(notReady, noSchedule, "", 10, 20))},
			conds: []metav1.Condition{cond("Ready", condFalse, t0)},
			now:   at(sec(10)),
			want:  "taints=[cluster.karmada.io/not-ready:NoSchedule@10s] added=[cluster.karmada.io/not-ready:NoSchedule@10s] removed=[] requeue=0s",
		},
		{
			name: "own windows: 20s to remove, 19s is not enough",
			policies: []ClusterTaintPolicy{windowed("p", []MatchCondition{in("Ready", condFalse)},
				toAdd(notReady, noSchedule, "", 10, 20))},
			conds:  []metav1.Condition{cond("Ready", condTrue, t0)},
			taints: []corev1.Taint{taint(notReady, noSchedule, "", time.Time{})},
			now:    at(sec(19)),
			want:   "taints=[cluster.karmada.io/not-ready:NoSchedule] added=[] removed=[] requeue=1s",
		},
		{
			name: "unset windows default to 300s and 180s",
			policies: []ClusterTaintPolicy{windowed("p", []MatchCondition{in("Ready", condFalse)},
				TaintToAdd{Key: notReady, Effect: prefer})},
			conds: []metav1.Condition{cond("Ready", condFalse, t0)},
			now:   at(sec(1)),
			want:  "taints=[] added=[] removed=[] requeue=4m59s",
		},
		{
			name:  "sub-second precision: 299.5s is not 300s",
			conds: []metav1.Condition{cond("Ready", condFalse, t0)},
			now:   at(sec(299) + 500*time.Millisecond),
			want:  "taints=[] added=[] removed=[] requeue=500ms",
		},
		{
			name:  "a lastTransitionTime in the future waits for it",
			conds: []metav1.Condition{cond("Ready", condFalse, at(sec(60)))},
			now:   t0,
			want:  "taints=[] added=[] removed=[] requeue=6m0s",
		},
		{
			// Clock skew on the removal side: the taint stays and the
			// requeue counts from the skewed time, never negative.
			name:   "an unmatched lastTransitionTime in the future keeps the taint until its window after it",
			conds:  []metav1.Condition{cond("Ready", condTrue, at(sec(60)))},
			taints: []corev1.Taint{taint(notReady, prefer, "", at(-time.Hour))},
			now:    t0,
			want:   "taints=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] added=[] removed=[] requeue=4m0s",
		},
		{
			name:  "a lastTransitionTime centuries ahead neither overflows nor goes negative",
			conds: []metav1.Condition{cond("Ready", condFalse, time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC))},
			now:   t0,
			want:  "taints=[] added=[] removed=[] requeue=2562047h47m16.854775807s",
		},
		{
			name:  "a lastTransitionTime from year 1 counts as long ago",
			conds: []metav1.Condition{cond("Ready", condFalse, time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC))},
			now:   t0,
			want:  "taints=[cluster.karmada.io/not-ready:PreferNoExecute@0s] added=[cluster.karmada.io/not-ready:PreferNoExecute@0s] removed=[] requeue=0s",
		},
	})
}

func TestEvaluateMatchConditions(t *testing.T) {
	present := []corev1.Taint{taint(notReady, prefer, "", at(-time.Hour))}
	twoConds := []ClusterTaintPolicy{windowed("p",
		[]MatchCondition{in("Ready", condFalse), notIn("NetworkAvailable", condTrue)},
		toAdd(notReady, prefer, "", 300, 180))}
	notInReady := []ClusterTaintPolicy{windowed("p", []MatchCondition{notIn("Ready", condTrue)},
		toAdd(notReady, prefer, "", 300, 180))}
	runEvalCases(t, []evalCase{
		{
			name:  "In matches a listed status",
			conds: []metav1.Condition{cond("Ready", condUnknown, t0)},
			now:   at(sec(300)),
			want:  "taints=[cluster.karmada.io/not-ready:PreferNoExecute@5m0s] added=[cluster.karmada.io/not-ready:PreferNoExecute@5m0s] removed=[] requeue=0s",
		},
		{
			name:     "NotIn matches a status not listed",
			policies: notInReady,
			conds:    []metav1.Condition{cond("Ready", condUnknown, t0)},
			now:      at(sec(300)),
			want:     "taints=[cluster.karmada.io/not-ready:PreferNoExecute@5m0s] added=[cluster.karmada.io/not-ready:PreferNoExecute@5m0s] removed=[] requeue=0s",
		},
		{
			name:     "NotIn does not match a listed status",
			policies: notInReady,
			conds:    []metav1.Condition{cond("Ready", condTrue, t0)},
			taints:   present,
			now:      at(sec(180)),
			want:     "taints=[] added=[] removed=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] requeue=0s",
		},
		{
			name:     "a status outside True/False/Unknown: NotIn matches it",
			policies: notInReady,
			conds:    []metav1.Condition{cond("Ready", "Degraded", t0)},
			now:      at(sec(300)),
			want:     "taints=[cluster.karmada.io/not-ready:PreferNoExecute@5m0s] added=[cluster.karmada.io/not-ready:PreferNoExecute@5m0s] removed=[] requeue=0s",
		},
		{
			name:  "a status outside True/False/Unknown: In does not",
			conds: []metav1.Condition{cond("Ready", "Degraded", t0)},
			now:   at(sec(300)),
			want:  "taints=[] added=[] removed=[] requeue=0s",
		},
		{
			name:   "a missing condition never matches In: removal counts from first sight",
			taints: present,
			now:    t0,
			want:   "taints=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] added=[] removed=[] requeue=3m0s",
		},
		{
			name:     "a missing condition never matches NotIn either",
			policies: notInReady,
			conds:    []metav1.Condition{cond("Other", condFalse, at(-time.Hour))},
			now:      t0,
			want:     "taints=[] added=[] removed=[] requeue=0s",
		},
		{
			name:     "conditions are ANDed: one unmatched condition unmatches the policy",
			policies: twoConds,
			conds:    []metav1.Condition{cond("Ready", condFalse, at(-time.Hour)), cond("NetworkAvailable", condTrue, at(-time.Hour))},
			now:      t0,
			want:     "taints=[] added=[] removed=[] requeue=0s",
		},
		{
			name:     "matched since the latest transition among the matched conditions",
			policies: twoConds,
			conds:    []metav1.Condition{cond("Ready", condFalse, at(-sec(400))), cond("NetworkAvailable", condFalse, at(-sec(100)))},
			now:      t0,
			want:     "taints=[] added=[] removed=[] requeue=3m20s",
		},
		{
			name:     "unmatched since the earliest transition among the unmatched conditions",
			policies: twoConds,
			conds:    []metav1.Condition{cond("Ready", condTrue, at(-sec(180))), cond("NetworkAvailable", condTrue, at(-sec(10)))},
			taints:   present,
			now:      t0,
			want:     "taints=[] added=[] removed=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] requeue=0s",
		},
		{
			name:     "a matched condition does not shorten the unmatched time",
			policies: twoConds,
			conds:    []metav1.Condition{cond("Ready", condFalse, at(-sec(1000))), cond("NetworkAvailable", condTrue, at(-sec(100)))},
			taints:   present,
			now:      t0,
			want:     "taints=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] added=[] removed=[] requeue=1m20s",
		},
		{
			// lastTransitionTime moves on any status change, and DESIGN reads
			// matched-since from it: a False that turns Unknown starts the
			// 300s over though In [False, Unknown] matched throughout.
			name:  "a change between two listed statuses restarts the add window",
			conds: []metav1.Condition{cond("Ready", condUnknown, at(-sec(100)))},
			now:   t0,
			want:  "taints=[] added=[] removed=[] requeue=3m20s",
		},
		{
			name:     "empty matchConditions always match and add at once",
			policies: []ClusterTaintPolicy{windowed("always", nil, toAdd("maintenance", noSchedule, "", 300, 180))},
			now:      t0,
			want:     "taints=[maintenance:NoSchedule@0s] added=[maintenance:NoSchedule@0s] removed=[] requeue=0s",
		},
	})
}

func TestEvaluateSeveralPoliciesListingOneTaint(t *testing.T) {
	ready := windowed("a-ready", []MatchCondition{in("Ready", condFalse)}, toAdd(notReady, prefer, "", 300, 180))
	net := windowed("b-network", []MatchCondition{in("NetworkAvailable", condFalse)}, toAdd(notReady, prefer, "", 60, 600))
	present := []corev1.Taint{taint(notReady, prefer, "", at(-time.Hour))}
	runEvalCases(t, []evalCase{
		{
			name:     "one policy still matched keeps the taint",
			policies: []ClusterTaintPolicy{ready, net},
			conds:    []metav1.Condition{cond("Ready", condTrue, at(-time.Hour)), cond("NetworkAvailable", condFalse, t0)},
			taints:   present,
			now:      at(sec(30)),
			want:     "taints=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] added=[] removed=[] requeue=0s",
		},
		{
			name:     "both unmatched: kept until the last window closes",
			policies: []ClusterTaintPolicy{ready, net},
			conds:    []metav1.Condition{cond("Ready", condTrue, t0), cond("NetworkAvailable", condTrue, t0)},
			taints:   present,
			now:      at(sec(180)),
			want:     "taints=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] added=[] removed=[] requeue=7m0s",
		},
		{
			name:     "both unmatched, both windows open: requeued for the later one, not the earlier",
			policies: []ClusterTaintPolicy{ready, net},
			conds:    []metav1.Condition{cond("Ready", condTrue, t0), cond("NetworkAvailable", condTrue, t0)},
			taints:   present,
			now:      at(sec(100)),
			want:     "taints=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] added=[] removed=[] requeue=8m20s",
		},
		{
			name:     "both unmatched past both windows: removed",
			policies: []ClusterTaintPolicy{ready, net},
			conds:    []metav1.Condition{cond("Ready", condTrue, t0), cond("NetworkAvailable", condTrue, t0)},
			taints:   present,
			now:      at(sec(600)),
			want:     "taints=[] added=[] removed=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] requeue=0s",
		},
		{
			name:     "the first window to close adds",
			policies: []ClusterTaintPolicy{ready, net},
			conds:    []metav1.Condition{cond("Ready", condFalse, t0), cond("NetworkAvailable", condFalse, t0)},
			now:      at(sec(30)),
			want:     "taints=[] added=[] removed=[] requeue=30s",
		},
		{
			name:     "any policy past its window adds",
			policies: []ClusterTaintPolicy{ready, net},
			conds:    []metav1.Condition{cond("Ready", condFalse, t0), cond("NetworkAvailable", condFalse, t0)},
			now:      at(sec(60)),
			want:     "taints=[cluster.karmada.io/not-ready:PreferNoExecute@1m0s] added=[cluster.karmada.io/not-ready:PreferNoExecute@1m0s] removed=[] requeue=0s",
		},
		{
			name:     "a matched policy whose add window is open blocks removal",
			policies: []ClusterTaintPolicy{ready, net},
			conds:    []metav1.Condition{cond("Ready", condTrue, at(-time.Hour)), cond("NetworkAvailable", condFalse, t0)},
			taints:   present,
			now:      at(sec(10)),
			want:     "taints=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] added=[] removed=[] requeue=0s",
		},
	})
}

func TestEvaluateValues(t *testing.T) {
	a := windowed("a", []MatchCondition{in("Ready", condFalse)}, toAdd(notReady, prefer, "from-a", 10, 10))
	b := windowed("b", []MatchCondition{in("Ready", condFalse)}, toAdd(notReady, prefer, "from-b", 5, 10))
	runEvalCases(t, []evalCase{
		{
			name:     "the value comes from the first adding policy by name",
			policies: []ClusterTaintPolicy{b, a},
			conds:    []metav1.Condition{cond("Ready", condFalse, t0)},
			now:      at(sec(10)),
			want:     "taints=[cluster.karmada.io/not-ready=from-a:PreferNoExecute@10s] added=[cluster.karmada.io/not-ready=from-a:PreferNoExecute@10s] removed=[] requeue=0s",
		},
		{
			name:     "until that policy adds, the next one does; its change is the next requeue",
			policies: []ClusterTaintPolicy{a, b},
			conds:    []metav1.Condition{cond("Ready", condFalse, t0)},
			now:      at(sec(5)),
			want:     "taints=[cluster.karmada.io/not-ready=from-b:PreferNoExecute@5s] added=[cluster.karmada.io/not-ready=from-b:PreferNoExecute@5s] removed=[] requeue=5s",
		},
		{
			name:     "a present taint with another value is replaced in place, reported removed and added",
			policies: []ClusterTaintPolicy{a},
			conds:    []metav1.Condition{cond("Ready", condFalse, t0)},
			taints:   []corev1.Taint{taint("x", noSchedule, "", time.Time{}), taint(notReady, prefer, "old", at(-time.Hour)), taint("y", noSchedule, "", time.Time{})},
			now:      at(sec(10)),
			want:     "taints=[x:NoSchedule cluster.karmada.io/not-ready=from-a:PreferNoExecute@10s y:NoSchedule] added=[cluster.karmada.io/not-ready=from-a:PreferNoExecute@10s] removed=[cluster.karmada.io/not-ready=old:PreferNoExecute@-1h0m0s] requeue=0s",
		},
		{
			name:     "while the add window is open another value is left as is",
			policies: []ClusterTaintPolicy{a},
			conds:    []metav1.Condition{cond("Ready", condFalse, t0)},
			taints:   []corev1.Taint{taint(notReady, prefer, "old", at(-time.Hour))},
			now:      at(sec(3)),
			want:     "taints=[cluster.karmada.io/not-ready=old:PreferNoExecute@-1h0m0s] added=[] removed=[] requeue=7s",
		},
	})
}

func TestEvaluateTouchesOnlyListedTaints(t *testing.T) {
	target := notReadyPolicy()
	target.Spec.TargetCluster = &failover.ClusterAffinity{ClusterNames: []string{"member2"}}
	b := windowed("b", nil, toAdd("b-key", noSchedule, "", 0, 0))
	a := windowed("a", nil, toAdd("a-key", noSchedule, "", 0, 0), toAdd("a-key", prefer, "", 0, 0))
	runEvalCases(t, []evalCase{
		{
			name:     "other taints keep their values, times and positions; new taints follow in policy-name order",
			policies: []ClusterTaintPolicy{b, a},
			taints: []corev1.Taint{
				taint("user", corev1.TaintEffectNoExecute, "v", at(-time.Hour)),
				taint("a-key", corev1.TaintEffectNoExecute, "", time.Time{}), // same key, unlisted effect
				taint("other", noSchedule, "", time.Time{}),
			},
			now:  t0,
			want: "taints=[user=v:NoExecute@-1h0m0s a-key:NoExecute other:NoSchedule a-key:NoSchedule@0s a-key:PreferNoExecute@0s b-key:NoSchedule@0s] added=[a-key:NoSchedule@0s a-key:PreferNoExecute@0s b-key:NoSchedule@0s] removed=[] requeue=0s",
		},
		{
			name:     "no policies at all: every taint is returned as it is",
			policies: []ClusterTaintPolicy{},
			conds:    []metav1.Condition{cond("Ready", condFalse, at(-time.Hour))},
			taints:   []corev1.Taint{taint(notReady, prefer, "v", at(-time.Hour)), taint("other", noSchedule, "", time.Time{})},
			now:      t0,
			want:     "taints=[cluster.karmada.io/not-ready=v:PreferNoExecute@-1h0m0s other:NoSchedule] added=[] removed=[] requeue=0s",
		},
		{
			name:     "a policy that does not target the cluster leaves its listed taint alone",
			policies: []ClusterTaintPolicy{target},
			conds:    []metav1.Condition{cond("Ready", condTrue, at(-time.Hour))},
			taints:   []corev1.Taint{taint(notReady, prefer, "", at(-time.Hour))},
			now:      t0,
			want:     "taints=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] added=[] removed=[] requeue=0s",
		},
	})
}

func TestEvaluateReleasedForm(t *testing.T) {
	addNotReady := []MatchCondition{notIn("Ready", condTrue)}
	removeReady := []MatchCondition{in("Ready", condTrue)}
	rel := released("rel", addNotReady, removeReady, Taint{Key: notReady, Effect: noSchedule})
	present := []corev1.Taint{taint(notReady, noSchedule, "", at(-time.Hour))}
	runEvalCases(t, []evalCase{
		{
			name:     "added as soon as addOnConditions hold, without a window",
			policies: []ClusterTaintPolicy{rel},
			conds:    []metav1.Condition{cond("Ready", condFalse, t0)},
			now:      t0,
			want:     "taints=[cluster.karmada.io/not-ready:NoSchedule@0s] added=[cluster.karmada.io/not-ready:NoSchedule@0s] removed=[] requeue=0s",
		},
		{
			name:     "removed as soon as removeOnConditions hold",
			policies: []ClusterTaintPolicy{rel},
			conds:    []metav1.Condition{cond("Ready", condTrue, t0)},
			taints:   present,
			now:      t0,
			want:     "taints=[] added=[] removed=[cluster.karmada.io/not-ready:NoSchedule@-1h0m0s] requeue=0s",
		},
		{
			name:     "neither holds (condition missing): a present taint stays",
			policies: []ClusterTaintPolicy{rel},
			taints:   present,
			now:      t0,
			want:     "taints=[cluster.karmada.io/not-ready:NoSchedule@-1h0m0s] added=[] removed=[] requeue=0s",
		},
		{
			name:     "neither holds: an absent taint stays absent",
			policies: []ClusterTaintPolicy{released("rel", []MatchCondition{in("Ready", condFalse)}, removeReady, Taint{Key: notReady, Effect: noSchedule})},
			conds:    []metav1.Condition{cond("Ready", condUnknown, t0)},
			now:      t0,
			want:     "taints=[] added=[] removed=[] requeue=0s",
		},
		{
			name:     "both hold: removed, as Karmada applies removeOnConditions last",
			policies: []ClusterTaintPolicy{released("rel", []MatchCondition{in("Ready", condFalse)}, []MatchCondition{in("Ready", condFalse)}, Taint{Key: notReady, Effect: noSchedule})},
			conds:    []metav1.Condition{cond("Ready", condFalse, t0)},
			taints:   present,
			now:      t0,
			want:     "taints=[] added=[] removed=[cluster.karmada.io/not-ready:NoSchedule@-1h0m0s] requeue=0s",
		},
		{
			name:     "empty addOnConditions add nothing",
			policies: []ClusterTaintPolicy{released("rel", nil, removeReady, Taint{Key: notReady, Effect: noSchedule})},
			conds:    []metav1.Condition{cond("Ready", condFalse, t0)},
			now:      t0,
			want:     "taints=[] added=[] removed=[] requeue=0s",
		},
		{
			name: "a released policy that holds neither keeps a taint a windowed policy would remove",
			policies: []ClusterTaintPolicy{
				released("rel", []MatchCondition{in("Ready", condFalse)}, []MatchCondition{in("Ready", condUnknown)}, Taint{Key: notReady, Effect: noSchedule}),
				windowed("win", []MatchCondition{in("Ready", condFalse)}, toAdd(notReady, noSchedule, "", 0, 0)),
			},
			conds:  []metav1.Condition{cond("Ready", condTrue, at(-time.Hour))},
			taints: present,
			now:    t0,
			want:   "taints=[cluster.karmada.io/not-ready:NoSchedule@-1h0m0s] added=[] removed=[] requeue=0s",
		},
		{
			name: "a released add wins over a windowed removal",
			policies: []ClusterTaintPolicy{
				rel,
				windowed("win", []MatchCondition{in("Ready", condUnknown)}, toAdd(notReady, noSchedule, "", 0, 0)),
			},
			conds: []metav1.Condition{cond("Ready", condFalse, at(-time.Hour))},
			now:   t0,
			want:  "taints=[cluster.karmada.io/not-ready:NoSchedule@0s] added=[cluster.karmada.io/not-ready:NoSchedule@0s] removed=[] requeue=0s",
		},
	})
}

// The windows a Karmada fork's CRD extension adds to the released form's
// taints: addOnMatchSeconds counts from when all addOnConditions last began
// to hold, removeOnMismatchSeconds from when all removeOnConditions did.
func TestEvaluateReleasedFormWithWindows(t *testing.T) {
	addNotReady := []MatchCondition{notIn("Ready", condTrue)}
	removeReady := []MatchCondition{in("Ready", condTrue)}
	windowedTaint := func(add, remove int32) Taint {
		return Taint{Key: notReady, Effect: prefer, AddOnMatchSeconds: ptr32(add), RemoveOnMismatchSeconds: ptr32(remove)}
	}
	rel := released("rel", addNotReady, removeReady, windowedTaint(60, 30))
	present := []corev1.Taint{taint(notReady, prefer, "", at(-time.Hour))}
	runEvalCases(t, []evalCase{
		{
			name:     "addOnConditions held for less than addOnMatchSeconds: not yet added, requeued when the window closes",
			policies: []ClusterTaintPolicy{rel},
			conds:    []metav1.Condition{cond("Ready", condFalse, t0)},
			now:      at(sec(59)),
			want:     "taints=[] added=[] removed=[] requeue=1s",
		},
		{
			name:     "addOnConditions held for addOnMatchSeconds: added",
			policies: []ClusterTaintPolicy{rel},
			conds:    []metav1.Condition{cond("Ready", condFalse, t0)},
			now:      at(sec(60)),
			want:     "taints=[cluster.karmada.io/not-ready:PreferNoExecute@1m0s] added=[cluster.karmada.io/not-ready:PreferNoExecute@1m0s] removed=[] requeue=0s",
		},
		{
			name:     "removeOnConditions held for less than removeOnMismatchSeconds: kept, requeued",
			policies: []ClusterTaintPolicy{rel},
			conds:    []metav1.Condition{cond("Ready", condTrue, t0)},
			taints:   present,
			now:      at(sec(10)),
			want:     "taints=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] added=[] removed=[] requeue=20s",
		},
		{
			name:     "removeOnConditions held for removeOnMismatchSeconds: removed",
			policies: []ClusterTaintPolicy{rel},
			conds:    []metav1.Condition{cond("Ready", condTrue, t0)},
			taints:   present,
			now:      at(sec(30)),
			want:     "taints=[] added=[] removed=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] requeue=0s",
		},
		{
			name:     "windows of 0 are no windows: added at once, even with a lastTransitionTime after now",
			policies: []ClusterTaintPolicy{released("rel", addNotReady, removeReady, windowedTaint(0, 0))},
			conds:    []metav1.Condition{cond("Ready", condFalse, at(time.Minute))},
			now:      t0,
			want:     "taints=[cluster.karmada.io/not-ready:PreferNoExecute@0s] added=[cluster.karmada.io/not-ready:PreferNoExecute@0s] removed=[] requeue=0s",
		},
		{
			name: "the window counts from the latest of several addOnConditions",
			policies: []ClusterTaintPolicy{released("rel",
				[]MatchCondition{in("Ready", condFalse), in("Net", condFalse)}, removeReady, windowedTaint(60, 30))},
			conds: []metav1.Condition{cond("Ready", condFalse, at(-time.Hour)), cond("Net", condFalse, t0)},
			now:   at(sec(45)),
			want:  "taints=[] added=[] removed=[] requeue=15s",
		},
		{
			name: "another policy's add still wins over a pending removal",
			policies: []ClusterTaintPolicy{
				rel,
				released("other", []MatchCondition{in("Ready", condTrue)}, nil, Taint{Key: notReady, Effect: prefer}),
			},
			conds:  []metav1.Condition{cond("Ready", condTrue, t0)},
			taints: present,
			now:    at(sec(10)),
			want:   "taints=[cluster.karmada.io/not-ready:PreferNoExecute@-1h0m0s] added=[] removed=[] requeue=0s",
		},
	})

	t.Run("without lastTransitionTime the window counts from the first evaluation that saw the state", func(t *testing.T) {
		runTimeline(t, mustEvaluator(t, rel), []step{
			{now: 0, conds: []metav1.Condition{untimed("Ready", condFalse)},
				want: "taints=[] added=[] removed=[] requeue=1m0s"},
			{now: sec(60), conds: []metav1.Condition{untimed("Ready", condFalse)},
				want: "taints=[cluster.karmada.io/not-ready:PreferNoExecute@1m0s] added=[cluster.karmada.io/not-ready:PreferNoExecute@1m0s] removed=[] requeue=0s"},
			{now: sec(100), conds: []metav1.Condition{untimed("Ready", condTrue)},
				want: "taints=[cluster.karmada.io/not-ready:PreferNoExecute@1m0s] added=[] removed=[] requeue=30s"},
			{now: sec(130), conds: []metav1.Condition{untimed("Ready", condTrue)},
				want: "taints=[] added=[] removed=[cluster.karmada.io/not-ready:PreferNoExecute@1m0s] requeue=0s"},
		})
	})
}

// step is one evaluation of a cluster in a timeline.
type step struct {
	now   time.Duration // since t0
	conds []metav1.Condition
	want  string
}

// runTimeline evaluates one cluster through steps, feeding each result's
// taints into the next step as a controller would.
func runTimeline(t *testing.T, e *Evaluator, steps []step) {
	t.Helper()
	var taints []corev1.Taint
	for _, s := range steps {
		r := e.Evaluate(failover.Cluster{Name: "member1", Conditions: s.conds, Taints: taints}, at(s.now))
		if got := showResult(r); got != s.want {
			t.Errorf("at t0+%s:\n got  %s\n want %s", s.now, got, s.want)
		}
		taints = r.Taints
	}
}

// DESIGN: only taints listed by a policy targeting the cluster are touched.
// A policy that stops targeting a cluster therefore leaves the taint it added
// there; removing it is the operator's call, not the Evaluator's.
func TestEvaluatePolicyThatStopsTargetingLeavesItsTaint(t *testing.T) {
	p := notReadyPolicy()
	p.Spec.TargetCluster = &failover.ClusterAffinity{ClusterNames: []string{"member1"}}
	e := mustEvaluator(t, p)
	const added = "cluster.karmada.io/not-ready:PreferNoExecute@5m0s"
	notReadySince0 := []metav1.Condition{cond("Ready", condFalse, t0)}
	runTimeline(t, e, []step{
		{300 * time.Second, notReadySince0, "taints=[" + added + "] added=[" + added + "] removed=[] requeue=0s"},
	})

	p.Spec.TargetCluster.ClusterNames = []string{"member2"}
	if err := e.SetPolicies([]ClusterTaintPolicy{p}); err != nil {
		t.Fatal(err)
	}
	present := []corev1.Taint{taint(notReady, prefer, "", at(300*time.Second))}
	for _, now := range []time.Duration{301 * time.Second, time.Hour} {
		r := e.Evaluate(failover.Cluster{Name: "member1", Conditions: []metav1.Condition{cond("Ready", condTrue, at(301*time.Second))}, Taints: present}, at(now))
		if got, want := showResult(r), "taints=["+added+"] added=[] removed=[] requeue=0s"; got != want {
			t.Errorf("at t0+%s, no longer targeted:\n got  %s\n want %s", now, got, want)
		}
	}
}

func TestEvaluateFlappingConditionRestartsTheWindow(t *testing.T) {
	readyFalse := func(since int) []metav1.Condition {
		return []metav1.Condition{cond("Ready", condFalse, at(sec(since)))}
	}
	readyTrue := func(since int) []metav1.Condition {
		return []metav1.Condition{cond("Ready", condTrue, at(sec(since)))}
	}
	const added = "cluster.karmada.io/not-ready:PreferNoExecute@9m10s"
	runTimeline(t, mustEvaluator(t, notReadyPolicy()), []step{
		{0, readyFalse(0), "taints=[] added=[] removed=[] requeue=5m0s"},
		{200 * time.Second, readyTrue(200), "taints=[] added=[] removed=[] requeue=0s"},
		// Not ready again: the 300s count starts over from 250s.
		{250 * time.Second, readyFalse(250), "taints=[] added=[] removed=[] requeue=5m0s"},
		{500 * time.Second, readyFalse(250), "taints=[] added=[] removed=[] requeue=50s"},
		{550 * time.Second, readyFalse(250), "taints=[" + added + "] added=[" + added + "] removed=[] requeue=0s"},
		// Ready for 100s, then not ready again: the taint never leaves.
		{600 * time.Second, readyTrue(600), "taints=[" + added + "] added=[] removed=[] requeue=3m0s"},
		{700 * time.Second, readyFalse(700), "taints=[" + added + "] added=[] removed=[] requeue=0s"},
		// Ready again: the 180s count starts over from 800s.
		{800 * time.Second, readyTrue(800), "taints=[" + added + "] added=[] removed=[] requeue=3m0s"},
		{979 * time.Second, readyTrue(800), "taints=[" + added + "] added=[] removed=[] requeue=1s"},
		{980 * time.Second, readyTrue(800), "taints=[] added=[] removed=[" + added + "] requeue=0s"},
	})
}

func TestEvaluateRestartedEvaluatorDecidesTheSame(t *testing.T) {
	// A long-running Evaluator and a fresh one per step agree whenever the
	// conditions carry their transition times.
	policies := []ClusterTaintPolicy{
		notReadyPolicy(),
		windowed("net", []MatchCondition{notIn("NetworkAvailable", condTrue), in("Ready", condFalse, condUnknown)},
			toAdd(notReady, prefer, "", 60, 600), toAdd("net-down", noSchedule, "", 30, 30)),
	}
	long := mustEvaluator(t, policies...)
	var taints []corev1.Taint
	states := []struct {
		at    int
		ready metav1.ConditionStatus
		net   metav1.ConditionStatus
	}{
		{0, condFalse, condTrue}, {20, condFalse, condFalse}, {100, condUnknown, condFalse}, {400, condTrue, condTrue},
		{410, condFalse, condUnknown}, {700, condTrue, condTrue}, {1500, condTrue, condTrue},
	}
	var readySince, netSince time.Time
	var lastReady, lastNet metav1.ConditionStatus
	for i, s := range states {
		if s.ready != lastReady {
			readySince, lastReady = at(sec(s.at)), s.ready
		}
		if s.net != lastNet {
			netSince, lastNet = at(sec(s.at)), s.net
		}
		conds := []metav1.Condition{cond("Ready", s.ready, readySince), cond("NetworkAvailable", s.net, netSince)}
		// Evaluate at several moments between this state and the next.
		end := s.at + 900
		if i+1 < len(states) {
			end = states[i+1].at
		}
		for now := s.at; now < end; now += 7 {
			c := failover.Cluster{Name: "member1", Conditions: conds, Taints: taints}
			want := long.Evaluate(c, at(sec(now)))
			got := mustEvaluator(t, policies...).Evaluate(c, at(sec(now)))
			if showResult(got) != showResult(want) {
				t.Fatalf("at t0+%ds: fresh Evaluator\n got  %s\n long-running\n want %s", now, showResult(got), showResult(want))
			}
			taints = want.Taints
		}
	}
	if len(taints) != 0 {
		t.Errorf("after a long recovery the taints should be gone, got %s", show(taints))
	}
}

func TestEvaluateRemembersFirstSightWhereTimesAreMissing(t *testing.T) {
	const added = "cluster.karmada.io/not-ready:PreferNoExecute@5m0s"
	t.Run("a condition without lastTransitionTime counts from the first evaluation that saw it", func(t *testing.T) {
		runTimeline(t, mustEvaluator(t, notReadyPolicy()), []step{
			{0, []metav1.Condition{untimed("Ready", condFalse)}, "taints=[] added=[] removed=[] requeue=5m0s"},
			{299 * time.Second, []metav1.Condition{untimed("Ready", condFalse)}, "taints=[] added=[] removed=[] requeue=1s"},
			{300 * time.Second, []metav1.Condition{untimed("Ready", condFalse)}, "taints=[" + added + "] added=[" + added + "] removed=[] requeue=0s"},
		})
	})
	t.Run("a status change without a time starts a new count", func(t *testing.T) {
		runTimeline(t, mustEvaluator(t, notReadyPolicy()), []step{
			{0, []metav1.Condition{untimed("Ready", condFalse)}, "taints=[] added=[] removed=[] requeue=5m0s"},
			{100 * time.Second, []metav1.Condition{untimed("Ready", condUnknown)}, "taints=[] added=[] removed=[] requeue=5m0s"},
			{300 * time.Second, []metav1.Condition{untimed("Ready", condUnknown)}, "taints=[] added=[] removed=[] requeue=1m40s"},
		})
	})
	t.Run("an absent condition counts from the first evaluation that missed it", func(t *testing.T) {
		e := mustEvaluator(t, notReadyPolicy())
		present := []corev1.Taint{taint(notReady, prefer, "", at(-time.Hour))}
		for _, s := range []struct {
			now  int
			want string
		}{
			{0, "requeue=3m0s"}, {179, "requeue=1s"}, {180, "removed"},
		} {
			r := e.Evaluate(failover.Cluster{Name: "member1", Taints: present}, at(sec(s.now)))
			got := fmt.Sprintf("requeue=%s", r.RequeueAfter)
			if len(r.Removed) > 0 {
				got = "removed"
			}
			if got != s.want {
				t.Errorf("at t0+%ds: got %s, want %s", s.now, got, s.want)
			}
		}
	})
	t.Run("a fresh Evaluator has no memory: it counts from its own first sight", func(t *testing.T) {
		e := mustEvaluator(t, notReadyPolicy())
		r := e.Evaluate(failover.Cluster{Name: "member1", Conditions: []metav1.Condition{untimed("Ready", condFalse)}}, at(sec(300)))
		if got := showResult(r); got != "taints=[] added=[] removed=[] requeue=5m0s" {
			t.Errorf("got %s", got)
		}
	})
}

func TestEvaluatorMemoryIsBounded(t *testing.T) {
	untimedFalse := failover.Cluster{Name: "member1", Conditions: []metav1.Condition{untimed("Ready", condFalse)}}
	timedFalse := failover.Cluster{Name: "member1", Conditions: []metav1.Condition{cond("Ready", condFalse, t0)}}

	t.Run("nothing is remembered when every condition carries a time", func(t *testing.T) {
		e := mustEvaluator(t, notReadyPolicy())
		e.Evaluate(timedFalse, t0)
		if n := e.mem.len(); n != 0 {
			t.Errorf("remembered %d clusters, want 0", n)
		}
	})
	t.Run("nothing is remembered for the released form, which has no windows", func(t *testing.T) {
		e := mustEvaluator(t, released("rel", []MatchCondition{in("Ready", condFalse)}, nil, Taint{Key: notReady, Effect: noSchedule}))
		e.Evaluate(untimedFalse, t0)
		e.Evaluate(failover.Cluster{Name: "member2"}, t0)
		if n := e.mem.len(); n != 0 {
			t.Errorf("remembered %d clusters, want 0", n)
		}
	})
	t.Run("an entry is dropped once the condition carries a time", func(t *testing.T) {
		e := mustEvaluator(t, notReadyPolicy())
		e.Evaluate(untimedFalse, t0)
		if n := e.mem.len(); n != 1 {
			t.Fatalf("remembered %d clusters, want 1", n)
		}
		e.Evaluate(timedFalse, at(sec(1)))
		if n := e.mem.len(); n != 0 {
			t.Errorf("remembered %d clusters after the time appeared, want 0", n)
		}
	})
	t.Run("Forget drops a deleted cluster", func(t *testing.T) {
		e := mustEvaluator(t, notReadyPolicy())
		e.Evaluate(untimedFalse, t0)
		e.Evaluate(failover.Cluster{Name: "member2", Conditions: untimedFalse.Conditions}, t0)
		e.Forget("member1")
		e.Forget("member1")
		if n := e.mem.len(); n != 1 {
			t.Errorf("remembered %d clusters, want 1", n)
		}
		// member1 starts over.
		if r := e.Evaluate(untimedFalse, at(sec(300))); r.RequeueAfter != 300*time.Second {
			t.Errorf("after Forget: requeue %s, want 5m0s", r.RequeueAfter)
		}
	})
	t.Run("SetPolicies keeps memory of conditions that policies still read", func(t *testing.T) {
		e := mustEvaluator(t, notReadyPolicy())
		e.Evaluate(untimedFalse, t0)
		other := windowed("other", []MatchCondition{in("Ready", condFalse)}, toAdd("other", noSchedule, "", 300, 180))
		if err := e.SetPolicies([]ClusterTaintPolicy{notReadyPolicy(), other}); err != nil {
			t.Fatal(err)
		}
		r := e.Evaluate(untimedFalse, at(sec(300)))
		if got := show(r.Added); got != "[cluster.karmada.io/not-ready:PreferNoExecute@5m0s other:NoSchedule@5m0s]" {
			t.Errorf("added %s", got)
		}
	})
	t.Run("memory of a condition no policy reads any more is dropped", func(t *testing.T) {
		e := mustEvaluator(t, notReadyPolicy())
		e.Evaluate(untimedFalse, t0)
		if err := e.SetPolicies([]ClusterTaintPolicy{windowed("net", []MatchCondition{in("Net", condFalse)}, toAdd("net", noSchedule, "", 0, 0))}); err != nil {
			t.Fatal(err)
		}
		e.Evaluate(failover.Cluster{Name: "member1", Conditions: []metav1.Condition{cond("Net", condTrue, t0)}}, at(sec(1)))
		if n := e.mem.len(); n != 0 {
			t.Errorf("remembered %d clusters, want 0", n)
		}
	})
}

func TestEvaluateNeitherMutatesNorAliasesItsInput(t *testing.T) {
	e := mustEvaluator(t, notReadyPolicy(), windowed("always", nil, toAdd("m", noSchedule, "", 0, 0)))
	c := failover.Cluster{
		Name:       "member1",
		Conditions: []metav1.Condition{cond("Ready", condTrue, at(-time.Hour))},
		Taints:     []corev1.Taint{taint("user", noSchedule, "v", at(-time.Hour)), taint(notReady, prefer, "", at(-time.Hour))},
	}
	before := c.Taints[0].DeepCopy()
	r := e.Evaluate(c, t0)
	r.Taints[0].Value = "changed"
	r.Taints[0].TimeAdded.Time = t0
	if c.Taints[0].Value != before.Value || !c.Taints[0].TimeAdded.Equal(before.TimeAdded) || len(c.Taints) != 2 {
		t.Errorf("the cluster's taints changed: %s", show(c.Taints))
	}
}

func TestNewEvaluatorRejectsBadPolicies(t *testing.T) {
	bad := notReadyPolicy()
	bad.Spec.MatchConditions[0].Operator = "Is"
	noExec := windowed("hard", nil, toAdd("k", corev1.TaintEffectNoExecute, "", 0, 0))
	for _, tc := range []struct {
		name     string
		policies []ClusterTaintPolicy
		opts     []Option
		want     string
	}{
		{"an invalid policy, with its index, name and field", []ClusterTaintPolicy{notReadyPolicy(), func() ClusterTaintPolicy { p := bad; p.Name = "bad"; return p }()}, nil,
			`taintpolicy: policies[1]: policy "bad" is invalid: spec.matchConditions[0].operator: Unsupported value: "Is"`},
		{"duplicate names", []ClusterTaintPolicy{notReadyPolicy(), notReadyPolicy()}, nil,
			`taintpolicy: policies[1]: duplicate policy name "detect-cluster-not-ready" (also policies[0])`},
		{"NoExecute when denied", []ClusterTaintPolicy{noExec}, []Option{WithDenyNoExecute()},
			`spec.taintsToAdd[0].effect: Forbidden: NoExecute evicts`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewEvaluator(tc.policies, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	t.Run("NoExecute is allowed by default", func(t *testing.T) {
		if _, err := NewEvaluator([]ClusterTaintPolicy{noExec}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the error is an InvalidPolicyError", func(t *testing.T) {
		_, err := NewEvaluator([]ClusterTaintPolicy{bad})
		var ipe *InvalidPolicyError
		if !errors.As(err, &ipe) || ipe.Name != bad.Name || ipe.Errs[0].Field != "spec.matchConditions[0].operator" {
			t.Fatalf("errors.As: %v", err)
		}
	})
	t.Run("a failed SetPolicies keeps the old policies", func(t *testing.T) {
		e := mustEvaluator(t, notReadyPolicy())
		if err := e.SetPolicies([]ClusterTaintPolicy{bad}); err == nil {
			t.Fatal("SetPolicies accepted an invalid policy")
		}
		if ps := e.Policies(); len(ps) != 1 || ps[0].Name != "detect-cluster-not-ready" {
			t.Errorf("policies now %v", ps)
		}
	})
}

func TestEvaluatorCopiesItsPolicies(t *testing.T) {
	policies := []ClusterTaintPolicy{notReadyPolicy()}
	e := mustEvaluator(t, policies...)
	policies[0].Spec.TaintsToAdd[0].Key = "changed"
	*policies[0].Spec.TaintsToAdd[0].AddOnMatchSeconds = 1
	r := e.Evaluate(failover.Cluster{Name: "m", Conditions: []metav1.Condition{cond("Ready", condFalse, t0)}}, at(sec(300)))
	if got := show(r.Added); got != "[cluster.karmada.io/not-ready:PreferNoExecute@5m0s]" {
		t.Errorf("added %s", got)
	}
	ps := e.Policies()
	ps[0].Spec.TaintsToAdd[0].Key = "changed"
	if e.Policies()[0].Spec.TaintsToAdd[0].Key != notReady {
		t.Error("Policies returned the Evaluator's own copy")
	}
}

func TestEvaluateConcurrentlyWithSetPolicies(t *testing.T) {
	e := mustEvaluator(t, notReadyPolicy())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				c := failover.Cluster{
					Name:       fmt.Sprintf("m%d-%d", g, i%10),
					Conditions: []metav1.Condition{untimed("Ready", condFalse)},
				}
				r := e.Evaluate(c, at(sec(i)))
				if len(r.Taints) > 1 {
					t.Errorf("unexpected taints %s", show(r.Taints))
				}
				if i%10 == 9 {
					e.Forget(c.Name)
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			ps := []ClusterTaintPolicy{notReadyPolicy()}
			ps[0].Spec.TaintsToAdd[0].AddOnMatchSeconds = ptr32(int32(1 + i))
			if err := e.SetPolicies(ps); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
}

// Changed has a value receiver, so it can be called on Evaluate's result
// directly.
func TestChangedOnTheReturnedResult(t *testing.T) {
	e, err := NewEvaluator(nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Evaluate(failover.Cluster{Name: "m"}, time.Now()).Changed() {
		t.Error("no policy changed a cluster's taints")
	}
}

// A nil option is ignored, as by every constructor in the library, instead of
// panicking.
func TestNewEvaluatorIgnoresNilOption(t *testing.T) {
	e, err := NewEvaluator(nil, nil, WithDenyNoExecute(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if e == nil {
		t.Fatal("no Evaluator")
	}
}

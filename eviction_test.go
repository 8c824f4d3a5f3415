package failover_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover"
)

// fixedTime is the "now" of Karmada's taint manager tables.
var fixedTime = time.Date(2025, 9, 23, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { return &metav1.Time{Time: fixedTime.Add(d)} }

type evictionCase struct {
	name        string
	taints      []corev1.Taint
	tolerations []corev1.Toleration
	failover    *failover.ClusterFailoverBehavior
	evict       bool
	after       time.Duration
	reason      string // a part of Reason
}

func runEvictionCases(t *testing.T, cases []evictionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := failover.DecideEviction(tc.taints, tc.tolerations, tc.failover, fixedTime)
			assert.Equal(t, tc.evict, got.Evict, "Evict; Reason %q", got.Reason)
			assert.Equal(t, tc.after, got.After, "After; Reason %q", got.Reason)
			assert.Contains(t, got.Reason, tc.reason)
		})
	}
}

// TestDecideEvictionKarmadaNeedEviction is Karmada v1.18's
// TestNoExecuteTaintManager_needEvictionWithCurrentTime (taint_manager_test.go)
// translated: needEviction is Evict, a positive tolerationTime is After, and
// -1 (never) is Evict false with After 0. The cases about the annotation,
// the cluster lookup and the feature switch are the controller's, not the
// decision's, and are left out.
func TestDecideEvictionKarmadaNeedEviction(t *testing.T) {
	exists := func(key string, secs *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs}
	}
	runEvictionCases(t, []evictionCase{
		{
			name:   "cluster has no NoExecute taints",
			taints: []corev1.Taint{{Key: "test-key", Effect: corev1.TaintEffectNoSchedule}},
			reason: "no NoExecute or PreferNoExecute taint",
		},
		{
			name:   "taint not tolerated - immediate eviction",
			taints: []corev1.Taint{{Key: "test-key", Effect: corev1.TaintEffectNoExecute, TimeAdded: at(-time.Second)}},
			evict:  true, reason: "taint test-key:NoExecute is not tolerated",
		},
		{
			name:        "taint tolerated with zero toleration seconds - immediate eviction",
			taints:      []corev1.Taint{{Key: "test-key", Effect: corev1.TaintEffectNoExecute, TimeAdded: at(-time.Second)}},
			tolerations: []corev1.Toleration{exists("test-key", ptr.To[int64](0))},
			evict:       true, reason: "clusterTolerations[0] tolerates it for 0s, which has run out",
		},
		{
			name:        "taint tolerated with positive toleration seconds - wait for toleration time",
			taints:      []corev1.Taint{{Key: "test-key", Effect: corev1.TaintEffectNoExecute, TimeAdded: at(-time.Second)}},
			tolerations: []corev1.Toleration{exists("test-key", ptr.To[int64](60))},
			after:       59 * time.Second, reason: "runs out in 59s",
		},
		{
			name:        "taint tolerated forever - no eviction",
			taints:      []corev1.Taint{{Key: "test-key", Effect: corev1.TaintEffectNoExecute, TimeAdded: at(-time.Second)}},
			tolerations: []corev1.Toleration{exists("test-key", nil)},
			reason:      "tolerated without a time limit",
		},
		{
			name: "multiple taints with mixed tolerations",
			taints: []corev1.Taint{
				{Key: "tolerated-key", Effect: corev1.TaintEffectNoExecute, TimeAdded: at(time.Second)},
				{Key: "not-tolerated-key", Effect: corev1.TaintEffectNoExecute, TimeAdded: at(-time.Second)},
			},
			tolerations: []corev1.Toleration{exists("tolerated-key", ptr.To[int64](30))},
			evict:       true, reason: "not-tolerated-key:NoExecute is not tolerated",
		},
		{
			name:        "toleration time expired - immediate eviction",
			taints:      []corev1.Taint{{Key: "test-key", Effect: corev1.TaintEffectNoExecute, TimeAdded: at(-2 * time.Second)}},
			tolerations: []corev1.Toleration{exists("test-key", ptr.To[int64](1))},
			evict:       true, reason: "which has run out",
		},
	})
}

// TestDecideEvictionKarmadaMinTolerationTime is Karmada v1.18's
// TestGetMinTolerationTimeWithCurrentTime (pkg/util/helper/taint_test.go)
// translated: the used tolerations are the placement's, a result of 0 is
// Evict, a positive one After, -1 neither.
func TestDecideEvictionKarmadaMinTolerationTime(t *testing.T) {
	tol := func(key string, secs *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs}
	}
	taint := func(key, value string, added *metav1.Time) corev1.Taint {
		return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoExecute, TimeAdded: added}
	}
	runEvictionCases(t, []evictionCase{
		{
			name:        "no noExecuteTaints",
			tolerations: []corev1.Toleration{tol("key", ptr.To[int64](60))},
			reason:      "no NoExecute or PreferNoExecute taint",
		},
		{
			name:   "no usedTolerations",
			taints: []corev1.Taint{taint("key", "value", at(0))},
			evict:  true, reason: "taint key=value:NoExecute is not tolerated",
		},
		{
			name:        "with noExecuteTaints and usedTolerations",
			taints:      []corev1.Taint{taint("key", "value", at(0))},
			tolerations: []corev1.Toleration{tol("key", ptr.To[int64](60))},
			after:       60 * time.Second, reason: "taint key=value:NoExecute added at 2025-09-23T12:00:00Z: clusterTolerations[0] tolerates it for 60s",
		},
		{
			name:        "usedTolerantion.TolerationSeconds is nil",
			taints:      []corev1.Taint{taint("key", "value", at(0))},
			tolerations: []corev1.Toleration{tol("key", nil)},
			reason:      "tolerated without a time limit",
		},
		{
			name:        "noExecuteTaints.TimeAdded is nil",
			taints:      []corev1.Taint{taint("key", "value", nil)},
			tolerations: []corev1.Toleration{tol("key", ptr.To[int64](60))},
			reason:      "no deadline for key=value:NoExecute: timeAdded is missing",
		},
		{
			name:        "find the latest trigger time",
			taints:      []corev1.Taint{taint("key1", "value1", at(0)), taint("key2", "value2", at(0))},
			tolerations: []corev1.Toleration{tol("key1", ptr.To[int64](120)), tol("key2", ptr.To[int64](60))},
			after:       60 * time.Second, reason: "taint key2=value2:NoExecute",
		},
		{
			name:        "trigger time is up",
			taints:      []corev1.Taint{taint("key", "value", at(-2*time.Minute))},
			tolerations: []corev1.Toleration{tol("key", ptr.To[int64](60))},
			evict:       true, reason: "which has run out",
		},
	})
}

// TestDecideEvictionKarmadaMatchingTolerations is Karmada v1.18's
// TestGetMatchingTolerations translated to NoExecute taints (its tables use
// NoSchedule, which the decision ignores), plus the consequence of keeping
// only the first tolerating toleration of each taint.
func TestDecideEvictionKarmadaMatchingTolerations(t *testing.T) {
	taint := func(key, value string) corev1.Taint {
		return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoExecute, TimeAdded: at(0)}
	}
	equal := func(key, value string, secs *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Value: value, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs}
	}
	runEvictionCases(t, []evictionCase{
		{
			name:        "taints is nil",
			tolerations: []corev1.Toleration{equal("key1", "value1", nil)},
			reason:      "no NoExecute",
		},
		{
			name:   "tolerations is nil",
			taints: []corev1.Taint{taint("key1", "value1")},
			evict:  true, reason: "key1=value1:NoExecute is not tolerated",
		},
		{
			name:        "tolerated is true",
			taints:      []corev1.Taint{taint("key1", "value1"), taint("key2", "value2")},
			tolerations: []corev1.Toleration{equal("key1", "value1", nil), equal("key2", "value2", nil)},
			reason:      "tolerated without a time limit",
		},
		{
			name:        "tolerated is false",
			taints:      []corev1.Taint{taint("key1", "value1"), taint("key2", "value2")},
			tolerations: []corev1.Toleration{equal("key1", "value_1", nil), equal("key2", "value_2", nil)},
			evict:       true, reason: "key1=value1:NoExecute is not tolerated",
		},
		{
			name:   "a later toleration with seconds is not used when an earlier one tolerates forever",
			taints: []corev1.Taint{taint("key1", "value1")},
			tolerations: []corev1.Toleration{
				{Operator: corev1.TolerationOpExists},
				equal("key1", "value1", ptr.To[int64](10)),
			},
			reason: "tolerated without a time limit",
		},
		{
			name: "a used toleration times every NoExecute taint it tolerates",
			taints: []corev1.Taint{
				{Key: "key1", Value: "value1", Effect: corev1.TaintEffectNoExecute, TimeAdded: at(-50 * time.Second)},
				taint("key2", "value2"),
			},
			// key1 is first tolerated forever, key2 only by the second
			// toleration, which Karmada then applies to key1 as well.
			tolerations: []corev1.Toleration{
				equal("key1", "value1", nil),
				{Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](60)},
			},
			after: 10 * time.Second, reason: "taint key1=value1:NoExecute added at 2025-09-23T11:59:10Z: clusterTolerations[1] tolerates it for 60s",
		},
	})
}

// TestDecideEvictionPreferNoExecute holds the PreferNoExecute rules of the
// cluster failover proposal (001_7b151355facd1c99.txt): tolerations are not
// consulted; without spec.failover.cluster the workload stays; with it, it
// leaves tolerationSeconds (default 300) after the taint was added.
func TestDecideEvictionPreferNoExecute(t *testing.T) {
	prefer := func(added *metav1.Time) []corev1.Taint {
		return []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: failover.TaintEffectPreferNoExecute, TimeAdded: added}}
	}
	tolerateAll := []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	runEvictionCases(t, []evictionCase{
		{
			name:   "no failover behavior: never affected",
			taints: prefer(at(-time.Hour)),
			reason: "PreferNoExecute taints move only workloads with spec.failover.cluster set",
		},
		{
			name:     "default tolerationSeconds is 300",
			taints:   prefer(at(-100 * time.Second)),
			failover: &failover.ClusterFailoverBehavior{},
			after:    200 * time.Second, reason: "tolerationSeconds is 300s (the default)",
		},
		{
			name:     "deadline reached",
			taints:   prefer(at(-100 * time.Second)),
			failover: &failover.ClusterFailoverBehavior{TolerationSeconds: ptr.To[int32](100)},
			evict:    true, reason: "which has run out",
		},
		{
			name:     "tolerationSeconds 0 evicts at once, even without timeAdded",
			taints:   prefer(nil),
			failover: &failover.ClusterFailoverBehavior{TolerationSeconds: ptr.To[int32](0)},
			evict:    true, reason: "tolerationSeconds is 0s",
		},
		{
			name:     "no timeAdded: no deadline",
			taints:   prefer(nil),
			failover: &failover.ClusterFailoverBehavior{TolerationSeconds: ptr.To[int32](60)},
			reason:   "timeAdded is missing",
		},
		{
			name:        "tolerations are not consulted",
			taints:      prefer(at(0)),
			tolerations: tolerateAll,
			failover:    &failover.ClusterFailoverBehavior{TolerationSeconds: ptr.To[int32](0)},
			evict:       true,
		},
		{
			name: "NoSchedule never evicts, even with failover",
			taints: []corev1.Taint{
				{Key: "a", Effect: corev1.TaintEffectNoSchedule, TimeAdded: at(-time.Hour)},
				{Key: "b", Effect: corev1.TaintEffectPreferNoSchedule, TimeAdded: at(-time.Hour)},
			},
			failover: &failover.ClusterFailoverBehavior{TolerationSeconds: ptr.To[int32](0)},
			reason:   "no NoExecute or PreferNoExecute taint",
		},
		{
			name: "several taints: the earliest deadline",
			taints: []corev1.Taint{
				{Key: "down", Effect: corev1.TaintEffectNoExecute, TimeAdded: at(0)},
				{Key: "slow", Effect: failover.TaintEffectPreferNoExecute, TimeAdded: at(0)},
			},
			tolerations: []corev1.Toleration{{Key: "down", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](600)}},
			failover:    &failover.ClusterFailoverBehavior{TolerationSeconds: ptr.To[int32](60)},
			after:       60 * time.Second, reason: "taint slow:PreferNoExecute",
		},
		{
			name: "several taints: any that says now evicts",
			taints: []corev1.Taint{
				{Key: "down", Effect: corev1.TaintEffectNoExecute, TimeAdded: at(0)},
				{Key: "slow", Effect: failover.TaintEffectPreferNoExecute, TimeAdded: at(-time.Hour)},
			},
			tolerations: []corev1.Toleration{{Key: "down", Operator: corev1.TolerationOpExists}},
			failover:    &failover.ClusterFailoverBehavior{},
			evict:       true, reason: "taint slow:PreferNoExecute",
		},
		{
			name: "a tolerated-forever NoExecute and an opted-out PreferNoExecute: stays",
			taints: []corev1.Taint{
				{Key: "down", Effect: corev1.TaintEffectNoExecute, TimeAdded: at(0)},
				{Key: "slow", Effect: failover.TaintEffectPreferNoExecute, TimeAdded: at(-time.Hour)},
			},
			tolerations: tolerateAll,
			reason:      "every NoExecute taint is tolerated without a time limit; PreferNoExecute taints move only",
		},
	})
}

// TestDecideEvictionBadInput: input a user can write has a defined answer
// and a Reason that names it; nothing panics.
func TestDecideEvictionBadInput(t *testing.T) {
	down := []corev1.Taint{{Key: "down", Effect: corev1.TaintEffectNoExecute, TimeAdded: at(-time.Second)}}
	runEvictionCases(t, []evictionCase{
		{
			name:        "unknown operator tolerates nothing",
			taints:      down,
			tolerations: []corev1.Toleration{{Key: "down", Operator: "Near"}},
			evict:       true, reason: `clusterTolerations[0] has operator "Near", which tolerates nothing`,
		},
		{
			name:        "comparison operators are off, as in Karmada",
			taints:      []corev1.Taint{{Key: "load", Value: "5", Effect: corev1.TaintEffectNoExecute}},
			tolerations: []corev1.Toleration{{Key: "load", Operator: corev1.TolerationOpLt, Value: "9"}},
			evict:       true, reason: `operator "Lt"`,
		},
		{
			name:        "unknown effect tolerates nothing",
			taints:      down,
			tolerations: []corev1.Toleration{{Key: "down", Operator: corev1.TolerationOpExists, Effect: "Bogus"}},
			evict:       true, reason: `clusterTolerations[0] has unknown effect "Bogus"`,
		},
		{
			name:        "negative tolerationSeconds counts as 0",
			taints:      []corev1.Taint{{Key: "down", Effect: corev1.TaintEffectNoExecute, TimeAdded: at(0)}},
			tolerations: []corev1.Toleration{{Key: "down", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](-5)}},
			evict:       true, reason: "negative tolerationSeconds -5 counts as 0",
		},
		{
			name:     "negative failover tolerationSeconds counts as 0",
			taints:   []corev1.Taint{{Key: "slow", Effect: failover.TaintEffectPreferNoExecute}},
			failover: &failover.ClusterFailoverBehavior{TolerationSeconds: ptr.To[int32](-1)},
			evict:    true, reason: "negative tolerationSeconds -1 counts as 0",
		},
		{
			name:        "tolerationSeconds beyond a time.Duration does not wrap to the past",
			taints:      []corev1.Taint{{Key: "down", Effect: corev1.TaintEffectNoExecute, TimeAdded: at(0)}},
			tolerations: []corev1.Toleration{{Key: "down", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](math.MaxInt64)}},
			after:       time.Duration(math.MaxInt64 / int64(time.Second) * int64(time.Second)), reason: "which runs out in",
		},
		{
			name:   "an empty taint with effect NoExecute is still a taint",
			taints: []corev1.Taint{{Effect: corev1.TaintEffectNoExecute}},
			evict:  true, reason: ":NoExecute is not tolerated",
		},
	})
}

func TestDecideEvictionAllocatesNothingOnAHealthyCluster(t *testing.T) {
	taints := []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
	tols := []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists}}
	f := &failover.ClusterFailoverBehavior{}
	allocs := testing.AllocsPerRun(100, func() {
		if d := failover.DecideEviction(taints, tols, f, fixedTime); d.Evict {
			t.Fatal(d.Reason)
		}
	})
	assert.Zero(t, allocs)
}

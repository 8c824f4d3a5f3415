package karmada_test

import (
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/util"
	"github.com/karmada-io/karmada/pkg/util/helper"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
)

// The annotation is Karmada's own.
func TestAppliedPlacementAnnotationIsKarmadas(t *testing.T) {
	assert.Equal(t, util.PolicyPlacementAnnotation, karmada.AppliedPlacementAnnotation)
	assert.Equal(t, workv1alpha2.EvictionProducerTaintManager, karmada.TaintManagerProducer)
	assert.Equal(t, workv1alpha2.EvictionReasonTaintUntolerated, karmada.TaintUntoleratedReason)
}

// AppliedTolerations reads the annotation as Karmada v1.18's taint manager
// does: the cases of its needEvictionWithCurrentTime test that concern the
// annotation, each also run through Karmada's own helper.GetAppliedPlacement,
// which must agree. Where Karmada gets no placement (no annotation, or an
// empty one) its taint manager fails the decision, and so does
// AppliedTolerations.
func TestAppliedTolerations(t *testing.T) {
	const key = karmada.AppliedPlacementAnnotation
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		wantKeys    []string // of the tolerations, in order
		wantErr     bool
	}{
		{"no annotation: an error", map[string]string{}, nil, true},
		{"nil annotations: an error", nil, nil, true},
		{"empty annotation: an error", map[string]string{key: ""}, nil, true},
		{"not JSON: an error", map[string]string{key: "invalid-json"}, nil, true},
		{"no tolerations", map[string]string{key: `{"clusterAffinity":{"clusterNames":["test-cluster"]}}`}, nil, false},
		{"empty tolerations", map[string]string{key: `{"clusterAffinity":{"clusterNames":["test-cluster"]},"clusterTolerations":[]}`}, nil, false},
		{"the annotation's tolerations", map[string]string{key: `{"clusterTolerations":[{"key":"test-key","operator":"Exists","effect":"NoExecute","tolerationSeconds":60},{"key":"b","operator":"Exists"}]}`}, []string{"test-key", "b"}, false},
		{"a field Karmada does not know is ignored, as encoding/json does for Karmada", map[string]string{key: `{"clusterTolerations":[{"key":"a","operator":"Exists"}],"future":1}`}, []string{"a"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := karmada.AppliedTolerations(tc.annotations)
			kp, kerr := helper.GetAppliedPlacement(tc.annotations)
			if tc.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), key, "the error names the annotation")
				assert.True(t, kerr != nil || kp == nil, "Karmada reads a placement from %v", tc.annotations)
				return
			}
			require.NoError(t, err)
			require.NoError(t, kerr)
			assert.Equal(t, kp.ClusterTolerations, got, "Karmada's helper reads other tolerations")
			var keys []string
			for _, tol := range got {
				keys = append(keys, tol.Key)
			}
			assert.Equal(t, tc.wantKeys, keys)
		})
	}
	t.Run("the toleration is read whole", func(t *testing.T) {
		got, err := karmada.AppliedTolerations(map[string]string{key: `{"clusterTolerations":[{"key":"k","operator":"Equal","value":"v","effect":"NoExecute","tolerationSeconds":60}]}`})
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, "v", got[0].Value)
		require.NotNil(t, got[0].TolerationSeconds)
		assert.Equal(t, int64(60), *got[0].TolerationSeconds)
	})
}

// EvictionPurgeMode is Karmada v1.18's getPurgeMode: the cases of its
// Test_getPurgeMode, and the flag values Karmada's own validation lets
// through only when NoExecute eviction is off.
func TestEvictionPurgeMode(t *testing.T) {
	cluster := func(m policyv1alpha1.PurgeMode) *policyv1alpha1.FailoverBehavior {
		return &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: m}}
	}
	for _, tc := range []struct {
		name     string
		failover *policyv1alpha1.FailoverBehavior
		flag     string // --no-execute-taint-eviction-purge-mode
		want     failover.PurgeMode
	}{
		{"no spec.failover, empty flag: Gracefully", nil, "", failover.PurgeModeGracefully},
		{"no spec.failover, flag Directly", nil, "Directly", failover.PurgeModeDirectly},
		{"no spec.failover, flag Gracefully", nil, "Gracefully", failover.PurgeModeGracefully},
		{"no spec.failover, an unknown flag value: Gracefully", nil, "Never", failover.PurgeModeGracefully},
		{"spec.failover without cluster: the flag", &policyv1alpha1.FailoverBehavior{}, "Directly", failover.PurgeModeDirectly},
		{"spec.failover.application only: the flag", &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{}}, "Directly", failover.PurgeModeDirectly},
		{"spec.failover.cluster without a mode: Gracefully, not the flag", cluster(""), "Directly", failover.PurgeModeGracefully},
		{"spec.failover.cluster Directly wins over the flag", cluster(policyv1alpha1.PurgeModeDirectly), "Gracefully", failover.PurgeModeDirectly},
		{"spec.failover.cluster Gracefully wins over the flag", cluster(policyv1alpha1.PurgeModeGracefully), "Directly", failover.PurgeModeGracefully},
		{"spec.failover.cluster Never", cluster(policyv1alpha1.Never), "Directly", failover.PurgeModeNever},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, karmada.EvictionPurgeMode(tc.failover, tc.flag))
		})
	}
}

// PreservedLabelState is Karmada v1.18's extractStateForEviction: the cases
// of its Test_extractStateForEviction and of helper's
// Test_BuildPreservedLabelState, each compared with what Karmada's own
// helper.BuildPreservedLabelState extracts from the same status.
func TestPreservedLabelState(t *testing.T) {
	rules := func(rs ...policyv1alpha1.StatePreservationRule) *policyv1alpha1.ClusterFailoverBehavior {
		return &policyv1alpha1.ClusterFailoverBehavior{StatePreservation: &policyv1alpha1.StatePreservation{Rules: rs}}
	}
	rule := func(alias, path string) policyv1alpha1.StatePreservationRule {
		return policyv1alpha1.StatePreservationRule{AliasLabelName: alias, JSONPath: path}
	}
	status := func(cluster, raw string) workv1alpha2.AggregatedStatusItem {
		return workv1alpha2.AggregatedStatusItem{ClusterName: cluster, Status: &runtime.RawExtension{Raw: []byte(raw)}}
	}
	labels := `{"metadata":{"labels":{"foo":"bar"}}}`
	for _, tc := range []struct {
		name    string
		c       *policyv1alpha1.ClusterFailoverBehavior
		status  []workv1alpha2.AggregatedStatusItem
		want    map[string]string
		wantErr string // a part of the error
	}{
		{"no spec.failover.cluster: nothing", nil, nil, nil, ""},
		{"no statePreservation: nothing", &policyv1alpha1.ClusterFailoverBehavior{}, nil, nil, ""},
		{"no rules: nothing, even without a status", rules(), nil, nil, ""},
		{"the cluster's status not collected: an error", rules(rule("foo", "{ .metadata.labels.foo }")),
			[]workv1alpha2.AggregatedStatusItem{status("member2", labels)}, nil, "member1"},
		{"the cluster's status item without a status: an error", rules(rule("foo", "{ .metadata.labels.foo }")),
			[]workv1alpha2.AggregatedStatusItem{{ClusterName: "member1"}}, nil, "member1"},
		{"extracted", rules(rule("foo", "{ .metadata.labels.foo }")),
			[]workv1alpha2.AggregatedStatusItem{status("member2", `{}`), status("member1", labels)}, map[string]string{"foo": "bar"}, ""},
		{"numbers and booleans as text", rules(rule("key-a", "{ .replicas }"), rule("key-b", "{ .health }")),
			[]workv1alpha2.AggregatedStatusItem{status("member1", `{"replicas": 2, "health": true}`)}, map[string]string{"key-a": "2", "key-b": "true"}, ""},
		{"a path that finds nothing: an error naming the rule", rules(rule("key-a", "{ .replicas }"), rule("key-b", "{ .notfound }")),
			[]workv1alpha2.AggregatedStatusItem{status("member1", `{"replicas": 2, "health": true}`)}, nil, "rules[1]"},
		{"a path that does not parse: an error naming the rule", rules(rule("key-a", "{ .replicas }"), rule("key-b", "{ %health }")),
			[]workv1alpha2.AggregatedStatusItem{status("member1", `{"replicas": 2, "health": true}`)}, nil, "rules[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := karmada.PreservedLabelState(tc.c, tc.status, "member1")
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.Nil(t, got)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
			}
			// Karmada's own extraction, where it has a status to read.
			item, ok := helper.FindTargetStatusItemByCluster(tc.status, "member1")
			if tc.c == nil || tc.c.StatePreservation == nil || len(tc.c.StatePreservation.Rules) == 0 || !ok || item.Status == nil {
				return
			}
			kwant, kerr := helper.BuildPreservedLabelState(tc.c.StatePreservation, item.Status.Raw)
			assert.Equal(t, kerr != nil, err != nil, "Karmada's helper: %v", kerr)
			if kerr == nil {
				assert.Equal(t, kwant, got, "Karmada's helper extracts otherwise")
			}
		})
	}
}

// DecideBindingEviction is the taint manager's decision: only the taints
// that count, against the applied placement's tolerations, with
// spec.failover.cluster for PreferNoExecute.
func TestDecideBindingEviction(t *testing.T) {
	lost := &clusterv1alpha1.Cluster{Spec: clusterv1alpha1.ClusterSpec{Taints: []corev1.Taint{{Key: "down", Effect: corev1.TaintEffectNoExecute}}}}
	lost.Name = "lost"
	spec := &workv1alpha2.ResourceBindingSpec{}
	evictNow := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	untolerated := map[string]string{karmada.AppliedPlacementAnnotation: "{}"}

	d, err := karmada.DecideBindingEviction(untolerated, spec, lost, true, evictNow)
	require.NoError(t, err)
	assert.True(t, d.Evict)

	d, err = karmada.DecideBindingEviction(untolerated, spec, lost, false, evictNow)
	require.NoError(t, err)
	assert.False(t, d.Evict, "NoExecute counts only when enabled")

	_, err = karmada.DecideBindingEviction(nil, spec, lost, false, evictNow)
	assert.NoError(t, err, "the applied placement is read only when a NoExecute taint counts")
	_, err = karmada.DecideBindingEviction(nil, spec, lost, true, evictNow)
	assert.ErrorContains(t, err, karmada.AppliedPlacementAnnotation)

	_, err = karmada.DecideBindingEviction(untolerated, nil, lost, true, evictNow)
	assert.ErrorContains(t, err, "must not be nil")
}

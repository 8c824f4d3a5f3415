package karmada_test

import (
	"encoding/json"
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
)

// Every field of spec.failover.application is carried, legacy purge modes
// included, and nothing is shared with Karmada's object.
func TestFromApplicationFailoverBehavior(t *testing.T) {
	var a policyv1alpha1.ApplicationFailoverBehavior
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
decisionConditions:
  tolerationSeconds: 120
purgeMode: Graciously
gracePeriodSeconds: 600
statePreservation:
  rules:
  - aliasLabelName: failover.example.io/replicas
    jsonPath: "{.replicas}"
`), &a))
	b, err := karmada.FromApplicationFailoverBehavior(&a)
	require.NoError(t, err)
	want := &appfailover.Behavior{
		DecisionConditions: appfailover.DecisionConditions{TolerationSeconds: ptr.To[int32](120)},
		PurgeMode:          failover.PurgeModeGraciously,
		GracePeriodSeconds: ptr.To[int32](600),
		StatePreservation: &appfailover.StatePreservation{Rules: []appfailover.StatePreservationRule{
			{AliasLabelName: "failover.example.io/replicas", JSONPath: "{.replicas}"}}},
	}
	assert.Equal(t, want, b)

	*a.DecisionConditions.TolerationSeconds, *a.GracePeriodSeconds = 1, 1
	a.StatePreservation.Rules[0].JSONPath = "{.other}"
	assert.Equal(t, want, b, "nothing is shared with Karmada's object")

	p, err := appfailover.New(*b, appfailover.Options{})
	require.NoError(t, err)
	assert.Equal(t, 2*time.Minute, p.Window())
	assert.Equal(t, failover.PurgeModeGracefully, p.PurgeMode())

	b, err = karmada.FromApplicationFailoverBehavior(nil)
	assert.NoError(t, err)
	assert.Nil(t, b, "a workload that has not opted in")

	for _, m := range []policyv1alpha1.PurgeMode{"Directly", "Never", "Immediately", "Gracefully"} {
		b, err := karmada.FromApplicationFailoverBehavior(&policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: m})
		require.NoError(t, err, m)
		assert.Equal(t, failover.PurgeMode(m), b.PurgeMode)
	}

	b, err = karmada.FromApplicationFailoverBehavior(&policyv1alpha1.ApplicationFailoverBehavior{
		DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To[int32](-1)},
		PurgeMode:          "Soon",
	})
	assert.Nil(t, b)
	assert.EqualError(t, err, "karmada: failover.application: appfailover: decisionConditions.tolerationSeconds: -1: must not be negative\n"+
		`appfailover: purgeMode: unknown value "Soon": want Directly, Gracefully or Never (legacy Immediately, Graciously)`)
}

// deploymentStatus is the status Karmada's native interpreter collects from
// a Deployment on a member cluster.
func deploymentStatus(t *testing.T, generation, observed, template int64) *runtime.RawExtension {
	t.Helper()
	raw, err := json.Marshal(map[string]int64{"replicas": 2, "readyReplicas": 1,
		"generation": generation, "observedGeneration": observed, "resourceTemplateGeneration": template})
	require.NoError(t, err)
	return &runtime.RawExtension{Raw: raw}
}

// One observation per scheduled cluster not already leaving: its health,
// and its template generation once the member has observed it.
func TestApplicationObservations(t *testing.T) {
	spec := &workv1alpha2.ResourceBindingSpec{
		Clusters:              []workv1alpha2.TargetCluster{{Name: "m1"}, {Name: "m2"}, {Name: "m3"}, {Name: "m4"}, {Name: "m5"}},
		GracefulEvictionTasks: []workv1alpha2.GracefulEvictionTask{{FromCluster: "m4"}},
	}
	status := &workv1alpha2.ResourceBindingStatus{AggregatedStatus: []workv1alpha2.AggregatedStatusItem{
		{ClusterName: "m1", Health: workv1alpha2.ResourceHealthy, Status: deploymentStatus(t, 8, 8, 5)},
		{ClusterName: "m2", Health: workv1alpha2.ResourceUnhealthy, Status: deploymentStatus(t, 9, 8, 6)},
		{ClusterName: "m4", Health: workv1alpha2.ResourceUnhealthy},
		{ClusterName: "m5", Status: &runtime.RawExtension{Raw: []byte(`{"phase":"Running"}`)}},
		{ClusterName: "gone", Health: workv1alpha2.ResourceUnhealthy},
	}}
	got, err := karmada.ApplicationObservations(spec, status)
	require.NoError(t, err)
	assert.Equal(t, map[string]appfailover.Observation{
		"m1": {Health: gracefulevict.Healthy, Generation: 5},
		"m2": {Health: gracefulevict.Unhealthy}, // the member has not observed generation 9 yet
		"m3": {Health: gracefulevict.Unknown},   // no status collected yet
		"m5": {Health: gracefulevict.Unknown},   // no health; a status with no generations
	}, got, "m4 is leaving; gone is not scheduled")

	for _, tc := range []struct {
		name  string
		items []workv1alpha2.AggregatedStatusItem
		want  string
	}{
		{"unknown health", []workv1alpha2.AggregatedStatusItem{{ClusterName: "m1", Health: "Sick"}},
			`karmada: status.aggregatedStatus[0].health: unknown value "Sick" (cluster "m1"): want Healthy, Unhealthy or Unknown`},
		{"no cluster name", []workv1alpha2.AggregatedStatusItem{{Health: workv1alpha2.ResourceHealthy}},
			"karmada: status.aggregatedStatus[0].clusterName is empty"},
		{"twice", []workv1alpha2.AggregatedStatusItem{{ClusterName: "m1"}, {ClusterName: "m1"}},
			`karmada: status.aggregatedStatus[1].clusterName: duplicate value "m1" (first at [0])`},
		{"bad status", []workv1alpha2.AggregatedStatusItem{{ClusterName: "m2", Status: &runtime.RawExtension{Raw: []byte(`{"generation":"eight"}`)}}},
			`karmada: status.aggregatedStatus[0].status (cluster "m2"): json: cannot unmarshal string into Go struct field .generation of type int64`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := karmada.ApplicationObservations(spec, &workv1alpha2.ResourceBindingStatus{AggregatedStatus: tc.items})
			assert.EqualError(t, err, tc.want)
			assert.Nil(t, got)
		})
	}
	_, err = karmada.ApplicationObservations(nil, status)
	assert.Error(t, err)
}

// The timers go into the binding's annotation and come back the same, so
// a restarted controller decides as the one before it; a bad annotation
// is an error naming it, with an empty record.
func TestApplicationTimers(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var p appfailover.Policy
	res := p.DecideAll(nil, map[string]appfailover.Observation{"m1": {Health: gracefulevict.Unhealthy}}, now)
	in := map[string]string{"other": "kept"}
	out := karmada.WithApplicationTimers(in, res.Record)
	assert.Equal(t, map[string]string{"other": "kept"}, in, "the caller's map is not changed")
	assert.Equal(t, `[{"cluster":"m1","health":"Unhealthy","since":"2026-11-29T12:00:00Z"}]`, out[karmada.ApplicationTimersAnnotation])

	rec, err := karmada.ApplicationTimers(out)
	require.NoError(t, err)
	assert.Equal(t, []string{"m1"}, p.DecideAll(rec, map[string]appfailover.Observation{"m1": {Health: gracefulevict.Unhealthy}}, now.Add(5*time.Minute)).FailOver)

	assert.NotContains(t, karmada.WithApplicationTimers(out, nil), karmada.ApplicationTimersAnnotation)
	rec, err = karmada.ApplicationTimers(nil)
	assert.NoError(t, err)
	assert.Empty(t, rec)
	rec, err = karmada.ApplicationTimers(map[string]string{karmada.ApplicationTimersAnnotation: `[{"cluster":"m1"}]`})
	assert.EqualError(t, err, "karmada: annotation failover.karmada.io/application-failover-timers: "+
		`appfailover: record[0] (cluster "m1").health: unknown value "": want Healthy, Unhealthy or Unknown`+"\n"+
		`appfailover: record[0] (cluster "m1").since is missing`)
	assert.Empty(t, rec)
}

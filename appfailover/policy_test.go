package appfailover_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/appfailover"
)

// Karmada's spec.failover.application decodes as written, legacy purge
// mode names included, and the Policy reads its defaults as Karmada does.
func TestBehaviorDecodesKarmadaYAML(t *testing.T) {
	var b appfailover.Behavior
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
decisionConditions:
  tolerationSeconds: 120
purgeMode: Graciously
gracePeriodSeconds: 600
statePreservation:
  rules:
  - aliasLabelName: failover.example.io/replicas
    jsonPath: "{.replicas}"
`), &b))
	p, err := appfailover.New(b, appfailover.Options{})
	require.NoError(t, err)
	assert.Equal(t, 2*time.Minute, p.Window())
	assert.Equal(t, failover.PurgeModeGracefully, p.PurgeMode())
	assert.Equal(t, b, p.Behavior())
	assert.Equal(t, "{.replicas}", p.Behavior().StatePreservation.Rules[0].JSONPath)

	var o appfailover.Options
	require.NoError(t, json.Unmarshal([]byte(`{"unknown":"Count","unknownTolerationSeconds":90,"startupGraceSeconds":600}`), &o))
	p, err = appfailover.New(appfailover.Behavior{PurgeMode: failover.PurgeModeNever}, o)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Minute, p.Window(), "nil tolerationSeconds is 300, as Karmada's CRD defaults it")
	assert.Equal(t, appfailover.UnknownCounts, p.UnknownPolicy())
	assert.Equal(t, 90*time.Second, p.UnknownWindow())
	assert.Equal(t, 10*time.Minute, p.StartupGrace())
	assert.Equal(t, o, p.Options())
	for _, m := range []failover.PurgeMode{"", "Directly", "Gracefully", "Never", "Immediately", "Graciously"} {
		_, err := appfailover.New(appfailover.Behavior{PurgeMode: m}, appfailover.Options{})
		assert.NoError(t, err, "purge mode %q: v1.18's names and v1.19's", m)
	}
}

// Bad input is an error naming the field and the value; all of them at
// once.
func TestNewRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    appfailover.Behavior
		o    appfailover.Options
		want []string
	}{
		{"negative toleration", appfailover.Behavior{DecisionConditions: appfailover.DecisionConditions{TolerationSeconds: ptr.To[int32](-1)}}, appfailover.Options{},
			[]string{"appfailover: decisionConditions.tolerationSeconds: -1: must not be negative"}},
		{"unknown purge mode", appfailover.Behavior{PurgeMode: "Eventually"}, appfailover.Options{},
			[]string{`appfailover: purgeMode: unknown value "Eventually": want Directly, Gracefully or Never (legacy Immediately, Graciously)`}},
		{"grace period without Gracefully", appfailover.Behavior{PurgeMode: "Immediately", GracePeriodSeconds: ptr.To[int32](60)}, appfailover.Options{},
			[]string{"appfailover: gracePeriodSeconds: 60: only takes effect with purgeMode Gracefully, not Immediately"}},
		{"grace period below 1", appfailover.Behavior{GracePeriodSeconds: ptr.To[int32](0)}, appfailover.Options{},
			[]string{"appfailover: gracePeriodSeconds: 0: must be at least 1"}},
		{"bad state preservation", appfailover.Behavior{StatePreservation: &appfailover.StatePreservation{Rules: []appfailover.StatePreservationRule{
			{AliasLabelName: "not a label", JSONPath: "{.replicas}"},
			{AliasLabelName: "ok", JSONPath: ""},
			{AliasLabelName: "ok", JSONPath: "{.replicas"},
		}}}, appfailover.Options{}, []string{
			`appfailover: statePreservation.rules[0].aliasLabelName: "not a label": name part must consist of alphanumeric characters`,
			"appfailover: statePreservation.rules[1].jsonPath is empty",
			`appfailover: statePreservation.rules[2].aliasLabelName: "ok" is also rules[1]'s`,
			`appfailover: statePreservation.rules[2].jsonPath: "{.replicas": unclosed action`,
		}},
		{"unknown Unknown policy", appfailover.Behavior{}, appfailover.Options{Unknown: "Ignore"},
			[]string{`appfailover: unknown: unknown value "Ignore": want Hold, Count or Reset`}},
		{"Unknown window without Count", appfailover.Behavior{}, appfailover.Options{UnknownTolerationSeconds: ptr.To[int32](60)},
			[]string{"appfailover: unknownTolerationSeconds: 60: only takes effect with unknown Count, not Hold (the default)"}},
		{"negative Unknown window", appfailover.Behavior{}, appfailover.Options{Unknown: appfailover.UnknownCounts, UnknownTolerationSeconds: ptr.To[int32](-60)},
			[]string{"appfailover: unknownTolerationSeconds: -60: must not be negative"}},
		{"negative start-up grace", appfailover.Behavior{}, appfailover.Options{StartupGraceSeconds: -5},
			[]string{"appfailover: startupGraceSeconds: -5: must not be negative"}},
		{"everything at once", appfailover.Behavior{PurgeMode: "x", DecisionConditions: appfailover.DecisionConditions{TolerationSeconds: ptr.To[int32](-2)}},
			appfailover.Options{StartupGraceSeconds: -1}, []string{
				"decisionConditions.tolerationSeconds: -2", `purgeMode: unknown value "x"`, "startupGraceSeconds: -1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := appfailover.New(tc.b, tc.o)
			require.Error(t, err)
			assert.Equal(t, appfailover.Policy{}, p)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Len(t, strings.Split(err.Error(), "\n"), len(tc.want), "one line per problem: %v", err)
		})
	}
}

package failback_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/failback"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// member is a cluster whose Ready condition last changed, to status, at
// ready.
func member(status metav1.ConditionStatus, ready time.Time, taints ...corev1.Taint) *failover.Cluster {
	return &failover.Cluster{Name: "m1", Taints: taints, Conditions: []metav1.Condition{
		{Type: failback.ReadyCondition, Status: status, LastTransitionTime: metav1.NewTime(ready)}}}
}

var origin = failback.Origin{Cluster: "m1", At: metav1.NewTime(t0)}

func TestDecideWaitsForTheWindowFromTheLastChange(t *testing.T) {
	window := 10 * time.Minute
	c := member(metav1.ConditionTrue, t0.Add(5*time.Minute))

	d := failback.Decide(origin, c, window, t0.Add(8*time.Minute))
	assert.False(t, d.Return)
	assert.Equal(t, 7*time.Minute, d.After, "ready since 00:05: the window ends at 00:15")
	assert.Equal(t, t0.Add(5*time.Minute), d.Since)
	assert.Equal(t, "cluster m1 has been healthy since 2026-11-29T12:05:00Z, when its condition Ready turned True: 7m0s of the 10m0s window left", d.Reason)

	d = failback.Decide(origin, c, window, t0.Add(15*time.Minute))
	assert.True(t, d.Return, d.Reason)
	assert.Zero(t, d.After)

	// Another condition that changed later starts the window again.
	c.Conditions = append(c.Conditions, metav1.Condition{Type: "NetworkReady", Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(12 * time.Minute))})
	d = failback.Decide(origin, c, window, t0.Add(15*time.Minute))
	assert.False(t, d.Return)
	assert.Equal(t, 7*time.Minute, d.After)
	assert.Contains(t, d.Reason, "when its condition NetworkReady turned True")
}

// A cluster Ready since before the failover (tainted by hand, say) counts
// its health from the failover: the taint's removal leaves no time.
func TestDecideCountsFromTheFailoverAtTheEarliest(t *testing.T) {
	c := member(metav1.ConditionTrue, t0.Add(-time.Hour))
	d := failback.Decide(origin, c, 10*time.Minute, t0.Add(4*time.Minute))
	assert.False(t, d.Return)
	assert.Equal(t, 6*time.Minute, d.After)
	assert.Contains(t, d.Reason, "since 2026-11-29T12:00:00Z, when it failed over")
	assert.True(t, failback.Decide(origin, c, 10*time.Minute, t0.Add(10*time.Minute)).Return)
}

func TestDecideSaysNoWhileTheOriginIsNotHealthy(t *testing.T) {
	later := t0.Add(time.Hour)
	for _, tc := range []struct {
		name    string
		cluster *failover.Cluster
		window  time.Duration
		reason  string
	}{
		{"off", member(metav1.ConditionTrue, t0), 0, "failback is off (stabilization window 0s)"},
		{"negative window", member(metav1.ConditionTrue, t0), -time.Second, "failback is off (stabilization window -1s)"},
		{"gone", nil, time.Minute, "cluster m1, which it failed over from, is gone"},
		{"NoExecute", member(metav1.ConditionTrue, t0, corev1.Taint{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}), time.Minute,
			"cluster m1 has the taint cluster.karmada.io/not-ready:NoExecute"},
		{"PreferNoExecute", member(metav1.ConditionTrue, t0, corev1.Taint{Key: "degraded", Value: "disk", Effect: failover.TaintEffectPreferNoExecute}), time.Minute,
			"cluster m1 has the taint degraded=disk:PreferNoExecute"},
		{"not ready", member(metav1.ConditionFalse, t0), time.Minute, "cluster m1 is not Ready (False since 2026-11-29T12:00:00Z)"},
		{"unknown", member(metav1.ConditionUnknown, t0), time.Minute, "cluster m1 is not Ready (Unknown since 2026-11-29T12:00:00Z)"},
		{"no condition", &failover.Cluster{Name: "m1"}, time.Minute, "cluster m1 has no Ready condition"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := failback.Decide(origin, tc.cluster, tc.window, later)
			assert.Equal(t, failback.Decision{Reason: tc.reason}, d)
		})
	}
	// A NoSchedule taint is the scheduler's to weigh, not a sign of ill health.
	c := member(metav1.ConditionTrue, t0, corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule})
	assert.True(t, failback.Decide(origin, c, time.Minute, later).Return)
}

// playHistory plays a cluster's Ready condition over [t0, end): it turns
// Ready at each time of ups and not Ready at each of downs. It asks Decide
// every second, as a controller that never restarts would, and returns
// when the answer first said return (zero: never). A controller restarted
// at any moment asks the same question of the same cluster, so the answer
// at each second is the one it would give too.
func playHistory(window time.Duration, end time.Time, ups, downs []time.Time) time.Time {
	c := member(metav1.ConditionFalse, t0)
	for now := t0; now.Before(end); now = now.Add(time.Second) {
		for _, u := range ups {
			if u.Equal(now) {
				c.Conditions[0] = metav1.Condition{Type: failback.ReadyCondition, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}
			}
		}
		for _, d := range downs {
			if d.Equal(now) {
				c.Conditions[0] = metav1.Condition{Type: failback.ReadyCondition, Status: metav1.ConditionFalse, LastTransitionTime: metav1.NewTime(now)}
			}
		}
		if failback.Decide(origin, c, window, now).Return {
			return now
		}
	}
	return time.Time{}
}

// The cases: a recovery shorter than the window, and a cluster
// that flaps every three minutes for an hour, bring nothing back; one
// that stays up comes back when the window ends, to the second.
func TestDecideOverAHistory(t *testing.T) {
	window := 10 * time.Minute
	assert.Zero(t, playHistory(window, t0.Add(time.Hour), []time.Time{t0.Add(time.Minute)}, []time.Time{t0.Add(9 * time.Minute)}),
		"up for 8 minutes, then down again")

	var ups, downs []time.Time
	for m := time.Duration(0); m < time.Hour; m += 6 * time.Minute {
		ups, downs = append(ups, t0.Add(m)), append(downs, t0.Add(m+3*time.Minute))
	}
	assert.Zero(t, playHistory(window, t0.Add(time.Hour), ups, downs), "flapping every 3 minutes")

	assert.Equal(t, t0.Add(20*time.Minute), playHistory(window, t0.Add(time.Hour), []time.Time{t0.Add(10 * time.Minute)}, nil))
}

func TestRecordKeepsTheLatestOriginPerCluster(t *testing.T) {
	var r failback.Record
	for i := range failback.MaxOrigins + 2 {
		r = r.Add(failback.Origin{Cluster: fmt.Sprintf("m%d", i), At: metav1.NewTime(t0.Add(time.Duration(i) * time.Minute))})
	}
	require.Len(t, r, failback.MaxOrigins)
	assert.Equal(t, "m2", r[0].Cluster, "the two oldest went")

	again := r.Add(failback.Origin{Cluster: "m3", At: metav1.NewTime(t0.Add(time.Hour))})
	assert.Len(t, again, failback.MaxOrigins)
	assert.Equal(t, "m3", again[len(again)-1].Cluster, "m3 again, now the latest")
	o, ok := again.Find("m3")
	assert.True(t, ok)
	assert.Equal(t, t0.Add(time.Hour), o.At.Time)
	assert.Equal(t, "m3", r[1].Cluster, "Add leaves its receiver as it was")

	back := again.Remove("m3")
	_, ok = back.Find("m3")
	assert.False(t, ok)
	assert.Len(t, back, failback.MaxOrigins-1)
	assert.Nil(t, failback.Record{{Cluster: "m1", At: metav1.NewTime(t0)}}.Remove("m1"))
}

func TestParseRecord(t *testing.T) {
	r := failback.Record{}.Add(failback.Origin{Cluster: "m1", At: metav1.NewTime(t0)}).Add(failback.Origin{Cluster: "m2", At: metav1.NewTime(t0.Add(time.Minute))})
	s := r.String()
	assert.Equal(t, `[{"cluster":"m1","at":"2026-11-29T12:00:00Z"},{"cluster":"m2","at":"2026-11-29T12:01:00Z"}]`, s)
	back, err := failback.ParseRecord(s)
	require.NoError(t, err)
	require.Len(t, back, 2)
	for i := range r {
		assert.Equal(t, r[i].Cluster, back[i].Cluster)
		assert.True(t, r[i].At.Equal(&back[i].At), "record[%d].at", i)
	}

	empty, err := failback.ParseRecord("")
	assert.NoError(t, err)
	assert.Empty(t, empty)
	assert.Equal(t, "", failback.Record(nil).String())

	for s, want := range map[string]string{
		`{"cluster":"m1"}`:                `failback: record "{\"cluster\":\"m1\"}": json: cannot unmarshal object into Go value of type failback.Record`,
		`[{"at":"2026-11-29T12:00:00Z"}]`: "failback: record[0].cluster is empty",
		`[{"cluster":"m1"}]`:              "failback: record[0].at is missing",
		`[{"cluster":"m1","at":"2026-11-29T12:00:00Z"},{"cluster":"m1","at":"2026-11-29T12:00:00Z"}]`: `failback: record[1].cluster: "m1" is listed twice`,
	} {
		_, err := failback.ParseRecord(s)
		assert.EqualError(t, err, want, s)
	}
	var long failback.Record
	for i := range failback.MaxOrigins + 1 {
		long = append(long, failback.Origin{Cluster: fmt.Sprintf("m%d", i), At: metav1.NewTime(t0)})
	}
	_, err = failback.ParseRecord(long.String())
	assert.EqualError(t, err, "failback: record: 9 origins, more than 8")
}

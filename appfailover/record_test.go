package appfailover_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover/appfailover"
)

func TestParseRecord(t *testing.T) {
	r := appfailover.Record{
		{Cluster: "m1", Health: unknown, Since: metav1.NewTime(at(100)), CountedSeconds: 90},
		{Cluster: "m2", Health: unhealthy, Since: metav1.NewTime(at(0)), Generation: 4, GenerationSince: ptr.To(metav1.NewTime(at(-60))), Started: true},
	}
	s := r.String()
	assert.Equal(t, `[{"cluster":"m1","health":"Unknown","since":"2026-11-29T12:01:40Z","countedSeconds":90},`+
		`{"cluster":"m2","health":"Unhealthy","since":"2026-11-29T12:00:00Z","generation":4,"generationSince":"2026-11-29T11:59:00Z","started":true}]`, s)
	back, err := appfailover.ParseRecord(s)
	require.NoError(t, err)
	assert.Equal(t, s, back.String())
	got, ok := back.Find("m2")
	require.True(t, ok)
	assert.True(t, got.Since.Equal(&r[1].Since))
	_, ok = back.Find("m3")
	assert.False(t, ok)

	unsorted, err := appfailover.ParseRecord(`[{"cluster":"m2","health":"Healthy","since":"2026-11-29T12:00:00Z"},{"cluster":"m1","health":"Healthy","since":"2026-11-29T12:00:00Z"}]`)
	require.NoError(t, err)
	assert.Equal(t, "m1", unsorted[0].Cluster, "timers come back sorted by cluster")

	empty, err := appfailover.ParseRecord("")
	assert.NoError(t, err)
	assert.Empty(t, empty)
	assert.Equal(t, "", appfailover.Record(nil).String())
}

// A bad record is an error naming the entry and its value, every problem
// at once.
func TestParseRecordNamesTheBadEntry(t *testing.T) {
	const since = `"since":"2026-11-29T12:00:00Z"`
	for s, want := range map[string]string{
		`{"cluster":"m1"}`:                                                                                      `appfailover: record "{\"cluster\":\"m1\"}": json: cannot unmarshal object into Go value of type appfailover.Record`,
		`[{"health":"Unhealthy",` + since + `}]`:                                                                `appfailover: record[0].cluster is empty`,
		`[{"cluster":"m1","health":"Unhealthy"}]`:                                                               `appfailover: record[0] (cluster "m1").since is missing`,
		`[{"cluster":"m1","health":"Sick",` + since + `}]`:                                                      `appfailover: record[0] (cluster "m1").health: unknown value "Sick": want Healthy, Unhealthy or Unknown`,
		`[{"cluster":"m1","health":"Unknown",` + since + `,"countedSeconds":-4}]`:                               `appfailover: record[0] (cluster "m1").countedSeconds: -4: must not be negative`,
		`[{"cluster":"m1","health":"Healthy",` + since + `,"countedSeconds":30}]`:                               `appfailover: record[0] (cluster "m1").countedSeconds: 30 with health Healthy, which resets the timer`,
		`[{"cluster":"m1","health":"Unknown",` + since + `},{"cluster":"m1","health":"Unknown",` + since + `}]`: `appfailover: record[1].cluster: "m1" is listed twice`,
		`[{"cluster":"m1","health":"","countedSeconds":-1}]`: `appfailover: record[0] (cluster "m1").health: unknown value "": want Healthy, Unhealthy or Unknown` + "\n" +
			`appfailover: record[0] (cluster "m1").since is missing` + "\n" +
			`appfailover: record[0] (cluster "m1").countedSeconds: -1: must not be negative`,
	} {
		r, err := appfailover.ParseRecord(s)
		assert.EqualError(t, err, want, s)
		assert.Nil(t, r)
	}

	var long []string
	for i := range appfailover.MaxClusters + 1 {
		long = append(long, fmt.Sprintf(`{"cluster":"m%d","health":"Unhealthy",%s}`, i, since))
	}
	_, err := appfailover.ParseRecord("[" + strings.Join(long, ",") + "]")
	assert.EqualError(t, err, "appfailover: record: 65 clusters, more than 64")
}

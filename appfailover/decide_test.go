package appfailover_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/gracefulevict"
)

// The cases, each played second by second and woken only by
// changes and After: both must fail over at the same second.
func TestDecideOverAHistory(t *testing.T) {
	hold := appfailover.Options{}
	for _, tc := range []struct {
		name   string
		window int32
		opts   appfailover.Options
		events []event
		want   int // the second it fails over at; -1 never
	}{
		{"Unhealthy counts from its first sight to the window's last second", 300, hold,
			[]event{{0, unhealthy, 0}}, 300},
		{"the default window is 300 seconds", -1, hold,
			[]event{{0, unhealthy, 0}}, 300},
		{"Healthy resets: the window starts again", 300, hold,
			[]event{{0, unhealthy, 0}, {200, healthy, 0}, {250, unhealthy, 0}}, 550},
		{"a copy Healthy all along never fails over", 300, hold,
			[]event{{0, healthy, 0}}, -1},
		{"a flap Unhealthy/Unknown fails over once Unhealthy time reaches the window (karmada#7431)", 300, hold,
			[]event{{0, unhealthy, 0}, {100, unknown, 0}, {160, unhealthy, 0}, {260, unknown, 0}, {300, unhealthy, 0}}, 400},
		{"the same flap never fails over with Karmada's reset", 300, appfailover.Options{Unknown: appfailover.UnknownResets},
			[]event{{0, unhealthy, 0}, {100, unknown, 0}, {160, unhealthy, 0}, {260, unknown, 0}, {300, unhealthy, 0}, {400, unknown, 0}}, -1},
		{"with Karmada's reset the window starts at the last Unhealthy", 300, appfailover.Options{Unknown: appfailover.UnknownResets},
			[]event{{0, unhealthy, 0}, {100, unknown, 0}, {160, unhealthy, 0}}, 460},
		{"Unknown alone starts no timer by default", 300, hold,
			[]event{{0, unknown, 0}}, -1},
		{"Unknown holds counted time however long it lasts", 300, hold,
			[]event{{0, unhealthy, 0}, {299, unknown, 0}}, -1},
		{"Unknown counts after its own window with Count", 300, appfailover.Options{Unknown: appfailover.UnknownCounts, UnknownTolerationSeconds: ptr.To[int32](60)},
			[]event{{0, unhealthy, 0}, {100, unknown, 0}}, 100 + 60 + 200},
		{"Unknown alone fails over after both windows with Count", 300, appfailover.Options{Unknown: appfailover.UnknownCounts, UnknownTolerationSeconds: ptr.To[int32](60)},
			[]event{{0, unknown, 0}}, 360},
		{"a broken stretch of Unknown starts its window again", 300, appfailover.Options{Unknown: appfailover.UnknownCounts, UnknownTolerationSeconds: ptr.To[int32](60)},
			[]event{{0, unknown, 0}, {50, unhealthy, 0}, {51, unknown, 0}}, 51 + 60 + 299},
		{"the Unknown window defaults to 300 seconds", 300, appfailover.Options{Unknown: appfailover.UnknownCounts},
			[]event{{0, unknown, 0}}, 600},
		{"a starting copy counts nothing during the grace (karmada#6233)", 300, appfailover.Options{StartupGraceSeconds: 600},
			[]event{{0, unhealthy, 1}}, 900},
		{"the first Healthy ends the start-up", 300, appfailover.Options{StartupGraceSeconds: 600},
			[]event{{0, unhealthy, 1}, {120, healthy, 1}, {200, unhealthy, 1}}, 500},
		{"a new generation starts a new start-up and keeps counted time", 300, appfailover.Options{StartupGraceSeconds: 600},
			[]event{{0, healthy, 1}, {10, unhealthy, 1}, {110, unhealthy, 2}}, 110 + 600 + 200},
		{"a window reached waits for a new generation's start-up", 300, appfailover.Options{StartupGraceSeconds: 600},
			[]event{{0, healthy, 1}, {10, unhealthy, 1}, {310, unhealthy, 2}}, 910},
		{"generation 0 (not reported) changes nothing", 300, appfailover.Options{StartupGraceSeconds: 600},
			[]event{{0, healthy, 1}, {10, unhealthy, 0}}, 310},
		{"without a grace, generations are ignored", 300, hold,
			[]event{{0, unhealthy, 1}, {100, unhealthy, 2}}, 300},
		{"a window of 0 fails over at the first Unhealthy sight", 0, hold,
			[]event{{0, healthy, 0}, {30, unhealthy, 0}}, 30},
		{"a window of 0 waits for the start-up", 0, appfailover.Options{StartupGraceSeconds: 60},
			[]event{{0, unhealthy, 0}}, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := appfailover.Behavior{}
			if tc.window >= 0 {
				b.DecisionConditions.TolerationSeconds = ptr.To(tc.window)
			}
			p, err := appfailover.New(b, tc.opts)
			require.NoError(t, err)
			obs := history(tc.events, 2000)
			assert.Equal(t, tc.want, firstFailOver(p, obs), "asked every second")
			assert.Equal(t, tc.want, eventDriven(t, p, obs), "woken by changes and After")
		})
	}
}

// A failover the caller could not carry out (nowhere to go) stands until
// Healthy resets it, Unknown or not.
func TestDecideAWindowReachedStandsUntilHealthy(t *testing.T) {
	p := policy(t, 300, appfailover.Options{})
	d := p.Decide("m1", nil, appfailover.Observation{Health: unhealthy}, at(0))
	d = p.Decide("m1", d.Timer, appfailover.Observation{Health: unhealthy}, at(300))
	require.True(t, d.FailOver, d.Reason)
	d = p.Decide("m1", d.Timer, appfailover.Observation{Health: unknown}, at(400))
	assert.True(t, d.FailOver, d.Reason)
	assert.Equal(t, "the copy on m1 is Unknown since 2026-11-29T12:06:40Z; 6m40s counted reached the 5m0s window and only Healthy resets it: fail over from m1", d.Reason)
	d = p.Decide("m1", d.Timer, appfailover.Observation{Health: healthy}, at(500))
	assert.False(t, d.FailOver)
	assert.Nil(t, d.Timer, "a Healthy copy without a grace keeps no timer")
	assert.Equal(t, "the copy on m1 is Healthy: no timer runs", d.Reason)
}

// The Reasons say what holds the failover back, and when it comes.
func TestDecideReasons(t *testing.T) {
	count := appfailover.Options{Unknown: appfailover.UnknownCounts, UnknownTolerationSeconds: ptr.To[int32](60)}
	for _, tc := range []struct {
		name   string
		opts   appfailover.Options
		events []event
		now    int
		after  time.Duration
		reason string
	}{
		{"counting", appfailover.Options{}, []event{{0, unhealthy, 0}}, 120, 3 * time.Minute,
			"the copy on m1 is Unhealthy since 2026-11-29T12:00:00Z; 2m0s of the 5m0s window counted: it fails over at 2026-11-29T12:05:00Z (in 3m0s) unless it turns Healthy"},
		{"held by Unknown", appfailover.Options{}, []event{{0, unhealthy, 0}, {100, unknown, 0}}, 200, 0,
			"the copy on m1 is Unknown since 2026-11-29T12:01:40Z: the timer holds at 1m40s of the 5m0s window, as Unknown neither starts nor resets it; it counts again when the copy is Unhealthy"},
		{"Unknown with nothing counted", appfailover.Options{}, []event{{0, unknown, 0}}, 200, 0,
			"the copy on m1 is Unknown: no timer runs, as Unknown neither starts nor resets it"},
		{"Unknown resets", appfailover.Options{Unknown: appfailover.UnknownResets}, []event{{0, unhealthy, 0}, {100, unknown, 0}}, 200, 0,
			"the copy on m1 is Unknown: Unknown resets the timer (unknown Reset, Karmada v1.18's rule)"},
		{"Unknown about to count", count, []event{{0, unhealthy, 0}, {100, unknown, 0}}, 130, 230 * time.Second,
			"the copy on m1 is Unknown since 2026-11-29T12:01:40Z; Unknown counts as Unhealthy from 2026-11-29T12:02:40Z (unknownTolerationSeconds 60); 1m40s of the 5m0s window counted: it fails over at 2026-11-29T12:06:00Z (in 3m50s) unless it turns Healthy"},
		{"starting", appfailover.Options{StartupGraceSeconds: 600}, []event{{0, unhealthy, 3}}, 60, 840 * time.Second,
			"the copy on m1 is Unhealthy since 2026-11-29T12:00:00Z; it is starting (at generation 3 first seen at 2026-11-29T12:00:00Z; startupGraceSeconds 600) until it is Healthy or until 2026-11-29T12:10:00Z; 0s of the 5m0s window counted: it fails over at 2026-11-29T12:15:00Z (in 14m0s) unless it turns Healthy"},
		{"window reached while starting", appfailover.Options{StartupGraceSeconds: 600}, []event{{0, healthy, 0}, {1, unhealthy, 0}, {400, unhealthy, 2}}, 500, 500 * time.Second,
			"the copy on m1 is Unhealthy since 2026-11-29T12:00:01Z; 6m39s counted reached the 5m0s window before, but it is starting (at generation 2 first seen at 2026-11-29T12:06:40Z; startupGraceSeconds 600) until it is Healthy or until 2026-11-29T12:16:40Z: it fails over at 2026-11-29T12:16:40Z (in 8m20s) unless it turns Healthy first"},
		{"an unknown health", appfailover.Options{}, []event{{0, "Degraded", 0}}, 10, 0,
			`health "Degraded" counts as Unknown; the copy on m1 is Unknown: no timer runs, as Unknown neither starts nor resets it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policy(t, 300, tc.opts)
			var timer *appfailover.Timer
			var d appfailover.Decision
			for s, o := range history(tc.events, tc.now+1) {
				d = p.Decide("m1", timer, o, at(s))
				timer = d.Timer
			}
			assert.False(t, d.FailOver)
			assert.Equal(t, tc.after, d.After)
			assert.Equal(t, tc.reason, d.Reason)
		})
	}
}

// The restart case: a controller restarted mid-window reads the
// record its predecessor wrote and fails over at the same instant, to the
// second; Karmada v1.18 would wait a whole window again (karmada#7171).
func TestDecideRestartMidWindow(t *testing.T) {
	p := policy(t, 300, appfailover.Options{})
	seen := map[string]appfailover.Observation{"m1": {Health: unhealthy}, "m2": {Health: healthy}}

	// The first controller sees m1 turn Unhealthy at 12:00:00.4 and stores
	// the record; it is gone at 12:02:30.
	res := p.DecideAll(nil, seen, t0.Add(400*time.Millisecond))
	require.True(t, res.Changed)
	stored := res.Record.String()
	assert.Equal(t, `[{"cluster":"m1","health":"Unhealthy","since":"2026-11-29T12:00:01Z"}]`, stored)
	longRunning := res.Record

	// The next reads it at 12:04:00 and keeps deciding, as does one that ran
	// all along: the same answer at every instant.
	restarted, err := appfailover.ParseRecord(stored)
	require.NoError(t, err)
	for _, now := range []time.Time{at(240), at(300), t0.Add(300*time.Second + 999*time.Millisecond), at(301)} {
		a, b := p.DecideAll(longRunning, seen, now), p.DecideAll(restarted, seen, now)
		assert.Equal(t, a.FailOver, b.FailOver, "at %s", now)
		assert.Equal(t, a.After, b.After, "at %s", now)
		assert.Equal(t, a.Decisions["m1"].Reason, b.Decisions["m1"].Reason)
		assert.False(t, b.Changed, "nothing changed since it was stored")
	}
	assert.Empty(t, p.DecideAll(restarted, seen, at(300)).FailOver, "seen at 12:00:00.4, stamped 12:00:01: never early")
	assert.Equal(t, []string{"m1"}, p.DecideAll(restarted, seen, at(301)).FailOver)
	assert.Equal(t, 61*time.Second, p.DecideAll(restarted, seen, at(240)).After)
}

func TestDecideAllKeepsOnlyWhatItNeeds(t *testing.T) {
	p := policy(t, 300, appfailover.Options{})
	rec := appfailover.Record{
		{Cluster: "gone", Health: unhealthy, Since: metav1.NewTime(t0)},
		{Cluster: "m1", Health: unhealthy, Since: metav1.NewTime(t0)},
	}
	res := p.DecideAll(rec, map[string]appfailover.Observation{"m1": {Health: unhealthy}, "m2": {Health: unknown}, "m3": {Health: healthy}}, at(100))
	assert.True(t, res.Changed, "the cluster the workload left is dropped")
	assert.Equal(t, `[{"cluster":"m1","health":"Unhealthy","since":"2026-11-29T12:00:00Z"}]`, res.Record.String(),
		"Unknown with nothing counted and Healthy without a grace keep no timer")
	assert.Len(t, res.Decisions, 3)
	assert.Equal(t, 200*time.Second, res.After)
	assert.Empty(t, res.FailOver)

	again := p.DecideAll(res.Record, map[string]appfailover.Observation{"m1": {Health: unhealthy}}, at(300))
	assert.False(t, again.Changed)
	assert.Equal(t, []string{"m1"}, again.FailOver)
	assert.Zero(t, again.After)

	withGrace := policy(t, 300, appfailover.Options{StartupGraceSeconds: 60})
	res = withGrace.DecideAll(nil, map[string]appfailover.Observation{"m3": {Health: healthy, Generation: 7}}, at(0))
	assert.Equal(t, `[{"cluster":"m3","health":"Healthy","since":"2026-11-29T12:00:00Z","generation":7,"generationSince":"2026-11-29T12:00:00Z","started":true}]`, res.Record.String(),
		"with a grace, a Healthy copy's generation is remembered: a timer forgotten would start it again")
}

// More copies than a record holds: those whose timers count are kept, the
// oldest first, and the others' decisions say theirs is not.
func TestDecideAllBoundsTheRecord(t *testing.T) {
	p := policy(t, 300, appfailover.Options{StartupGraceSeconds: 60})
	var rec appfailover.Record
	seen := map[string]appfailover.Observation{}
	for i := range appfailover.MaxClusters + 6 {
		c := fmt.Sprintf("c%03d", i)
		seen[c] = appfailover.Observation{Health: unhealthy, Generation: 1}
		if i < 10 {
			seen[c] = appfailover.Observation{Health: healthy, Generation: 1}
		}
		rec = append(rec, appfailover.Timer{Cluster: c, Health: seen[c].Health, Since: metav1.NewTime(at(-1000 + i)),
			Generation: 1, GenerationSince: ptr.To(metav1.NewTime(at(-2000))), Started: true})
	}
	res := p.DecideAll(rec, seen, at(0))
	require.Len(t, res.Record, appfailover.MaxClusters)
	kept := func(c string) bool { _, ok := res.Record.Find(c); return ok }
	for i := range appfailover.MaxClusters + 6 {
		c := fmt.Sprintf("c%03d", i)
		assert.Equal(t, i < 4 || i >= 10, kept(c), "%s: every Unhealthy copy, then the Healthy ones that have been so longest", c)
	}
	assert.Contains(t, res.Decisions["c009"].Reason, "its timer is not kept: the record holds at most 64 clusters")
	assert.Nil(t, res.Decisions["c009"].Timer)
	assert.NotNil(t, res.Decisions["c000"].Timer)
	back, err := appfailover.ParseRecord(res.Record.String())
	require.NoError(t, err)
	assert.Equal(t, res.Record.String(), back.String())

	// All Unhealthy: the timers that began first stay.
	for i := range 10 {
		c := fmt.Sprintf("c%03d", i)
		seen[c] = appfailover.Observation{Health: unhealthy, Generation: 1}
	}
	res = p.DecideAll(res.Record, seen, at(1))
	require.Len(t, res.Record, appfailover.MaxClusters)
	for i := range appfailover.MaxClusters + 6 {
		c := fmt.Sprintf("c%03d", i)
		assert.Equal(t, i < 4 || i >= 10, kept(c), "%s: the 60 oldest timers, then 4 of the 10 just begun, by name", c)
	}
	assert.Len(t, res.FailOver, 60, "Unhealthy for some 16 minutes")
	assert.Equal(t, "c010", res.FailOver[0])
}

// Decide has a defined answer for whatever it is given, and never panics.
func TestDecideNeverPanics(t *testing.T) {
	p := policy(t, 300, appfailover.Options{Unknown: appfailover.UnknownCounts, StartupGraceSeconds: 30})
	odd := []*appfailover.Timer{
		nil,
		{},
		{Cluster: "other", Health: "Broken", Since: metav1.NewTime(at(10_000))},
		{Health: unhealthy, Since: metav1.NewTime(at(10_000)), CountedSeconds: 1 << 40},
		{Health: healthy, CountedSeconds: -5, GenerationSince: &metav1.Time{}},
	}
	for i, prev := range odd {
		for _, h := range []gracefulevict.ResourceHealth{healthy, unhealthy, unknown, "", "Broken"} {
			d := p.Decide("m1", prev, appfailover.Observation{Health: h, Generation: -3}, at(5))
			assert.NotEmpty(t, d.Reason, "timer %d, health %q", i, h)
			assert.GreaterOrEqual(t, d.After, time.Duration(0))
		}
	}
	var zero appfailover.Policy
	assert.Equal(t, 300*time.Second, zero.Window(), "the zero Policy is Karmada's defaults")
	assert.Equal(t, appfailover.UnknownHolds, zero.UnknownPolicy())
	d := zero.Decide("m1", nil, appfailover.Observation{Health: unhealthy}, at(0))
	assert.Equal(t, 300*time.Second, d.After)
}

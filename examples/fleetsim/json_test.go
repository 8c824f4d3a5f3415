package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestJSONSchema decodes every shipped scenario's --json output strictly
// into the documented types, wants every field present, and checks what a
// program reading it may rely on.
func TestJSONSchema(t *testing.T) {
	files, err := filepath.Glob("scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var out bytes.Buffer
			if err := run(context.Background(), []string{"--scenario", f, "--json"}, &out); err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
			dec.DisallowUnknownFields()
			var r jsonReport
			if err := dec.Decode(&r); err != nil {
				t.Fatalf("the output does not decode strictly into the schema: %v", err)
			}
			if _, err := dec.Token(); !errors.Is(err, io.EOF) {
				t.Fatalf("more than one JSON document: %v", err)
			}
			var raw any
			if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
				t.Fatal(err)
			}
			assertAllFields(t, "", reflect.TypeFor[jsonReport](), raw)
			checkReport(t, &r)
		})
	}
}

// assertAllFields wants every field of typ in v (decoded JSON), recursively.
func assertAllFields(t *testing.T, path string, typ reflect.Type, v any) {
	t.Helper()
	switch typ.Kind() {
	case reflect.Pointer:
		if v != nil {
			assertAllFields(t, path, typ.Elem(), v)
		}
	case reflect.Slice:
		items, ok := v.([]any)
		if !ok {
			t.Errorf("%s: want an array, got %T", path, v)
			return
		}
		for i, it := range items {
			assertAllFields(t, path+"["+strconv.Itoa(i)+"]", typ.Elem(), it)
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			t.Errorf("%s: want an object, got %T", path, v)
			return
		}
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			fv, ok := obj[name]
			if !ok {
				t.Errorf("%s.%s is missing", path, name)
				continue
			}
			assertAllFields(t, path+"."+name, typ.Field(i).Type, fv)
		}
	}
}

var eventTypes = map[string]bool{eventPhase: true, eventConditions: true, eventTaints: true, eventHealth: true, eventQueued: true, eventFreeze: true, eventStorm: true, eventFailback: true,
	eventAppHealth: true, eventAppFailover: true}

func checkReport(t *testing.T, r *jsonReport) {
	t.Helper()
	if r.SchemaVersion != jsonSchemaVersion {
		t.Errorf("schemaVersion %q", r.SchemaVersion)
	}
	if start, err := time.Parse(time.RFC3339, r.Start); err != nil || start.IsZero() {
		t.Errorf("start %q is not RFC 3339: %v", r.Start, err)
	}
	if r.DurationSeconds <= 0 || r.IntervalSeconds <= 0 || r.Clusters <= 0 || r.WorkersPerQueue <= 0 || r.Scenario.Name == "" {
		t.Errorf("header: %+v", r)
	}
	sum := func(q jsonQueues) int { return q.ResourceBinding + q.ClusterResourceBinding }
	// A scenario of application failover alone queues nothing.
	if sum(r.Bindings) == 0 || sum(r.Totals.Queued) == 0 && r.ApplicationFailover == nil {
		t.Errorf("no bindings or nothing queued: %+v %+v", r.Bindings, r.Totals)
	}

	// Intervals: every intervalSeconds from 0 to the end; the changes add
	// up to the running totals, which end at the totals.
	var total jsonOutcomes
	for i, l := range r.Intervals {
		if want := float64(i) * r.IntervalSeconds; l.AtSeconds != want {
			t.Errorf("interval %d at %vs, want %vs", i, l.AtSeconds, want)
		}
		total.Evicted += l.Changes.Evicted
		total.Abandoned += l.Changes.Abandoned
		total.Cancelled += l.Changes.Cancelled
		if l.RunningTotals != total {
			t.Errorf("at %vs: running totals %+v, the changes so far add up to %+v", l.AtSeconds, l.RunningTotals, total)
		}
		if l.FaultyClusters > r.Clusters || l.Rate < 0 {
			t.Errorf("at %vs: %+v", l.AtSeconds, l)
		}
	}
	if n := len(r.Intervals); n == 0 || r.Intervals[n-1].AtSeconds != r.DurationSeconds {
		t.Errorf("want intervals up to %vs, got %d", r.DurationSeconds, n)
	}
	if total.Evicted != sum(r.Totals.Evicted) || total.Abandoned != sum(r.Totals.Abandoned) || total.Cancelled != sum(r.Totals.Cancelled) {
		t.Errorf("the intervals add up to %+v, totals %+v", total, r.Totals)
	}

	// Phases tile the run and count what the totals count.
	var phases jsonOutcomes
	for i, p := range r.Phases {
		if i == 0 && p.FromSeconds != 0 || i > 0 && p.FromSeconds != r.Phases[i-1].ToSeconds || p.ToSeconds <= p.FromSeconds {
			t.Errorf("phase %d (%s) from %vs to %vs does not follow the previous one", i, p.Name, p.FromSeconds, p.ToSeconds)
		}
		if (p.AchievedRate != nil) != (p.BackloggedGaps >= minGapsForRate && p.Rate > 0) {
			t.Errorf("phase %s: achievedRate %v with %d gaps at %v/s", p.Name, p.AchievedRate, p.BackloggedGaps, p.Rate)
		}
		phases.Evicted += p.Evicted
		phases.Abandoned += p.Abandoned
		phases.Cancelled += p.Cancelled
	}
	if n := len(r.Phases); n == 0 || r.Phases[n-1].ToSeconds != r.DurationSeconds || phases != total {
		t.Errorf("phases add up to %+v, want %+v up to %vs", phases, total, r.DurationSeconds)
	}

	last := 0.0
	for _, e := range r.Events {
		if !eventTypes[e.Type] || e.Message == "" || e.AtSeconds < last || e.AtSeconds > r.DurationSeconds {
			t.Errorf("event %+v (after %vs)", e, last)
		}
		last = e.AtSeconds
		if e.Type == eventConditions && (len(e.Clusters) == 0 || e.Count != len(e.Clusters)) {
			t.Errorf("conditions event without its clusters: %+v", e)
		}
		if e.Type == eventQueued && (e.Count == 0 || e.Retried > e.Count) {
			t.Errorf("queued event: %+v", e)
		}
	}

	// Reasons: a code for each, and the counts add up.
	reasonSum := func(what string, rs []jsonReason, want int) {
		n := 0
		for _, x := range rs {
			if x.Code == "" || x.Code == abandonOther || x.Reason == "" || x.Count <= 0 {
				t.Errorf("%s: %+v", what, x)
			}
			n += x.Count
		}
		if n != want {
			t.Errorf("%s add up to %d, want %d", what, n, want)
		}
	}
	reasonSum("tasks.doneBy", r.Tasks.DoneBy, r.Tasks.Done)
	reasonSum("tasks.openBy", r.Tasks.OpenBy, r.Tasks.Open)
	reasonSum("abandoned.byReason", r.Abandoned.ByReason, sum(r.Totals.Abandoned))
	n := 0
	for _, w := range r.Abandoned.ByWorkload {
		if w.Code == "" || w.Code == abandonOther || !strings.Contains(w.Example, ": ") {
			t.Errorf("abandoned.byWorkload: %+v", w)
		}
		n += w.Count
	}
	if n != sum(r.Totals.Abandoned) {
		t.Errorf("abandoned.byWorkload adds up to %d, want %d", n, sum(r.Totals.Abandoned))
	}

	pass := true
	codes := map[string]bool{}
	for _, c := range r.Checks {
		if c.Code == "" || codes[c.Code] || c.Name == "" {
			t.Errorf("check %+v", c)
		}
		codes[c.Code] = true
		pass = pass && c.Pass
	}
	want := len(checkOrder)
	if r.Failback != nil {
		want += len(failbackChecks)
	}
	if r.ApplicationFailover != nil {
		want += len(appFailoverChecks)
	}
	if len(r.Checks) != want || pass != r.Pass {
		t.Errorf("%d checks, pass %v, want %d and %v", len(r.Checks), r.Pass, want, pass)
	}
}

// The codes a program matches on do not change with the wording.
func TestAbandonCodes(t *testing.T) {
	_, r := runSim(t, "")
	seen := map[string]bool{}
	for reason, code := range r.AbandonCodes {
		seen[code] = true
		if code == abandonOther {
			t.Errorf("no code for %q", reason)
		}
	}
	for _, want := range []string{abandonNoEligibleCluster, abandonSpreadConstraint} {
		if !seen[want] {
			t.Errorf("the built-in scenario abandons for want of a cluster and of a spread; no %s in %v", want, r.AbandonCodes)
		}
	}
	_, r = runSim(t, "scenarios/flapping-region.yaml")
	for reason, code := range r.AbandonCodes {
		if code != abandonInsufficientCapacity {
			t.Errorf("flapping-region abandons for capacity only, got %s for %q", code, reason)
		}
	}
}

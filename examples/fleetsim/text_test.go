package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/failoverkit/failover/ratelimit"
)

func TestDescribeClustersUsesRangesOnlyForContiguousRuns(t *testing.T) {
	fleet := []string{"member1", "member2", "member3", "member4", "member5", "member6", "member7", "member8"}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, "none"},
		{[]string{"member4"}, "member4"},
		{[]string{"member5", "member4"}, "member4, member5"},
		{[]string{"member1", "member2", "member3"}, "member1 … member3"},
		// member2 is not in the set: no range may cover it.
		{[]string{"member1", "member3", "member4", "member5", "member6"}, "member1, member3 … member6"},
		{[]string{"member1", "member3", "member5", "member7"}, "member1, member3, member5, member7"},
		{[]string{"member1", "member3", "member5", "member7", "member8"}, "member1, member3, member5, member7, member8"},
		{[]string{"member1", "member3", "member5", "member6", "member8"}, "member1, member3, member5, member6, member8"},
		{[]string{"member1", "member3", "member5", "member6", "member7"}, "member1, member3, member5 … member7"},
	} {
		if got := describeClusters(tc.names, fleet); got != tc.want {
			t.Errorf("describeClusters(%v) = %q, want %q", tc.names, got, tc.want)
		}
	}
	// Past maxRuns parts the rest is counted, never hidden in a range.
	many := []string{"a01", "a02", "a03", "a04", "a05", "a06", "a07", "a08", "a09", "a10", "a11", "a12"}
	odd := []string{"a01", "a03", "a05", "a07", "a09", "a11"}
	if got, want := describeClusters(odd, many), "a01, a03, a05, a07 and 2 more"; got != want {
		t.Errorf("describeClusters(%v) = %q, want %q", odd, got, want)
	}
}

func TestFmtPercent(t *testing.T) {
	for f, want := range map[float64]string{0: "0%", 0.15: "15%", 0.6: "60%", 0.625: "62.5%", 0.375: "37.5%", 5.0 / 15: "33.3%", 0.55: "55%"} {
		if got := fmtPercent(f); got != want {
			t.Errorf("fmtPercent(%v) = %q, want %q", f, got, want)
		}
	}
}

// A fleet where exactly one of everything happens: one worker, one faulty
// cluster, one eviction, one region.
const singularScenario = `apiVersion: fleetsim.failoverkit.dev/v1alpha1
kind: Scenario
metadata: {name: one-of-each}
spec:
  duration: 3m
  interval: 1m
  workers: 1
  fleet:
  - {provider: aws, region: r1, clusters: 3}
  timeline:
  - at: 1m
    phase: one cluster down
    clusters: {clusterNames: [r1-01]}
    conditions: [{type: Ready, status: "False"}]
  - at: 2m
    phase: back
    clusters: {clusterNames: [r1-01]}
    conditions: [{type: Ready, status: "True"}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata: {name: not-ready}
spec:
  matchConditions: [{conditionType: Ready, operator: In, statusValues: ["False"]}]
  taintsToAdd: [{key: cluster.karmada.io/not-ready, effect: NoExecute, addOnMatchSeconds: 10}]
---
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: web, namespace: shop}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    replicaScheduling: {replicaSchedulingType: Duplicated}
    spreadConstraints: [{spreadByField: cluster, minGroups: 1, maxGroups: 1}]
  clusters: [{name: r1-01}]
  failover:
    cluster: {purgeMode: Directly}
`

// oneThings matches "1 <noun>s": a count of one with a plural noun.
var oneThings = regexp.MustCompile(`(^|[\s(:])1 [A-Za-z]+s\b`)

func TestTextUsesSingularForOne(t *testing.T) {
	files, _ := filepath.Glob("scenarios/*.yaml")
	singular := writeScenario(t, singularScenario)
	for _, f := range append(files, singular) {
		var out bytes.Buffer
		if err := run(context.Background(), []string{"--scenario", f}, &out); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if m := oneThings.FindString(l); m != "" {
				t.Errorf("%s: %q in %q", f, m, l)
			}
		}
		if f == singular {
			for _, want := range []string{"1 worker each", "1 ResourceBinding,", "in 1 region:", "Ready=False on 1 cluster (r1-01)", "queued 1 eviction\n"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("one-of-each: want %q in\n%s", want, out.String())
				}
			}
		}
	}
}

var percent = regexp.MustCompile(`\d+(\.\d+)?%`)

// The scenario's description and the health lines state the same shares of
// the fleet in the same words: "62.5%" in both, not 62% and 63%.
func TestDescriptionPercentagesMatchTheLines(t *testing.T) {
	files, _ := filepath.Glob("scenarios/*.yaml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, r := runSim(t, f)
			said := map[string]bool{fmtPercent(s.cfg.UnhealthyClusterThreshold): true}
			for _, e := range r.Events {
				if e.Kind == eventHealth {
					for _, p := range percent.FindAllString(e.Message, -1) {
						said[p] = true
					}
				}
			}
			for _, p := range percent.FindAllString(s.sc.Description, -1) {
				if !said[p] {
					t.Errorf("the description says %s, no health line does (they say %v)", p, said)
				}
			}
		})
	}
}

// When a region recovers, evictions abandoned earlier for want of a target
// are queued again; the event line says why.
func TestRecoveryExplainsRequeuedEvictions(t *testing.T) {
	_, r := runSim(t, "")
	found := false
	for _, e := range r.Events {
		if e.Kind != eventQueued || e.Retried == 0 {
			continue
		}
		found = true
		if fmtClock(e.T) != "00:18:00" || e.Retried != e.Count ||
			!strings.Contains(e.Message, "abandoned earlier for want of a target") || !strings.Contains(e.Message, "use1-01 … use1-06 lost their taints") {
			t.Errorf("at %s: %+v", fmtClock(e.T), e)
		}
	}
	if !found {
		t.Error("no event line for the evictions queued again when us-east-1 recovers")
	}
	// In the small fleet, the evictions resume when two clusters come back:
	// nothing is queued twice (an item the taint manager found due but a
	// worker evicted meanwhile is not queued again).
	_, r = runSim(t, "scenarios/small-fleet-pause.yaml")
	for _, e := range r.Events {
		if e.Kind == eventQueued && fmtClock(e.T) != "00:01:00" {
			t.Errorf("unexpected evictions queued: %+v", e)
		}
	}
}

func TestUnknownFlagNamesTheProgramAndTheHelp(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"--speed", "fast"}, {"-x"}} {
		err := run(context.Background(), args, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), "fleetsim: ") || !strings.Contains(err.Error(), "fleetsim --help") {
			t.Errorf("%v: got %v, want a fleetsim: error pointing to --help", args, err)
		}
	}
}

func TestDescribeDomainsNamesTheDisruptedOnes(t *testing.T) {
	rates := map[string]ratelimit.DomainRate{
		"southeastasia": {State: ratelimit.FullDisruption, Rate: 0.5},
		"us-east-1":     {State: ratelimit.PartialDisruption, Rate: 0},
		"europe-west1":  {State: ratelimit.Normal, Rate: 0.5},
		"":              {State: ratelimit.FullDisruption, Rate: 0.5},
	}
	got := describeDomains(ratelimit.DomainRegion, rates)
	want := "by region: (no region) FullDisruption 0.50/s, southeastasia FullDisruption 0.50/s, us-east-1 PartialDisruption paused, 1 other Normal"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := describeDomains(ratelimit.DomainZone, map[string]ratelimit.DomainRate{"a": {}, "b": {}}); got != "by zone: 2 zones Normal" {
		t.Errorf("all normal: got %q", got)
	}
}

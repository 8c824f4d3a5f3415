package main

import (
	"os"
	"testing"
)

// scaleScenario is the scale run of issue #29: 5,000 clusters and 100,000
// bindings through a regional outage (README: the scale run).
const scaleScenario = "scenarios/scale/regional-outage-5000.yaml"

// TestScaleScenarioLoads is the scale scenario loading and validating, at
// every run of the tests: its fleet, its bindings and their shards.
func TestScaleScenarioLoads(t *testing.T) {
	sc, err := readScenario(scaleScenario)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Clusters) != 5000 || len(sc.Bindings) != 100000 {
		t.Fatalf("%d clusters and %d bindings, want 5000 and 100000", len(sc.Clusters), len(sc.Bindings))
	}
	regions := map[string]int{}
	shards := map[string]int{}
	for _, c := range sc.Clusters {
		regions[c.Region]++
		shards[c.Labels[labelShard]]++
	}
	if len(regions) != 5 || len(shards) != 200 || shards["199"] != 25 {
		t.Errorf("%d regions, %d shards (%d clusters in shard 199), want 5, 200 and 25", len(regions), len(shards), shards["199"])
	}
	b := sc.Bindings[201] // 200 web copies per shard
	names := b.Karmada.ClusterAffinity.ClusterNames
	if b.Name != "web-00201" || len(names) != 25 || names[0] != "use1-0002" || names[5] != "usw2-0002" {
		t.Errorf("binding 201: %s on %v: want web-00201 on the 25 clusters of shard 1", b.Name, names)
	}
}

// TestScaleScenario runs the scale scenario (a minute or two, gigabytes of
// memory) only when FAILOVER_FLEETSIM_SCALE=1 is set: its verdict must pass.
func TestScaleScenario(t *testing.T) {
	if os.Getenv("FAILOVER_FLEETSIM_SCALE") != "1" {
		t.Skip("the scale run takes about a minute and 1.3 GiB: run it here with FAILOVER_FLEETSIM_SCALE=1 go test -run '^TestScaleScenario$' -timeout 30m .")
	}
	r, err := runReport(t, "--scenario", scaleScenario)
	if err != nil {
		if r != nil {
			t.Errorf("checks: %+v", r.Checks)
		}
		t.Fatal(err)
	}
	c := r.Totals
	t.Logf("evicted %v, abandoned %v, cancelled %v", c.Evicted, c.Abandoned, c.Cancelled)
	if sum2(c.Evicted) == 0 || sum2(c.Abandoned) == 0 {
		t.Errorf("evicted %v, abandoned %v: want evictions, and the pinned records abandoned", c.Evicted, c.Abandoned)
	}
}

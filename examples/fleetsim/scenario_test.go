package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A minimal valid scenario the bad cases below break one piece at a time.
const goodScenario = `apiVersion: fleetsim.failoverkit.dev/v1alpha1
kind: Scenario
metadata: {name: tiny}
spec:
  duration: 5m
  fleet:
  - {provider: aws, region: r1, clusters: 3}
  timeline:
  - at: 1m
    clusters: {clusterNames: [r1-01]}
    conditions: [{type: Ready, status: "False"}]
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
`

func writeScenario(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestGoodScenarioLoads(t *testing.T) {
	sc, err := readScenario(writeScenario(t, goodScenario))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Clusters) != 3 || len(sc.Bindings) != 1 || len(sc.Policies) != 1 || sc.Interval.String() != "30s" || sc.Workers != 2 {
		t.Errorf("loaded %+v", sc)
	}
	if c := sc.Clusters[2]; c.Name != "r1-03" || c.Region != "r1" || c.Provider != "aws" || c.Condition("Ready") == nil {
		t.Errorf("generated cluster: %+v", c)
	}
}

func TestBadScenariosNameFileDocumentAndField(t *testing.T) {
	for _, tc := range []struct {
		name string
		old  string // replaced in goodScenario by new
		new  string
		want []string
	}{
		{"unknown nested field", "replicaScheduling: {replicaSchedulingType: Duplicated}", "replicaScheduling: {replicaSchedulingType: Duplicated, replica: 2}",
			[]string{"document 3", "line 20", "ResourceBinding shop/web", `unknown field "spec.placement.replicaScheduling.replica"`}},
		{"unknown top-level field of the scenario", "  duration: 5m\n", "  duration: 5m\n  durations: 6m\n",
			[]string{"document 1", "Scenario", `unknown field "spec.durations"`}},
		{"wrong type", "minGroups: 1,", "minGroups: one,",
			[]string{"document 3", "line 20", `spec.placement.spreadConstraints[0].minGroups: "one": want an integer`}},
		{"a field name in the wrong case", "  duration: 5m\n", "  Duration: 5m\n",
			[]string{"document 1", "line 1", "Scenario", `unknown field "spec.Duration" (did you mean "duration"?)`}},
		{"a bad value deep in a list names its index", "conditions: [{type: Ready, status: \"False\"}]", "conditions: [{type: Ready, status: [\"False\"]}]",
			[]string{"document 1", `spec.timeline[0].conditions[0].status: ["False"]: want a string`}},
		{"malformed YAML in a taint policy gives the file's line", "operator: In,", "operator: [In,",
			[]string{"document 2", "line 13", "yaml: line 16"}},
		{"a duplicated key", "metadata: {name: tiny}", "metadata: {name: tiny}\nmetadata: {name: huge}",
			[]string{"document 1", "line 4", `key "metadata" already set`}},
		{"a document that is not a mapping", goodScenario[strings.LastIndex(goodScenario, "---\n")+4:], "- a list\n",
			[]string{"document 3", "line 20", `the document: ["a list"]: want a mapping`}},
		{"bad duration", "duration: 5m", "duration: five minutes",
			[]string{"document 1", `spec.duration: "five minutes": time: invalid duration`}},
		{"placementBatch not positive", "  duration: 5m\n", "  duration: 5m\n  placementBatch: 0\n",
			[]string{"document 1", "spec.placementBatch: 0: want 1 to 100000"}},
		{"placementBatch not a number", "  duration: 5m\n", "  duration: 5m\n  placementBatch: all\n",
			[]string{"document 1", `spec.placementBatch: "all": want an integer`}},
		{"duration not positive", "duration: 5m", "duration: 0s",
			[]string{"document 1", "spec.duration: 0s: must be positive"}},
		{"timeline after the end", "  - at: 1m", "  - at: 10m",
			[]string{"document 1", "spec.timeline[0].at: 10m0s: must be within spec.duration"}},
		{"timeline selects nothing", "clusterNames: [r1-01]", "clusterNames: [r2-01]",
			[]string{"document 1", "spec.timeline[0].clusters: selects no cluster"}},
		{"bad condition status", `status: "False"}]`, `status: Maybe}]`,
			[]string{"document 1", `spec.timeline[0].conditions[0].status: "Maybe"`}},
		{"bad policy operator", "operator: In", "operator: Inside",
			[]string{"document 2", "ClusterTaintPolicy not-ready", `spec.matchConditions[0].operator: Unsupported value: "Inside"`}},
		{"bad taint effect", "effect: NoExecute", "effect: Evict",
			[]string{"document 2", "Evict"}},
		{"unknown kind", "kind: ResourceBinding", "kind: Deployment",
			[]string{"document 3", `kind: "Deployment"`}},
		{"wrong apiVersion", "apiVersion: work.karmada.io/v1alpha2", "apiVersion: work.karmada.io/v1",
			[]string{"document 3", `apiVersion: "work.karmada.io/v1"`}},
		{"namespaced binding without namespace", "metadata: {name: web, namespace: shop}", "metadata: {name: web}",
			[]string{"document 3", "metadata.namespace: missing"}},
		{"bad purge mode", "  placement:\n", "  failover: {cluster: {purgeMode: Sometimes}}\n  placement:\n",
			[]string{"document 3", "spec.failover.cluster.purgeMode", "Sometimes"}},
		{"bad grace period", "metadata: {name: web, namespace: shop}", "metadata: {name: web, namespace: shop, annotations: {fleetsim.failoverkit.dev/grace-period-seconds: \"0\"}}",
			[]string{"document 3", "metadata.annotations[fleetsim.failoverkit.dev/grace-period-seconds]: \"0\""}},
		{"a field Karmada's types do not have", "  placement:\n", "  failover: {cluster: {gracePeriodSeconds: 60}}\n  placement:\n",
			[]string{"document 3", `unknown field "spec.failover.cluster.gracePeriodSeconds"`}},
		{"more shards than copies", "metadata: {name: web, namespace: shop}",
			"metadata: {name: web, namespace: shop, annotations: {fleetsim.failoverkit.dev/count: \"4\", fleetsim.failoverkit.dev/shards: \"5\"}}",
			[]string{"document 3", "ResourceBinding shop/web", `metadata.annotations[fleetsim.failoverkit.dev/shards]: "5": want a number of shards from 1 to the 4 copies`}},
		{"shards not a number", "metadata: {name: web, namespace: shop}",
			"metadata: {name: web, namespace: shop, annotations: {fleetsim.failoverkit.dev/count: \"4\", fleetsim.failoverkit.dev/shards: two}}",
			[]string{"document 3", `metadata.annotations[fleetsim.failoverkit.dev/shards]: "two"`}},
		{"shards with clusterNames", "metadata: {name: web, namespace: shop}\nspec:\n  resource: {apiVersion: apps/v1, kind: Deployment, name: web}\n  placement:\n",
			"metadata: {name: web, namespace: shop, annotations: {fleetsim.failoverkit.dev/count: \"4\", fleetsim.failoverkit.dev/shards: \"2\"}}\n" +
				"spec:\n  resource: {apiVersion: apps/v1, kind: Deployment, name: web}\n  placement:\n    clusterAffinity: {clusterNames: [r1-01]}\n",
			[]string{"document 3", "a shard is a list of clusterNames"}},
		{"shards of no labelled cluster", "metadata: {name: web, namespace: shop}",
			"metadata: {name: web, namespace: shop, annotations: {fleetsim.failoverkit.dev/count: \"4\", fleetsim.failoverkit.dev/shards: \"2\"}}",
			[]string{"ResourceBinding shop/web", "no cluster is labelled fleetsim.failoverkit.dev/shard=0: give spec.fleet[].shards"}},
		{"more fleet shards than clusters", "{provider: aws, region: r1, clusters: 3}", "{provider: aws, region: r1, clusters: 3, shards: 4}",
			[]string{"document 1", "spec.fleet[0].shards: 4: want 0 (none) to the group's 3 clusters"}},
		{"negative fleet shards", "{provider: aws, region: r1, clusters: 3}", "{provider: aws, region: r1, clusters: 3, shards: -1}",
			[]string{"document 1", "spec.fleet[0].shards: -1"}},
		{"fleet shards not a number", "{provider: aws, region: r1, clusters: 3}", "{provider: aws, region: r1, clusters: 3, shards: all}",
			[]string{"document 1", `spec.fleet[0].shards: "all": want an integer`}},
		{"bad count", "metadata: {name: web, namespace: shop}", "metadata: {name: web, namespace: shop, annotations: {fleetsim.failoverkit.dev/count: lots}}",
			[]string{"document 3", "fleetsim.failoverkit.dev/count", "lots"}},
		{"divided without replicas", "replicaSchedulingType: Duplicated", "replicaSchedulingType: Divided",
			[]string{"document 3", "spec.replicas: 0"}},
		{"bad spread field", "spreadByField: cluster", "spreadByField: rack",
			[]string{"document 3", "spec.placement", "rack"}},
		{"bad rate", "  duration: 5m\n", "  duration: 5m\n  rates: {resourceEvictionRate: -1}\n",
			[]string{"document 1", "spec.rates.resourceEvictionRate: -1"}},
		{"negative capacity", "{provider: aws, region: r1, clusters: 3}", "{provider: aws, region: r1, clusters: 3, capacity: -1}",
			[]string{"document 1", "spec.fleet[0].capacity: -1"}},
		{"bad workers", "  duration: 5m\n", "  duration: 5m\n  workers: 0\n",
			[]string{"document 1", "spec.workers: 0"}},
		{"a freeze that also changes conditions", "  - at: 1m\n", "  - at: 1m\n    freeze: true\n",
			[]string{"document 1", "spec.timeline[0].freeze: true: an event freezes or thaws, confirms a storm, or changes conditions"}},
		{"a confirmation that also changes conditions", "  - at: 1m\n", "  - at: 1m\n    confirmStorm: true\n",
			[]string{"document 1", "spec.timeline[0].confirmStorm: true: an event freezes or thaws, confirms a storm, or changes conditions"}},
		{"a freeze that is not a boolean", "  - at: 1m\n", "  - at: 2m\n    freeze: yes please\n  - at: 1m\n",
			[]string{"document 1", `spec.timeline[0].freeze: "yes please": want a boolean`}},
		{"a cut-off cluster that is Ready", `conditions: [{type: Ready, status: "False"}]`, `cutOff: true
    conditions: [{type: Ready, status: "True"}]`,
			[]string{"document 1", `spec.timeline[0].conditions[0].status: "True": a cutOff event is the control plane losing sight`}},
		{"bad budget of clusters in transit", "metadata: {name: web, namespace: shop}",
			"metadata: {name: web, namespace: shop, annotations: {failover.karmada.io/max-clusters-in-transit: \"-1\"}}",
			[]string{"document 3", "ResourceBinding shop/web", `metadata.annotations[failover.karmada.io/max-clusters-in-transit]`,
				`budget of clusters in transit "-1": want a non-negative integer`}},
		{"malformed YAML", "metadata: {name: web, namespace: shop}", "metadata: {name: web, namespace: shop",
			[]string{"document 3", "line 22"}},
		{"no scenario document", goodScenario[:strings.Index(goodScenario, "---")], "",
			[]string{"no Scenario document"}},
		{"too many clusters in all", "{provider: aws, region: r1, clusters: 3}",
			"{provider: aws, region: r1, clusters: 3}\n" + strings.Repeat("  - {provider: aws, region: r2, clusters: 10000}\n", 100),
			[]string{"document 1", "spec.fleet[1].clusters: 10000: the fleet would have 10003 clusters, more than 10000"}},
		{"too many bindings in all", "    spreadConstraints: [{spreadByField: cluster, minGroups: 1, maxGroups: 1}]\n",
			"    spreadConstraints: [{spreadByField: cluster, minGroups: 1, maxGroups: 1}]\n---\n" +
				strings.Replace(goodScenario[strings.LastIndex(goodScenario, "---\n")+4:],
					"metadata: {name: web, namespace: shop}", "metadata: {name: api, namespace: shop, annotations: {fleetsim.failoverkit.dev/count: \"100000\"}}", 1),
			[]string{"document 4", "ResourceBinding shop/api", "the scenario has more than 100000 bindings"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(goodScenario, tc.old) {
				t.Fatalf("test bug: %q not in the good scenario", tc.old)
			}
			path := writeScenario(t, strings.Replace(goodScenario, tc.old, tc.new, 1))
			_, err := readScenario(path)
			if err == nil {
				t.Fatal("want an error")
			}
			msg := err.Error()
			for _, want := range append([]string{"fleetsim: " + path}, tc.want...) {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			}
		})
	}
}

func TestShardsSpreadStampedCopies(t *testing.T) {
	body := strings.Replace(goodScenario, "{provider: aws, region: r1, clusters: 3}", "{provider: aws, region: r1, clusters: 3, shards: 3}", 1)
	body = strings.Replace(body, "metadata: {name: web, namespace: shop}",
		`metadata: {name: web, namespace: shop, annotations: {fleetsim.failoverkit.dev/count: "6", fleetsim.failoverkit.dev/shards: "3"}}`, 1)
	sc, err := readScenario(writeScenario(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Clusters[1].Labels[labelShard]; got != "1" {
		t.Errorf("r1-02 in shard %q, want 1", got)
	}
	// Copies stamped one after another share a shard: two per shard.
	for i, want := range []string{"r1-01", "r1-01", "r1-02", "r1-02", "r1-03", "r1-03"} {
		if got := sc.Bindings[i].Karmada.ClusterAffinity.ClusterNames; len(got) != 1 || got[0] != want {
			t.Errorf("%s may go to %v, want [%s]", sc.Bindings[i].Name, got, want)
		}
	}
	r, err := runReport(t, "--scenario", writeScenario(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if sum2(r.Totals.Abandoned) != 2 {
		t.Errorf("abandoned %v: want the two copies of r1-01's shard, which have nowhere to go", r.Totals.Abandoned)
	}
}

func TestInitialPlacementOverCapacityIsRejected(t *testing.T) {
	body := strings.Replace(goodScenario, "clusters: 3}", "clusters: 3, capacity: 2}", 1)
	body = strings.Replace(body, "  placement:\n", "  replicas: 3\n  placement:\n", 1)
	path := writeScenario(t, body)
	err := run(t.Context(), []string{"--scenario", path}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "puts 3 replicas on r1-01, whose capacity is 2") || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v", err)
	}
}

func TestBadBindingScheduleIsRejected(t *testing.T) {
	path := writeScenario(t, strings.Replace(goodScenario, "  placement:\n", "  clusters: [{name: nowhere}]\n  placement:\n", 1))
	err := run(t.Context(), []string{"--scenario", path}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), `no cluster "nowhere"`) || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v", err)
	}
}

// A scenario in which a check fails for a real reason: the pre-scheduling
// check finds a target, but the eviction finishes in the background and the
// target fails before the scheduler's answer lands.
const targetFailsMeanwhile = `apiVersion: fleetsim.failoverkit.dev/v1alpha1
kind: Scenario
metadata: {name: target-fails-meanwhile}
spec:
  duration: 10m
  interval: 1m
  backgroundEviction: {completesAfter: 5m}
  fleet:
  - {region: r1, clusters: 4}
  timeline:
  - {at: 1m, clusters: {clusterNames: [r1-01]}, conditions: [{type: Ready, status: "False"}]}
  - {at: 2m, clusters: {clusterNames: [r1-02, r1-03, r1-04]}, conditions: [{type: Ready, status: "False"}]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata: {name: not-ready}
spec:
  matchConditions: [{conditionType: Ready, operator: In, statusValues: ["False"]}]
  taintsToAdd: [{key: cluster.karmada.io/not-ready, effect: NoExecute, addOnMatchSeconds: 1}]
---
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: web, namespace: shop}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, name: web}
  clusters: [{name: r1-01}]
`

func TestAFailedCheckFailsTheRun(t *testing.T) {
	var out strings.Builder
	err := run(t.Context(), []string{"--scenario", writeScenario(t, targetFailsMeanwhile)}, &out)
	if !errors.Is(err, errChecksFailed) {
		t.Fatalf("got %v, want errChecksFailed (exit status 1)\n%s", err, out.String())
	}
	for _, want := range []string{"FAIL no eviction without a target", "web: evicted from r1-01 onto r1-02, which is not eligible", "verdict: FAIL"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestScenarioDisruptionDomain(t *testing.T) {
	withDomain := func(d string) string {
		return writeScenario(t, strings.Replace(goodScenario, "  duration: 5m\n", "  duration: 5m\n  rates: {disruptionDomain: "+d+"}\n", 1))
	}
	r, err := runReport(t, "--scenario", withDomain("region"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Rates.DisruptionDomain != "region" {
		t.Errorf("the scenario's rates.disruptionDomain: got %q, want region", r.Rates.DisruptionDomain)
	}
	if r, err = runReport(t, "--scenario", withDomain("region"), "--disruption-domain=zone"); err != nil || r.Rates.DisruptionDomain != "zone" {
		t.Errorf("the flag wins: got %v, %v", r.Rates.DisruptionDomain, err)
	}
	err = run(t.Context(), []string{"--scenario", withDomain("continent")}, io.Discard)
	for _, want := range []string{"DisruptionDomain (--disruption-domain)", `"continent"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("unknown domain: got %v, want an error containing %q", err, want)
		}
	}
}

// Cluster documents are Karmada's own Cluster, decoded strictly: a field
// Karmada's type does not have, or a taint the library cannot judge, names
// the document and the field.
func TestClusterDocumentsAreKarmadaClusters(t *testing.T) {
	const cluster = "---\napiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: extra, annotations: {fleetsim.failoverkit.dev/capacity: \"7\"}}\nspec: {provider: kind, region: r9, zones: [r9a, r9b], syncMode: Pull}\n"
	sc, err := loadScenario("ok.yaml", strings.NewReader(goodScenario+cluster))
	if err != nil {
		t.Fatal(err)
	}
	c := sc.Clusters[len(sc.Clusters)-1]
	if c.Name != "extra" || c.Region != "r9" || c.Zone != "r9a" || sc.Capacity["extra"] != 7 || c.Condition("Ready") == nil {
		t.Errorf("cluster %+v, capacity %d", c, sc.Capacity["extra"])
	}
	for _, tc := range []struct{ old, new, want string }{
		{"region: r9", "regions: [r9]", `unknown field "spec.regions"`},
		{"syncMode: Pull}", "syncMode: Pull, taints: [{key: k, effect: Evict}]}", "Evict"},
	} {
		_, err := loadScenario("bad.yaml", strings.NewReader(goodScenario+strings.Replace(cluster, tc.old, tc.new, 1)))
		if err == nil || !strings.Contains(err.Error(), "Cluster extra") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming Cluster extra and %q", tc.new, err, tc.want)
		}
	}
}

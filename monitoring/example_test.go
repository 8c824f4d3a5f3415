package monitoring_test

import (
	"fmt"

	"github.com/failoverkit/failover/monitoring"
)

// Generate renders every file this directory commits, for both namings.
func ExampleGenerate() {
	files, err := monitoring.Generate()
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		fmt.Println(f.Path)
	}
	// Output:
	// prometheus/failover-rules.yaml
	// prometheus/failover-rules.test.yaml
	// grafana/failover.json
	// prometheus/failover-rules-karmada.yaml
	// prometheus/failover-rules-karmada.test.yaml
	// grafana/failover-karmada.json
	// metrics.txt
}

// The two namings differ in four series; the dashboard of each reads its own.
func ExampleNames() {
	for _, n := range monitoring.Namings {
		fmt.Printf("%s: %s{%s}, %s{%s}\n", n.Set, n.QueueDepth, n.Queue, n.KindDepth, n.Cluster)
	}
	// Output:
	// library: eviction_total{queue_name}, evict_kind_total{cluster_name}
	// karmada: eviction_queue_depth{name}, eviction_kind_total{member_cluster}
}

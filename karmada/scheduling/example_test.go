package scheduling_test

import (
	"fmt"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"

	"github.com/failoverkit/failover/karmada/scheduling"
)

// Where Karmada's scheduler puts a Duplicated ConfigMap once its copy on
// eu2 is in a graceful eviction task: on every other cluster.
func ExampleSchedule() {
	spec := configMap(&policyv1alpha1.Placement{})
	spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "eu2"}}
	targets, _, err := scheduling.Schedule(configMapClusters("eu1", "eu2", "us1"), spec, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(names(targets))
	// Output: eu1,us1
}

// A Scheduler holds the fleet and is told of its changes one cluster at a
// time: here us1 is lost and ap1 joins, and a Duplicated ConfigMap lands on
// every cluster the fleet has at each call.
func ExampleScheduler() {
	s := scheduling.NewScheduler(configMapClusters("eu1", "eu2", "us1"))
	spec := configMap(&policyv1alpha1.Placement{})
	for _, change := range []func(){
		func() {},
		func() { s.Delete("us1") },
		func() { s.Set(configMapClusters("ap1")[0]) },
	} {
		change()
		targets, _, err := s.Schedule(spec, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(names(targets))
	}
	// Output:
	// eu1,eu2,us1
	// eu1,eu2
	// ap1,eu1,eu2
}

package gracefulevict_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/gracefulevict"
)

// A cluster fails: the workload's copy there becomes a task, the scheduler
// places a replacement, and the old copy is removed once the replacement is
// healthy.
func Example() {
	now := time.Date(2025, 1, 10, 12, 0, 0, 0, time.UTC)
	b := gracefulevict.Binding{
		Generation: 1, ObservedGeneration: 1,
		Clusters: []failover.TargetCluster{{Name: "member1", Replicas: 1}, {Name: "member2", Replicas: 2}},
		Health:   map[string]gracefulevict.ResourceHealth{"member1": gracefulevict.Unknown, "member2": gracefulevict.Healthy},
	}
	b = gracefulevict.Evict(b, "member1", gracefulevict.Task{Reason: "TaintUntolerated", Producer: "TaintManager"})
	fmt.Println("result:", b.Clusters, "task from:", b.Tasks[0].FromCluster, "replicas:", *b.Tasks[0].Replicas)

	a, err := gracefulevict.NewAssessor(gracefulevict.WithDefaultTimeout(10 * time.Minute))
	if err != nil {
		panic(err)
	}
	got := a.Assess(b, now)
	b.Tasks = got.Keep
	fmt.Println("stamped:", got.Stamped, "requeue after:", got.RequeueAfter)

	// The scheduler moves the replica to member2, which is healthy.
	b.Clusters = []failover.TargetCluster{{Name: "member2", Replicas: 3}}
	b.ObservedGeneration = b.Generation
	got = a.Assess(b, now.Add(time.Minute))
	fmt.Println("kept:", len(got.Keep), "done:", got.Done[0].FromCluster)
	// Output:
	// result: [{member2 2}] task from: member1 replicas: 1
	// stamped: 1 requeue after: 10m0s
	// kept: 0 done: member1
}

// A cluster recovers before the workload could be placed elsewhere: the
// scheduler puts it back on member1, and the task ends without removing it.
func ExampleAssessor_Assess_recovery() {
	created := time.Date(2025, 1, 10, 12, 0, 0, 0, time.UTC)
	b := gracefulevict.Binding{
		Generation: 3, ObservedGeneration: 3,
		Clusters: []failover.TargetCluster{{Name: "member1", Replicas: 3}},
		Tasks:    []gracefulevict.Task{{FromCluster: "member1", Reason: "TaintUntolerated", Producer: "TaintManager"}},
	}
	a, err := gracefulevict.NewAssessor()
	if err != nil {
		panic(err)
	}
	got := a.Assess(b, created)
	fmt.Println("done:", got.Done[0].FromCluster, "kept:", len(got.Keep))
	// Output:
	// done: member1 kept: 0
}

// The purge modes of the configurable failover proposal.
func ExampleAssessor_Assess_purgeModes() {
	created := time.Date(2025, 1, 10, 12, 0, 0, 0, time.UTC)
	grace := int32(100)
	var tasks []gracefulevict.Task
	for _, m := range []failover.PurgeMode{failover.PurgeModeImmediately, failover.PurgeModeGraciously, failover.PurgeModeNever} {
		tasks = append(tasks, gracefulevict.Task{FromCluster: "from-" + string(m), PurgeMode: m, GracePeriodSeconds: &grace,
			CreationTimestamp: &metav1.Time{Time: created}})
	}
	b := gracefulevict.Binding{Clusters: []failover.TargetCluster{{Name: "member2"}}, Tasks: tasks} // not healthy
	a, err := gracefulevict.NewAssessor()
	if err != nil {
		panic(err)
	}
	for _, at := range []time.Duration{time.Second, 100 * time.Second} {
		got := a.Assess(b, created.Add(at))
		fmt.Printf("after %v: done %v, requeue after %v\n", at, names(got.Done), got.RequeueAfter)
	}
	// Output:
	// after 1s: done [from-Immediately], requeue after 1m39s
	// after 1m40s: done [from-Immediately from-Graciously], requeue after 0s
}

func names(ts []gracefulevict.Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.FromCluster)
	}
	return out
}

// A workload with a budget of one cluster in transit loses two clusters:
// the second eviction waits until the first task ends.
func ExampleTransitBudget() {
	budget, err := gracefulevict.ParseTransitBudget("1") // e.g. from the binding's annotation
	if err != nil {
		panic(err)
	}
	b := gracefulevict.Binding{
		Clusters: []failover.TargetCluster{{Name: "member1"}, {Name: "member2"}, {Name: "member3"}},
	}
	fmt.Println("evict member1:", budget.Allows(gracefulevict.InTransit(b.Tasks)))
	b = gracefulevict.Evict(b, "member1", gracefulevict.Task{Reason: "TaintUntolerated", Producer: "TaintManager"})
	open := gracefulevict.InTransit(b.Tasks)
	fmt.Println("in transit:", open, "evict member2:", budget.Allows(open))
	b.Tasks = nil // the Assessor found the task done: member1's replacement is healthy
	fmt.Println("evict member2:", budget.Allows(gracefulevict.InTransit(b.Tasks)))
	// Output:
	// evict member1: true
	// in transit: [member1] evict member2: false
	// evict member2: true
}

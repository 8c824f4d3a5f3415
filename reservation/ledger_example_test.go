package reservation_test

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/prescheduling"
	"github.com/failoverkit/failover/reservation"
)

// report is what a controller that is not Karmada's knows of a cluster's
// room, as its clusters last reported it: the pods running, and how many
// may run.
type report struct{ pods, maxPods int64 }

// reports are the fleet's last reports, read by the check and, as
// reservation.Rooms, by the Ledger. A replica here requests nothing but
// a pod.
type reports map[string]report

func (rs reports) Pods(cluster string) (int64, bool) {
	r, ok := rs[cluster]
	return r.pods, ok
}

func (rs reports) Fit(cluster string, held int64, _ corev1.ResourceList) int32 {
	r := rs[cluster]
	return int32(max(r.maxPods-r.pods-held, 0))
}

// A controller with its own record of the clusters' room runs the check
// and holds room for the evictions it approves. One-replica workloads leave
// a failed cluster while the reports lag: every check sees room for two on
// big, the most, and picks it. The Ledger lets two go there and holds the
// third back, to be retried (not abandoned); an eviction that fails gives
// its room back. Once the reports catch up, big shows its two replicas
// placed and full, and the check, and the scheduler, pick small.
func ExampleLedger() {
	fleet := []failover.Cluster{
		{Name: "lost", Taints: []corev1.Taint{{Key: "example.com/unreachable", Effect: corev1.TaintEffectNoExecute}}},
		{Name: "big"},
		{Name: "small"},
	}
	rooms := reports{"lost": {}, "big": {pods: 8, maxPods: 10}, "small": {pods: 9, maxPods: 10}}
	ledger, err := reservation.NewLedger(reservation.WithHold(10 * time.Minute))
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)

	// What an eviction queue's handler does for each workload.
	handle := func(name string, evict func() error) error {
		checker, err := prescheduling.NewChecker(prescheduling.WithCapacity(func(cluster string) (int32, bool) {
			r, ok := rooms[cluster]
			return int32(r.maxPods - r.pods), ok
		}))
		if err != nil {
			return err
		}
		res := checker.Check(prescheduling.Request{
			Placement: prescheduling.Placement{ReplicaScheduling: &prescheduling.ReplicaSchedulingStrategy{
				ReplicaSchedulingType:     prescheduling.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: prescheduling.ReplicaDivisionPreferenceAggregated,
			}},
			Scheduled: []failover.TargetCluster{{Name: "lost", Replicas: 1}},
			Evicting:  []string{"lost"},
		}, fleet)
		res = ledger.Admit(now, "default/"+name, res, rooms, nil)
		switch {
		case res.Feasible:
			if err := evict(); err != nil {
				ledger.Release("default/" + name)
				return err
			}
			fmt.Printf("%s: evicted, to %v\n", name, res.Moves)
			return nil
		case res.Code == prescheduling.AwaitingCapacity:
			// Retried, not abandoned: in a real handler,
			// evictionqueue.RetryAfter(min(res.RetryAfter, how often
			// the clusters report), err).
			return fmt.Errorf("%s: %s (retry within %v)", name, res.Reason, res.RetryAfter)
		default:
			// Nowhere to go at all: evictionqueue.Abandon.
			return errors.New(res.Reason)
		}
	}
	ok := func() error { return nil }
	conflict := func() error { return errors.New("web-2: the workload changed meanwhile") }
	for _, w := range []struct {
		name  string
		evict func() error
	}{{"web-1", ok}, {"web-2", conflict}, {"web-3", ok}, {"web-4", ok}} {
		if err := handle(w.name, w.evict); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("held:", ledger.Held(now))

	// The reports catch up: big runs web-1 and web-3.
	now = now.Add(30 * time.Second)
	rooms["big"] = report{pods: 10, maxPods: 10}
	if err := handle("web-4", ok); err != nil {
		fmt.Println(err)
	}
	// An Admit settles the clusters it reads; Settle, every one.
	fmt.Println("held:", ledger.Held(now))
	ledger.Settle(now, rooms)
	fmt.Println("held, settled:", ledger.Held(now))
	// Output:
	// web-1: evicted, to [{big 1}]
	// web-2: the workload changed meanwhile
	// web-3: evicted, to [{big 1}]
	// web-4: waiting for room: big has room for 0 of 1 after the 2 replicas of evictions in flight (retry within 10m0s)
	// held: map[big:2]
	// web-4: evicted, to [{small 1}]
	// held: map[big:2 small:1]
	// held, settled: map[small:1]
}

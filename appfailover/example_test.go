package appfailover_test

import (
	"fmt"
	"time"

	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/gracefulevict"
)

// A copy flaps between Unhealthy and Unknown (its member's agent
// restarting). Unknown holds the timer, so the copy fails over once its
// Unhealthy time reaches the five-minute window; Karmada v1.18 would reset
// the timer at each Unknown and never fail it over (karmada#7431).
func ExamplePolicy_Decide() {
	p, err := appfailover.New(appfailover.Behavior{
		DecisionConditions: appfailover.DecisionConditions{TolerationSeconds: ptr.To[int32](300)},
	}, appfailover.Options{})
	if err != nil {
		panic(err)
	}
	noon := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var timer *appfailover.Timer
	for _, step := range []struct {
		at     time.Duration
		health gracefulevict.ResourceHealth
	}{
		{0, gracefulevict.Unhealthy},
		{3 * time.Minute, gracefulevict.Unknown},
		{5 * time.Minute, gracefulevict.Unhealthy},
		{7 * time.Minute, gracefulevict.Unhealthy},
	} {
		d := p.Decide("member1", timer, appfailover.Observation{Health: step.health}, noon.Add(step.at))
		fmt.Printf("%v %v %v\n  %s\n", step.at, d.FailOver, d.After, d.Reason)
		timer = d.Timer
	}
	// Output:
	// 0s false 5m0s
	//   the copy on member1 is Unhealthy since 2026-11-29T12:00:00Z; 0s of the 5m0s window counted: it fails over at 2026-11-29T12:05:00Z (in 5m0s) unless it turns Healthy
	// 3m0s false 0s
	//   the copy on member1 is Unknown since 2026-11-29T12:03:00Z: the timer holds at 3m0s of the 5m0s window, as Unknown neither starts nor resets it; it counts again when the copy is Unhealthy
	// 5m0s false 2m0s
	//   the copy on member1 is Unhealthy since 2026-11-29T12:05:00Z; 3m0s of the 5m0s window counted: it fails over at 2026-11-29T12:07:00Z (in 2m0s) unless it turns Healthy
	// 7m0s true 0s
	//   the copy on member1 is Unhealthy since 2026-11-29T12:05:00Z; 5m0s counted reaches the 5m0s window: fail over from member1
}

// A controller stores the record whenever a Result says Changed (for
// Karmada, in an annotation on the binding). Restarted mid-window, it reads
// the record back and fails over when its predecessor would have: at
// 12:05, not a whole window after the restart (karmada#7171).
func ExamplePolicy_DecideAll() {
	var p appfailover.Policy // Karmada's defaults: a 300-second window
	noon := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	seen := map[string]appfailover.Observation{
		"member1": {Health: gracefulevict.Unhealthy},
		"member2": {Health: gracefulevict.Healthy},
	}
	res := p.DecideAll(nil, seen, noon)
	annotation := res.Record.String()
	fmt.Println(res.Changed, annotation)

	// The controller restarts at 12:02.
	record, err := appfailover.ParseRecord(annotation)
	if err != nil {
		panic(err)
	}
	res = p.DecideAll(record, seen, noon.Add(2*time.Minute))
	fmt.Println(res.Changed, res.FailOver, res.After)
	res = p.DecideAll(record, seen, noon.Add(5*time.Minute))
	fmt.Println(res.Changed, res.FailOver, res.After)
	// Output:
	// true [{"cluster":"member1","health":"Unhealthy","since":"2026-11-29T12:00:00Z"}]
	// false [] 3m0s
	// false [member1] 0s
}

// A copy that is still starting (pulling images, warming caches) is not
// judged until it has been Healthy once or its start-up grace has passed
// (karmada#6233).
func ExampleOptions() {
	p, err := appfailover.New(appfailover.Behavior{
		DecisionConditions: appfailover.DecisionConditions{TolerationSeconds: ptr.To[int32](60)},
	}, appfailover.Options{StartupGraceSeconds: 600})
	if err != nil {
		panic(err)
	}
	noon := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	d := p.Decide("member1", nil, appfailover.Observation{Health: gracefulevict.Unhealthy, Generation: 2}, noon)
	fmt.Println(d.FailOver, d.After)
	fmt.Println(d.Reason)
	// Output:
	// false 11m0s
	// the copy on member1 is Unhealthy since 2026-11-29T12:00:00Z; it is starting (at generation 2 first seen at 2026-11-29T12:00:00Z; startupGraceSeconds 600) until it is Healthy or until 2026-11-29T12:10:00Z; 0s of the 1m0s window counted: it fails over at 2026-11-29T12:11:00Z (in 11m0s) unless it turns Healthy
}

// Bad input is an error naming each field and value, never a panic.
func ExampleNew() {
	_, err := appfailover.New(appfailover.Behavior{
		DecisionConditions: appfailover.DecisionConditions{TolerationSeconds: ptr.To[int32](-30)},
		PurgeMode:          "Later",
	}, appfailover.Options{Unknown: "Ignore"})
	fmt.Println(err)
	// Output:
	// appfailover: decisionConditions.tolerationSeconds: -30: must not be negative
	// appfailover: purgeMode: unknown value "Later": want Directly, Gracefully or Never (legacy Immediately, Graciously)
	// appfailover: unknown: unknown value "Ignore": want Hold, Count or Reset
}

// A bad rollout: the application turns Unhealthy on all three of its
// clusters at once, and two are past their window. Failing them over
// would carry the fault to the next clusters, so BadRollout holds every
// failover of the workload; one cluster alone would fail over.
func ExampleBadRollout() {
	p, err := appfailover.New(appfailover.Behavior{
		DecisionConditions: appfailover.DecisionConditions{TolerationSeconds: ptr.To[int32](120)},
	}, appfailover.Options{})
	if err != nil {
		panic(err)
	}
	noon := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	seen := map[string]appfailover.Observation{
		"member1": {Health: gracefulevict.Unhealthy},
		"member2": {Health: gracefulevict.Unhealthy},
		"member3": {Health: gracefulevict.Healthy},
	}
	res := p.DecideAll(nil, seen, noon)
	seen["member3"] = appfailover.Observation{Health: gracefulevict.Unhealthy}
	res = p.DecideAll(res.Record, seen, noon.Add(2*time.Minute))
	fmt.Println(res.FailOver)
	fmt.Println(appfailover.BadRollout(seen, res, nil, 0.5))

	// Unhealthy on one cluster of three, with none in transit: a bad
	// cluster, and it fails over.
	seen["member2"] = appfailover.Observation{Health: gracefulevict.Healthy}
	seen["member3"] = appfailover.Observation{Health: gracefulevict.Healthy}
	res = p.DecideAll(res.Record, seen, noon.Add(3*time.Minute))
	fmt.Println(res.FailOver)
	fmt.Println(appfailover.BadRollout(seen, res, nil, 0.5))
	// Output:
	// [member1 member2]
	// true the application is unhealthy on 3 of its 3 clusters (member1, member2, member3), more than the bad-rollout threshold 0.5: a bad rollout, not a bad cluster
	// [member1]
	// false
}

package failback_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/failback"
)

// A workload failed over from m1 at noon; m1 turned Ready again at 12:05.
// With a ten-minute window it is a candidate to go back at 12:15, and not
// before: a controller asks again when After says.
func ExampleDecide() {
	noon := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var record failback.Record
	record = record.Add(failback.Origin{Cluster: "m1", At: metav1.NewTime(noon)})

	m1 := &failover.Cluster{Name: "m1", Conditions: []metav1.Condition{{
		Type: failback.ReadyCondition, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(noon.Add(5 * time.Minute))}}}
	origin, _ := record.Find("m1")
	for _, at := range []time.Duration{8 * time.Minute, 15 * time.Minute} {
		d := failback.Decide(origin, m1, 10*time.Minute, noon.Add(at))
		fmt.Println(d.Return, d.After, d.Reason)
	}
	fmt.Println(record)
	// Output:
	// false 7m0s cluster m1 has been healthy since 2026-11-29T12:05:00Z, when its condition Ready turned True: 7m0s of the 10m0s window left
	// true 0s cluster m1 has been healthy since 2026-11-29T12:05:00Z, when its condition Ready turned True: 10m0s, past the 10m0s window
	// [{"cluster":"m1","at":"2026-11-29T12:00:00Z"}]
}

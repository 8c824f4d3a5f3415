package main

import (
	"fmt"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover/ratelimit"
)

// The workqueue's rate limiter gives a failing item the larger of its
// exponential backoff and the fleet's next slot, and the re-check delay while
// the fleet is paused.
func ExampleNewQueueRateLimiter() {
	fleet := ratelimit.NewTracker()
	for _, c := range []string{"member-1", "member-2", "member-3", "member-4"} {
		fleet.Set(c, false)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	limiter, err := ratelimit.NewLimiter(ratelimit.DefaultConfig(), fleet, ratelimit.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	rl := NewQueueRateLimiter(limiter, 100*time.Millisecond, time.Minute)

	// A healthy fleet at 0.5/s: the backoff (100ms, 200ms, …) loses to the
	// slots (0, 2s, 4s, …) after the first retry.
	for range 4 {
		fmt.Println(rl.When("apps/web"))
	}
	// 3 of 4 clusters faulty: a small fleet above 55% pauses.
	fleet.Set("member-1", true)
	fleet.Set("member-2", true)
	fleet.Set("member-3", true)
	fmt.Println(rl.When("apps/db"))
	// Output:
	// 100ms
	// 2s
	// 4s
	// 6s
	// 30s
}

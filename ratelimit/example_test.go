package ratelimit_test

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover/ratelimit"
)

func ExampleConfig_RateFor() {
	cfg := ratelimit.DefaultConfig()
	for _, h := range []ratelimit.Health{
		{Total: 20, Unhealthy: 2},  // 10% faulty
		{Total: 20, Unhealthy: 11}, // exactly 55%: not above the threshold
		{Total: 20, Unhealthy: 12}, // 60% of a large fleet
		{Total: 10, Unhealthy: 6},  // 60% of a small fleet (10 is not above 10)
	} {
		fmt.Printf("%d/%d faulty: %.1f evictions/s\n", h.Unhealthy, h.Total, cfg.RateFor(h))
	}
	// Output:
	// 2/20 faulty: 0.5 evictions/s
	// 11/20 faulty: 0.5 evictions/s
	// 12/20 faulty: 0.1 evictions/s
	// 6/10 faulty: 0.0 evictions/s
}

func ExampleTracker() {
	tr := ratelimit.NewTracker()
	tr.Set("member1", false)
	tr.Set("member2", true)
	changed := tr.Changed()

	tr.Set("member2", true) // no change: nobody is woken
	select {
	case <-changed:
		fmt.Println("woken")
	default:
		fmt.Println("not woken")
	}

	tr.Set("member2", false) // recovered
	<-changed
	h, _ := tr.Health()
	fmt.Printf("%d clusters, %d faulty\n", h.Total, h.Unhealthy)
	// Output:
	// not woken
	// 2 clusters, 0 faulty
}

func ExampleLimiter() {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	start := clk.Now()
	tr := ratelimit.NewTracker()
	for _, name := range []string{"m1", "m2", "m3", "m4"} {
		tr.Set(name, false)
	}
	l, err := ratelimit.NewLimiter(ratelimit.DefaultConfig(), tr, ratelimit.WithClock(clk))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	_ = l.Wait(ctx) // the first permit is immediate
	fmt.Printf("rate %.1f/s, permit at +%v\n", l.Rate(), clk.Since(start))

	done := make(chan struct{})
	go func() {
		_ = l.Wait(ctx)
		fmt.Printf("permit at +%v\n", clk.Since(start))
		close(done)
	}()
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
	clk.Step(2 * time.Second)
	<-done

	tr.Set("m1", true)
	tr.Set("m2", true)
	tr.Set("m3", true) // 75% of a small fleet: paused
	fmt.Printf("rate %.1f/s\n", l.Rate())
	// Output:
	// rate 0.5/s, permit at +0s
	// permit at +2s
	// rate 0.0/s
}

func ExampleDynamicRateLimiter() {
	tr := ratelimit.NewTracker()
	tr.Set("member1", false)
	l, err := ratelimit.NewLimiter(ratelimit.DefaultConfig(), tr)
	if err != nil {
		panic(err)
	}
	// Exponential backoff per failing item, and never faster than the
	// fleet-wide rate. Pass it to workqueue.NewTypedRateLimitingQueue.
	limiter := workqueue.NewTypedMaxOfRateLimiter[string](
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 1000*time.Second),
		ratelimit.NewDynamicRateLimiter[string](l),
	)
	// Three bindings added together are released 2s apart (0.5/s); each
	// delay is rounded for printing, since this example runs on the real clock.
	for _, key := range []string{"ns/a", "ns/b", "ns/c"} {
		fmt.Println(key, limiter.When(key).Round(time.Second))
	}
	// Output:
	// ns/a 0s
	// ns/b 2s
	// ns/c 4s
}

// A simulation steps a Limiter with TakeAt, jumping from one event to the
// next instead of sleeping or running goroutines.
func ExampleLimiter_TakeAt() {
	tr := ratelimit.NewTracker()
	for _, name := range []string{"m1", "m2", "m3", "m4"} {
		tr.Set(name, false)
	}
	l, err := ratelimit.NewLimiter(ratelimit.DefaultConfig(), tr) // 0.5/s
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	for evictions := 0; evictions < 3; {
		ok, next := l.TakeAt(now)
		if !ok {
			now = next
			continue
		}
		evictions++
		fmt.Printf("evict at +%v\n", now.Sub(start))
	}
	// Output:
	// evict at +0s
	// evict at +2s
	// evict at +4s
}

func ExampleConfig_DomainRates() {
	cfg := ratelimit.DefaultConfig()
	cfg.DisruptionDomain = ratelimit.DomainRegion
	show := func(domains map[string]ratelimit.Health) {
		rates, total := cfg.DomainRates(domains)
		for _, d := range []string{"southeastasia", "europe-west1", "us-east1"} {
			if dr, ok := rates[d]; ok {
				fmt.Printf("%s: %v at %.1f/s; ", d, dr.State, dr.Rate)
			}
		}
		fmt.Printf("total at most %.1f/s\n", total)
	}
	// A region down: its workloads leave at the primary rate; under the
	// fleet rule 18 of 30 faulty (60%) would slow everything to 0.1/s.
	show(map[string]ratelimit.Health{"southeastasia": {Total: 18, Unhealthy: 18}, "europe-west1": {Total: 12}})
	// A large region mostly down: the secondary rate; a small one: paused.
	show(map[string]ratelimit.Health{"southeastasia": {Total: 18, Unhealthy: 12}, "us-east1": {Total: 4, Unhealthy: 3}})
	// Every region down: more likely the control plane is cut off. Pause.
	show(map[string]ratelimit.Health{"southeastasia": {Total: 18, Unhealthy: 18}, "europe-west1": {Total: 12, Unhealthy: 12}})
	// Output:
	// southeastasia: FullDisruption at 0.5/s; europe-west1: Normal at 0.5/s; total at most 0.5/s
	// southeastasia: PartialDisruption at 0.1/s; us-east1: PartialDisruption at 0.0/s; total at most 0.5/s
	// southeastasia: FullDisruption at 0.0/s; europe-west1: FullDisruption at 0.0/s; total at most 0.0/s
}

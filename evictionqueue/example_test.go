package evictionqueue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/ratelimit"
)

// A queue evicts the highest-priority items first, and among equals the
// oldest first. Run blocks until its context ends.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	handled := 0
	q, err := evictionqueue.New(evictionqueue.Config{Name: "resource-binding"},
		func(ctx context.Context, it evictionqueue.Item) error {
			fmt.Printf("evict %s from %s\n", it.Key, it.Cluster)
			if handled++; handled == 3 {
				cancel()
			}
			return nil
		})
	if err != nil {
		panic(err)
	}
	q.Add(evictionqueue.Item{Cluster: "member1", Key: "default/web", ResourceKind: "apps/v1/Deployment"})
	q.Add(evictionqueue.Item{Cluster: "member1", Key: "default/db", ResourceKind: "apps/v1/StatefulSet", Priority: 10})
	q.Add(evictionqueue.Item{Cluster: "member2", Key: "default/web", ResourceKind: "apps/v1/Deployment"})
	fmt.Println("added again:", q.Add(evictionqueue.Item{Cluster: "member1", Key: "default/web"}))

	if err := q.Run(ctx); err != nil {
		panic(err)
	}
	fmt.Println("left:", q.Len())
	// Output:
	// added again: false
	// evict default/db from member1
	// evict default/web from member1
	// evict default/web from member2
	// left: 0
}

// When a faulty cluster recovers, its waiting items leave the queue before
// any worker takes a permit for them.
func ExampleQueue_CancelCluster() {
	q, err := evictionqueue.New(evictionqueue.Config{Name: "resource-binding"},
		func(context.Context, evictionqueue.Item) error { return nil })
	if err != nil {
		panic(err)
	}
	q.Add(evictionqueue.Item{Cluster: "member1", Key: "default/a"})
	q.Add(evictionqueue.Item{Cluster: "member2", Key: "default/b"})
	q.Add(evictionqueue.Item{Cluster: "member1", Key: "default/c"})

	fmt.Println("cancelled:", q.CancelCluster("member1"))
	fmt.Println("pending:", q.Pending())
	// Output:
	// cancelled: 2
	// pending: [{member2 default/b  0}]
}

// PendingDomains lists the disruption domains with pending items by their
// head items, as the workers ask the pacer for permits: a higher priority
// first, then first in.
func ExampleStore_PendingDomains() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	region := map[string]string{"use1-a": "us-east-1", "euw1-a": "europe-west1", "sea-a": "southeastasia"}
	st, err := evictionqueue.NewStore(evictionqueue.Config{Name: "resource-binding", DomainOf: func(c string) string { return region[c] }})
	if err != nil {
		panic(err)
	}
	st.Add(evictionqueue.Item{Cluster: "use1-a", Key: "shop/web"}, now)
	st.Add(evictionqueue.Item{Cluster: "euw1-a", Key: "shop/web"}, now)
	st.Add(evictionqueue.Item{Cluster: "sea-a", Key: "kube-system/dns", Priority: 100}, now)
	fmt.Println(st.PendingDomains())
	st.CancelCluster("use1-a")
	fmt.Println(st.PendingDomains())
	// Output:
	// [southeastasia us-east-1 europe-west1]
	// [southeastasia europe-west1]
}

// A handler abandons an item that no cluster can take (the pre-scheduling
// check failed), reports an eviction that finishes in the background with
// ErrInProgress, and Complete confirms it later. OnOutcome sees each step.
func ExampleConfig_onOutcome() {
	ctx, cancel := context.WithCancel(context.Background())
	var q *evictionqueue.Queue
	q, err := evictionqueue.New(evictionqueue.Config{
		Name: "resource-binding",
		OnOutcome: func(o evictionqueue.Outcome) {
			fmt.Println(o.Item.Key, o.Kind, o.Err)
			switch o.Kind {
			case evictionqueue.InProgress:
				q.Complete(o.Item) // in a controller: when the binding shows the eviction done
			case evictionqueue.Completed:
				cancel()
			}
		},
	}, func(ctx context.Context, it evictionqueue.Item) error {
		if it.Key == "default/pinned" {
			return evictionqueue.Abandon(errors.New("no feasible cluster"))
		}
		return evictionqueue.ErrInProgress
	})
	if err != nil {
		panic(err)
	}
	q.Add(evictionqueue.Item{Cluster: "member1", Key: "default/pinned"})
	q.Add(evictionqueue.Item{Cluster: "member1", Key: "default/web"})
	if err := q.Run(ctx); err != nil {
		panic(err)
	}
	// Output:
	// default/pinned Abandoned evictionqueue: abandoned: no feasible cluster
	// default/web InProgress <nil>
	// default/web Completed <nil>
}

// The ResourceBinding and ClusterResourceBinding queues share one
// ratelimit.Limiter, so together they evict at the fleet's rate whatever
// their number of workers.
func ExampleConfig_sharedLimiter() {
	health := ratelimit.NewTracker()
	health.Set("member1", true) // faulty: its bindings are being evicted
	health.Set("member2", false)
	health.Set("member3", false)
	cfg := ratelimit.DefaultConfig()
	cfg.ResourceEvictionRate = 200 // per second, to keep the example short
	limiter, err := ratelimit.NewLimiter(cfg, health)
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	handled := 0
	evict := func(ctx context.Context, it evictionqueue.Item) error {
		mu.Lock()
		defer mu.Unlock()
		if handled++; handled == 6 {
			cancel()
		}
		return nil
	}
	var wg sync.WaitGroup
	for _, name := range []string{"resource-binding", "cluster-resource-binding"} {
		q, err := evictionqueue.New(evictionqueue.Config{Name: name, Workers: 4, Pacer: limiter}, evict)
		if err != nil {
			panic(err)
		}
		for i := range 3 {
			q.Add(evictionqueue.Item{Cluster: "member1", Key: fmt.Sprintf("default/app-%d", i)})
		}
		wg.Go(func() {
			if err := q.Run(ctx); err != nil {
				panic(err)
			}
		})
	}
	wg.Wait()
	fmt.Println("evicted:", handled, "at", limiter.Rate(), "per second")
	// Output:
	// evicted: 6 at 200 per second
}

// A simulation steps a Store instead of running a Queue: it takes items,
// calls its handler itself and moves time to the next deadline, so nothing
// depends on goroutines being scheduled.
func ExampleStore() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st, err := evictionqueue.NewStore(evictionqueue.Config{
		Name:        "resource-binding",
		BackoffBase: time.Minute,
		OnOutcome: func(o evictionqueue.Outcome) {
			fmt.Println(o.Item.Key, o.Kind, o.Attempts)
		},
	})
	if err != nil {
		panic(err)
	}
	st.Add(evictionqueue.Item{Cluster: "member1", Key: "default/web"}, start)
	st.Add(evictionqueue.Item{Cluster: "member1", Key: "default/db", Priority: 10}, start)

	now := start
	for {
		it, ok := st.Take(now)
		if !ok {
			next, later := st.NextDue()
			if !later {
				break
			}
			fmt.Println("nothing to take until", next.Sub(start))
			now = next
			st.Advance(now)
			continue
		}
		var result error
		if it.Key == "default/db" && now.Equal(start) {
			result = errors.New("the apiserver is unavailable")
		}
		st.Done(it, result, now)
	}
	// Output:
	// default/db Retrying 1
	// default/web Succeeded 1
	// nothing to take until 1m0s
	// default/db Succeeded 2
}

// An eviction with nowhere to go parks at a gate, without a permit or a
// failure, until the caller learns that the fleet changed and opens the
// gate; it is then decided again in its first place, ahead of the items
// added after it.
func ExamplePark() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fleetChanged := evictionqueue.Gate{Reason: "refused"}
	st, err := evictionqueue.NewStore(evictionqueue.Config{Name: "resource-binding"})
	if err != nil {
		panic(err)
	}
	room := false
	handle := func(it evictionqueue.Item) error {
		if it.Key == "default/web" && !room {
			return evictionqueue.Park(fleetChanged, time.Minute, errors.New("no cluster has room"))
		}
		fmt.Println("evict", it.Key)
		return nil
	}
	st.Add(evictionqueue.Item{Cluster: "member1", Key: "default/web"}, now)
	it, _ := st.Take(now)
	st.Done(it, handle(it), now)
	fmt.Println("parked:", st.Parked(fleetChanged))

	st.Add(evictionqueue.Item{Cluster: "member1", Key: "default/db"}, now)
	room = true // a cluster reported room
	fmt.Println("opened:", st.Open(fleetChanged))
	for {
		it, ok := st.Take(now)
		if !ok {
			break
		}
		st.Done(it, handle(it), now)
	}
	// Output:
	// parked: 1
	// opened: 1
	// evict default/web
	// evict default/db
}

// An eviction in flight carries the room held for it; whoever sees its
// task end finds it by the binding's key and ends it once, giving the room
// back.
func ExampleInProgressWith() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st, err := evictionqueue.NewStore(evictionqueue.Config{Name: "resource-binding"})
	if err != nil {
		panic(err)
	}
	type held struct{ replicas int }
	st.Add(evictionqueue.Item{Cluster: "member1", Key: "default/web"}, now)
	it, _ := st.Take(now)
	st.Done(it, evictionqueue.InProgressWith(held{replicas: 3}), now) // its task written
	fmt.Println("in flight:", st.InFlight())

	// The binding's task is gone: end its evictions in flight.
	for _, f := range st.Flights("default/web") {
		if st.EndFlight(f) {
			fmt.Printf("ended %s from %s, room for %d replicas back\n", f.Item.Key, f.Item.Cluster, f.Value.(held).replicas)
		}
		fmt.Println("ended again:", st.EndFlight(f))
	}
	fmt.Println("in flight:", st.InFlight())
	// Output:
	// in flight: 1
	// ended default/web from member1, room for 3 replicas back
	// ended again: false
	// in flight: 0
}

// Workers run the workers of two Stores sharing a Limiter on the caller's
// goroutine, at the time it gives: a simulation's clock. One permit a
// second, handed out in the order the workers began to wait.
func ExampleWorkers() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := ratelimit.DefaultConfig()
	cfg.ResourceEvictionRate = 1
	tracker := ratelimit.NewTracker()
	for _, c := range []string{"member1", "member2", "member3"} {
		tracker.Set(c, false)
	}
	limiter, err := ratelimit.NewLimiter(cfg, tracker, ratelimit.WithClock(clocktesting.NewFakeClock(now)))
	if err != nil {
		panic(err)
	}
	w, err := evictionqueue.NewWorkers(limiter)
	if err != nil {
		panic(err)
	}
	var t time.Duration
	for _, name := range []string{"resource-binding", "cluster-resource-binding"} {
		st, err := evictionqueue.NewStore(evictionqueue.Config{Name: name})
		if err != nil {
			panic(err)
		}
		handle := func(_ context.Context, it evictionqueue.Item) error {
			fmt.Printf("%v: %s %s from %s\n", t, name, it.Key, it.Cluster)
			return nil
		}
		if err := w.Add(st, handle, 1); err != nil {
			panic(err)
		}
		st.Add(evictionqueue.Item{Cluster: "member1", Key: "shop/web-" + name[:1]}, now)
		st.Add(evictionqueue.Item{Cluster: "member1", Key: "shop/db-" + name[:1]}, now)
	}
	for {
		next, err := w.Run(context.Background(), now.Add(t))
		if err != nil || next.IsZero() {
			break
		}
		t = next.Sub(now)
	}
	// Output:
	// 0s: resource-binding shop/web-r from member1
	// 1s: cluster-resource-binding shop/web-c from member1
	// 2s: resource-binding shop/db-r from member1
	// 3s: cluster-resource-binding shop/db-c from member1
}

package evictionqueue_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/failoverkit/failover/evictionqueue"
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

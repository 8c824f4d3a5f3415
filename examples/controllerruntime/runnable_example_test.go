package controllerruntime_test

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/failoverkit/failover/evictionqueue"
)

// In a controller-runtime manager, each eviction queue is a Runnable:
// mgr.Add(manager.RunnableFunc(q.Run)). The manager starts it on the elected
// leader only (a RunnableFunc needs leader election) and, on shutdown, cancels
// its context and waits for Run to return: workers stop, nothing queued is
// lost. Reconcilers call q.Add and q.CancelCluster; the Pacer paces them all.
func Example_queueAsRunnable() {
	ctx, cancel := context.WithCancel(context.Background())
	q, err := evictionqueue.New(evictionqueue.Config{Name: "resource-binding"},
		func(_ context.Context, it evictionqueue.Item) error {
			fmt.Printf("evict %s from %s\n", it.Key, it.Cluster)
			cancel() // here: the manager stopping
			return nil
		})
	if err != nil {
		panic(err)
	}
	var runnable manager.Runnable = manager.RunnableFunc(q.Run) // mgr.Add(runnable)

	q.Add(evictionqueue.Item{Cluster: "member1", Key: "default/web", ResourceKind: "apps/v1/Deployment"})
	fmt.Println("stopped:", runnable.Start(ctx))
	// Output:
	// evict default/web from member1
	// stopped: <nil>
}

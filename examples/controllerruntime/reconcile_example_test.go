package controllerruntime_test

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/failoverkit/failover/ratelimit"
)

// evictionReconciler is a controller-runtime Reconciler that evicts one
// binding per request. Every eviction first takes a permit from the
// fleet-wide Limiter, so however many workers the controller runs
// (MaxConcurrentReconciles) and whatever adds requests, evictions never go
// faster than the rate in force, and none happens while it is paused.
type evictionReconciler struct {
	limiter *ratelimit.Limiter
	evict   func(ctx context.Context, binding types.NamespacedName) error
}

var _ reconcile.Reconciler = (*evictionReconciler)(nil)

func (r *evictionReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if err := r.limiter.Wait(ctx); err != nil {
		return reconcile.Result{}, err // the manager is stopping
	}
	return reconcile.Result{}, r.evict(ctx, req.NamespacedName)
}

// Pacing a controller-runtime controller: its Reconcile calls Limiter.Wait
// before each eviction. The Tracker is fed by hand (from the Cluster
// controller's Reconcile) and starts unsynced, so a restarted manager evicts
// nothing until it has seen the whole fleet; then evictions go at 0.5/s.
func Example_pacedReconciler() {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	start := clk.Now()
	tracker := ratelimit.NewUnsyncedTracker()
	limiter, err := ratelimit.NewLimiter(ratelimit.DefaultConfig(), tracker, ratelimit.WithClock(clk))
	if err != nil {
		panic(err)
	}
	evicted := make(chan struct{})
	r := &evictionReconciler{limiter: limiter, evict: func(_ context.Context, b types.NamespacedName) error {
		fmt.Printf("+%v evict %s\n", clk.Since(start), b)
		evicted <- struct{}{}
		return nil
	}}

	// The manager's workers call Reconcile; here, one worker.
	go func() {
		for _, name := range []string{"web", "db", "cache"} {
			req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}}
			_, _ = r.Reconcile(context.Background(), req)
		}
	}()
	stepWhenWaiting := func(d time.Duration) {
		for !clk.HasWaiters() {
			runtime.Gosched()
		}
		clk.Step(d)
	}

	// The Cluster controller has seen one cluster of the fleet: not enough.
	tracker.Set("member1", false)
	stepWhenWaiting(time.Minute)
	fmt.Printf("+%v rate %.1f/s (fleet not synced)\n", clk.Since(start), limiter.Rate())

	// Its cache synced and every listed cluster was Set: evictions start.
	tracker.Set("member2", true)
	tracker.Set("member3", false)
	tracker.MarkSynced()
	<-evicted
	stepWhenWaiting(2 * time.Second)
	<-evicted
	stepWhenWaiting(2 * time.Second)
	<-evicted
	// Output:
	// +1m0s rate 0.0/s (fleet not synced)
	// +1m0s evict default/web
	// +1m2s evict default/db
	// +1m4s evict default/cache
}

package clustertaint

import (
	"context"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/failoverkit/failover/examples/controllerruntime/api/v1alpha1"
	"github.com/failoverkit/failover/ratelimit"
)

// fleetCache is what the sync gate reads: the manager's cache.
type fleetCache interface {
	WaitForCacheSync(ctx context.Context) bool
	List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error
}

// syncGate calls the Tracker's MarkSynced once every cluster the manager's
// cache held when it synced has been through Reconcile (see "When
// MarkSynced is called, and why" in the package documentation).
type syncGate struct {
	tracker *ratelimit.Tracker
	cache   fleetCache

	mu sync.Mutex
	// pending is nil until the cache is listed, then the listed clusters
	// not reconciled yet; seen is what Reconcile counted before the list.
	pending map[string]bool
	seen    map[string]bool
	synced  bool
}

// Start waits for the cache, lists the clusters in it and, if Reconcile has
// counted them all already, marks the Tracker synced. It returns when done;
// the manager runs it as a Runnable.
func (g *syncGate) Start(ctx context.Context) error {
	if !g.cache.WaitForCacheSync(ctx) {
		return nil // the manager is stopping
	}
	var list v1alpha1.MemberClusterList
	if err := g.cache.List(ctx, &list); err != nil {
		return fmt.Errorf("clustertaint: listing the MemberClusters in the cache: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending = make(map[string]bool, len(list.Items))
	for _, mc := range list.Items {
		if !g.seen[mc.Name] {
			g.pending[mc.Name] = true
		}
	}
	g.seen = nil
	logf.FromContext(ctx).Info("Counting the fleet before pacing evictions", "clusters", len(list.Items), "notCountedYet", len(g.pending))
	g.markIfDoneLocked(ctx)
	return nil
}

// NeedLeaderElection says the gate runs with the controller, on the leader.
func (g *syncGate) NeedLeaderElection() bool { return true }

// reconciled records that Reconcile has counted cluster in the Tracker.
func (g *syncGate) reconciled(ctx context.Context, cluster string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.synced:
	case g.pending == nil:
		g.seen[cluster] = true
	default:
		delete(g.pending, cluster)
		g.markIfDoneLocked(ctx)
	}
}

func (g *syncGate) markIfDoneLocked(ctx context.Context) {
	if g.synced || g.pending == nil || len(g.pending) > 0 {
		return
	}
	g.synced = true
	g.tracker.MarkSynced()
	logf.FromContext(ctx).Info("Every cluster counted: fleet health synced, evictions paced by it")
}

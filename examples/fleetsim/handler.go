package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/prescheduling"
	"github.com/failoverkit/failover/ratelimit"
)

// handler is the eviction queue's handler: the pre-scheduling check, then
// the eviction (the cluster leaves the schedule result and becomes a graceful
// eviction task) and the scheduler's answer.
func (w *world) handler(queue int) evictionqueue.Handler {
	return func(ctx context.Context, it evictionqueue.Item) error {
		now := w.clk.Now()
		w.rec.permit(queue, now, w.observeRate(now), w.queues[qRB].Len()+w.queues[qCRB].Len(), w.domainOf(it.Cluster))
		// An operator's freeze holds every eviction back before anything
		// is decided, as the fork's handler does: the item waits, its
		// permit goes back.
		if w.frozen {
			w.hold(queue, it, true)
			w.rec.deferred(queue, it, true)
			return evictionqueue.RetryAfter(freezeRecheck, errors.New("fleetsim: evictions frozen by an operator"))
		}
		w.unhold(queue, it) // decided again now
		b := w.byKey[queue][it.Key]
		c := w.byName[it.Cluster]
		if b == nil || c == nil {
			return evictionqueue.Abandon(fmt.Errorf("fleetsim: unknown binding %q or cluster %q", it.Key, it.Cluster))
		}
		if !c.faulty {
			w.rec.violation(checkCancelled, fmt.Sprintf("%s on %s handled at %s although the cluster had recovered", it.Key, it.Cluster, now.Format(time.TimeOnly)))
			return evictionqueue.Abandon(errors.New("cluster recovered"))
		}
		idx := slices.IndexFunc(b.gb.Clusters, func(t failover.TargetCluster) bool { return t.Name == it.Cluster })
		if idx < 0 {
			return nil // already gone from there
		}
		// The binding's budget of clusters in transit, the library's rule
		// the fork's handler applies: over it, the eviction waits without a
		// permit and without counting a failure.
		if open := gracefulevict.InTransit(b.gb.Tasks); !b.spec.Budget.Allows(open) {
			w.hold(queue, it, false)
			w.rec.deferred(queue, it, false)
			return evictionqueue.RetryAfter(transitRetry, fmt.Errorf("fleetsim: %s from %s waits: %d of at most %d clusters in transit",
				it.Key, it.Cluster, len(open), b.spec.Budget))
		}
		res := w.checker.Check(prescheduling.Request{
			Placement: b.spec.Placement,
			Scheduled: b.gb.Clusters,
			Evicting:  []string{it.Cluster},
		}, w.fleet())
		if !res.Feasible {
			w.abandoned[itemID{it.Cluster, it.Key}] = w.improvements
			w.rec.abandon(queue, b, it.Cluster, res.Reason, abandonCode(res))
			return evictionqueue.Abandon(errors.New(res.Reason))
		}
		evicted := b.gb.Clusters[idx].Replicas
		task := gracefulevict.Task{
			Reason:            "TaintUntolerated",
			Producer:          "TaintManager",
			Message:           "cluster " + it.Cluster + " is faulty",
			CreationTimestamp: &metav1.Time{Time: now},
		}
		if f := b.spec.Failover; f != nil {
			task.PurgeMode = f.PurgeMode
			task.GracePeriodSeconds = f.GracePeriodSeconds
		}
		before := slices.Clone(b.gb.Clusters)
		gb := gracefulevict.Evict(b.gb, it.Cluster, task)
		// The scheduler knows the answers it has not written yet: a second
		// eviction of a binding must not pick the target of the first.
		view := gb
		view.Clusters = mergeSchedule(gb.Clusters, w.pendingAdditions(b))
		result := w.reschedule(&binding{spec: b.spec, gb: view}, it.Cluster, evicted, res.Candidates)
		ready := func(cluster string) time.Time {
			// Going back where an old copy still runs needs no start-up.
			if slices.ContainsFunc(gb.Tasks, func(t gracefulevict.Task) bool { return t.FromCluster == cluster }) {
				return now
			}
			if d := w.readyAfter(b); d >= 0 {
				return now.Add(d)
			}
			return never
		}
		if w.sc.CompletesAfter > 0 {
			// The eviction is written (the task exists, the cluster has left
			// the schedule result) but the scheduler answers later: until
			// then the binding is not scheduled, so no task can pass the
			// health check.
			w.setSchedule(b, gb.Clusters, ready)
			b.gb.Tasks, b.gb.Generation = gb.Tasks, gb.Generation
			b.dirty = true
			w.inFlight = append(w.inFlight, &completion{
				at: now.Add(w.sc.CompletesAfter), queue: queue, item: it, b: b, added: scheduleDelta(view.Clusters, result), ready: ready,
			})
			w.rec.accepted()
			w.evictedFrom(b, c, now)
			w.checkCopies(b)
			return evictionqueue.ErrInProgress
		}
		w.setSchedule(b, result, ready)
		b.gb.Tasks, b.gb.Generation = gb.Tasks, gb.Generation
		// The simulated scheduler answers at once.
		b.gb.ObservedGeneration = b.gb.Generation
		b.dirty = true
		w.rec.evict(queue, b, it.Cluster, before, result, w.byName, true)
		w.evictedFrom(b, c, now)
		w.checkCopies(b)
		return nil
	}
}

// How long an item held back waits at most before it is decided again,
// if no thaw or task's end wakes it first: the fork's controllers wait
// freezeRecheck (10s) under a freeze and, for a budget of clusters in
// transit, --cluster-status-update-frequency (Karmada's default 10s) capped
// at 10s.
const (
	freezeRecheck = 10 * time.Second
	transitRetry  = 10 * time.Second
)

// evictedFrom records what the safety checks need of an eviction of b from
// c at now: the clusters b has in transit since, against its budget, and
// whether c was cut off (a partition the storm's hold must ride out).
func (w *world) evictedFrom(b *binding, c *clusterState, now time.Time) {
	w.rec.inTransit(b, len(gracefulevict.InTransit(b.gb.Tasks)))
	if c.cutOffAt.IsZero() {
		return
	}
	w.rec.cutOffEvicted++
	// An operator who confirmed the storm since the cut ended its hold.
	confirmed := w.stormConfirmed.After(c.cutOffAt) || w.stormConfirmed.Equal(c.cutOffAt)
	if confirm := w.cfg.StormConfirm; now.Before(c.cutOffAt.Add(confirm)) && !confirmed {
		w.rec.violation(checkStormHold, fmt.Sprintf("%s evicted from %s at %s, %v after the control plane lost sight of it (cut off), within --%s (%v)",
			b.key(), c.Name, now.Format(time.TimeOnly), now.Sub(c.cutOffAt), ratelimit.FlagStormConfirm, confirm))
	}
}

// heldItem is why an item is held back, and when (in order of holding).
type heldItem struct {
	frozen bool
	seq    int
}

// hold records that it waits for a thaw (frozen) or for a task of its
// binding to end. An item held again takes its new reason: frozen, it
// waits for the thaw and no longer for the budget.
func (w *world) hold(queue int, it evictionqueue.Item, frozen bool) {
	if w.held[queue] == nil {
		w.held[queue] = map[evictionqueue.Item]heldItem{}
	}
	w.unhold(queue, it)
	w.heldSeq++
	w.held[queue][it] = heldItem{frozen: frozen, seq: w.heldSeq}
	if !frozen {
		w.budgetHeld[queue]++
		w.metrics.WaitingForTransitBudget(queueNames[queue], w.budgetHeld[queue])
	}
}

// unhold records that it no longer waits: decided again, tried again, or
// its cluster recovered. eviction_waiting_for_transit_budget follows, as
// the fork's controllers keep it.
func (w *world) unhold(queue int, it evictionqueue.Item) {
	h, ok := w.held[queue][it]
	if !ok {
		return
	}
	delete(w.held[queue], it)
	if !h.frozen {
		w.budgetHeld[queue]--
		w.metrics.WaitingForTransitBudget(queueNames[queue], w.budgetHeld[queue])
	}
}

// unholdCluster lets go of the items of cluster, which recovered: the
// queue cancelled them (Queue.CancelCluster), nothing will try them again.
func (w *world) unholdCluster(queue int, cluster string) {
	for it := range w.held[queue] {
		if it.Cluster == cluster {
			w.unhold(queue, it)
		}
	}
}

// wake tries again at once, in the order they were held back, the items of
// queue for which pick says so (evictionqueue.Queue.Retry), as the fork's
// controllers do at a thaw (every item the freeze held) and at a task's end
// (the items of that binding waiting for its budget).
func (w *world) wake(queue int, pick func(it evictionqueue.Item, frozen bool) bool) {
	var due []evictionqueue.Item
	for it, h := range w.held[queue] {
		if pick(it, h.frozen) {
			due = append(due, it)
		}
	}
	slices.SortFunc(due, func(a, b evictionqueue.Item) int { return w.held[queue][a].seq - w.held[queue][b].seq })
	for _, it := range due {
		w.unhold(queue, it)
		w.engine.retry(queue, it)
	}
}

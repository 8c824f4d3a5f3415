package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	kengine "github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/ratelimit"
)

// handler is the eviction queue's handler, as the fork's eviction handler
// runs it: an operator's freeze defers every item; then the engine's
// decision path (engine.Evictor.Evict on the Fleet, the Fleet taken for the
// truth) decides again, waits for the binding's budget of clusters in
// transit, checks that the replicas have somewhere to go, holds their room
// in the Ledger and writes the graceful eviction task into the binding's
// spec; fleetsim then writes the binding and places the replacement, as the
// API server and the scheduler would.
func (w *world) handler(queue int) evictionqueue.Handler {
	return func(ctx context.Context, it evictionqueue.Item) error {
		now := w.clk.Now()
		w.rec.permit(queue, now, w.observeRate(now), w.queues[qRB].Len()+w.queues[qCRB].Len(), w.domainOf(it.Cluster))
		// An operator's freeze holds every eviction back before anything
		// is decided, as the fork's handler does: the item waits, its
		// permit goes back.
		if w.frozen {
			w.rec.deferred(queue, it, true)
			return evictionqueue.Park(kengine.FreezeGate, freezeRecheck, errors.New("fleetsim: evictions frozen by an operator"))
		}
		b := w.byKey[queue][it.Key]
		c := w.byName[it.Cluster]
		if b == nil || c == nil {
			return evictionqueue.Abandon(fmt.Errorf("fleetsim: unknown binding %q or cluster %q", it.Key, it.Cluster))
		}
		if !c.faulty {
			w.rec.violation(checkCancelled, fmt.Sprintf("%s on %s handled at %s although the cluster had recovered", it.Key, it.Cluster, now.Format(time.TimeOnly)))
			return evictionqueue.Abandon(errors.New("cluster recovered"))
		}
		b.write()
		step, err := w.evictor.Evict(ctx, now, it.Key, b.obj, c.kc, nil)
		if err != nil {
			return err
		}
		res := step.Result
		switch step.Action {
		case kengine.EvictionSkip:
			w.rec.setResult(resultSkipped)
			return evictionqueue.Skip(errors.New(step.Why)) // already gone from there
		case kengine.EvictionStays:
			w.rec.setResult(resultSkipped)
			return evictionqueue.Skip(errors.New(step.Decision.Reason))
		case kengine.EvictionInvalid:
			w.rec.abandon(queue, b, it.Cluster, step.Err.Error(), abandonInvalidPlacement)
			return evictionqueue.Abandon(step.Err)
		case kengine.EvictionWaitForBudget:
			// Over its budget the eviction waits, without a permit and
			// without counting a failure.
			w.rec.deferred(queue, it, false)
			return evictionqueue.Park(kengine.TransitGate(it.Key), transitRetry, fmt.Errorf("fleetsim: %s from %s waits: %d of at most %d clusters in transit",
				it.Key, it.Cluster, len(step.InTransit), step.Budget))
		case kengine.EvictionWaitForRoom:
			// The room frees as the summaries catch up, which the Ledger
			// learns only when asked again.
			w.rec.setResult("deferred")
			return evictionqueue.RetryAfter(min(res.RetryAfter, clusterStatusUpdateFrequency), errors.New(res.Reason))
		case kengine.EvictionRefused:
			w.abandoned[itemID{it.Cluster, it.Key}] = w.improvements
			w.rec.abandon(queue, b, it.Cluster, res.Reason, abandonCode(res))
			return evictionqueue.Abandon(errors.New(res.Reason))
		case kengine.EvictionEvict:
		default:
			return fmt.Errorf("fleetsim: %s from %s: unknown step %v", it.Key, it.Cluster, step.Action)
		}
		// The binding's spec now holds the task: the API server takes the
		// write, a new generation.
		p, err := w.placeWritten(b, it.Cluster, b.spec.GracePeriodSeconds, now)
		if err != nil {
			step.Hold.Release()
			return err
		}
		before, gb, view, result, ready := p.before, p.gb, p.view, p.result, p.ready
		if w.sc.CompletesAfter > 0 {
			// The eviction is written (the task exists, the cluster has left
			// the schedule result) but the scheduler answers later: until
			// then the binding is not scheduled, so no task can pass the
			// health check.
			w.setSchedule(b, gb.Clusters, ready)
			b.gb.Tasks, b.gb.Generation = gb.Tasks, gb.Generation
			w.touch(b)
			w.inFlight = append(w.inFlight, &completion{
				at: now.Add(w.sc.CompletesAfter), queue: queue, item: it, b: b, added: scheduleDelta(view.Clusters, result), ready: ready,
			})
			w.rec.accepted()
			w.evictedFrom(b, c, now)
			w.checkCopies(b)
			return evictionqueue.ErrInProgress
		}
		w.applyPlaced(b, p)
		w.rec.evict(queue, b, it.Cluster, before, result, w.byName, true)
		w.evictedFrom(b, c, now)
		w.checkCopies(b)
		return nil
	}
}

// placed is an eviction as the API server took it and Karmada's
// scheduler placed it: the binding's schedule result before (before), as
// written (gb: the cluster left, its task), as the scheduler sees it with
// the answers it has not written yet (view), the scheduler's answer
// (result), and when each new copy turns Healthy (ready).
type placed struct {
	before   []failover.TargetCluster
	gb, view gracefulevict.Binding
	result   []failover.TargetCluster
	ready    func(string) time.Time
}

// placeWritten reads the eviction of b from cluster that the engine wrote
// into b's object, a new generation, with gracePeriod (nil: none) as the
// grace period of the task from cluster, and asks Karmada's scheduler
// where the replicas go. A scheduler that finds no room where the check
// found some is a violation of the verdict, and the binding keeps what it
// has.
func (w *world) placeWritten(b *binding, cluster string, gracePeriod *int32, now time.Time) (placed, error) {
	written, err := b.read()
	if err != nil {
		return placed{}, err
	}
	before := slices.Clone(b.gb.Clusters)
	gb := b.gb
	gb.Clusters, gb.Tasks, gb.Generation = written.Clusters, written.Tasks, b.gb.Generation+1
	if g := gracePeriod; g != nil {
		for i := range gb.Tasks {
			if gb.Tasks[i].FromCluster == cluster {
				gb.Tasks[i].GracePeriodSeconds = g
			}
		}
	}
	// The scheduler knows the answers it has not written yet: a second
	// eviction of a binding must not pick the target of the first.
	view := gb
	view.Clusters = mergeSchedule(gb.Clusters, w.pendingAdditions(b))
	result, err := w.schedule(b, view)
	if err != nil {
		// The check found room the scheduler does not: the binding
		// keeps what it has, and the verdict says it had no target.
		w.rec.violation(checkTarget, err.Error())
		result = view.Clusters
	}
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
	return placed{before: before, gb: gb, view: view, result: result, ready: ready}, nil
}

// applyPlaced gives b the schedule result p placed, at once, as the
// simulated scheduler answers.
func (w *world) applyPlaced(b *binding, p placed) {
	w.setSchedule(b, p.result, p.ready)
	b.gb.Tasks, b.gb.Generation = p.gb.Tasks, p.gb.Generation
	b.gb.ObservedGeneration = b.gb.Generation
	w.touch(b)
}

// How long an item held back waits at most before it is decided again,
// if no thaw or task's end wakes it first: the fork's controllers wait
// freezeRecheck (10s) under a freeze and, for a budget of clusters in
// transit, --cluster-status-update-frequency (Karmada's default 10s) capped
// at 10s. A deferral for room waits at most --cluster-status-update-frequency,
// when the summaries report again.
const (
	freezeRecheck                = 10 * time.Second
	transitRetry                 = 10 * time.Second
	clusterStatusUpdateFrequency = 10 * time.Second
)

// evictedFrom records what the safety checks need of an eviction of b from
// c at now: the clusters b has in transit since, against its budget, and
// whether c was cut off (a partition the storm's hold must ride out).
func (w *world) evictedFrom(b *binding, c *clusterState, now time.Time) {
	w.rec.inTransit(b, len(gracefulevict.InTransit(b.gb.Tasks)))
	w.failedOver(b, c.Name, now)
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

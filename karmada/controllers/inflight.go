package controllers

import (
	"context"
	"errors"
	"slices"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/prescheduling"
)

// flight is what an eviction in flight carries in its queue
// (evictionqueue.InProgressWith): the room the Ledger holds for it, and
// whether its task ends as soon as it is stamped
// (gracefulevict.Task.EndsAtOnce), which says nothing of where the
// replicas went.
type flight struct {
	endsAtOnce bool
	hold       engine.Hold
}

// inFlight is the result of an eviction written, or found written: in
// flight in its queue until its task ends (endRemoved), with what it
// holds.
func inFlight(task *workv1alpha2.GracefulEvictionTask, hold engine.Hold) error {
	return evictionqueue.InProgressWith(flight{endsAtOnce: endsAtOnce(task), hold: hold})
}

// endRemoved ends the evictions of the binding obj (with spec, as the
// cache holds it) that k's queue holds in flight and whose graceful
// eviction task is gone: the one way an eviction ends, whoever removed the
// task (the GracefulEvictionController once it is done, Karmada's own, an
// operator's edit, another controller). Each ends once in its queue
// (evictionqueue.Queue.EndFlight: its slot of EvictionOptions.MaxInFlight
// is free), the evictions of the binding waiting for its budget of
// clusters in transit are tried again at once, and the room the Ledger
// holds for it is given back by one rule (releaseEnded). It costs a look at
// the binding's own evictions in flight; only when one of them has no task
// in the cache's copy is the binding read from the API server, so that a
// cache that has not yet seen the task written ends nothing.
//
// An eviction whose handler call is running with no task in the cache's
// copy may be writing its task, or may have written one that ended
// already: the cache cannot tell which until the call returns, so it
// reports again, and the binding is reconciled again shortly
// (runningRecheck) to look once the call has returned.
func (c *EvictionController) endRemoved(ctx context.Context, k *kind, obj client.Object, spec *workv1alpha2.ResourceBindingSpec) (again bool, err error) {
	if k.q == nil {
		return false, nil
	}
	key := itemKey(obj)
	var gone []evictionqueue.Flight
	for _, f := range k.q.Flights(key) {
		switch {
		case hasTaintManagerTask(spec, f.Item.Cluster):
		case f.Running:
			again = true
		default:
			gone = append(gone, f)
		}
	}
	if len(gone) == 0 {
		return again, nil
	}
	fresh := k.new()
	if err := c.reader.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
		if apierrors.IsNotFound(err) {
			c.bindingGone(k, key)
			return false, nil
		}
		return again, err
	}
	spec = k.spec(fresh)
	var ended []string
	for _, f := range gone {
		if !hasTaintManagerTask(spec, f.Item.Cluster) && k.q.EndFlight(f) {
			ended = append(ended, f.Item.Cluster)
			c.releaseEnded(f)
		}
	}
	if len(ended) == 0 {
		return again, nil
	}
	k.q.Open(engine.TransitGate(key))
	log.FromContext(ctx).V(1).Info("evictions in flight ended: their graceful eviction tasks are gone",
		"queue", k.queue, "binding", key, "clusters", ended)
	return again, nil
}

// runningRecheck is how soon a binding is reconciled again when one of its
// evictions was being written while its reconcile looked (endRemoved): a
// handler call's write is one request.
const runningRecheck = 100 * time.Millisecond

// releaseEnded gives back the room the Ledger holds for the eviction f,
// whose task ended, by the engine's one rule (engine.Hold.TaskEnded).
func (c *EvictionController) releaseEnded(f evictionqueue.Flight) {
	if fl, ok := f.Value.(flight); ok {
		fl.hold.TaskEnded(c.opts.Clock.Now(), fl.endsAtOnce, c.opts.ClusterStatusUpdateFrequency)
	}
}

// endsAtOnce reports whether task ends as soon as it is stamped
// (gracefulevict.Task.EndsAtOnce); false for no task.
func endsAtOnce(task *workv1alpha2.GracefulEvictionTask) bool {
	if task == nil {
		return false
	}
	return gracefulevict.Task{PurgeMode: failover.PurgeMode(task.PurgeMode), SuppressDeletion: task.SuppressDeletion}.EndsAtOnce()
}

// hasTaintManagerTask reports whether spec has a graceful eviction task
// from cluster written by a taint manager (producer TaintManager).
func hasTaintManagerTask(spec *workv1alpha2.ResourceBindingSpec, cluster string) bool {
	return taintManagerTask(spec, cluster) != nil
}

// taintManagerTask is spec's graceful eviction task from cluster written by
// a taint manager; nil when there is none.
func taintManagerTask(spec *workv1alpha2.ResourceBindingSpec, cluster string) *workv1alpha2.GracefulEvictionTask {
	for i := range spec.GracefulEvictionTasks {
		t := &spec.GracefulEvictionTasks[i]
		if t.FromCluster == cluster && t.Producer == karmada.TaintManagerProducer {
			return t
		}
	}
	return nil
}

// takeOver rebuilds, before k's queue evicts anything, what the evictions
// still under way hold, so that a restarted controller or a newly elected
// leader does not start from nothing (karmada#6518 would return at every
// leader change). For each open graceful eviction task written by a taint
// manager (producer TaintManager: this controller's, or Karmada's before
// it was switched off) on a binding of k, the eviction counts in flight in
// k's queue until its task ends (evictionqueue.Queue.AddInFlight); with a
// Ledger, the room its replicas take is held again until the hold that
// began at the task's creation ends (engine.Ledger.Restore), as the leader
// that approved it holds it: where the check predicts the scheduler puts
// them while it has not placed the binding since, and on the clusters it
// placed them on once it has (placed), until their summaries show them.
func (c *EvictionController) takeOver(ctx context.Context, k *kind) error {
	list := k.list()
	if err := c.client.List(ctx, list); err != nil {
		return err
	}
	logger := log.FromContext(ctx).WithValues("queue", k.queue)
	inFlight, held := 0, 0
	var taken []client.Object // the bindings with evictions taken over, as listed
	err := meta.EachListItem(list, func(o runtime.Object) error {
		obj := o.(client.Object)
		spec := k.spec(obj)
		for _, t := range spec.GracefulEvictionTasks {
			if t.Producer != karmada.TaintManagerProducer {
				continue
			}
			it := evictionqueue.Item{Cluster: t.FromCluster, Key: itemKey(obj), ResourceKind: resourceKind(spec)}
			hold := c.restore(ctx, obj, spec, k.status(obj), t)
			if !hold.IsZero() {
				held++
			}
			if k.q.AddInFlightWith(it, flight{endsAtOnce: endsAtOnce(&t), hold: hold}) {
				inFlight++
				if len(taken) == 0 || taken[len(taken)-1] != obj {
					taken = append(taken, obj)
				}
			}
		}
		return nil
	})
	if inFlight > 0 || held > 0 {
		logger.Info("took over the evictions in flight", "inFlight", inFlight, "roomHeld", held)
	}
	if err != nil {
		return err
	}
	return c.endTakenOver(ctx, k, taken)
}

// restore holds again, with a Ledger, the room of the eviction of obj
// whose task is t (see takeOver), and returns its Hold; the zero Hold when
// nothing is held.
func (c *EvictionController) restore(ctx context.Context, obj client.Object, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, t workv1alpha2.GracefulEvictionTask) engine.Hold {
	if c.opts.Ledger == nil || t.CreationTimestamp == nil {
		return engine.Hold{}
	}
	var r prescheduling.Result
	if scheduledSince(obj, status) {
		r = placed(spec, t)
	} else {
		r = c.predict(ctx, spec, status, t)
	}
	return c.opts.Ledger.Restore(c.opts.Clock.Now(), itemKey(obj), t.FromCluster, r, c.fleet.Summary, spec.ReplicaRequirements, t.CreationTimestamp.Time)
}

// endTakenOver ends the evictions taken over whose task ended after the
// List that found it: the binding's reconcile that saw the task gone may
// have come before they counted in flight, and ended nothing. The cache
// shows the removal to every read after that reconcile's, so the bindings
// are read from it again, and endRemoved ends what they lack (reading the
// API server first, as it does).
func (c *EvictionController) endTakenOver(ctx context.Context, k *kind, listed []client.Object) error {
	for _, o := range listed {
		obj := k.new()
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(o), obj); err != nil {
			if apierrors.IsNotFound(err) {
				c.bindingGone(k, itemKey(o))
				continue
			}
			return err
		}
		if _, err := c.endRemoved(ctx, k, obj, k.spec(obj)); err != nil {
			return err
		}
	}
	return nil
}

// placed is the room an eviction's replicas take once the scheduler has
// placed its binding (spec), as a check's answer to hold again: which of
// its clusters took them is not recorded, so each may have, and the room
// is held on every one but the cluster left (task.FromCluster), as much as
// it runs there and the eviction moved, conservatively. A Duplicated
// binding's copy is held on each cluster it runs on that it did not run on
// before the failover, when the task records those
// (clustersBeforeFailover), else on each. The holds end as the summaries
// show the replicas, or at the latest when the hold would have.
func placed(spec *workv1alpha2.ResourceBindingSpec, task workv1alpha2.GracefulEvictionTask) prescheduling.Result {
	dup := spec.Placement == nil || spec.Placement.ReplicaSchedulingType() != policyv1alpha1.ReplicaSchedulingTypeDivided
	moved := spec.Replicas
	if task.Replicas != nil {
		moved = *task.Replicas
	}
	var moves []failover.TargetCluster
	for _, t := range spec.Clusters {
		switch {
		case t.Name == task.FromCluster:
		case dup && slices.Contains(task.ClustersBeforeFailover, t.Name):
		case dup:
			moves = append(moves, failover.TargetCluster{Name: t.Name, Replicas: spec.Replicas})
		default:
			moves = append(moves, failover.TargetCluster{Name: t.Name, Replicas: min(t.Replicas, moved)})
		}
	}
	return prescheduling.Result{Feasible: len(moves) > 0, Code: prescheduling.Feasible, Moves: moves}
}

// scheduledSince reports whether Karmada's scheduler has scheduled the
// binding since its last change (status.schedulerObservedGeneration): the
// replicas of its evictions are placed, and the scheduler's own
// assumptions cover them until the summaries show them.
func scheduledSince(obj client.Object, status *workv1alpha2.ResourceBindingStatus) bool {
	return obj.GetGeneration() > 0 && status.SchedulerObservedGeneration >= obj.GetGeneration()
}

// predict is the check the eviction of task passed, asked again: where the
// scheduler puts the replicas that left task.FromCluster, on the Fleet as
// it is now (engine.Evictor.Check, with no fresh read).
func (c *EvictionController) predict(ctx context.Context, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, task workv1alpha2.GracefulEvictionTask) prescheduling.Result {
	before := spec.DeepCopy()
	before.GracefulEvictionTasks = slices.DeleteFunc(before.GracefulEvictionTasks, func(t workv1alpha2.GracefulEvictionTask) bool {
		return t.FromCluster == task.FromCluster
	})
	if !before.TargetContains(task.FromCluster) {
		var replicas int32
		if task.Replicas != nil {
			replicas = *task.Replicas
		}
		before.Clusters = append(before.Clusters, workv1alpha2.TargetCluster{Name: task.FromCluster, Replicas: replicas})
	}
	req, err := karmada.PreschedulingRequest(before, task.FromCluster)
	var loss *karmada.LossError
	if err != nil && !errors.As(err, &loss) {
		return prescheduling.Result{}
	}
	req.ObservedAffinityName = status.SchedulerObservedAffinityName
	res, err := c.evictor.Check(ctx, before, req, nil, nil)
	if err != nil {
		return prescheduling.Result{}
	}
	return res
}

// recheckRefusals decides again every eviction the check refused at the
// end of each ClusterStatusUpdateFrequency in which recheckOnRoom let a
// change of room pass (recheckLetPass), until ctx ends; each refusal also
// waits at most RefusalRecheck (its park). It runs under leader election,
// as the queues do.
func (c *EvictionController) recheckRefusals(ctx context.Context) error {
	every(ctx, c.opts.Clock, c.opts.ClusterStatusUpdateFrequency, c.recheckLetPass)
	return nil
}

// every calls f every d of clk until ctx ends.
func every(ctx context.Context, clk clock.WithTicker, d time.Duration, f func()) {
	t := clk.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			f()
		}
	}
}

// recheck decides again every eviction the check refused or held back for
// room, on the fleet as it is now: it opens engine.RefusedGate and engine.RoomGate of
// each queue.
func (c *EvictionController) recheck() {
	for _, k := range c.kinds {
		if k.q != nil {
			k.q.Open(engine.RefusedGate)
			k.q.Open(engine.RoomGate)
		}
	}
}

// recheckOnRoom is recheck after a resource summary changed, at most once
// per half ClusterStatusUpdateFrequency: every cluster reports that often,
// and each report would otherwise decide every refusal again; half, so
// that reports a period apart, a little early or late, each decide them
// again. A change it lets pass is not dropped: recheckLetPass decides
// again at the end of the period, so a refusal waits at most one period
// for the room it lacked.
func (c *EvictionController) recheckOnRoom() {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	due := !now.Before(c.lastRoomRecheck.Add(c.opts.ClusterStatusUpdateFrequency / 2))
	if due {
		c.lastRoomRecheck, c.roomLetPass = now, false
	} else {
		c.roomLetPass = true
	}
	c.mu.Unlock()
	if due {
		c.recheck()
	}
}

// recheckLetPass is recheck when recheckOnRoom let a change of room pass
// since it last rechecked.
func (c *EvictionController) recheckLetPass() {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	due := c.roomLetPass
	if due {
		c.lastRoomRecheck, c.roomLetPass = now, false
	}
	c.mu.Unlock()
	if due {
		c.recheck()
	}
}

// setFaulty records whether cluster was seen faulty, and reports whether it
// was before: false after true is a recovery.
func (c *EvictionController) setFaulty(cluster string, faulty bool) (was bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return mark(&c.faulty, cluster, faulty)
}

// setUnschedulable records whether cluster was seen with a NoSchedule
// taint, and reports whether it was before: false after true makes it a
// target again for the evictions refused for want of one.
func (c *EvictionController) setUnschedulable(cluster string, tainted bool) (was bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return mark(&c.unschedulable, cluster, tainted)
}

// mark records in *set whether cluster is in it, and reports whether it
// was; the set is made on its first member.
func mark(set *map[string]bool, cluster string, in bool) (was bool) {
	was = (*set)[cluster]
	switch {
	case in && *set == nil:
		*set = map[string]bool{cluster: true}
	case in:
		(*set)[cluster] = true
	default:
		delete(*set, cluster)
	}
	return was
}

// thawed decides again at once every eviction an operator's freeze held
// back (parked at engine.FreezeGate, one whose attempt is still returning from
// the freeze included): each would wait out its park otherwise. They take
// permits as any other item: no burst past the bucket.
func (c *EvictionController) thawed() {
	for _, k := range c.kinds {
		if k.q != nil {
			k.q.Open(engine.FreezeGate)
		}
	}
}

package main

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
	kengine "github.com/failoverkit/failover/karmada/engine"
)

// The controllers of the simulated control plane that run on the driver
// goroutine: cluster status (the timeline), the taint controller, the taint
// manager and the graceful eviction controller.

// applyEvent is the timeline changing cluster conditions, as a cluster
// status controller would on losing or regaining contact.
func (w *world) applyEvent(e timelineEvent, now time.Time) []string {
	var names []string
	for _, c := range w.clusters {
		if ok, _ := e.Clusters.Matches(c.Cluster); !ok {
			continue
		}
		changed := false
		for _, cc := range e.Conditions {
			cond := c.Condition(cc.Type)
			if cond == nil {
				c.Conditions = append(c.Conditions, metav1.Condition{Type: cc.Type})
				cond = &c.Conditions[len(c.Conditions)-1]
			}
			if cond.Status != cc.Status {
				cond.LastTransitionTime = metav1.NewTime(now)
				changed = true
			}
			cond.Status, cond.Reason, cond.Message = cc.Status, cc.Reason, cc.Message
		}
		switch ready := c.Condition("Ready"); {
		case ready != nil && ready.Status == metav1.ConditionTrue:
			c.cutOffAt = time.Time{}
		case e.CutOff && c.cutOffAt.IsZero():
			c.cutOffAt = now
		}
		if changed {
			c.dirty = true
			w.watched[c] = struct{}{}
			names = append(names, c.Name)
			w.publish(c)
		}
	}
	// Copies' health follows their cluster: every open task may be decided.
	for b := range w.active {
		b.dirty = true
	}
	return names
}

// taintController evaluates the clusters whose conditions changed or whose
// window has run out, and writes their taints. It returns the clusters that
// became faulty and those that recovered.
func (w *world) taintController(now time.Time) (failed, recovered []string, changes []string) {
	// The clusters due now, in the order of world.clusters.
	var due []*clusterState
	for c := range w.watched {
		if c.dirty || !c.nextEval.IsZero() && !c.nextEval.After(now) {
			due = append(due, c)
		}
	}
	slices.SortFunc(due, func(a, b *clusterState) int { return a.idx - b.idx })
	for _, c := range due {
		c.dirty = false
		res := w.evaluator.Evaluate(c.Cluster, now)
		c.Taints = res.Taints
		c.nextEval = time.Time{}
		if res.RequeueAfter > 0 {
			c.nextEval = now.Add(res.RequeueAfter)
		} else {
			delete(w.watched, c)
		}
		for _, t := range res.Added {
			changes = append(changes, "+"+t.Key+":"+string(t.Effect)+" "+c.Name)
		}
		for _, t := range res.Removed {
			changes = append(changes, "-"+t.Key+":"+string(t.Effect)+" "+c.Name)
		}
		if len(res.Added)+len(res.Removed) > 0 {
			w.scan = true
			w.publish(c)
		}
		if len(res.Removed) > 0 {
			w.improvements++
		}
		switch faulty := failover.IsFaulty(c.Cluster); {
		case faulty && !c.faulty:
			failed = append(failed, c.Name)
		case !faulty && c.faulty:
			recovered = append(recovered, c.Name)
		}
		c.faulty = failover.IsFaulty(c.Cluster)
		w.noteHealth(c, now)
	}
	return failed, recovered, changes
}

// evictAt says when binding b must leave cluster c because of c's taints,
// and false when it may stay, as the fork's taint manager decides at now
// (karmada.DecideBindingEviction, NoExecute taints evicting). A decision
// that fails (a placement annotation that cannot be read) leaves b there.
func (w *world) evictAt(b *binding, c *clusterState, now time.Time) (time.Time, bool) {
	meta, spec, _ := b.parts()
	d, err := karmada.DecideBindingEviction(meta.GetAnnotations(), spec, c.kc, w.evictor.Options().EnableNoExecuteTaintEviction, now)
	switch {
	case err != nil:
		w.rec.violation(checkTarget, fmt.Sprintf("%s on %s: the taint manager cannot decide: %v", b.key(), c.Name, err))
	case d.Evict:
		return now, true
	case d.After > 0:
		return now.Add(d.After), true
	}
	return time.Time{}, false
}

// taintManager returns, per queue, the evictions due now: every binding
// that must leave a faulty cluster. It notes when the next toleration runs
// out. The caller adds them to the queues.
func (w *world) taintManager(now time.Time) (due [2][]evictionqueue.Item) {
	if !w.scan && (w.scanAt.IsZero() || w.scanAt.After(now)) {
		return due
	}
	w.scan, w.scanAt = false, time.Time{}
	// The bindings on faulty clusters, in the order of world.bindings.
	on := map[*binding]struct{}{}
	for _, c := range w.clusters {
		if c.faulty {
			for b := range w.onCluster[c.Name] {
				on[b] = struct{}{}
			}
		}
	}
	for _, b := range byIndex(on) {
		for _, t := range b.gb.Clusters {
			c := w.byName[t.Name]
			if !c.faulty {
				continue
			}
			at, ok := w.evictAt(b, c, now)
			if !ok {
				continue
			}
			if at.After(now) {
				if w.scanAt.IsZero() || at.Before(w.scanAt) {
					w.scanAt = at
				}
				continue
			}
			id := itemID{c.Name, b.key()}
			if r, ok := w.abandoned[id]; ok && r == w.improvements {
				continue
			}
			delete(w.abandoned, id)
			due[b.queue] = append(due[b.queue], evictionqueue.Item{Cluster: c.Name, Key: b.key(), ResourceKind: b.spec.resourceKind(), Priority: b.spec.Priority})
		}
	}
	return due
}

// gracefulEvictionController assesses the tasks of the bindings that
// changed or whose deadline came, and removes the old copies of done tasks.
func (w *world) gracefulEvictionController(now time.Time) {
	// Only the bindings due now, in the order of world.bindings: sorting
	// every active binding at each step costs more than the assessments
	// at 100,000 bindings.
	due := map[*binding]struct{}{}
	for b := range w.active {
		if len(b.gb.Tasks) == 0 || b.dirty || !b.assessAt.IsZero() && !b.assessAt.After(now) {
			due[b] = struct{}{}
		}
	}
	for _, b := range byIndex(due) {
		if len(b.gb.Tasks) == 0 {
			b.dirty, b.assessAt = false, time.Time{}
			delete(w.active, b)
			continue
		}
		b.dirty = false
		b.gb.Health = w.health(b, now)
		a := w.assessor.Assess(b.gb, now)
		for _, t := range a.Done {
			d, ok := w.taskDeadline(t)
			w.rec.taskDone(b, t, now, d, ok)
		}
		for _, t := range a.Keep {
			if d, ok := w.taskDeadline(t); ok && !d.After(now) {
				w.rec.violation(checkTaskDeadline, fmt.Sprintf("%s: task from %s kept past its deadline %s", b.key(), t.FromCluster, d.Format(time.TimeOnly)))
			}
		}
		b.gb.Tasks = a.Keep
		// As the fork's eviction controller does when it sees a task
		// gone (a simulated reconcile sees it at once), a task that
		// ends gives back the room held for its eviction by the
		// engine's rule.
		for _, t := range a.Done {
			w.ledger.TaskEnded(now, b.key(), t.FromCluster, t.EndsAtOnce(), clusterStatusUpdateFrequency)
		}
		if len(a.Done) > 0 {
			// The old copies of the done tasks are deleted now.
			w.checkCopies(b)
			w.failbackTasksEnded(b, now)
			w.appTasksEnded(b, now)
			// Its evictions waiting for the budget go on at once.
			w.queues[b.queue].Open(kengine.TransitGate(b.key()))
		}
		b.assessAt = time.Time{}
		if a.RequeueAfter > 0 {
			b.assessAt = now.Add(a.RequeueAfter)
		}
		// A copy that turns Healthy later is a change the Assessor cannot
		// foresee: look again then.
		for _, t := range b.gb.Clusters {
			if r := b.readyAt[t.Name]; r.After(now) && r != never && (b.assessAt.IsZero() || r.Before(b.assessAt)) {
				b.assessAt = r
			}
		}
	}
}

// taskDeadline is when a task's grace period (or the default timeout) ends.
func (w *world) taskDeadline(t gracefulevict.Task) (time.Time, bool) {
	if t.CreationTimestamp == nil {
		return time.Time{}, false
	}
	switch t.PurgeMode.Canonical() {
	case failover.PurgeModeNever, failover.PurgeModeDirectly:
		return time.Time{}, false
	}
	if t.SuppressDeletion != nil {
		return time.Time{}, false
	}
	switch {
	case t.GracePeriodSeconds != nil:
		return t.CreationTimestamp.Add(time.Duration(*t.GracePeriodSeconds) * time.Second), true
	case w.sc.GracefulEvictionTimeout > 0:
		return t.CreationTimestamp.Add(w.sc.GracefulEvictionTimeout), true
	}
	return time.Time{}, false
}

// nextWake is the earliest time after now at which a controller has work.
func (w *world) nextWake(now time.Time) (time.Time, bool) {
	var next time.Time
	found := false
	take := func(t time.Time) {
		if !t.IsZero() && t.After(now) && (!found || t.Before(next)) {
			next, found = t, true
		}
	}
	for c := range w.watched {
		take(c.nextEval)
	}
	take(w.scanAt)
	if len(w.stale) > 0 {
		take(w.reportAt)
	}
	if len(w.inFlight) > 0 {
		take(w.inFlight[0].at)
	}
	for b := range w.active {
		take(b.assessAt)
	}
	w.appNextWake(now, take)
	if w.failback != nil {
		for _, at := range w.failback.due {
			if at != never {
				take(at)
			}
		}
	}
	return next, found
}

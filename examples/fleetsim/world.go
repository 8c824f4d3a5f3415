package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/prescheduling"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

// The two queues, one per binding kind, as in Karmada.
const (
	qRB  = 0
	qCRB = 1
)

var queueNames = [2]string{"resource-binding", "cluster-resource-binding"}

// never is the readiness time of a copy that never turns Healthy.
var never = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// clusterState is a member cluster and what the taint controller knows of it.
type clusterState struct {
	failover.Cluster
	faulty   bool
	nextEval time.Time // zero: nothing pending
	dirty    bool      // conditions changed: evaluate now
}

// binding is a ResourceBinding or ClusterResourceBinding with its schedule
// result, graceful eviction tasks and the health of its copies.
type binding struct {
	spec  *bindingSpecResolved
	queue int
	gb    gracefulevict.Binding
	// readyAt is when each scheduled copy turns (or turned) Healthy.
	readyAt map[string]time.Time
	// assessAt is when the graceful eviction controller looks again; zero:
	// only on a change.
	assessAt time.Time
	dirty    bool
}

func (b *binding) key() string { return b.spec.key() }

func (b *binding) replicas() int32 {
	var n int32
	for _, t := range b.gb.Clusters {
		n += t.Replicas
	}
	return n
}

// world is the simulated control plane: the fleet, the bindings and the
// controllers a Karmada control plane runs around the failover primitives.
// The driver goroutine and the queue workers (through the handler) change it
// under mu.
type world struct {
	mu sync.Mutex

	sc       *scenario
	clk      *simClock
	clusters []*clusterState
	byName   map[string]*clusterState
	bindings []*binding
	byKey    [2]map[string]*binding
	load     map[string]int // copies scheduled per cluster

	evaluator *taintpolicy.Evaluator
	tracker   *ratelimit.Tracker
	limiter   *ratelimit.Limiter
	queues    [2]*evictionqueue.Queue
	checker   *prescheduling.Checker
	assessor  *gracefulevict.Assessor

	// recoveries counts faulty→healthy transitions. An eviction abandoned
	// for want of a target is queued again only once a cluster has
	// recovered since, so that a hopeless item does not spend a permit on
	// every fleet change.
	recoveries int
	abandoned  map[itemID]int
	// scanAt is when a toleration runs out and the taint manager must look
	// again; scan asks for a look now.
	scanAt time.Time
	scan   bool

	// inFlight are the evictions accepted in the background, in the order
	// they finish.
	inFlight []*completion

	rec *recorder
}

// completion is a background eviction: at `at` the scheduler's answer
// lands and the queue is told Complete.
type completion struct {
	at    time.Time
	queue int
	item  evictionqueue.Item
	b     *binding
	// added is what the scheduler adds to the schedule result: new
	// clusters, or more replicas on a cluster. It is merged into the
	// result as it is when the answer lands, which other evictions of the
	// same binding may have changed meanwhile.
	added []failover.TargetCluster
	ready func(string) time.Time
}

// scheduleDelta is what result adds to base.
func scheduleDelta(base, result []failover.TargetCluster) []failover.TargetCluster {
	had := map[string]int32{}
	for _, t := range base {
		had[t.Name] = t.Replicas
	}
	var out []failover.TargetCluster
	for _, t := range result {
		r, ok := had[t.Name]
		switch {
		case !ok:
			out = append(out, t)
		case t.Replicas > r:
			out = append(out, failover.TargetCluster{Name: t.Name, Replicas: t.Replicas - r})
		}
	}
	return out
}

// mergeSchedule adds added to result.
func mergeSchedule(result, added []failover.TargetCluster) []failover.TargetCluster {
	out := slices.Clone(result)
	for _, a := range added {
		if i := slices.IndexFunc(out, func(t failover.TargetCluster) bool { return t.Name == a.Name }); i >= 0 {
			out[i].Replicas += a.Replicas
		} else {
			out = append(out, a)
		}
	}
	sortTargets(out)
	return out
}

type itemID struct{ cluster, key string }

// fleet returns a snapshot of the clusters for the pre-scheduling check.
func (w *world) fleet() []failover.Cluster {
	out := make([]failover.Cluster, len(w.clusters))
	for i, c := range w.clusters {
		out[i] = c.Cluster
	}
	return out
}

func (w *world) addCopy(b *binding, cluster string, readyAt time.Time) {
	w.load[cluster]++
	b.readyAt[cluster] = readyAt
}

// setSchedule replaces b's schedule result; new copies turn Healthy at
// readyAt(cluster).
func (w *world) setSchedule(b *binding, result []failover.TargetCluster, readyAt func(string) time.Time) {
	old := map[string]bool{}
	for _, t := range b.gb.Clusters {
		old[t.Name] = true
	}
	for _, t := range result {
		if !old[t.Name] {
			w.addCopy(b, t.Name, readyAt(t.Name))
		}
		delete(old, t.Name)
	}
	for name := range old {
		w.load[name]--
	}
	b.gb.Clusters = result
}

// readyAfter is how long a new copy of b takes to turn Healthy.
func (w *world) readyAfter(b *binding) time.Duration {
	if b.spec.ReadyAfter != nil {
		return *b.spec.ReadyAfter
	}
	return w.sc.ReadyAfter
}

// health is what member clusters report for b's copies at now: Healthy once
// the copy is ready on a Ready cluster, Unknown on a cluster that is not
// Ready, Unhealthy while it starts (or forever, for a copy that never becomes
// ready).
func (w *world) health(b *binding, now time.Time) map[string]gracefulevict.ResourceHealth {
	h := make(map[string]gracefulevict.ResourceHealth, len(b.gb.Clusters))
	for _, t := range b.gb.Clusters {
		c := w.byName[t.Name]
		switch ready := c.Condition("Ready"); {
		case ready == nil || ready.Status != metav1.ConditionTrue:
			h[t.Name] = gracefulevict.Unknown
		case b.readyAt[t.Name].After(now):
			h[t.Name] = gracefulevict.Unhealthy
		default:
			h[t.Name] = gracefulevict.Healthy
		}
	}
	return h
}

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
		if changed {
			c.dirty = true
			names = append(names, c.Name)
		}
	}
	// Copies' health follows their cluster: every open task may be decided.
	for _, b := range w.bindings {
		if len(b.gb.Tasks) > 0 {
			b.dirty = true
		}
	}
	return names
}

// taintController evaluates the clusters whose conditions changed or whose
// window has run out, and writes their taints. It returns the clusters that
// became faulty and those that recovered.
func (w *world) taintController(now time.Time) (failed, recovered []string, changes []string) {
	for _, c := range w.clusters {
		if !c.dirty && (c.nextEval.IsZero() || c.nextEval.After(now)) {
			continue
		}
		c.dirty = false
		res := w.evaluator.Evaluate(c.Cluster, now)
		c.Taints = res.Taints
		c.nextEval = time.Time{}
		if res.RequeueAfter > 0 {
			c.nextEval = now.Add(res.RequeueAfter)
		}
		for _, t := range res.Added {
			changes = append(changes, "+"+t.Key+":"+string(t.Effect)+" "+c.Name)
		}
		for _, t := range res.Removed {
			changes = append(changes, "-"+t.Key+":"+string(t.Effect)+" "+c.Name)
		}
		if len(res.Added)+len(res.Removed) > 0 {
			w.scan = true
		}
		switch faulty := failover.IsFaulty(c.Cluster); {
		case faulty && !c.faulty:
			failed = append(failed, c.Name)
		case !faulty && c.faulty:
			recovered = append(recovered, c.Name)
			w.recoveries++
		}
		c.faulty = failover.IsFaulty(c.Cluster)
	}
	return failed, recovered, changes
}

// evictAt says when binding b must leave cluster c because of c's taints,
// and false when it may stay. NoExecute evicts what does not tolerate it
// (after the toleration's tolerationSeconds); PreferNoExecute evicts only
// workloads that opted in to cluster failover (after its tolerationSeconds).
func evictAt(b *binding, c *clusterState) (time.Time, bool) {
	var at time.Time
	found := false
	take := func(t time.Time) {
		if !found || t.Before(at) {
			at, found = t, true
		}
	}
	for i := range c.Taints {
		t := &c.Taints[i]
		added := time.Time{}
		if t.TimeAdded != nil {
			added = t.TimeAdded.Time
		}
		switch t.Effect {
		case corev1.TaintEffectNoExecute:
			tolerated, forever := false, false
			var seconds int64
			for _, tol := range b.spec.Placement.ClusterTolerations {
				if !tol.ToleratesTaint(klog.Background(), t, false) {
					continue
				}
				if tol.TolerationSeconds == nil {
					forever = true
					break
				}
				if !tolerated || *tol.TolerationSeconds < seconds {
					seconds = *tol.TolerationSeconds
				}
				tolerated = true
			}
			switch {
			case forever:
			case tolerated:
				take(added.Add(time.Duration(seconds) * time.Second))
			default:
				take(added)
			}
		case failover.TaintEffectPreferNoExecute:
			if f := b.spec.Failover; f != nil {
				d := time.Duration(0)
				if f.TolerationSeconds != nil {
					d = time.Duration(*f.TolerationSeconds) * time.Second
				}
				take(added.Add(d))
			}
		}
	}
	return at, found
}

// taintManager returns, per queue, the evictions due now: every binding
// that must leave a faulty cluster. It notes when the next toleration runs
// out. The caller adds them to the queues.
func (w *world) taintManager(now time.Time) (due [2][]evictionqueue.Item) {
	if !w.scan && (w.scanAt.IsZero() || w.scanAt.After(now)) {
		return due
	}
	w.scan, w.scanAt = false, time.Time{}
	for _, b := range w.bindings {
		for _, t := range b.gb.Clusters {
			c := w.byName[t.Name]
			if !c.faulty {
				continue
			}
			at, ok := evictAt(b, c)
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
			if r, ok := w.abandoned[id]; ok && r == w.recoveries {
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
	for _, b := range w.bindings {
		if len(b.gb.Tasks) == 0 {
			b.dirty, b.assessAt = false, time.Time{}
			continue
		}
		if !b.dirty && (b.assessAt.IsZero() || b.assessAt.After(now)) {
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
		if len(a.Done) > 0 {
			// The old copies of the done tasks are deleted now.
			w.checkCopies(b)
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
	for _, c := range w.clusters {
		take(c.nextEval)
	}
	take(w.scanAt)
	if len(w.inFlight) > 0 {
		take(w.inFlight[0].at)
	}
	for _, b := range w.bindings {
		take(b.assessAt)
	}
	return next, found
}

// handler is the eviction queue's handler: the pre-scheduling check, then
// the eviction (the cluster leaves the schedule result and becomes a graceful
// eviction task) and the scheduler's answer.
func (w *world) handler(queue int) evictionqueue.Handler {
	return func(ctx context.Context, it evictionqueue.Item) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		now := w.clk.Now()
		w.rec.permit(queue, now, w.observeRate(now), w.queues[qRB].Len()+w.queues[qCRB].Len())
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
		res := w.checker.Check(prescheduling.Request{
			Placement: b.spec.Placement,
			Scheduled: b.gb.Clusters,
			Evicting:  []string{it.Cluster},
		}, w.fleet())
		if !res.Feasible {
			w.abandoned[itemID{it.Cluster, it.Key}] = w.recoveries
			w.rec.abandon(queue, b, it.Cluster, res.Reason)
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
			w.checkCopies(b)
			return evictionqueue.ErrInProgress
		}
		w.setSchedule(b, result, ready)
		b.gb.Tasks, b.gb.Generation = gb.Tasks, gb.Generation
		// The simulated scheduler answers at once.
		b.gb.ObservedGeneration = b.gb.Generation
		b.dirty = true
		w.rec.evict(queue, b, it.Cluster, before, result, w.byName, true)
		w.checkCopies(b)
		return nil
	}
}

// pendingAdditions are the scheduler's answers for b not landed yet.
func (w *world) pendingAdditions(b *binding) []failover.TargetCluster {
	var out []failover.TargetCluster
	for _, c := range w.inFlight {
		if c.b == b {
			out = mergeSchedule(out, c.added)
		}
	}
	return out
}

// completeDue lands the scheduler's answer for the background evictions due
// by now and returns them; the caller tells their queues Complete.
func (w *world) completeDue(now time.Time) []*completion {
	var done []*completion
	for len(w.inFlight) > 0 && !w.inFlight[0].at.After(now) {
		c := w.inFlight[0]
		w.inFlight = w.inFlight[1:]
		b := c.b
		before := slices.Clone(b.gb.Clusters)
		// The evicted copy left the result when the eviction was accepted;
		// count it again so that the check sees the move as a whole.
		before = append(before, failover.TargetCluster{Name: c.item.Cluster, Replicas: sumReplicas(c.added)})
		result := mergeSchedule(b.gb.Clusters, c.added)
		w.setSchedule(b, result, c.ready)
		if !slices.ContainsFunc(w.inFlight, func(o *completion) bool { return o.b == b }) {
			b.gb.ObservedGeneration = b.gb.Generation
		}
		b.dirty = true
		w.rec.evict(c.queue, b, c.item.Cluster, before, result, w.byName, false)
		w.checkCopies(b)
		w.rec.completed(now)
		done = append(done, c)
	}
	return done
}

func sumReplicas(ts []failover.TargetCluster) int32 {
	var n int32
	for _, t := range ts {
		n += t.Replicas
	}
	return n
}

// checkCopies records a workload left with no copy anywhere: none in its
// schedule result, none on its way there (a background eviction's answer
// not landed yet) and none kept by an open graceful eviction task; or a
// divided workload whose scheduled and incoming replicas do not add up.
func (w *world) checkCopies(b *binding) {
	pending := w.pendingAdditions(b)
	if len(b.gb.Clusters)+len(pending)+len(b.gb.Tasks) == 0 {
		w.rec.violation(checkLastCopy, b.key()+": no copy left anywhere")
	}
	if n := b.replicas() + sumReplicas(pending); b.spec.divided() && n != b.spec.Replicas {
		w.rec.violation(checkLastCopy, fmt.Sprintf("%s: %d replicas scheduled or incoming, want %d", b.key(), n, b.spec.Replicas))
	}
}

// observeRate reads the rate in force and records a change.
func (w *world) observeRate(now time.Time) float64 {
	r := w.limiter.Rate()
	w.rec.rate(now, r)
	return r
}

// describe names a set of clusters briefly: "use1-01…use1-06" or a count.
func describe(names []string) string {
	sort.Strings(names)
	switch len(names) {
	case 0:
		return "none"
	case 1, 2, 3:
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s … %s", names[0], names[len(names)-1])
}

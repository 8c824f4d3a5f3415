package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
	kengine "github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/metrics"
)

// The fork's application failover controller
// (karmada/controllers.ApplicationFailoverController) as fleetsim runs it
// on the driver's goroutine: the applications' own health, played from
// spec.applicationFailover.timeline, is what each binding's
// status.aggregatedStatus reports; the controller reads it
// (karmada.ApplicationObservations) with the binding's timers
// (karmada.ApplicationTimers), decides with appfailover (Policy.DecideAll),
// keeps the timers on the binding, and sends a cluster whose window has
// passed through the controller's gates, in its order: the freeze and a
// storm's hold, the bad-rollout hold (appfailover.BadRollout) unless an
// operator confirmed, a permit of the fleet rate, and the one decision path
// (engine.Evictor.EvictApplication: the binding's budget of clusters in
// transit, the pre-scheduling check, the Ledger, the task).
//
// The verdict holds the run to what the sim played, not to the library's
// timers: no failover before the copy's Unhealthy time (Unknown excluded)
// since it was last Healthy reached the window, none later than one
// recheck after it, or after a gate last held it; no failover of a
// workload Unhealthy on all its clusters (a bad rollout) until an operator
// confirmed.

// appFailoverRecheck is how soon a failover held back by the freeze, a
// storm or the rate without a time is decided again (the controller's
// 30s), and how late after its window, or after the gate that last held
// it, the verdict lets a failover come.
const appFailoverRecheck = 30 * time.Second

// appRefusalRecheck is how soon a failover the check refused (nowhere to
// go) is decided again: the controller's --refusal-recheck default.
const appRefusalRecheck = time.Minute

// appFailoverState is the application failover controller's state, and
// what the verdict needs; nil when the scenario does not turn it on.
type appFailoverState struct {
	opts      appfailover.Options
	threshold float64
	timeline  []appHealthEvent
	next      int // the next timeline event
	// bindings are those that opt in (spec.failover.application), in the
	// order of world.bindings.
	bindings []*binding
	// override is the health the timeline gives each binding's copy on a
	// cluster, when it is not the sim's own (Healthy once started); copyOnly
	// those it gave the copies running then, which a copy placed there
	// later does not take (an event without clusters).
	// confirmed the bindings whose bad rollout an operator confirmed (the
	// controller removes the confirmation once the hold no longer
	// applies), and confirmedAt when the operator last did.
	override    map[*binding]map[string]gracefulevict.ResourceHealth
	copyOnly    map[*binding]map[string]bool
	confirmed   map[*binding]bool
	confirmedAt map[*binding]time.Time
	// due is when to decide each binding again; never: on a change.
	due map[*binding]time.Time
	// copies are the sim's own account of each copy's health: the oracle.
	copies map[*binding]map[string]*appCopy
	// allSickSince is since when every copy of a binding (two or more) has
	// been Unhealthy; zero while not.
	allSickSince map[*binding]time.Time
	// holding is since when the bad-rollout hold holds each binding.
	holding map[*binding]time.Time
	held    *metrics.AppFailoverHeld

	// For the report.
	done      []appFailoverDone
	holds     []appHold
	decisions map[string]int // application_failover_total by result
	refusals  map[string]int // by workload and reason
}

// appCopy is the sim's account of one copy of a binding on a cluster: its
// health as played and since when, the Unhealthy and Unknown time it had
// since it was last Healthy (before since), when its Unhealthy time alone
// reached the window (reached) and with its Unknown time (loose), and the
// last time a gate held its failover back (heldAt; heldOpen: the last
// decision held it).
type appCopy struct {
	health             gracefulevict.ResourceHealth
	since              time.Time
	unhealthy, unknown time.Duration
	reached, loose     time.Time
	heldAt             time.Time
	heldOpen           bool
	late               bool // a violation was recorded
}

// appFailoverDone is one application failover.
type appFailoverDone struct {
	b       *binding
	cluster string
	at      time.Time
	// unhealthy and unknown are the copy's Unhealthy and Unknown time since
	// it was last Healthy, as played; counted is the library's count.
	unhealthy, unknown, counted time.Duration
	window                      time.Duration
}

// appHold is a bad-rollout hold of one binding: from, to (zero: on at the
// end), whether an operator's confirmation ended it, and why it held.
type appHold struct {
	b         *binding
	from, to  time.Time
	confirmed bool
	why       string
}

func newAppFailoverState(sc *scenario, m *metrics.Metrics) *appFailoverState {
	a := sc.AppFailover
	return &appFailoverState{
		opts: a.Options, threshold: a.Threshold, timeline: a.Timeline,
		override:  map[*binding]map[string]gracefulevict.ResourceHealth{},
		copyOnly:  map[*binding]map[string]bool{},
		confirmed: map[*binding]bool{}, confirmedAt: map[*binding]time.Time{},
		due: map[*binding]time.Time{}, copies: map[*binding]map[string]*appCopy{},
		allSickSince: map[*binding]time.Time{}, holding: map[*binding]time.Time{},
		held:      m.AppFailoverHeld(metrics.AppFailoverHeldBadRollout),
		decisions: map[string]int{}, refusals: map[string]int{},
	}
}

// unknownPolicy is the Unknown policy in force, as the library reads the
// options.
func (af *appFailoverState) unknownPolicy() appfailover.UnknownPolicy {
	p, _ := appfailover.New(appfailover.Behavior{}, af.opts) // validated when loaded
	return p.UnknownPolicy()
}

// optsIn reports Karmada's predicate: the binding has
// spec.failover.application.
func optsIn(spec *bindingSpecResolved) bool {
	return spec.Failover != nil && spec.Failover.Application != nil
}

// appWindow is b's decisionConditions.tolerationSeconds.
func appWindow(b *binding) time.Duration {
	if s := b.spec.Failover.Application.DecisionConditions.TolerationSeconds; s != nil {
		return time.Duration(*s) * time.Second
	}
	return appfailover.DefaultTolerationSeconds * time.Second
}

// appHealth is the health b's copy on cluster reports at now, as its
// member's status says it: the sim's own (Unknown on a cluster that is not
// Ready, Unhealthy while it starts, then Healthy) unless the timeline gives
// the application another on a Ready cluster.
func (w *world) appHealth(b *binding, cluster string, base gracefulevict.ResourceHealth) gracefulevict.ResourceHealth {
	if w.appf == nil || base == gracefulevict.Unknown {
		return base
	}
	if h, ok := w.appf.override[b][cluster]; ok {
		return h
	}
	return base
}

// appTimeline plays the application health events due at now, and says
// what they did.
func (s *sim) appTimeline(now time.Time) {
	af := s.w.appf
	if af == nil {
		return
	}
	t := now.Sub(s.sc.Start)
	for af.next < len(af.timeline) && af.timeline[af.next].At.Duration <= t {
		e := af.timeline[af.next]
		af.next++
		if e.Phase != "" {
			s.phases = append(s.phases, phaseMark{now, e.Phase})
			s.note(now, event{Kind: eventPhase, Message: "phase: " + e.Phase})
		}
		var names []string
		for _, b := range af.bindings {
			if b.key() != e.Workload && b.spec.Group != e.Workload {
				continue
			}
			names = append(names, b.key())
			af.due[b] = now // its status, or its annotations, changed
			if e.Confirm {
				af.confirmed[b], af.confirmedAt[b] = true, now
				continue
			}
			s.w.setAppHealth(b, e, now)
		}
		what := e.Workload
		if len(names) > 1 {
			what = fmt.Sprintf("%s (%d bindings)", e.Workload, len(names))
		}
		if e.Confirm {
			s.note(now, event{Kind: eventAppHealth, Count: len(names),
				Message: fmt.Sprintf("an operator confirms that %s's failures are real (failover.karmada.io/confirm-application-failover)", what)})
			continue
		}
		clusters := s.w.appEventClusters(e, names)
		where := "every cluster it runs on"
		if e.Clusters != nil {
			where = describeClusters(clusters, s.fleetNames)
		}
		s.note(now, event{Kind: eventAppHealth, Count: len(names), Clusters: clusters,
			Message: fmt.Sprintf("application health: %s %s on %s", what, e.Health, where)})
	}
}

// appEventClusters are the clusters e names: those it selects, or those
// the bindings named run on.
func (w *world) appEventClusters(e appHealthEvent, keys []string) []string {
	var out []string
	if e.Clusters != nil {
		for _, c := range w.clusters {
			if ok, _ := e.Clusters.Matches(c.Cluster); ok {
				out = append(out, c.Name)
			}
		}
		return out
	}
	for _, k := range keys {
		for _, q := range w.byKey {
			if b := q[k]; b != nil {
				for _, t := range b.gb.Clusters {
					out = append(out, t.Name)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// setAppHealth gives b's copies on the clusters e selects, now and later,
// the health e says, or without clusters, the copies it runs now; Healthy
// gives them back the sim's own.
func (w *world) setAppHealth(b *binding, e appHealthEvent, now time.Time) {
	af := w.appf
	m := af.override[b]
	if m == nil {
		m = map[string]gracefulevict.ResourceHealth{}
		af.override[b] = m
	}
	var clusters []string
	switch {
	case e.Clusters != nil:
		for _, c := range w.clusters {
			if ok, _ := e.Clusters.Matches(c.Cluster); ok {
				clusters = append(clusters, c.Name)
			}
		}
	case e.Health == gracefulevict.Healthy:
		clusters = slices.Collect(maps.Keys(m))
	default:
		for _, t := range b.gb.Clusters {
			clusters = append(clusters, t.Name)
		}
	}
	only := af.copyOnly[b]
	if only == nil {
		only = map[string]bool{}
		af.copyOnly[b] = only
	}
	for _, c := range clusters {
		if e.Health == gracefulevict.Healthy {
			delete(m, c)
			delete(only, c)
		} else {
			m[c] = e.Health
			only[c] = e.Clusters == nil
		}
	}
	w.touch(b) // the graceful eviction controller reads the same health
}

// appPlay brings the sim's account of each opted-in binding's copies up to
// now, writes what they report into the binding's status, and makes the
// bindings whose copies changed due now, as their status update would.
func (w *world) appPlay(now time.Time) {
	af := w.appf
	for _, b := range af.bindings {
		h := w.health(b, now)
		live := map[string]bool{}
		for _, t := range b.gb.Clusters {
			if !slices.ContainsFunc(b.gb.Tasks, func(k gracefulevict.Task) bool { return k.FromCluster == t.Name }) {
				live[t.Name] = true
			}
		}
		copies := af.copies[b]
		if copies == nil {
			copies = map[string]*appCopy{}
			af.copies[b] = copies
		}
		window := appWindow(b)
		changed := false
		for cluster, c := range copies {
			if !live[cluster] {
				w.appLate(b, cluster, c, now, window)
				delete(copies, cluster)
				changed = true
			}
		}
		// A copy that left takes the health the timeline gave it alone
		// along: one placed there later starts afresh.
		for cluster, only := range af.copyOnly[b] {
			if only && !slices.ContainsFunc(b.gb.Clusters, func(t failover.TargetCluster) bool { return t.Name == cluster }) {
				delete(af.override[b], cluster)
				delete(af.copyOnly[b], cluster)
			}
		}
		sick := len(live) >= 2
		for _, cluster := range slices.Sorted(maps.Keys(live)) {
			c := copies[cluster]
			if c == nil {
				c = &appCopy{health: h[cluster], since: now}
				copies[cluster] = c
				changed = true
			} else if c.health != h[cluster] {
				c.advance(now, window)
				c.health, c.since = h[cluster], now
				if c.health == gracefulevict.Healthy {
					c.unhealthy, c.unknown, c.reached, c.loose = 0, 0, time.Time{}, time.Time{}
					c.heldOpen = false
				}
				changed = true
			}
			w.appLate(b, cluster, c, now, window)
			sick = sick && c.health == gracefulevict.Unhealthy
		}
		switch since := af.allSickSince[b]; {
		case sick && since.IsZero():
			af.allSickSince[b] = now
		case !sick:
			delete(af.allSickSince, b)
		}
		if changed {
			af.due[b] = now
		}
	}
}

// advance closes c's stretch of its health at now, and notes when its
// counted time reached window within it.
func (c *appCopy) advance(now time.Time, window time.Duration) {
	d := now.Sub(c.since)
	switch c.health {
	case gracefulevict.Unhealthy:
		if c.reached.IsZero() && c.unhealthy+d >= window {
			c.reached = c.since.Add(window - c.unhealthy)
		}
		if c.loose.IsZero() && c.unhealthy+c.unknown+d >= window {
			c.loose = c.since.Add(max(window-c.unhealthy-c.unknown, 0))
		}
		c.unhealthy += d
	case gracefulevict.Unknown:
		if c.loose.IsZero() && c.unhealthy+c.unknown+d >= window {
			c.loose = c.since.Add(max(window-c.unhealthy-c.unknown, 0))
		}
		c.unknown += d
	}
	c.since = now
}

// reachedBy is when c's Unhealthy time alone (strict) or with its Unknown
// time reached window, by now; zero: not yet.
func (c *appCopy) reachedBy(now time.Time, window time.Duration, strict bool) time.Time {
	probe := *c
	probe.advance(now, window)
	if strict {
		return probe.reached
	}
	return probe.loose
}

// appLate holds the copy of b on cluster to its deadline: once its
// Unhealthy time reached the window, it fails over within one recheck,
// or within one recheck of the last time a gate held it back. A start-up
// grace can only make it later, and is not held to this.
func (w *world) appLate(b *binding, cluster string, c *appCopy, now time.Time, window time.Duration) {
	if c.late || c.heldOpen || w.appf.opts.StartupGraceSeconds > 0 {
		return
	}
	reached := c.reachedBy(now, window, true)
	if reached.IsZero() {
		return
	}
	deadline := maxTime(reached, c.heldAt).Add(appFailoverRecheck)
	if now.After(deadline) {
		c.late = true
		w.rec.violation(checkAppWindow, fmt.Sprintf("%s on %s: its Unhealthy time (Unknown excluded) reached the %v window at %s, and it had not failed over by %s, nor been held back since",
			b.key(), cluster, window, reached.Format(time.TimeOnly), deadline.Format(time.TimeOnly)))
	}
}

// appFailoverController decides the bindings due at now, in the order of
// world.bindings, and returns the failovers it wrote and the bad-rollout
// holds it started.
func (w *world) appFailoverController(ctx context.Context, now time.Time) (done []appFailoverDone, holds []appHold) {
	af := w.appf
	if af == nil {
		return nil, nil
	}
	w.appPlay(now)
	nDone, nHolds := len(af.done), len(af.holds)
	// A failover written brings its binding back at once (its update):
	// decided again on what the write left, until nothing is due now.
	for range 1000 {
		var due []*binding
		for _, b := range af.bindings {
			if at, ok := af.due[b]; ok && !at.After(now) {
				due = append(due, b)
			}
		}
		if len(due) == 0 {
			break
		}
		for _, b := range due {
			af.due[b] = never
			w.decideApp(ctx, b, now)
		}
		w.appPlay(now)
	}
	return af.done[nDone:], af.holds[nHolds:]
}

// decideApp is one reconcile of b by the application failover controller.
func (w *world) decideApp(ctx context.Context, b *binding, now time.Time) {
	af := w.appf
	b.write()
	meta, spec, status := b.parts()
	status.AggregatedStatus = status.AggregatedStatus[:0]
	h := w.health(b, now)
	for _, t := range spec.Clusters {
		status.AggregatedStatus = append(status.AggregatedStatus, workv1alpha2.AggregatedStatusItem{
			ClusterName: t.Name, Applied: true, Health: workv1alpha2.ResourceHealth(h[t.Name]),
		})
	}
	behavior, err := karmada.FromApplicationFailoverBehavior(spec.Failover.Application)
	var policy appfailover.Policy
	if err == nil {
		policy, err = appfailover.New(*behavior, af.opts)
	}
	var seen map[string]appfailover.Observation
	if err == nil {
		seen, err = karmada.ApplicationObservations(spec, status)
	}
	if err != nil {
		w.rec.violation(checkAppWindow, fmt.Sprintf("%s: the application failover controller cannot read it: %v", b.key(), err))
		return
	}
	rec, err := karmada.ApplicationTimers(meta.GetAnnotations())
	if err != nil {
		w.rec.violation(checkAppWindow, fmt.Sprintf("%s: its timers cannot be read: %v", b.key(), err))
	}
	res := policy.DecideAll(rec, seen, now)
	annotations := karmada.WithApplicationTimers(meta.GetAnnotations(), res.Record)
	meta.SetAnnotations(annotations)
	if res.After > 0 {
		af.due[b] = now.Add(res.After)
	}
	var inTransit []string
	for _, t := range spec.GracefulEvictionTasks {
		if t.Producer == kengine.ApplicationFailoverProducer {
			inTransit = append(inTransit, t.FromCluster)
		}
	}
	holds, why := appfailover.BadRollout(seen, res, inTransit, af.threshold)
	if af.confirmed[b] && !holds {
		af.confirmed[b] = false // the next bad rollout holds again
	}
	held := len(res.FailOver) > 0 && holds && !af.confirmed[b]
	w.appHolding(b, held, why, now)
	if len(res.FailOver) == 0 {
		return
	}
	copies := af.copies[b]
	// A copy not past its window is held back by nothing: the verdict's
	// deadline counts from here again.
	for cluster, c := range copies {
		if c.heldOpen && !slices.Contains(res.FailOver, cluster) {
			c.heldOpen, c.heldAt = false, now
		}
	}
	hold := func(clusters ...string) {
		for _, c := range clusters {
			if cp := copies[c]; cp != nil {
				cp.heldAt, cp.heldOpen = now, true
			}
		}
	}
	// Gates 1 and 2: the freeze, a storm, a bad rollout.
	switch {
	case w.frozen, w.limiter.StormHold():
		hold(res.FailOver...)
		w.appDecided(metrics.AppFailoverHeldBack, len(res.FailOver))
		af.due[b] = earliestTime(af.due[b], now.Add(appFailoverRecheck))
		return
	case held:
		// Decided again when its health changes or an operator confirms.
		hold(res.FailOver...)
		w.appDecided(metrics.AppFailoverHeldBack, len(res.FailOver))
		return
	}
	// Gates 3 and 4, one cluster at a time: the first that fails over is
	// written; the others are decided again on what it left.
	for _, cluster := range res.FailOver {
		if cp := copies[cluster]; cp != nil && cp.heldOpen {
			cp.heldOpen, cp.heldAt = false, now
		}
		left := slices.DeleteFunc(slices.Clone(res.Record), func(t appfailover.Timer) bool { return t.Cluster == cluster })
		again, written := w.appFailOver(ctx, b, karmada.WithApplicationTimers(annotations, left), cluster, res.Decisions[cluster], now)
		if written {
			af.due[b] = now
			return
		}
		hold(cluster)
		if again > 0 {
			af.due[b] = earliestTime(af.due[b], now.Add(again))
		}
	}
}

// appFailOver takes a permit and runs the decision path for the failover
// of b from cluster, as the controller's failOver does; written says b
// left cluster, else again is when to decide again (0: on a change).
func (w *world) appFailOver(ctx context.Context, b *binding, annotations map[string]string, cluster string, d appfailover.Decision, now time.Time) (again time.Duration, written bool) {
	af := w.appf
	_, giveBack, ok, at := w.limiter.TakeDomainAt(now, []string{w.domainOf(cluster)})
	if !ok {
		w.appDecided(metrics.AppFailoverHeldBack, 1)
		if at.IsZero() {
			return appFailoverRecheck, false
		}
		return at.Sub(now), false
	}
	c := w.byName[cluster]
	step, err := w.evictor.EvictApplication(ctx, now, b.key(), b.obj, c.kc, nil, d)
	if err != nil || step.Action != kengine.EvictionEvict {
		giveBack() // the rate limits failovers written, not decisions
	}
	if err != nil {
		w.appDecided(metrics.AppFailoverError, 1)
		return appFailoverRecheck, false
	}
	switch step.Action {
	case kengine.EvictionSkip, kengine.EvictionStays:
		return 0, false
	case kengine.EvictionInvalid:
		w.rec.violation(checkAppWindow, fmt.Sprintf("%s from %s: %v", b.key(), cluster, step.Err))
		return 0, false
	case kengine.EvictionWaitForBudget:
		w.appDecided(metrics.AppFailoverWaiting, 1)
		return transitRetry, false // and when one of its tasks ends
	case kengine.EvictionWaitForRoom, kengine.EvictionUnconfirmed:
		w.appDecided(metrics.AppFailoverWaiting, 1)
		return min(max(step.Result.RetryAfter, time.Second), clusterStatusUpdateFrequency), false
	case kengine.EvictionRefused:
		w.appDecided(metrics.AppFailoverRefused, 1)
		af.refusals[b.spec.Group+": "+step.Result.Reason]++
		return appRefusalRecheck, false
	case kengine.EvictionEvict:
	default:
		w.rec.violation(checkAppWindow, fmt.Sprintf("%s from %s: unknown step %v", b.key(), cluster, step.Action))
		return 0, false
	}
	// The controller writes the binding with its timers, the cluster's
	// gone; the scheduler places the replicas.
	meta, _, _ := b.parts()
	meta.SetAnnotations(annotations)
	w.rec.permit(b.queue, now, w.observeRate(now), w.queues[qRB].Len()+w.queues[qCRB].Len(), w.domainOf(cluster))
	p, err := w.placeWritten(b, cluster, nil, now)
	if err != nil {
		step.Hold.Release()
		w.rec.setResult(resultSkipped)
		w.rec.violation(checkAppWindow, fmt.Sprintf("%s: the failover's write cannot be read: %v", b.key(), err))
		return appFailoverRecheck, false
	}
	w.applyPlaced(b, p)
	w.rec.evict(b.queue, b, cluster, p.before, p.result, w.byName, true)
	w.rec.inTransit(b, len(gracefulevict.InTransit(b.gb.Tasks)))
	w.checkCopies(b)
	w.appDecided(metrics.AppFailoverFailedOver, 1)
	w.appFailedOver(b, cluster, d, now)
	return 0, true
}

// appFailedOver records the failover of b from cluster for the report, and
// holds it to the verdict: not before the copy's Unhealthy time reached
// the window (with unknown Count, its Unknown time may count too), nor
// while b was Unhealthy on all its clusters unless an operator confirmed
// since.
func (w *world) appFailedOver(b *binding, cluster string, d appfailover.Decision, now time.Time) {
	af := w.appf
	window := appWindow(b)
	done := appFailoverDone{b: b, cluster: cluster, at: now, counted: d.Counted, window: window}
	if c := af.copies[b][cluster]; c != nil {
		probe := *c
		probe.advance(now, window)
		done.unhealthy, done.unknown = probe.unhealthy, probe.unknown
		strict := af.opts.Unknown != appfailover.UnknownCounts
		if r := c.reachedBy(now, window, strict); r.IsZero() || r.After(now) {
			counted := "Unknown excluded"
			if !strict {
				counted = "Unknown included, as unknown Count may count it"
			}
			w.rec.violation(checkAppWindow, fmt.Sprintf("%s failed over from %s at %s, Unhealthy %v (%s) of its %v window",
				b.key(), cluster, now.Format(time.TimeOnly), done.unhealthy, counted, window))
		}
	}
	if since := af.allSickSince[b]; !since.IsZero() {
		if at := af.confirmedAt[b]; at.IsZero() || at.Before(since) {
			w.rec.violation(checkAppBadRollout, fmt.Sprintf("%s failed over from %s at %s, Unhealthy on all its %d clusters since %s, not confirmed",
				b.key(), cluster, now.Format(time.TimeOnly), len(af.copies[b]), since.Format(time.TimeOnly)))
		}
	}
	af.done = append(af.done, done)
}

// appHolding records whether the bad-rollout hold holds b now.
func (w *world) appHolding(b *binding, held bool, why string, now time.Time) {
	af := w.appf
	af.held.Set(b.key(), held)
	from, on := af.holding[b]
	switch {
	case held && !on:
		af.holding[b] = now
		af.holds = append(af.holds, appHold{b: b, from: now, why: why})
	case !held && on:
		delete(af.holding, b)
		for i := len(af.holds) - 1; i >= 0; i-- {
			if h := &af.holds[i]; h.b == b && h.from.Equal(from) {
				h.to, h.confirmed = now, af.confirmed[b]
				break
			}
		}
	}
}

// appDecided counts n decisions with result in application_failover_total.
func (w *world) appDecided(result string, n int) {
	for range n {
		w.appf.decisions[result]++
		w.metrics.ApplicationFailover(result)
	}
}

// appTasksEnded tells the application failover controller that tasks of b
// ended: a failover waiting for its budget is decided again at once.
func (w *world) appTasksEnded(b *binding, now time.Time) {
	if af := w.appf; af != nil {
		if _, ok := af.due[b]; ok {
			af.due[b] = now
		}
	}
}

// appNextWake is the earliest time after now at which the application
// failover controller has work: a timeline event, a binding due, a copy
// turning Healthy.
func (w *world) appNextWake(now time.Time, take func(time.Time)) {
	af := w.appf
	if af == nil {
		return
	}
	if af.next < len(af.timeline) {
		take(w.sc.Start.Add(af.timeline[af.next].At.Duration))
	}
	for _, b := range af.bindings {
		if at, ok := af.due[b]; ok && at != never {
			take(at)
		}
		for _, t := range b.gb.Clusters {
			if r := b.readyAt[t.Name]; r.After(now) && r != never {
				take(r)
			}
		}
	}
}

// appCheckEnd holds every copy still there at the end to its deadline.
func (s *sim) appCheckEnd() {
	af := s.w.appf
	if af == nil {
		return
	}
	now := s.clk.Now()
	s.w.appPlay(now)
	for _, b := range af.bindings {
		for _, cluster := range slices.Sorted(maps.Keys(af.copies[b])) {
			s.w.appLate(b, cluster, af.copies[b][cluster], now, appWindow(b))
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// earliestTime is the earlier of a and b, never meaning none.
func earliestTime(a, b time.Time) time.Time {
	if a == never || b.Before(a) {
		return b
	}
	return a
}

// appFailoverReport is what the summary says of the application failovers.
type appFailoverReport struct {
	Unknown   appfailover.UnknownPolicy
	Threshold float64
	Failovers []appFailoverLine
	Holds     []appHoldLine
	Decisions map[string]int
	Refused   map[string]int
}

// appFailoverLine is one failover, as the report says it.
type appFailoverLine struct {
	Binding, Cluster            string
	At                          time.Duration
	Unhealthy, Unknown, Counted time.Duration
	Window                      time.Duration
}

// appHoldLine is one bad-rollout hold, as the report says it: To is -1
// while it holds at the end; FailedOver counts the binding's failovers
// while it held (none, by the verdict), After those after it.
type appHoldLine struct {
	Binding           string
	From, To          time.Duration
	Confirmed         bool
	FailedOver, After int
	Why               string
}

func (s *sim) appFailoverReport() *appFailoverReport {
	af := s.w.appf
	if af == nil {
		return nil
	}
	r := &appFailoverReport{Unknown: af.unknownPolicy(), Threshold: af.threshold, Decisions: af.decisions, Refused: af.refusals}
	for _, d := range af.done {
		r.Failovers = append(r.Failovers, appFailoverLine{Binding: d.b.key(), Cluster: d.cluster, At: d.at.Sub(s.sc.Start),
			Unhealthy: d.unhealthy, Unknown: d.unknown, Counted: d.counted, Window: d.window})
	}
	for _, h := range af.holds {
		l := appHoldLine{Binding: h.b.key(), From: h.from.Sub(s.sc.Start), To: -1, Confirmed: h.confirmed, Why: h.why}
		if !h.to.IsZero() {
			l.To = h.to.Sub(s.sc.Start)
		}
		for _, d := range af.done {
			switch {
			case d.b != h.b || d.at.Before(h.from):
			case h.to.IsZero() || d.at.Before(h.to):
				l.FailedOver++
			default:
				l.After++
			}
		}
		r.Holds = append(r.Holds, l)
	}
	return r
}

func printAppFailover(out io.Writer, r *appFailoverReport) {
	if r == nil {
		return
	}
	fmt.Fprintf(out, "application failover (unknown %s, bad-rollout threshold %v): %s\n", r.Unknown, r.Threshold,
		plural(len(r.Failovers), "failover", "failovers"))
	for _, f := range r.Failovers {
		unknown := ""
		if f.Unknown > 0 {
			unknown = fmt.Sprintf(", %v Unknown not counted", f.Unknown)
		}
		fmt.Fprintf(out, "  %s %s from %s: Unhealthy %v of its %v window%s\n", fmtClock(f.At), f.Binding, f.Cluster, f.Unhealthy, f.Window, unknown)
	}
	for _, h := range r.Holds {
		to, how := "the end", "still held"
		if h.To >= 0 {
			to, how = fmtClock(h.To), "recovered"
			if h.Confirmed {
				how = "an operator confirmed"
			}
		}
		fmt.Fprintf(out, "  bad-rollout hold of %s %s–%s (%s): %s while held, %s after\n", h.Binding, fmtClock(h.From), to, how,
			plural(h.FailedOver, "failover", "failovers"), plural(h.After, "failover", "failovers"))
	}
	if len(r.Decisions) > 0 {
		fmt.Fprintf(out, "  decisions: %s\n", fmtMap(r.Decisions))
	}
	for _, k := range slices.Sorted(maps.Keys(r.Refused)) {
		fmt.Fprintf(out, "  refused (nowhere to go): %d %s\n", r.Refused[k], k)
	}
}

// appWorkloads lists, for the header, the workloads that opt in.
func appWorkloads(bs []*binding) string {
	var groups []string
	for _, b := range bs {
		groups = append(groups, b.spec.Group)
	}
	groups = slices.Compact(groups)
	return strings.Join(groups, ", ")
}

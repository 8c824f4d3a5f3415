package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/gracefulevict"
	kengine "github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/metrics"
)

// The fork's failback controller (karmada/controllers.FailbackController)
// as fleetsim runs it on the driver's goroutine, on the engine's planner
// (engine.PlanFailback: the record each eviction writes, the origin's
// window, Karmada's algorithm asked for a fresh placement, the Ledger)
// behind the gates the controller puts before a write: the freeze, a
// storm's hold, an eviction of the binding queued or in flight, the
// fleet-wide cap on failbacks in flight, the binding's budget of clusters
// in transit, a permit of the fleet rate.

// failbackRecheck is how soon a failback held back, or not placed, is
// decided again: the controller's 30s.
const failbackRecheck = 30 * time.Second

// failbackState is the failback controller's state; nil when the scenario
// does not turn failback on.
type failbackState struct {
	window      time.Duration
	maxInFlight int
	// due are the bindings with a failover record and when to decide
	// again; never: on a change of a cluster's health or of their tasks.
	due map[*binding]time.Time
	// flights are the failbacks whose tasks are open.
	flights map[*binding]failbackFlight
	// waiting is why each binding that has not gone back waits:
	// failback_waiting.
	waiting *metrics.FailbackWaiters

	// For the verdict. origins are the clusters each binding was evicted
	// from; back the failbacks done, in order; notPlaced the last reason a
	// binding's failback was not placed; peak the most failbacks in flight.
	origins   map[*binding][]string
	back      []failbackDone
	notPlaced map[*binding]string
	peak      int
	decisions map[string]int // failback_total by result
}

// failbackFlight is a failback under way: where to, since when, and the
// binding's ready replicas when it began.
type failbackFlight struct {
	origin string
	at     time.Time
	ready  int32
}

// failbackDone is one failback: the binding, the origin, when, and when
// the origin's window had ended.
type failbackDone struct {
	b         *binding
	origin    string
	at        time.Time
	windowEnd time.Time
}

func newFailbackState(window time.Duration, maxInFlight int, m *metrics.Metrics) *failbackState {
	return &failbackState{
		window: window, maxInFlight: maxInFlight,
		due: map[*binding]time.Time{}, flights: map[*binding]failbackFlight{},
		waiting: m.FailbackWaiters(),
		origins: map[*binding][]string{}, notPlaced: map[*binding]string{}, decisions: map[string]int{},
	}
}

// failedOver tells the failback controller that b was evicted from
// cluster: its record names it now.
func (w *world) failedOver(b *binding, cluster string, now time.Time) {
	fb := w.failback
	if fb == nil {
		return
	}
	if !slices.Contains(fb.origins[b], cluster) {
		fb.origins[b] = append(fb.origins[b], cluster)
	}
	fb.due[b] = now
}

// failbackWake makes every binding with a record due now: a cluster's
// health changed, and an origin's window may have started or broken.
func (w *world) failbackWake(now time.Time) {
	if w.failback == nil {
		return
	}
	for b := range w.failback.due {
		w.failback.due[b] = now
	}
}

// noteHealth records, for the verdict, since when c has been Ready without
// a break (the timeline's own time of the change, not the library's
// reading of it) and whether it carries a taint that evicts, and wakes the
// failback controller when either changes.
func (w *world) noteHealth(c *clusterState, now time.Time) {
	readySince := time.Time{}
	if r := c.Condition("Ready"); r != nil && r.Status == metav1.ConditionTrue {
		readySince = c.readySince
		if readySince.IsZero() {
			readySince = now
		}
	}
	tainted := evictingTaint(c)
	if !readySince.Equal(c.readySince) || tainted != c.tainted {
		c.readySince, c.tainted = readySince, tainted
		w.failbackWake(now)
	}
}

// evictingTaint reports whether c carries a NoExecute or PreferNoExecute
// taint: no failback goes to it.
func evictingTaint(c *clusterState) bool {
	return slices.ContainsFunc(c.Taints, func(t corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute || t.Effect == failover.TaintEffectPreferNoExecute
	})
}

// failbackController decides the failbacks due at now, in the order of
// world.bindings, and returns those it sent back.
func (w *world) failbackController(now time.Time) []failbackDone {
	fb := w.failback
	if fb == nil {
		return nil
	}
	done := len(fb.back)
	var due []*binding
	for b, at := range fb.due {
		if !at.After(now) {
			due = append(due, b)
		}
	}
	slices.SortFunc(due, func(a, b *binding) int { return a.idx - b.idx })
	for _, b := range due {
		fb.due[b] = never
		w.decideFailback(b, now)
	}
	w.metrics.FailbacksInFlight(len(fb.flights))
	return fb.back[done:]
}

func (w *world) decideFailback(b *binding, now time.Time) {
	fb := w.failback
	b.write()
	next := b.obj.DeepCopyObject()
	step, err := kengine.PlanFailback(kengine.FailbackOptions{Fleet: w.fleet, Scheduler: w.scheduler, Window: fb.window, Ledger: w.ledger}, now, next)
	if err != nil {
		w.rec.violation(checkFailbackWindow, fmt.Sprintf("%s: the failback controller cannot read it: %v", b.key(), err))
		delete(fb.due, b)
		w.failbackWait(b, "")
		return
	}
	switch step.Action {
	case kengine.FailbackNone:
		b.obj = next // the record, cleaned of what is moot
		delete(fb.due, b)
		w.failbackWait(b, "")
		return
	case kengine.FailbackWait:
		b.obj = next
		if step.After > 0 {
			fb.due[b] = now.Add(step.After)
		}
		w.failbackWait(b, metrics.FailbackWaitingStabilizing)
		return
	case kengine.FailbackNotPlaced:
		b.obj = next
		fb.due[b] = now.Add(failbackRecheck)
		fb.notPlaced[b] = step.Why
		w.failbackDecided(b, metrics.FailbackNotPlaced)
		return
	}
	held := w.failbackHeldBack(b, step, now)
	if held == "" {
		if _, _, ok, at := w.limiter.TakeDomainAt(now, []string{w.domainOf(step.Origin.Cluster)}); !ok {
			held = "the rate"
			if !at.IsZero() {
				fb.due[b] = at
			}
		}
	}
	if held != "" {
		step.Hold.Release()
		if fb.due[b] == never {
			fb.due[b] = now.Add(failbackRecheck)
		}
		w.failbackDecided(b, metrics.FailbackHeldBack)
		return
	}
	w.rec.permit(b.queue, now, w.observeRate(now), w.queues[qRB].Len()+w.queues[qCRB].Len(), w.domainOf(step.Origin.Cluster))
	w.rec.setResult(resultFailedBack)
	w.failBack(b, next, step, now)
}

// failbackHeldBack says what holds the failback of b back now, as the
// controller's gates do; "" when nothing does.
func (w *world) failbackHeldBack(b *binding, step kengine.FailbackStep, now time.Time) string {
	fb := w.failback
	switch {
	case w.frozen:
		return "frozen"
	case w.limiter.StormHold():
		return "storm hold"
	case len(w.queues[b.queue].Flights(b.key())) > 0 || len(w.pendingAdditions(b)) > 0:
		return "an eviction in flight"
	case slices.ContainsFunc(b.gb.Clusters, func(t failover.TargetCluster) bool { return w.byName[t.Name].faulty }):
		return "a faulty cluster in its schedule result"
	case len(fb.flights) >= fb.maxInFlight:
		return "the failbacks in flight"
	case b.spec.Budget > 0 && len(step.Leaving) > int(b.spec.Budget):
		return "its budget of clusters in transit"
	}
	return ""
}

// failBack writes the failback the planner decided, as the API server
// takes the controller's write: the binding's object is next, its copies
// on the clusters it leaves in tasks; then Karmada's scheduler places it
// afresh (spec.rescheduleTriggeredAt), the copies going back start, and
// the graceful eviction controller keeps the leaving ones until they are
// healthy.
func (w *world) failBack(b *binding, next runtime.Object, step kengine.FailbackStep, now time.Time) {
	fb := w.failback
	ready := w.readyReplicas(b, now)
	b.obj = next
	written, err := b.read()
	if err != nil {
		w.rec.violation(checkFailbackWindow, fmt.Sprintf("%s: the failback's write cannot be read: %v", b.key(), err))
		return
	}
	_, _, status := b.parts()
	before := metav1.NewTime(now.Add(-time.Second))
	status.LastScheduledTime = &before
	gb := b.gb
	gb.Clusters, gb.Tasks, gb.Generation = written.Clusters, written.Tasks, b.gb.Generation+1
	result, err := w.schedule(b, gb)
	scheduled := metav1.NewTime(now)
	status.LastScheduledTime = &scheduled
	if err != nil {
		w.rec.violation(checkFailbackPredicted, fmt.Sprintf("%s: the planner sent it back to %s, where Karmada's scheduler cannot place it: %v", b.key(), step.Origin.Cluster, err))
		result = gb.Clusters
	}
	if got, want := targetsString(result), placementString(step.Placement); got != want {
		w.rec.violation(checkFailbackPredicted, fmt.Sprintf("%s: predicted %s, Karmada's scheduler placed %s", b.key(), want, got))
	}
	w.setSchedule(b, result, func(cluster string) time.Time {
		if slices.ContainsFunc(gb.Tasks, func(t gracefulevict.Task) bool { return t.FromCluster == cluster }) {
			return now // its old copy still runs
		}
		if d := w.readyAfter(b); d >= 0 {
			return now.Add(d)
		}
		return never
	})
	b.gb.Tasks, b.gb.Generation, b.gb.ObservedGeneration = gb.Tasks, gb.Generation, gb.Generation
	w.touch(b)
	w.checkCopies(b)

	if c := w.byName[step.Origin.Cluster]; c.readySince.IsZero() || now.Sub(c.readySince) < fb.window || c.tainted {
		w.rec.violation(checkFailbackWindow, fmt.Sprintf("%s back to %s at %s, which had been Ready since %s (the window: %v), tainted: %v",
			b.key(), c.Name, now.Format(time.TimeOnly), fmtSince(c.readySince), fb.window, c.tainted))
	}
	windowEnd := w.byName[step.Origin.Cluster].readySince.Add(fb.window)
	fb.back = append(fb.back, failbackDone{b: b, origin: step.Origin.Cluster, at: now, windowEnd: windowEnd})
	delete(fb.notPlaced, b)
	fb.flights[b] = failbackFlight{origin: step.Origin.Cluster, at: now, ready: ready}
	if n := len(fb.flights); n > fb.peak {
		fb.peak = n
		if n > fb.maxInFlight {
			w.rec.violation(checkFailbackCap, fmt.Sprintf("%d failbacks in flight at %s, more than the cap of %d", n, now.Format(time.TimeOnly), fb.maxInFlight))
		}
	}
	w.failbackDecided(b, metrics.FailbackFailedBack)
	w.metrics.FailbacksInFlight(len(fb.flights))
	// The record may name other origins: decided again when this one's
	// tasks end.
	fb.due[b] = never
}

// failbackTasksEnded tells the failback controller that tasks of b ended:
// a failback's last one ends its flight, whose ready replicas the verdict
// holds to what the binding had when it began.
func (w *world) failbackTasksEnded(b *binding, now time.Time) {
	fb := w.failback
	if fb == nil {
		return
	}
	if f, ok := fb.flights[b]; ok && !slices.ContainsFunc(b.gb.Tasks, func(t gracefulevict.Task) bool { return t.Producer == kengine.FailbackProducer }) {
		delete(fb.flights, b)
		if got := w.readyReplicas(b, now); got < f.ready {
			w.rec.violation(checkFailbackReady, fmt.Sprintf("%s: %d ready replicas when its failback to %s ended at %s, %d when it began",
				b.key(), got, f.origin, now.Format(time.TimeOnly), f.ready))
		}
		w.metrics.FailbacksInFlight(len(fb.flights))
	}
	if _, ok := fb.due[b]; ok {
		fb.due[b] = now
	}
}

// readyReplicas are b's replicas running Healthy now: on its scheduled
// clusters, and on the clusters its open tasks keep (their copies run
// until the task ends, Healthy while their cluster is Ready).
func (w *world) readyReplicas(b *binding, now time.Time) int32 {
	// A copy of a workload without replicas (a Namespace, a CRD) counts
	// as one.
	weight := func(divided *int32) int32 {
		switch {
		case b.spec.divided() && divided != nil:
			return *divided
		case b.spec.divided():
			return 0
		}
		return max(b.spec.Replicas, 1)
	}
	var n int32
	h := w.health(b, now)
	for _, t := range b.gb.Clusters {
		if h[t.Name] == gracefulevict.Healthy {
			n += weight(&t.Replicas)
		}
	}
	for _, t := range b.gb.Tasks {
		if r := w.byName[t.FromCluster].Condition("Ready"); r != nil && r.Status == metav1.ConditionTrue {
			n += weight(t.Replicas)
		}
	}
	return n
}

// failbackDecided counts a decision of b's failback; it waits on for the
// matching reason unless it went back.
func (w *world) failbackDecided(b *binding, result string) {
	w.failback.decisions[result]++
	w.metrics.Failback(result)
	switch result {
	case metrics.FailbackNotPlaced:
		w.failbackWait(b, metrics.FailbackWaitingNotPlaced)
	case metrics.FailbackHeldBack:
		w.failbackWait(b, metrics.FailbackWaitingHeldBack)
	default:
		w.failbackWait(b, "")
	}
}

// failbackWait records why b waits to go back ("": it does not) in
// failback_waiting.
func (w *world) failbackWait(b *binding, reason string) {
	w.failback.waiting.Set(b.key(), reason)
}

// checkFailbacks holds the run to the failback promise: every binding
// that failed over from a cluster healthy since long enough before the end
// (the window, a recheck, and the time the rate needs for them all) is
// back there (or in its first clusterAffinities term: backOn), but those a
// fresh placement would not put back (listed); at least 99% of them.
func (s *sim) checkFailbacks() {
	fb := s.w.failback
	if fb == nil {
		return
	}
	end := s.clk.Now()
	type pair struct {
		b      *binding
		origin string
	}
	var eligible []pair
	for _, b := range s.w.bindings {
		for _, o := range fb.origins[b] {
			if c := s.w.byName[o]; !c.readySince.IsZero() && !c.tainted {
				eligible = append(eligible, pair{b, o})
			}
		}
	}
	rate := s.cfg.ResourceEvictionRate
	allowance := fb.window + failbackRecheck
	if rate > 0 {
		allowance += time.Duration(float64(len(eligible)) / rate * float64(time.Second))
	}
	n, missing := 0, []string{}
	for _, p := range eligible {
		if end.Sub(s.w.byName[p.origin].readySince) < allowance {
			continue // too late in the run to hold it to
		}
		if _, ok := s.w.failback.notPlaced[p.b]; ok {
			continue // a fresh placement would not go back: said, not missed
		}
		n++
		if !s.w.backOn(p.b, p.origin) {
			missing = append(missing, fmt.Sprintf("%s not back on %s (Ready since %s)", p.b.key(), p.origin, fmtSince(s.w.byName[p.origin].readySince)))
		}
	}
	if n > 0 && float64(n-len(missing)) < 0.99*float64(n) {
		for _, m := range missing {
			s.w.rec.violation(checkFailbackBack, m)
		}
	}
}

// backOn reports whether b is back on origin: scheduled there or, for a
// placement with clusterAffinities, whose failback returns to the first
// term, on a cluster of origin's region (the scenarios' terms are regions).
func (w *world) backOn(b *binding, origin string) bool {
	if slices.ContainsFunc(b.gb.Clusters, func(t failover.TargetCluster) bool { return t.Name == origin }) {
		return true
	}
	if b.spec.Karmada == nil || len(b.spec.Karmada.ClusterAffinities) == 0 {
		return false
	}
	region := w.byName[origin].Region
	return slices.ContainsFunc(b.gb.Clusters, func(t failover.TargetCluster) bool { return w.byName[t.Name].Region == region })
}

// failbackReport is what the summary says of the failbacks.
type failbackReport struct {
	Window      time.Duration
	MaxInFlight int
	Back        int
	// First and Last are the first and last failback (since the start);
	// Latest the longest any waited past its origin's window.
	First, Last, Latest time.Duration
	ByOrigin            map[string]int
	NotPlaced           map[string]int // by reason's group, the first reason
	Waiting             map[string]int // by reason
	Peak                int
	Decisions           map[string]int
}

func (s *sim) failbackReport() *failbackReport {
	fb := s.w.failback
	if fb == nil {
		return nil
	}
	r := &failbackReport{Window: fb.window, MaxInFlight: fb.maxInFlight, Back: len(fb.back), ByOrigin: map[string]int{},
		NotPlaced: map[string]int{}, Waiting: map[string]int{}, Peak: fb.peak, Decisions: fb.decisions}
	for i, d := range fb.back {
		t := d.at.Sub(s.sc.Start)
		if i == 0 {
			r.First = t
		}
		r.Last = t
		r.Latest = max(r.Latest, d.at.Sub(d.windowEnd))
		r.ByOrigin[s.w.byName[d.origin].Region]++
	}
	for b, why := range fb.notPlaced {
		r.NotPlaced[b.spec.Group+": "+why]++
	}
	r.Waiting = fb.waiting.Counts()
	return r
}

func printFailback(out io.Writer, r *failbackReport) {
	if r == nil {
		return
	}
	fmt.Fprintf(out, "failback (window %v, at most %d in flight): %d back on their origin", r.Window, r.MaxInFlight, r.Back)
	if r.Back > 0 {
		fmt.Fprintf(out, " from %s to %s, at most %v after their origin's window; peak %d in flight", fmtClock(r.First), fmtClock(r.Last), r.Latest.Round(time.Second), r.Peak)
	}
	fmt.Fprintln(out)
	if len(r.ByOrigin) > 0 {
		fmt.Fprintf(out, "  back to, by region: %s\n", fmtMap(r.ByOrigin))
	}
	if len(r.Waiting) > 0 {
		fmt.Fprintf(out, "  still waiting at the end: %s\n", fmtMap(r.Waiting))
	}
	keys := make([]string, 0, len(r.NotPlaced))
	for k := range r.NotPlaced {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(out, "  not placed: %d %s\n", r.NotPlaced[k], k)
	}
}

// A permit's result when a failback took it, and when the eviction it was
// taken for was skipped.
const (
	resultFailedBack = "failed back"
	resultSkipped    = "skipped"
)

func fmtSince(t time.Time) string {
	if t.IsZero() {
		return "never (not Ready)"
	}
	return t.Format(time.TimeOnly)
}

// targetsString and placementString spell a placement alike for the
// comparison of the planner's and the scheduler's.
func targetsString(ts []failover.TargetCluster) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("%s:%d", t.Name, t.Replicas)
	}
	return strings.Join(parts, ", ")
}

func placementString(ts []workv1alpha2.TargetCluster) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("%s:%d", t.Name, t.Replicas)
	}
	return strings.Join(parts, ", ")
}

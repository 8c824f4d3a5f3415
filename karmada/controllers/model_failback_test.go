//go:build !failover_newest

// The model harness implements controller-runtime's manager.Manager, whose
// method set changes between releases (GetEventRecorder's result type after
// v0.23): hack/newest.sh, which builds on the newest controller-runtime,
// leaves it out with the tag failover_newest. Every other run builds it.

package controllers

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/failback"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/karmada/scheduling"
	"github.com/failoverkit/failover/prescheduling"
)

// TestModelFailback is the model of TestModelControllers (issue 27) with a
// FailbackController beside the eviction controller in every leader, as
// examples/karmadafork wires it (issue 38): a stabilisation window of
// modelFailbackWindow and at most 1 or 2 failbacks in flight (by the
// seed: modelFailbackCap).
// Its steps add to the model's clusters that fail, recover, flap (recover
// for less than the window, then fail again) and blink (fail for a moment
// within a healthy stretch), leader changes in the middle of a window, and
// long passes of time; Karmada's scheduler, which the model plays, answers
// a failback's spec.rescheduleTriggeredAt with a fresh placement by
// Karmada's own algorithm (karmada/scheduling). Every invariant of the
// model is checked, (c) counting failbacks with the evictions, and the
// failback's own: (j), (k), (l) and (m) (modelInvariants).
//
//	go test ./controllers/ -run TestModelFailback                        # the fixed seeds, as CI runs them
//	go test ./controllers/ -run TestModelFailback -model.seed=3 -model.v # replay one seed
//	go test ./controllers/ -run TestModelFailback -model.duration=10m    # random seeds for ten minutes
func TestModelFailback(t *testing.T) {
	// Karmada's framework starts a goroutine that never ends with the
	// process's scheduler: started here, outside every bubble, so that no
	// bubble waits for it to end.
	warmScheduling()
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), goleak.IgnoreAnyFunction(scheduling.LeakedGoroutine))
	seeds := modelFailbackSeeds
	switch {
	case *modelSeed != 0:
		seeds = []int64{*modelSeed}
	case *modelSeeds > 0:
		seeds = nil
		r := rand.New(rand.NewSource(time.Now().UnixNano()))
		for range *modelSeeds {
			seeds = append(seeds, r.Int63n(1<<40)+1)
		}
	}
	stats := map[int64]*fbModel{}
	run := func(seed int64) {
		t.Run("seed="+strconv.FormatInt(seed, 10), func(t *testing.T) {
			fb := newFBModel(int(seed%2) + 1)
			stats[seed] = fb
			synctest.Test(t, func(t *testing.T) {
				evicted := runModel(t, seed, *modelSteps, fb)
				t.Logf("seed %d: %d evictions written, %s", seed, evicted, fb.summary())
			})
		})
	}
	if *modelDuration > 0 {
		r := rand.New(rand.NewSource(time.Now().UnixNano()))
		for end := time.Now().Add(*modelDuration); time.Now().Before(end); {
			run(r.Int63n(1<<40) + 1)
		}
	} else {
		for _, s := range seeds {
			run(s)
		}
	}
	total := &fbModel{opts: FailbackOptions{MaxInFlight: modelFailbackCap}}
	for _, fb := range stats {
		total.add(fb)
	}
	t.Logf("%d seeds run: %s", len(stats), total.summary())
	// Non-vacuity, as TestModelControllers holds its fixed seeds to an
	// eviction each: every fixed seed fails back, and the seeds together
	// open failback tasks, fill the cap, and see liveness checked.
	if *modelPolicies && *modelSeed == 0 && *modelSeeds == 0 && *modelDuration == 0 && *modelSteps == modelDefaultSteps {
		for _, s := range seeds {
			if fb := stats[s]; fb != nil && len(fb.writes) == 0 {
				t.Errorf("seed %d: no failback written: the model no longer fails back, and its failback invariants hold vacuously", s)
			}
		}
		if total.withTasks == 0 || total.capFull == 0 || total.liveChecked == 0 {
			t.Errorf("the fixed seeds wrote %d failbacks with tasks, filled the cap %d times and checked liveness %d times: each must be more than 0",
				total.withTasks, total.capFull, total.liveChecked)
		}
	}
}

// modelFailbackSeeds run in CI: seeds whose runs, together, write
// failbacks with graceful eviction tasks under a cap of 1 and of 2, fill
// the cap, and check liveness.
var modelFailbackSeeds = []int64{2, 6, 10, 12, 33, 39}

const (
	// modelFailbackWindow is the FailbackController's stabilisation window.
	modelFailbackWindow = 45 * time.Second
	// modelFailbackCap is its MaxInFlight at most: an even seed has 1, an
	// odd one 2.
	modelFailbackCap = 2
	// modelStampPrecision is what the API server keeps of a time: a
	// condition's lastTransitionTime, as the failback reads it, may be up
	// to this much earlier than the transition.
	modelStampPrecision = time.Second
	// modelRateTime is how long the failbacks ready at once may wait for
	// their permits, sharing the eviction rate: every binding of the
	// model, at modelRate.
	modelRateTime = time.Duration(modelMaxBinding/modelRate) * time.Second
)

// warmScheduling builds the process's Karmada scheduler.
func warmScheduling() {
	_, _, _ = scheduling.Schedule(nil, &workv1alpha2.ResourceBindingSpec{Placement: &policyv1alpha1.Placement{}}, nil)
}

// fbModel is what the failback part of the model keeps.
type fbModel struct {
	opts FailbackOptions

	// Under model.mu: the controllers' goroutines reach these through the
	// API server.
	ctrl   *FailbackController
	queue  *evictionqueue.Queue // the running leader's ResourceBinding queue; nil between leaders
	ledger *engine.Ledger       // the running leader's; nil between leaders
	// heldAt is, by cluster, the last moment the leader's Ledger was seen
	// holding room there, or seen holding none after it did.
	heldAt, held map[string]time.Time
	// clusterAt is the last write of a Cluster: a failback a fresh
	// placement did not return decides again a failbackRecheck later.
	clusterAt time.Time
	thawedAt  time.Time // when an operator last thawed a freeze
	// ready and faulty are the model's own history of each cluster's Ready
	// condition and of its NoExecute or PreferNoExecute taints, from every
	// version of it the API server stored: a change each, the oldest first.
	ready, faulty map[string][]change
	// paused is when the rate rule paused on the fleet as the API server
	// stored it, and when it did not.
	paused []change
	writes []fbWrite
	// open are the bindings with an open failback task, as the API server
	// stores them; capFullAt the last moment the failbacks in flight, as
	// the controller counts them, filled the cap.
	open      map[string]bool
	capFullAt time.Time
	lagEver   time.Duration

	// The test's goroutine's: for (m).
	candidate map[string]time.Time // since when each binding@origin has been due back, by the checks

	// Counts, for the summary.
	withTasks, capFull, liveChecked, excused, flaps, blinks, midWindow int
	peakOpen                                                           int
}

// change is a cluster's Ready condition or faultiness turning on or off.
type change struct {
	at time.Time
	on bool
}

// fbWrite is a failback the controllers wrote.
type fbWrite struct {
	at          time.Time
	key, origin string
	leaving     []string
	replicas    int64 // the most its returning replicas may hold in the Ledger
	leader      int   // the leader that wrote it (model.starts)
	attempt     time.Time
}

// clusters are the clusters w leaves; none for nil.
func (w *fbWrite) clusters() []string {
	if w == nil {
		return nil
	}
	return w.leaving
}

// fbEntry is what held as a write to the API server was called.
type fbEntry struct {
	at      time.Time
	flights []evictionqueue.Flight
}

func newFBModel(maxInFlight int) *fbModel {
	return &fbModel{
		opts:  FailbackOptions{Window: modelFailbackWindow, MaxInFlight: maxInFlight},
		ready: map[string][]change{}, faulty: map[string][]change{}, open: map[string]bool{}, candidate: map[string]time.Time{},
		heldAt: map[string]time.Time{}, held: map[string]time.Time{},
	}
}

func (f *fbModel) add(o *fbModel) {
	f.writes = append(f.writes, o.writes...)
	f.withTasks += o.withTasks
	f.capFull += o.capFull
	f.liveChecked += o.liveChecked
	f.excused += o.excused
	f.flaps += o.flaps
	f.blinks += o.blinks
	f.midWindow += o.midWindow
	f.peakOpen = max(f.peakOpen, o.peakOpen)
}

func (f *fbModel) summary() string {
	return fmt.Sprintf("%d failbacks written (%d with graceful eviction tasks), peak %d failback tasks open (cap %d), cap full at %d writes, %d flaps, %d blinks, %d leader changes mid-window, liveness checked %d times, %d writes excused",
		len(f.writes), f.withTasks, f.peakOpen, f.opts.MaxInFlight, f.capFull, f.flaps, f.blinks, f.midWindow, f.liveChecked, f.excused)
}

// setUp adds a FailbackController to the new leader's manager, after its
// eviction controller ev, as examples/karmadafork does.
func (f *fbModel) setUp(m *model, mgr manager.Manager, ev *EvictionController) {
	c, err := NewFailbackController(f.opts, ev)
	if err != nil {
		m.t.Fatal(err)
	}
	if err := c.SetupWithManager(mgr); err != nil {
		m.t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f.ctrl, f.queue, f.ledger = c, ev.Queue(ResourceBindingQueue), ev.Ledger()
}

// noteLedgerLocked notes where the leader's Ledger holds room now. m.mu
// is held.
func (f *fbModel) noteLedgerLocked(now time.Time) {
	if f.ledger == nil {
		return
	}
	held := f.ledger.Held(now)
	for name := range f.held {
		if held[name] == 0 {
			f.heldAt[name] = now // seen holding none after it did
			delete(f.held, name)
		}
	}
	for name, n := range held {
		if n > 0 {
			f.heldAt[name], f.held[name] = now, now
		}
	}
}

// ---- the world's history, kept by the API server's side ----

// clusterWrittenLocked records the cluster written as the API server now
// stores it: its Ready condition changed when the writer's object says (the
// API server keeps only the second of it), its taints as the write lands.
// m.mu is held.
func (f *fbModel) clusterWrittenLocked(m *model, ctx context.Context, c client.Reader, written *clusterv1alpha1.Cluster) {
	f.lagEver = max(f.lagEver, m.lagMax)
	var cl clusterv1alpha1.Cluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(written), &cl); err != nil {
		return
	}
	name, now := cl.Name, time.Now()
	f.clusterAt = now
	f.noteLedgerLocked(now)
	cond := meta.FindStatusCondition(written.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	ready := cond != nil && cond.Status == metav1.ConditionTrue
	if h := f.ready[name]; len(h) == 0 || h[len(h)-1].on != ready {
		at := now
		if cond != nil && !cond.LastTransitionTime.IsZero() && cond.LastTransitionTime.Time.Before(now) {
			at = cond.LastTransitionTime.Time
		}
		f.ready[name] = append(h, change{at, ready})
	}
	faulty := ClusterFaulty(&cl)
	if h := f.faulty[name]; len(h) == 0 || h[len(h)-1].on != faulty {
		f.faulty[name] = append(h, change{now, faulty})
	}
	var list clusterv1alpha1.ClusterList
	if err := c.List(ctx, &list); err == nil {
		paused := modelRateRule.RateFor(fleetHealth(list.Items)) == 0
		if h := f.paused; len(h) == 0 || h[len(h)-1].on != paused {
			f.paused = append(h, change{now, paused})
		}
	}
}

// readySince is when cluster's Ready streak that holds at t began, by the
// model's history; false when it is not Ready at t.
func (f *fbModel) readySince(cluster string, t time.Time) (time.Time, bool) {
	return since(f.ready[cluster], t)
}

// since is when the streak of h that holds at t began; false when h is
// off at t.
func since(h []change, t time.Time) (time.Time, bool) {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].at.After(t) {
			continue
		}
		return h[i].at, h[i].on
	}
	return time.Time{}, false
}

// lastOn is the last moment at or before t at which h was on: t itself
// when it is on at t; false when it never was.
func lastOn(h []change, t time.Time) (time.Time, bool) {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].at.After(t) {
			continue
		}
		if h[i].on {
			return t, true
		}
		if i > 0 {
			return h[i].at, true // it was on until this change
		}
	}
	return time.Time{}, false
}

// cacheLagLocked is how long the leader's cache may trail the API server,
// and a write its decision: what a decision on the cache may not have seen.
// m.mu is held.
func (f *fbModel) cacheLagLocked(m *model) time.Duration {
	return max(f.lagEver, m.lagMax, m.lagPrev) + m.writeDelayLocked() + time.Second
}

// enter notes what holds as a write is called, before the API server's
// latency: a failback's decision reads the cache and takes a permit, with
// no call and no wait, and writes at once.
func (f *fbModel) enter(m *model, obj client.Object) fbEntry {
	e := fbEntry{at: time.Now()}
	rb, ok := obj.(*workv1alpha2.ResourceBinding)
	if !ok || rb.Spec.RescheduleTriggeredAt == nil {
		return e
	}
	m.mu.Lock()
	q := f.queue
	m.mu.Unlock()
	if q != nil {
		e.flights = q.Flights(itemKey(rb))
	}
	return e
}

// rescheduled reports whether next asks Karmada's scheduler for a fresh
// placement that cur did not: a failback's write.
// The API server keeps seconds: a writer whose object came from the cache
// may hold the time it wrote to the nanosecond.
func rescheduled(cur, next *workv1alpha2.ResourceBindingSpec) bool {
	return next.RescheduleTriggeredAt != nil && (cur.RescheduleTriggeredAt == nil || cur.RescheduleTriggeredAt.Unix() != next.RescheduleTriggeredAt.Unix())
}

// failedBackTo names the origins cur's record loses, but for those made
// moot, in next: where a failback writing next sends it.
func failedBackTo(cur, next *workv1alpha2.ResourceBinding) string {
	was, err := failback.ParseRecord(cur.Annotations[karmada.FailedOverFromAnnotation])
	if err != nil {
		return "?"
	}
	live := karmada.MootOrigins(was, &cur.Spec, karmada.PlacementFingerprint(cur.Spec.Placement))
	now, _ := failback.ParseRecord(next.Annotations[karmada.FailedOverFromAnnotation])
	var out []string
	for _, o := range live {
		if _, ok := now.Find(o.Cluster); !ok {
			out = append(out, o.Cluster)
		}
	}
	if len(out) == 0 {
		return "?"
	}
	return strings.Join(out, ",")
}

// checkWriteLocked is (j) and (l) on the failback w about to overwrite cur,
// its write called as e says. m.mu is held.
func (f *fbModel) checkWriteLocked(m *model, ctx context.Context, c client.Reader, cur *workv1alpha2.ResourceBinding, w *fbWrite, e fbEntry) {
	key := w.key
	lag := f.cacheLagLocked(m)
	// A decision that reads the origin afresh, as an eviction's confirm
	// read does, sees every failure older than the time a write follows
	// it (DESIGN, fifth round: a lagging cache never sends replicas to a
	// tainted cluster).
	fresh := m.writeDelayLocked() + modelStampPrecision
	window := f.opts.Window
	found := func(inv, kind, format string, args ...any) {
		m.found = append(m.found, modelViolation{inv, kind, fmt.Sprintf("at %s the failback of %s to %s (leaving %v): ", m.since(), key, w.origin, w.leaving) + fmt.Sprintf(format, args...)})
	}
	excuse := func(why, format string, args ...any) {
		f.excused++
		m.excused[why]++
		m.traceLocked(fmt.Sprintf("  at %s: not flagged: the failback of %s to %s: ", m.since(), key, w.origin) + fmt.Sprintf(format, args...))
	}
	var list clusterv1alpha1.ClusterList
	if err := c.List(ctx, &list); err != nil {
		found("j", "harness", "listing clusters: %v", err)
		return
	}
	byName := map[string]*clusterv1alpha1.Cluster{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}

	// (j): Ready for the window without a break, by the model's history,
	// and untainted at the write: a failure within the time a write
	// follows its decision is let pass if the window had run its course
	// before it; one the leader's cache had not seen yet is not.
	for _, origin := range strings.Split(w.origin, ",") {
		start, ok := f.readySince(origin, e.at)
		switch {
		case ok && start.Add(window).After(e.at.Add(modelStampPrecision)):
			found("j", "before the window", "%s has been Ready only since %s, %v before the write: less than the %v window\n  its Ready history: %s",
				origin, start.Sub(modelEpoch), e.at.Sub(start), window, f.history(origin))
		case ok:
			if fs, _ := since(f.faulty[origin], e.at); fs.After(start.Add(lag)) {
				// Its taint went well after its Ready condition came back:
				// the window runs from the conditions' lastTransitionTime
				// (failback.Decide), a taint keeping no time once gone.
				excuse("j: the origin's taint went within the window, well after its Ready condition came back (failback.Decide: the window runs from lastTransitionTime)",
					"%s Ready since %s, untainted only since %s", origin, start.Sub(modelEpoch), fs.Sub(modelEpoch))
			}
		default:
			failed, _ := lastOn(f.ready[origin], e.at)
			s, was := f.readySince(origin, failed.Add(-time.Nanosecond))
			switch {
			case !was:
				found("j", "origin not Ready", "%s is not Ready\n  its Ready history: %s", origin, f.history(origin))
			case s.Add(window).After(failed.Add(modelStampPrecision)):
				found("j", "the origin failed before its window ended", "%s was Ready from %s for %v only, less than the %v window, and failed at %s, %v before the write (the cache's lag may be %v)\n  its Ready history: %s",
					origin, s.Sub(modelEpoch), failed.Sub(s), window, failed.Sub(modelEpoch), e.at.Sub(failed), lag, f.history(origin))
			case e.at.Sub(failed) <= fresh:
				excuse("j: the origin failed after its window, as the write was decided", "%s Ready from %s to %s, the write at %s", origin, s.Sub(modelEpoch), failed.Sub(modelEpoch), e.at.Sub(modelEpoch))
				continue
			default:
				found("j", "origin not Ready", "%s failed at %s, %v before the write, longer than a write follows its decision (%v; the cache's lag may be %v)\n  its Ready history: %s",
					origin, failed.Sub(modelEpoch), e.at.Sub(failed), fresh, lag, f.history(origin))
			}
		}
		if cl := byName[origin]; cl != nil && ClusterFaulty(cl) {
			if fs, _ := since(f.faulty[origin], e.at); e.at.Sub(fs) <= fresh {
				excuse("j: the origin was tainted as the write was decided", "%s tainted at %s", origin, fs.Sub(modelEpoch))
			} else {
				found("j", "origin tainted", "%s has had a NoExecute or PreferNoExecute taint since %s, %v before the write (the cache's lag may be %v): %s",
					origin, fs.Sub(modelEpoch), e.at.Sub(fs), lag, describeClusters(list.Items))
			}
		}
	}

	// (l): not while frozen, nor while an eviction of the binding is in
	// flight or may be queued, nor while the rate pauses.
	if m.freezeCM != nil && e.at.After(m.frozenAt) {
		found("l", "failed back while frozen", "an operator froze every eviction at %s, before the write was called at %s", m.frozenAt.Sub(modelEpoch), e.at.Sub(modelEpoch))
	}
	if len(e.flights) > 0 {
		found("l", "failed back while an eviction is in flight", "the eviction queue has %d evictions of the binding in flight as the write is called: %+v", len(e.flights), e.flights)
	}
	if len(cur.Spec.GracefulEvictionTasks) > 0 {
		found("l", "failed back while a task is open", "the binding overwritten has tasks open: %v", tasks(cur))
	}
	for _, tc := range cur.Spec.Clusters {
		cl := byName[tc.Name]
		if cl == nil || !ClusterFaulty(cl) {
			continue
		}
		if fs, _ := since(f.faulty[tc.Name], e.at); e.at.Sub(fs) <= lag {
			excuse("l: a cluster of the schedule result was tainted within the cache's lag before the write", "%s tainted at %s", tc.Name, fs.Sub(modelEpoch))
		} else {
			found("l", "failed back while an eviction may be queued", "cluster %s of its schedule result %v has had a NoExecute or PreferNoExecute taint since %s", tc.Name, targets(cur), fs.Sub(modelEpoch))
		}
	}
	if s, on := since(f.paused, e.at); on && e.at.Sub(s) > lag {
		found("l", "failed back while the rate pauses", "the rate rule has paused every eviction since %s: %s", s.Sub(modelEpoch), describeClusters(list.Items))
	}
}

// history renders cluster's Ready history.
func (f *fbModel) history(cluster string) string {
	var out []string
	for _, c := range f.ready[cluster] {
		out = append(out, fmt.Sprintf("%s at %s", map[bool]string{true: "Ready", false: "not Ready"}[c.on], c.at.Sub(modelEpoch)))
	}
	return strings.Join(out, ", ")
}

// bindingWrittenLocked follows the failback tasks open after a write of
// rb, the failback w when it is one, and checks (k). m.mu is held.
func (f *fbModel) bindingWrittenLocked(m *model, rb *workv1alpha2.ResourceBinding, w *fbWrite) {
	key, now := itemKey(rb), time.Now()
	f.noteLedgerLocked(now)
	if hasFailbackTask(rb) {
		f.open[key] = true
	} else {
		delete(f.open, key)
	}
	if w != nil {
		w.at, w.leader = now, len(m.starts)
		w.replicas = int64(rb.Spec.Replicas) * int64(max(len(m.capacity), 1))
		f.writes = append(f.writes, *w)
		if len(w.leaving) > 0 {
			f.withTasks++
		}
		m.evictions = append(m.evictions, modelEviction{at: now, key: key, cluster: w.origin, by: FieldManager, failback: true, attempt: w.attempt})
		m.traceLocked(fmt.Sprintf("  at %s: %s failed back to %s, leaving %v (failback tasks open: %v)", m.since(), key, w.origin, w.leaving, slices.Sorted(maps.Keys(f.open))))
	}
	f.peakOpen = max(f.peakOpen, len(f.open))
	if len(f.open) > f.opts.MaxInFlight {
		m.found = append(m.found, modelViolation{"k", "over the cap", fmt.Sprintf("at %s %d bindings have a failback task open: %v, more than the %d --max-failbacks-in-flight allows",
			m.since(), len(f.open), slices.Sorted(maps.Keys(f.open)), f.opts.MaxInFlight)})
	}
	if f.noteCapLocked(m, now) {
		f.capFull++
	}
}

// noteCapLocked notes until when the failbacks in flight, as the
// controller may count them, fill the cap: the bindings with a failback
// task open, and the failbacks this leader wrote within launchedFor whose
// tasks its cache may not have shown (none, or gone already), which it
// counts until then; it reports whether they do now. m.mu is held.
func (f *fbModel) noteCapLocked(m *model, now time.Time) bool {
	n := len(f.open)
	var ends []time.Time
	for _, w := range f.writes {
		if w.leader == len(m.starts) && !f.open[w.key] && now.Sub(w.at) <= launchedFor {
			ends = append(ends, w.at.Add(launchedFor))
		}
	}
	n += len(ends)
	if n < f.opts.MaxInFlight {
		return false
	}
	until := now
	if extra := n - f.opts.MaxInFlight; extra < len(ends) {
		slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
		until = later(until, ends[extra])
	}
	f.capFullAt = later(f.capFullAt, until)
	return true
}

// bindingDeletedLocked follows a binding's deletion. m.mu is held.
func (f *fbModel) bindingDeletedLocked(key string) { delete(f.open, key) }

func hasFailbackTask(rb *workv1alpha2.ResourceBinding) bool {
	return slices.ContainsFunc(rb.Spec.GracefulEvictionTasks, func(t workv1alpha2.GracefulEvictionTask) bool { return t.Producer == engine.FailbackProducer })
}

// ---- the invariants at quiescence ----

// check is (k) and (m) at quiescence; unsettled says a controller may be
// between two calls, or a new leader starting: (m) then only follows the
// bindings due back.
func (f *fbModel) check(m *model, now time.Time, clusters []clusterv1alpha1.Cluster, bindings []workv1alpha2.ResourceBinding, unsettled bool) []modelViolation {
	var found []modelViolation
	var open []string
	for i := range bindings {
		if hasFailbackTask(&bindings[i]) {
			open = append(open, itemKey(&bindings[i]))
		}
	}
	if len(open) > f.opts.MaxInFlight {
		found = append(found, modelViolation{"k", "over the cap", fmt.Sprintf("at %s %d bindings have a failback task open: %v, more than the %d --max-failbacks-in-flight allows",
			m.since(), len(open), open, f.opts.MaxInFlight)})
	}

	m.mu.Lock()
	f.noteLedgerLocked(now)
	f.noteCapLocked(m, now)
	lag := f.cacheLagLocked(m)
	leaderAt := m.starts[len(m.starts)-1]
	gates := map[string]time.Time{
		"the cap":                f.capFullAt,
		"a pause of the rate":    m.pausedAt, // the model's last check that found the rate paused or evictions frozen
		"a change of the fleet":  f.clusterAt,
		"the last leader change": leaderAt,
		"the last thaw":          f.thawedAt,
		"an operator's freeze":   time.Time{},
	}
	if m.freezeCM != nil {
		gates["an operator's freeze"] = now
	}
	if at, on := lastOn(f.paused, now); on {
		gates["a pause of the rate"] = later(gates["a pause of the rate"], at)
	}
	heldAt := maps.Clone(f.heldAt)
	faultyAt := map[string]time.Time{}
	for name, h := range f.faulty {
		faultyAt[name], _ = lastOn(h, now)
	}
	m.mu.Unlock()

	// Where the failbacks would go now: PlanFailback on the API server's
	// objects, with room held as the leader's Ledger holds it.
	fleet := &engine.Fleet{}
	var ptrs []*clusterv1alpha1.Cluster
	for i := range clusters {
		cl := clusters[i].DeepCopy()
		if _, err := fleet.Set(cl); err != nil {
			m.t.Fatalf("seed %d: the fleet: %v", m.seed, err)
		}
		ptrs = append(ptrs, cl)
	}
	sched := scheduling.NewScheduler(ptrs)
	var ledger *engine.Ledger
	if m.ctrl != nil && m.ctrl.Ledger() != nil {
		ledger = cloneLedger(m.ctrl.Ledger(), now, fleet)
	}
	due := map[string]bool{}
	for i := range bindings {
		rb := &bindings[i]
		if _, ok := rb.Annotations[karmada.FailedOverFromAnnotation]; !ok {
			continue
		}
		step, err := engine.PlanFailback(engine.FailbackOptions{Fleet: fleet, Scheduler: sched, Window: f.opts.Window, Ledger: ledger}, now, rb.DeepCopy())
		if err != nil || step.Action != engine.FailbackGo {
			continue
		}
		step.Hold.Release()
		origin := step.Origin.Cluster
		// The model's own history says the window has passed.
		start, ok := f.readySince(origin, now)
		if !ok || start.Add(f.opts.Window).After(now) {
			continue
		}
		// The gates a binding of its own meets: its budget of clusters in
		// transit (decided again on a change of the binding or of its
		// origin), and a faulty cluster of its schedule result (an
		// eviction may be queued: decided again a failbackRecheck later).
		if v, ok := rb.Annotations[MaxClustersInTransitAnnotation]; ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 && len(step.Leaving) > n {
				continue
			}
		}
		if slices.ContainsFunc(rb.Spec.Clusters, func(tc workv1alpha2.TargetCluster) bool {
			cl := fleetCluster(clusters, tc.Name)
			return cl != nil && ClusterFaulty(cl)
		}) {
			continue
		}
		id := itemKey(rb) + "@" + origin
		due[id] = true
		first, seen := f.candidate[id]
		if !seen {
			f.candidate[id], first = now, now
		}
		if unsettled {
			continue
		}
		from := map[string]time.Time{"first found due back": first, "the window's end": start.Add(f.opts.Window)}
		maps.Copy(from, gates)
		var faulty, heldOn time.Time
		for _, tc := range rb.Spec.Clusters {
			faulty = later(faulty, faultyAt[tc.Name])
		}
		from["a faulty cluster of its schedule result"] = faulty
		for _, tc := range step.Placement {
			heldOn = later(heldOn, heldAt[tc.Name])
		}
		from["room the Ledger held where it goes"] = heldOn
		last, lastWhy := time.Time{}, ""
		for _, why := range slices.Sorted(maps.Keys(from)) {
			if from[why].After(last) {
				last, lastWhy = from[why], why
			}
		}
		f.liveChecked++
		if bound := failbackRecheck + modelRateTime + lag; now.Sub(last) > bound {
			found = append(found, modelViolation{"m", "not back", fmt.Sprintf("at %s %s has not gone back to %s, which has been Ready since %s (the model's history: %s), %v after %s at %s, more than one failbackRecheck, the rate's time and the cache's lag (%v); PlanFailback says now: %s\n  binding: clusters %v, tasks %v, record %s\n  gates: %s\n  the leader's FailbackController counts the bindings waiting, by reason: %v\n  clusters: %s",
				m.since(), itemKey(rb), origin, start.Sub(modelEpoch), f.history(origin), now.Sub(last), lastWhy, last.Sub(modelEpoch), bound, step.Why,
				targets(rb), tasks(rb), rb.Annotations[karmada.FailedOverFromAnnotation], describeGates(from), f.waitingFor(m), describeClusters(clusters))})
		}
	}
	for id := range f.candidate {
		if !due[id] {
			delete(f.candidate, id)
		}
	}
	return found
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func describeGates(from map[string]time.Time) string {
	var out []string
	for _, why := range slices.Sorted(maps.Keys(from)) {
		if !from[why].IsZero() {
			out = append(out, fmt.Sprintf("%s at %s", why, from[why].Sub(modelEpoch)))
		}
	}
	return strings.Join(out, "; ")
}

func fleetCluster(clusters []clusterv1alpha1.Cluster, name string) *clusterv1alpha1.Cluster {
	for i := range clusters {
		if clusters[i].Name == name {
			return &clusters[i]
		}
	}
	return nil
}

// cloneLedger is a Ledger that holds, at now, the room l holds.
func cloneLedger(l *engine.Ledger, now time.Time, fleet *engine.Fleet) *engine.Ledger {
	c, err := engine.NewLedger()
	if err != nil {
		panic(err)
	}
	for name, n := range l.Held(now) {
		if n > 0 {
			c.Admit(now, "model/held", name, prescheduling.Result{Feasible: true, Code: prescheduling.Feasible,
				Moves: []failover.TargetCluster{{Name: name, Replicas: int32(n)}}}, fleet.Summary, nil)
		}
	}
	return c
}

// ---- the steps ----

// fbStep takes one random step of the failback model: Karmada's scheduler
// answers the failbacks' requests, then a cluster fails, recovers, flaps or
// blinks, the leader changes mid-window, time passes, or the model takes
// one of its own steps.
func (m *model) fbStep() string {
	var what string
	switch r := m.rnd.Intn(100); {
	case r < 10:
		what = m.failCluster()
	case r < 22:
		what = m.recoverCluster()
	case r < 28: // a flap: back for less than the window, then down again
		down := m.clustersReady(false)
		if len(down) == 0 {
			what = m.failCluster()
			break
		}
		name := down[m.rnd.Intn(len(down))]
		m.setReady(name, metav1.ConditionTrue)
		d := 2*time.Second + time.Duration(m.rnd.Int63n(int64(m.fb.opts.Window-4*time.Second)))
		time.Sleep(d)
		status := m.downStatus()
		m.setReady(name, status)
		m.fb.flaps++
		what = fmt.Sprintf("cluster %s flaps: Ready for %v, then %s", name, d, status)
	case r < 32: // a blink: a healthy cluster fails for a moment
		up := m.clustersReady(true)
		if len(up) == 0 {
			what = m.recoverCluster()
			break
		}
		name := up[m.rnd.Intn(len(up))]
		status := m.downStatus()
		m.setReady(name, status)
		d := 500*time.Millisecond + time.Duration(m.rnd.Int63n(int64(8*time.Second)))
		time.Sleep(d)
		m.setReady(name, metav1.ConditionTrue)
		m.fb.blinks++
		what = fmt.Sprintf("cluster %s blinks: %s for %v, then Ready", name, status, d)
	case r < 37: // a new leader, while a window runs if one does
		var within []string
		m.mu.Lock()
		for _, name := range m.clusterNames() {
			if s, ok := m.fb.readySince(name, time.Now()); ok && time.Since(s) < m.fb.opts.Window {
				within = append(within, fmt.Sprintf("%s Ready for %v", name, time.Since(s).Round(time.Millisecond)))
			}
		}
		m.mu.Unlock()
		if len(within) > 0 {
			m.fb.midWindow++
		}
		what = fmt.Sprintf("%s, windows running: %v", m.changeLeader(), within)
	case r < 45: // time passes, a window's worth
		w := m.fb.opts.Window
		d := []time.Duration{w / 2, w, w + failbackRecheck, 2 * w}[m.rnd.Intn(4)]
		time.Sleep(d)
		what = fmt.Sprintf("%v pass", d)
	case r < 50: // the summaries catch up: a recovered cluster the workloads left reports its room
		m.catchUp()
		what = "every summary catches up"
	case r < 56: // a large workload, spread over clusters
		what = m.createLargeBinding()
	case r < 61: // a freeze is thawed sooner than the model's own toggle would
		m.mu.Lock()
		frozen := m.freezeCM != nil || m.freezeOnRead
		m.mu.Unlock()
		if !frozen {
			what = m.step()
			break
		}
		what = m.toggleFreeze()
	default:
		what = m.step()
	}
	if p := m.placeTriggered(); p != "" {
		what += "; " + p
	}
	return what
}

// clustersReady are the clusters whose Ready condition is True (ready) or
// not (!ready), by name.
func (m *model) clustersReady(ready bool) []string {
	var out []string
	for _, cl := range m.clusters() {
		if c := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ClusterConditionReady); (c != nil && c.Status == metav1.ConditionTrue) == ready {
			out = append(out, cl.Name)
		}
	}
	return out
}

func (m *model) downStatus() metav1.ConditionStatus {
	return []metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionUnknown}[m.rnd.Intn(2)]
}

// setReady sets cluster name's Ready condition, as its agent reports it.
func (m *model) setReady(name string, status metav1.ConditionStatus) {
	m.mutateCluster(name, func(cl *clusterv1alpha1.Cluster) {
		c := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
		c.Status, c.LastTransitionTime, c.Reason = status, metav1.Now(), "Model"
		if status == metav1.ConditionTrue {
			cl.Spec.Taints = slices.DeleteFunc(cl.Spec.Taints, func(t corev1.Taint) bool { return t.Key == modelDownTaint })
		}
	})
}

// failCluster fails a Ready cluster, one a binding runs on if there is one;
// or, when that would pause the rate rule, brings one back instead: a
// failover that never starts fails nothing back.
func (m *model) failCluster() string {
	up := m.clustersReady(true)
	if len(up) == 0 {
		return "no Ready cluster to fail"
	}
	if down := len(m.capacity) - len(up) + 1; float64(down) > modelRateRule.UnhealthyClusterThreshold*float64(len(m.capacity)) {
		return m.recoverCluster()
	}
	var used []string
	for _, b := range m.bindings() {
		for _, tc := range b.Spec.Clusters {
			if slices.Contains(up, tc.Name) && !slices.Contains(used, tc.Name) {
				used = append(used, tc.Name)
			}
		}
	}
	if len(used) > 0 {
		up = used
	}
	slices.Sort(up)
	name := up[m.rnd.Intn(len(up))]
	status := m.downStatus()
	m.setReady(name, status)
	return fmt.Sprintf("cluster %s fails: Ready %s", name, status)
}

// recoverCluster brings a cluster that is not Ready back.
func (m *model) recoverCluster() string {
	down := m.clustersReady(false)
	if len(down) == 0 {
		return "no cluster to recover"
	}
	name := down[m.rnd.Intn(len(down))]
	m.setReady(name, metav1.ConditionTrue)
	return fmt.Sprintf("cluster %s recovers: Ready True", name)
}

// ---- Karmada's scheduler, for a failback ----

// triggered reports whether rb asks Karmada's scheduler for a fresh
// placement it has not made yet.
func triggered(rb *workv1alpha2.ResourceBinding) bool {
	t := rb.Spec.RescheduleTriggeredAt
	return t != nil && (rb.Status.LastScheduledTime == nil || t.After(rb.Status.LastScheduledTime.Time))
}

// placeTriggered plays Karmada's scheduler for the bindings a failback
// asked a fresh placement of, each now or at a later step.
func (m *model) placeTriggered() string {
	var did []string
	clusters := m.clusters()
	for _, b := range m.bindings() {
		if !triggered(&b) || m.rnd.Intn(2) == 0 {
			continue
		}
		m.mutateBinding(client.ObjectKeyFromObject(&b), func(rb *workv1alpha2.ResourceBinding) bool {
			if !triggered(rb) {
				return false
			}
			w, ok := m.placeAfresh(rb, clusters)
			did = append(did, w)
			return ok
		})
	}
	if len(did) == 0 {
		return ""
	}
	return fmt.Sprintf("scheduler, afresh: %v", did)
}

// placeAfresh places rb afresh on clusters as Karmada's scheduler does when
// spec.rescheduleTriggeredAt asks it to, and reports the new copies healthy.
func (m *model) placeAfresh(rb *workv1alpha2.ResourceBinding, clusters []clusterv1alpha1.Cluster) (string, bool) {
	ptrs := make([]*clusterv1alpha1.Cluster, len(clusters))
	for i := range clusters {
		ptrs[i] = &clusters[i]
	}
	st := rb.Status.DeepCopy()
	before := metav1.NewTime(rb.Spec.RescheduleTriggeredAt.Add(-time.Second))
	st.LastScheduledTime = &before
	out, _, err := scheduling.Schedule(ptrs, &rb.Spec, st)
	if err != nil {
		return fmt.Sprintf("%s not placed: %v", rb.Name, err), false
	}
	was := targets(rb)
	rb.Spec.Clusters = out
	now := metav1.Now()
	rb.Status.LastScheduledTime = &now
	rb.Status.AggregatedStatus = healthy(out)
	if !divided(rb) {
		m.desired[itemKey(rb)] = max(len(out), 1)
	}
	return fmt.Sprintf("%s %v -> %v", rb.Name, was, targets(rb)), true
}

// logEvents logs the FailbackController's Events, for -model.v.
func (f *fbModel) logEvents(m *model) {
	m.events.mu.Lock()
	defer m.events.mu.Unlock()
	for _, e := range m.events.events {
		if failbackReasons[e.reason] {
			m.t.Logf("  event at %s about %s: %s: %s", e.at.Sub(modelEpoch), e.key, e.reason, e.note)
		}
	}
}

// waitingFor is how many bindings the leader's FailbackController says
// wait to go back, by reason (failback_waiting), for a report.
func (f *fbModel) waitingFor(m *model) map[string]int {
	m.mu.Lock()
	c := f.ctrl
	m.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.waiting.Counts()
}

// createLargeBinding adds a Divided binding too large for most clusters,
// placed as the model's scheduler places (Aggregated: the clusters with
// the most room): a fresh placement that gathers it back on its origin
// leaves several clusters at once, more than a budget of one cluster in
// transit, which every other one has.
func (m *model) createLargeBinding() string {
	if len(m.bindings()) >= modelMaxBinding {
		return "no binding created: enough"
	}
	m.nextName++
	name := fmt.Sprintf("app-%02d", m.nextName)
	rb := &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: modelNamespace, Name: name, Annotations: map[string]string{}},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: modelNamespace, Name: name},
			Placement: &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
				ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated,
			}},
			Replicas: int32(9 + m.rnd.Intn(6)),
		},
	}
	budget := "none"
	if m.rnd.Intn(2) == 0 {
		budget = "1"
		rb.Annotations[MaxClustersInTransitAnnotation] = budget
	}
	setApplied(rb)
	clusters := m.clusters()
	rb.Spec.Clusters = m.divide(rb.Spec.Replicas, m.eligible(rb, clusters), clusters, nil)
	rb.Status.AggregatedStatus = healthy(rb.Spec.Clusters)
	if err := m.api.Create(context.Background(), rb); err != nil {
		m.t.Fatal(err)
	}
	return fmt.Sprintf("binding %s created: %d replicas on %v, budget of clusters in transit %s", name, rb.Spec.Replicas, targets(rb), budget)
}

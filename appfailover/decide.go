package appfailover

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover/gracefulevict"
)

// Observation is what a controller sees of the copy of a workload on one
// cluster at one moment.
type Observation struct {
	// Health is the copy's health as the member reports it (for Karmada,
	// status.aggregatedStatus[].health). Anything but Healthy, Unhealthy and
	// Unknown, the empty health included, counts as Unknown.
	Health gracefulevict.ResourceHealth
	// Generation identifies the version of the workload the copy runs, once
	// the member has observed it (for Karmada's native workloads, the
	// resourceTemplateGeneration its status reports once its generation is
	// observed); 0 when it reports none or has not observed its latest
	// spec yet. Read only with a start-up grace: a new value starts a new
	// start-up; 0 changes nothing.
	Generation int64
}

// Decision is [Policy.Decide]'s answer for the copy on one cluster.
type Decision struct {
	// FailOver says the workload must fail over from the cluster now.
	FailOver bool
	// After, when FailOver is false and After is positive, is how long until
	// the workload fails over from the cluster if its health stays as it is:
	// decide again then. Zero with FailOver false: only a change of health
	// (or of generation) can make it fail over.
	After time.Duration
	// Counted is the Unhealthy time counted toward the window at the
	// moment of the decision.
	Counted time.Duration
	// Reason says why, in words an operator can act on.
	Reason string
	// Timer is what to remember of the copy, to hand to the next Decide;
	// nil when there is nothing to remember (a Healthy copy without a
	// start-up grace: no timer is the same as that timer).
	Timer *Timer
}

// Decide answers, at now, whether a workload must fail over from cluster,
// where its copy was last remembered as prev (nil: never seen, or
// forgotten) and is now seen as obs. The rules:
//
//  1. Healthy resets the timer, and ends the copy's start-up.
//  2. Unhealthy time counts toward the window (Window,
//     decisionConditions.tolerationSeconds), from the first sight of
//     Unhealthy: a controller sees no earlier time. The workload fails over
//     once the counted time reaches the window, at that very second.
//  3. Unknown neither starts nor resets the timer by default (UnknownHolds):
//     time counted before is kept and counting resumes when the copy is
//     Unhealthy again, so a copy that flaps between Unhealthy and Unknown
//     fails over once its Unhealthy time, Unknown excluded, reaches the
//     window. With UnknownCounts, an unbroken stretch of Unknown counts as
//     Unhealthy once it has lasted UnknownWindow; with UnknownResets it
//     resets the timer, as Karmada v1.18 does.
//  4. With a start-up grace: a copy first seen on the cluster, or first
//     seen at a new Generation, is starting until it is first Healthy or
//     the grace has passed. Nothing counts while it starts, and a window
//     reached before does not fail it over until its start-up ends; a new
//     generation resets nothing.
//  5. Counted time that has reached the window stands until Healthy resets
//     it, so a failover the caller could not carry out yet (nowhere to go)
//     is decided again each time it asks, Unknown or not.
//
// Decide is a pure function of its arguments. Decision.Timer is the state
// to hand back next time; the times it holds are the whole second at or
// after the moment each change was seen (now rounded up), which is what an
// annotation keeps, so that a controller that reads its timers back from a
// [Record] after a restart or a leader change decides, at every instant
// after, exactly as one that kept them in memory (the invariant
// Record.String and ParseRecord hold, and the tests play). A change of
// health that happened while no controller was looking is seen when one
// looks again; with the timers kept, that is all a restart can cost.
//
// Where Karmada v1.18 (pkg/controllers/applicationfailover) decides
// otherwise, on purpose:
//
//   - Karmada keeps its timers in memory: a restart or a new leader forgets
//     them and a workload Unhealthy for hours waits a whole window again
//     (karmada#7171, #7181). Here they are a [Record] the caller stores.
//   - Karmada counts Unknown as Healthy and resets the timer, so a copy
//     flapping between Unhealthy and Unknown never fails over
//     (karmada#7431). Here Unknown holds the timer unless the policy says
//     otherwise (UnknownResets restores Karmada's rule).
//   - Karmada has no start-up grace: a copy still pulling images or warming
//     its caches is judged as one that broke (karmada#6233). Here the
//     Options give one.
//   - Karmada fails over strictly after the window, to the nanosecond, and
//     dereferences a nil tolerationSeconds (its CRD defaults it to 300);
//     here the window is reached at its last second, and nil means 300.
func (p Policy) Decide(cluster string, prev *Timer, obs Observation, now time.Time) Decision {
	t, note := p.step(cluster, prev, obs, now)
	d := p.judge(&t, now)
	d.Reason = note + d.Reason
	if p.worthKeeping(&t) {
		d.Timer = &t
	}
	return d
}

// step returns the timer after seeing obs at now, and a note on obs for the
// Reason when its health was not one of the three.
func (p Policy) step(cluster string, prev *Timer, obs Observation, now time.Time) (Timer, string) {
	h, note := obs.Health, ""
	switch h {
	case gracefulevict.Healthy, gracefulevict.Unhealthy, gracefulevict.Unknown:
	default:
		h, note = gracefulevict.Unknown, fmt.Sprintf("health %q counts as Unknown; ", string(obs.Health))
	}
	at := metav1.NewTime(ceilSecond(now))
	grace := p.StartupGrace() > 0
	if prev == nil {
		t := Timer{Cluster: cluster, Health: h, Since: at}
		if grace {
			t.Generation, t.GenerationSince, t.Started = obs.Generation, &at, h == gracefulevict.Healthy
		}
		return t, note
	}
	t := *prev
	t.Cluster = cluster
	if t.GenerationSince != nil {
		gs := *t.GenerationSince
		t.GenerationSince = &gs
	}
	newGeneration := grace && obs.Generation != 0 && obs.Generation != t.Generation
	if h != t.Health || newGeneration {
		// Close the stretch that ends here: what it counted is kept.
		t.CountedSeconds = int64(p.counted(prev, at.Time) / time.Second)
	}
	if h != t.Health {
		t.Health, t.Since = h, at
	}
	if h == gracefulevict.Healthy || (h == gracefulevict.Unknown && p.UnknownPolicy() == UnknownResets) {
		t.CountedSeconds = 0
	}
	switch {
	case !grace:
		t.Generation, t.GenerationSince, t.Started = 0, nil, false
	case newGeneration:
		t.Generation, t.GenerationSince, t.Started = obs.Generation, &at, false
	}
	if grace && h == gracefulevict.Healthy {
		t.Started = true
	}
	return t, note
}

// ceilSecond is t rounded up to a whole second: a change is never stamped
// before it was seen.
func ceilSecond(t time.Time) time.Time {
	if f := t.Truncate(time.Second); !f.Equal(t) {
		return f.Add(time.Second)
	}
	return t
}

// startupEnd is when t's start-up grace ends; false when t is not starting.
func (p Policy) startupEnd(t *Timer) (time.Time, bool) {
	g := p.StartupGrace()
	if g == 0 || t.Started || t.GenerationSince == nil {
		return time.Time{}, false
	}
	return t.GenerationSince.Add(g), true
}

// countFrom is when t's current stretch begins to count: the later of when
// its health begins to count (Since for Unhealthy, Since + UnknownWindow for
// Unknown with UnknownCounts) and the end of its start-up. False when its
// health does not count. A new generation, which closes the stretch before
// it (step), starts a start-up that ends after it, so the stretch never
// counts from before it began.
func (p Policy) countFrom(t *Timer) (time.Time, bool) {
	var from time.Time
	switch {
	case t.Health == gracefulevict.Unhealthy:
		from = t.Since.Time
	case t.Health == gracefulevict.Unknown && p.UnknownPolicy() == UnknownCounts:
		from = t.Since.Add(p.UnknownWindow())
	default:
		return time.Time{}, false
	}
	if end, ok := p.startupEnd(t); ok && end.After(from) {
		from = end
	}
	return from, true
}

// counted is the Unhealthy time t has counted by now.
func (p Policy) counted(t *Timer, now time.Time) time.Duration {
	c := heldTime(t)
	if from, ok := p.countFrom(t); ok && now.After(from) {
		// now.Sub saturates; the sum must too, for a timer from long ago.
		c = min(c, math.MaxInt64-now.Sub(from)) + now.Sub(from)
	}
	return c
}

// heldTime is the Unhealthy time t counted before its current stretch. A
// window is at most math.MaxInt32 seconds, so more than that is as good
// as that, and cannot overflow.
func heldTime(t *Timer) time.Duration {
	return time.Duration(min(max(t.CountedSeconds, 0), math.MaxInt32)) * time.Second
}

// judge decides on t, the timer as it is after the observation at now.
func (p Policy) judge(t *Timer, now time.Time) Decision {
	window := p.Window()
	held := heldTime(t)
	d := Decision{Counted: p.counted(t, now)}
	state := p.describe(t)
	if !p.worthKeeping(t) {
		// No timer is kept, so Since is only now: say nothing of it.
		state = fmt.Sprintf("the copy on %s is %s", t.Cluster, t.Health)
	}
	if held >= window && held > 0 {
		if end, ok := p.startupEnd(t); ok && now.Before(end) {
			d.After = end.Sub(now)
			d.Reason = fmt.Sprintf("%s; %v counted reached the %v window before, but %s: it fails over at %s (in %v) unless it turns Healthy first",
				state, held, window, p.starting(t, end), stamp(end), d.After)
			return d
		}
		d.FailOver = true
		d.Reason = fmt.Sprintf("%s; %v counted reached the %v window and only Healthy resets it: fail over from %s", state, held, window, t.Cluster)
		return d
	}
	from, counts := p.countFrom(t)
	if !counts {
		switch {
		case t.Health == gracefulevict.Healthy:
			d.Reason = state + ": no timer runs"
		case t.Health == gracefulevict.Unknown && p.UnknownPolicy() == UnknownResets:
			d.Reason = state + ": Unknown resets the timer (unknown Reset, Karmada v1.18's rule)"
		case held > 0:
			d.Reason = fmt.Sprintf("%s: the timer holds at %v of the %v window, as Unknown neither starts nor resets it; it counts again when the copy is Unhealthy", state, held, window)
		default:
			d.Reason = state + ": no timer runs, as Unknown neither starts nor resets it"
		}
		return d
	}
	deadline := from.Add(window - held)
	if !now.Before(deadline) {
		d.FailOver = true
		d.Reason = fmt.Sprintf("%s; %v counted reaches the %v window: fail over from %s", state, d.Counted, window, t.Cluster)
		return d
	}
	d.After = deadline.Sub(now)
	var why []string
	if end, ok := p.startupEnd(t); ok && end.After(now) {
		why = append(why, p.starting(t, end))
	}
	if t.Health == gracefulevict.Unknown && t.Since.Add(p.UnknownWindow()).After(now) {
		why = append(why, fmt.Sprintf("Unknown counts as Unhealthy from %s (unknownTolerationSeconds %d)", stamp(t.Since.Add(p.UnknownWindow())), int64(p.UnknownWindow()/time.Second)))
	}
	prefix := state
	if len(why) > 0 {
		prefix += "; " + strings.Join(why, "; ")
	}
	d.Reason = fmt.Sprintf("%s; %v of the %v window counted: it fails over at %s (in %v) unless it turns Healthy",
		prefix, d.Counted.Round(time.Second), window, stamp(deadline), d.After)
	return d
}

// describe is t's health in words: "the copy on m1 is Unhealthy since …".
func (p Policy) describe(t *Timer) string {
	return fmt.Sprintf("the copy on %s is %s since %s", t.Cluster, t.Health, stamp(t.Since.Time))
}

// starting says that t is in its start-up grace until end.
func (p Policy) starting(t *Timer, end time.Time) string {
	what := "first seen"
	if t.Generation != 0 {
		what = fmt.Sprintf("at generation %d first seen", t.Generation)
	}
	return fmt.Sprintf("it is starting (%s at %s; startupGraceSeconds %d) until it is Healthy or until %s",
		what, stamp(t.GenerationSince.Time), int64(p.StartupGrace()/time.Second), stamp(end))
}

// worthKeeping reports whether t says more than no timer would: a timer
// forgotten restarts as at first sight, so one that holds no counted time,
// has no Unknown window running and no start-up to remember need not be
// kept.
func (p Policy) worthKeeping(t *Timer) bool {
	if t.CountedSeconds > 0 || t.Health == gracefulevict.Unhealthy || p.StartupGrace() > 0 {
		return true
	}
	return t.Health == gracefulevict.Unknown && p.UnknownPolicy() == UnknownCounts
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Result is [Policy.DecideAll]'s answer for one workload.
type Result struct {
	// Record is the timers to keep, sorted by cluster, at most MaxClusters.
	Record Record
	// Changed says Record differs from the record given: store it before
	// acting on the decisions, so that a restart finds what was decided on.
	Changed bool
	// Decisions holds the decision for each cluster observed.
	Decisions map[string]Decision
	// FailOver lists the clusters to fail over from now, sorted.
	FailOver []string
	// After is the least positive After of the other decisions: decide
	// again then if nothing changes. Zero: only a change can.
	After time.Duration
}

// DecideAll is [Policy.Decide] for each copy of one workload: r is its
// record as stored (nil when none), seen the copies observed now, one per
// cluster the workload is scheduled to and not already leaving (for
// Karmada, the clusters of spec.clusters that have no graceful eviction
// task, as Karmada's controller skips those). The timers of clusters not in
// seen are dropped: the workload left them.
//
// The record keeps at most MaxClusters timers. Beyond that it keeps first
// those that count or hold Unhealthy time (the oldest first), then those of
// starting copies, then the others, and the decisions of the rest say so.
// A timer dropped, like a record lost or unreadable, restarts as at first
// sight, which counts no more than the timer it replaces at any instant
// after: a loss can only make a failover later, never earlier.
func (p Policy) DecideAll(r Record, seen map[string]Observation, now time.Time) Result {
	res := Result{Decisions: make(map[string]Decision, len(seen))}
	var kept Record
	for cluster, obs := range seen {
		var prev *Timer
		if t, ok := r.Find(cluster); ok {
			prev = &t
		}
		d := p.Decide(cluster, prev, obs, now)
		res.Decisions[cluster] = d
		if d.FailOver {
			res.FailOver = append(res.FailOver, cluster)
		} else if d.After > 0 && (res.After == 0 || d.After < res.After) {
			res.After = d.After
		}
		if d.Timer != nil {
			kept = append(kept, *d.Timer)
		}
	}
	slices.Sort(res.FailOver)
	if len(kept) > MaxClusters {
		slices.SortFunc(kept, func(a, b Timer) int {
			return cmp.Or(cmp.Compare(p.rank(&a), p.rank(&b)), a.Since.Compare(b.Since.Time), strings.Compare(a.Cluster, b.Cluster))
		})
		for _, t := range kept[MaxClusters:] {
			d := res.Decisions[t.Cluster]
			d.Timer = nil
			d.Reason += fmt.Sprintf("; its timer is not kept: the record holds at most %d clusters", MaxClusters)
			res.Decisions[t.Cluster] = d
		}
		kept = kept[:MaxClusters]
	}
	slices.SortFunc(kept, func(a, b Timer) int { return strings.Compare(a.Cluster, b.Cluster) })
	if len(kept) > 0 {
		res.Record = kept
	}
	res.Changed = res.Record.String() != r.String()
	return res
}

// rank orders timers by how much is lost when one is dropped: 0 for one
// that counts or holds Unhealthy time, 1 for a starting copy, 2 otherwise.
func (p Policy) rank(t *Timer) int {
	if _, counts := p.countFrom(t); counts || t.CountedSeconds > 0 {
		return 0
	}
	if _, ok := p.startupEnd(t); ok {
		return 1
	}
	return 2
}

package main

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
)

// The checks of the verdict, in the order they are printed.
const (
	checkRateBound    = "rate never above the allowed rate (at most rate×t+1 evictions in any window t)"
	checkAchieved     = "achieved rate within 5% of the rate in force while the queues were backlogged"
	checkLastCopy     = "no workload lost its last copy (always one scheduled, incoming or kept by a task; divided replicas kept)"
	checkTarget       = "no eviction without a target (every evicted copy replaced on a healthy cluster)"
	checkCancelled    = "recovered clusters' queued items cancelled, never handled"
	checkTaskDeadline = "graceful eviction tasks cleared by their grace period"
	checkAccounted    = "every queued item accounted for (handled, cancelled or still queued)"
	checkStormHold    = "no eviction from a cut-off cluster within --storm-confirm of the cut (the failure storm's hold)"
	checkRealFailure  = "real failures handled despite a cut-off (no item of a failed cluster not cut off still queued at the end)"
	checkFrozen       = "no eviction while frozen"
	checkThawed       = "every item a freeze held back handled after the thaw (none lost)"
	checkTransit      = "no binding with more clusters in transit than its budget"
)

var checkOrder = []string{checkRateBound, checkAchieved, checkLastCopy, checkTarget, checkCancelled, checkTaskDeadline, checkAccounted,
	checkStormHold, checkRealFailure, checkFrozen, checkThawed, checkTransit}

// The checks of a scenario that turns failback on (spec.failback), after
// the others.
const (
	checkFailbackWindow    = "no failback before its origin had been Ready for the stabilization window without a break, and untainted"
	checkFailbackReady     = "no failback dropped ready replicas (the leaving copies kept until the returning ones were healthy)"
	checkFailbackCap       = "failbacks in flight never above the cap (--max-failbacks-in-flight)"
	checkFailbackPredicted = "every failback placed by Karmada's scheduler as the planner predicted"
	checkFailbackBack      = "at least 99% of the bindings that failed over from a recovered cluster back there within the window and the rate's time (but those a fresh placement would not put back)"
)

var failbackChecks = []string{checkFailbackWindow, checkFailbackReady, checkFailbackCap, checkFailbackPredicted, checkFailbackBack}

// The checks of a scenario that turns application failover on
// (spec.applicationFailover), after the others. Its failovers are held to
// the others too: a target for each (checkTarget), the binding's budget of
// clusters in transit (checkTransit), the rate (checkRateBound).
const (
	checkAppWindow     = "every application failover once its copy's Unhealthy time (Unknown excluded) reached the window: not before, and within one recheck after (or after the gate that last held it)"
	checkAppBadRollout = "no application failover of a workload Unhealthy on all its clusters (a bad rollout) until an operator confirmed"
)

var appFailoverChecks = []string{checkAppWindow, checkAppBadRollout}

// achievedTolerance is how far the achieved rate may be from the rate in force.
const achievedTolerance = 0.05

type entryKind int

const (
	entryPermit entryKind = iota
	entryRate
	entryCancel
	entryComplete
	entryDomainRate
)

// entry is one event in the order it happened: a handler call (one permit),
// a change of the rate in force, or a cancellation.
type entry struct {
	kind  entryKind
	t     time.Time
	queue int
	rate  float64 // entryRate, entryDomainRate: the new rate; entryPermit: the rate in force
	// bound (entryRate) is what the verdict bounds all evictions by: rate
	// under the fleet rule, the cap on the domains' total under a domain
	// rule.
	bound float64
	// domain is, under a domain rule, the domain of an entryPermit's item
	// or of an entryDomainRate.
	domain  string
	backlog int    // entryPermit: items still queued when it was handled
	n       int    // entryCancel: items cancelled
	result  string // entryPermit: evicted or abandoned
}

// counts are the running totals the progress lines and the summary show.
type counts struct {
	Queued    [2]int
	Evicted   [2]int
	Abandoned [2]int
	Cancelled [2]int
	Failed    [2]int
	TasksDone int
	// OntoFaulty counts the evictions whose replicas Karmada's scheduler
	// added to a faulty cluster the workload still ran on (recorder.evict).
	OntoFaulty int `json:"-"`
}

func sum2(a [2]int) int { return a[0] + a[1] }

// recorder keeps what happened during a run, for the report and the checks.
type recorder struct {
	log       []entry
	rateKnown bool
	curRate   float64
	curBound  float64
	// domainRates are each domain's rate in force, under a domain rule.
	domainRates map[string]float64
	c           counts
	outcomes    [2]map[evictionqueue.OutcomeKind]int
	tasksBy     map[string]int // why tasks were done
	violations  map[string][]string
	reasons     map[string]int // why evictions were abandoned
	// reasonCodes are the reasons' codes (abandonCode).
	reasonCodes map[string]string
	// abandonedBy counts abandoned evictions per binding group, with the
	// first reason given for the group.
	abandonedBy map[string]*abandonedGroup

	// holds are the failure storm's holds and frozen the operator's
	// freezes, in order; the last one's To is zero while it lasts.
	holds, frozen []span
	// heldBack are the items a freeze deferred that have not left their
	// queue since.
	heldBack map[queuedItem]bool
	// cutOffEvicted counts evictions from clusters cut off at the time.
	cutOffEvicted int
	// transit is, per binding group, its budget and the most clusters in
	// transit one of its bindings had at once.
	transit map[string]*transitPeak
}

// span is a stretch of time; To is zero while it lasts.
type span struct{ From, To time.Time }

// queuedItem is an item of one queue.
type queuedItem struct {
	queue int
	item  itemID
}

// transitPeak is the most clusters in transit at once of a group's bindings.
type transitPeak struct {
	Budget int // 0: unlimited
	Peak   int
}

func newRecorder() *recorder {
	return &recorder{
		outcomes:    [2]map[evictionqueue.OutcomeKind]int{{}, {}},
		tasksBy:     map[string]int{},
		violations:  map[string][]string{},
		reasons:     map[string]int{},
		reasonCodes: map[string]string{},
		abandonedBy: map[string]*abandonedGroup{},
		heldBack:    map[queuedItem]bool{},
		transit:     map[string]*transitPeak{},
	}
}

// toggle starts a span at now when on, ends the open one when off.
func toggle(spans []span, now time.Time, on bool) []span {
	open := len(spans) > 0 && spans[len(spans)-1].To.IsZero()
	switch {
	case on && !open:
		spans = append(spans, span{From: now})
	case !on && open:
		spans[len(spans)-1].To = now
	}
	return spans
}

// stormHold records whether a failure storm held evictions at now.
func (r *recorder) stormHold(now time.Time, on bool) { r.holds = toggle(r.holds, now, on) }

// freeze records an operator freezing or thawing evictions at now.
func (r *recorder) freeze(now time.Time, on bool) { r.frozen = toggle(r.frozen, now, on) }

// deferred marks the latest handler call as one that waits (RetryAfter):
// held back by a freeze (frozen) or by its binding's budget.
func (r *recorder) deferred(queue int, it evictionqueue.Item, frozen bool) {
	r.setResult("deferred")
	if frozen {
		r.heldBack[queuedItem{queue, itemID{it.Cluster, it.Key}}] = true
	}
}

// inTransit records that b has n clusters in transit after an eviction.
func (r *recorder) inTransit(b *binding, n int) {
	p := r.transit[b.spec.Group]
	if p == nil {
		p = &transitPeak{Budget: int(b.spec.Budget)}
		r.transit[b.spec.Group] = p
	}
	p.Peak = max(p.Peak, n)
	if b.spec.Budget > 0 && n > int(b.spec.Budget) {
		r.violation(checkTransit, fmt.Sprintf("%s: %d clusters in transit, budget %d", b.key(), n, b.spec.Budget))
	}
}

// held sums the spans' lengths, an open one up to end.
func held(spans []span, end time.Time) time.Duration {
	var d time.Duration
	for _, s := range spans {
		to := s.To
		if to.IsZero() {
			to = end
		}
		d += to.Sub(s.From)
	}
	return d
}

// within reports whether t falls inside one of the spans: after its start
// (what happened at that instant was decided before it) and before its end.
func within(spans []span, t time.Time) bool {
	for _, s := range spans {
		if t.After(s.From) && (s.To.IsZero() || t.Before(s.To)) {
			return true
		}
	}
	return false
}

// checkFreeze holds the evictions to the freezes: none while frozen, and
// every item held back left its queue after the thaw.
func (r *recorder) checkFreeze() {
	for _, e := range r.log {
		if e.kind == entryPermit && e.result == "evicted" && within(r.frozen, e.t) {
			r.violation(checkFrozen, fmt.Sprintf("%s: an eviction at %s while frozen", queueNames[e.queue], e.t.Format(time.TimeOnly)))
		}
	}
	if n := len(r.heldBack); n > 0 {
		r.violation(checkThawed, fmt.Sprintf("%s held back by a freeze still queued at the end", plural(n, "item", "items")))
	}
}

func (r *recorder) snapshot() counts {
	return r.c
}

// rate records the rate in force at t, and the bound on all evictions.
func (r *recorder) rate(t time.Time, rate, bound float64) {
	if r.rateKnown && r.curRate == rate && r.curBound == bound {
		return
	}
	r.rateKnown, r.curRate, r.curBound = true, rate, bound
	r.log = append(r.log, entry{kind: entryRate, t: t, rate: rate, bound: bound})
}

// domainRate records the rate in force for domain at t, under a domain
// rule.
func (r *recorder) domainRate(t time.Time, domain string, rate float64) {
	if old, ok := r.domainRates[domain]; ok && old == rate {
		return
	}
	if r.domainRates == nil {
		r.domainRates = map[string]float64{}
	}
	r.domainRates[domain] = rate
	r.log = append(r.log, entry{kind: entryDomainRate, t: t, domain: domain, rate: rate})
}

func (r *recorder) permit(queue int, t time.Time, rate float64, backlog int, domain string) {
	r.log = append(r.log, entry{kind: entryPermit, t: t, queue: queue, rate: rate, backlog: backlog, domain: domain})
}

func (r *recorder) setResult(result string) {
	if n := len(r.log); n > 0 && r.log[n-1].kind == entryPermit {
		r.log[n-1].result = result
	}
}

func (r *recorder) queued(queue int) {
	r.c.Queued[queue]++
}

func (r *recorder) cancelled(queue int, t time.Time, n int) {
	if n == 0 {
		return
	}
	r.c.Cancelled[queue] += n
	r.log = append(r.log, entry{kind: entryCancel, t: t, queue: queue, n: n})
}

func (r *recorder) violation(check, detail string) {
	r.violations[check] = append(r.violations[check], detail)
}

func (r *recorder) outcome(queue int, o evictionqueue.Outcome) {
	r.outcomes[queue][o.Kind]++
	switch o.Kind {
	case evictionqueue.Succeeded, evictionqueue.Skipped, evictionqueue.Completed, evictionqueue.Failed,
		evictionqueue.Abandoned, evictionqueue.Cancelled:
		delete(r.heldBack, queuedItem{queue, itemID{o.Item.Cluster, o.Item.Key}})
	}
	if o.Kind == evictionqueue.Failed {
		r.c.Failed[queue]++
	}
}

func (r *recorder) abandon(queue int, b *binding, cluster, reason, code string) {
	r.c.Abandoned[queue]++
	r.reasons[reason]++
	r.reasonCodes[reason] = code
	g := r.abandonedBy[b.spec.Group]
	if g == nil {
		g = &abandonedGroup{Code: code, Example: b.key() + " from " + cluster + ": " + reason}
		r.abandonedBy[b.spec.Group] = g
	}
	g.Count++
	r.setResult("abandoned")
	if !slices.ContainsFunc(b.gb.Clusters, func(t failover.TargetCluster) bool { return t.Name == cluster }) {
		r.violations[checkTarget] = append(r.violations[checkTarget], b.key()+": abandoned but gone from "+cluster)
	}
}

// evict records an eviction and checks that it had a target: a Duplicated
// workload gained a healthy cluster, a Divided one kept its replicas, the
// added ones on healthy clusters.
//
// The phase table counts an eviction when its handler call accepted it:
// permit says whether that call is the latest in the log (false when a
// background eviction lands later; accepted marked its call then).
func (r *recorder) evict(queue int, b *binding, from string, before, after []failover.TargetCluster, clusters map[string]*clusterState, permit bool) {
	r.c.Evicted[queue]++
	if permit {
		r.setResult("evicted")
	}
	old := map[string]int32{}
	var total, newTotal int32
	for _, t := range before {
		old[t.Name] = t.Replicas
		total += t.Replicas
	}
	gained := false
	for _, t := range after {
		newTotal += t.Replicas
		_, had := old[t.Name]
		if had && (!b.spec.divided() || t.Replicas <= old[t.Name]) {
			continue
		}
		gained = true
		if had {
			// More replicas where the binding already runs: Karmada's
			// scheduler keeps a scheduled cluster a candidate whatever its
			// NoSchedule taints, and no PreferNoExecute taint filters, so
			// it may add them to a faulty cluster the binding still runs
			// on, which the check predicts too. They are evicted again from
			// there in their turn: counted, not a violation.
			if c := clusters[t.Name]; c.faulty {
				r.c.OntoFaulty++
			}
			continue
		}
		if c := clusters[t.Name]; c.faulty || !tolerates(b.spec.Placement.ClusterTolerations, &c.Cluster) {
			r.violations[checkTarget] = append(r.violations[checkTarget], fmt.Sprintf("%s: evicted from %s onto %s, which is not eligible", b.key(), from, t.Name))
		}
	}
	if !gained || (b.spec.divided() && newTotal != total) {
		r.violations[checkTarget] = append(r.violations[checkTarget], fmt.Sprintf("%s: evicted from %s without a replacement (%v → %v)", b.key(), from, before, after))
	}
}

// accepted marks the latest handler call as an eviction accepted to finish
// in the background.
func (r *recorder) accepted() {
	r.setResult("evicted")
}

// completed records that the driver told a queue Complete at t.
func (r *recorder) completed(t time.Time) {
	r.log = append(r.log, entry{kind: entryComplete, t: t})
}

// taskDone records why the Assessor let an old copy go.
func (r *recorder) taskDone(b *binding, t gracefulevict.Task, now time.Time, deadline time.Time, hasDeadline bool) {
	r.c.TasksDone++
	why := "replacement healthy"
	switch {
	case slices.ContainsFunc(b.gb.Clusters, func(c failover.TargetCluster) bool { return c.Name == t.FromCluster }):
		why = "origin back in schedule"
	case t.PurgeMode.Canonical() == failover.PurgeModeDirectly:
		why = "purgeMode Directly"
	case hasDeadline && !deadline.After(now):
		why = "grace period elapsed"
	}
	r.tasksBy[why]++
}

// abandonedGroup is what the summary says of the abandoned evictions of one
// group of bindings.
type abandonedGroup struct {
	Count   int
	Code    string // the first one's reason's code
	Example string // the first one, with its reason
}

// segment is a stretch of the run with one phase and one rate in force.
type segment struct {
	Phase     string
	From      time.Time
	To        time.Time
	Rate      float64
	MaxFaulty int
	Evicted   int
	Abandoned int
	Cancelled int
	// Achieved is the eviction rate measured over the gaps between
	// consecutive handler calls during which items were waiting and nothing
	// changed the rate; Gaps is how many such gaps there were (0: not
	// measurable, nothing was backlogged).
	Achieved float64
	Gaps     int
	gapTime  time.Duration
}

// measured says whether the segment's achieved rate is held to the rate in
// force: enough backlogged gaps, and not paused.
func (s *segment) measured() bool { return s.Gaps >= minGapsForRate && s.Rate > 0 }

// minGapsForRate is how many backlogged gaps a segment needs before its
// achieved rate is held to the tolerance.
const minGapsForRate = 5

// analyse splits the log into segments at phase starts and rate changes,
// measures each, and checks the rate bound.
func (r *recorder) analyse(phases []phaseMark, faulty []faultyMark, end time.Time) []segment {
	var segs []segment
	pi, fi := 0, 0
	curFaulty := 0
	var cur *segment
	open := func(t time.Time, phase string, rate float64) {
		if cur != nil {
			cur.To = t
		}
		segs = append(segs, segment{Phase: phase, From: t, Rate: rate, MaxFaulty: curFaulty})
		cur = &segs[len(segs)-1]
	}
	phase := "steady state"
	rate, bound := 0.0, 0.0
	// permits are those since the bound last changed, for the bound; a
	// phase boundary does not interrupt a window.
	var permits []time.Time
	flush := func() {
		r.checkBound("", bound, permits)
		permits = permits[:0]
	}
	var last *entry // the previous permit, for gaps
	// freed is when a Complete last freed an in-flight slot. A permit taken
	// at that very instant, after it, went to a worker that was waiting for
	// the slot, not for the Limiter: the gap it ends says nothing of the
	// rate. (Permits the Limiter times come first at an instant: the driver
	// dispatches them before it calls Complete.)
	var freed time.Time
	// A change of the faulty count at the instant a segment starts belongs
	// to that segment, so marks at an entry's instant are applied after it.
	applyFaulty := func(due func(time.Time) bool) {
		for fi < len(faulty) && due(faulty[fi].t) {
			curFaulty = faulty[fi].n
			switch {
			case cur == nil:
			case cur.From.Equal(faulty[fi].t):
				cur.MaxFaulty = curFaulty
			case curFaulty > cur.MaxFaulty:
				cur.MaxFaulty = curFaulty
			}
			fi++
		}
	}
	advance := func(t time.Time) {
		for pi < len(phases) && !phases[pi].t.After(t) {
			phase = phases[pi].name
			open(phases[pi].t, phase, rate)
			pi++
			last = nil
		}
		applyFaulty(func(m time.Time) bool { return m.Before(t) })
	}
	for i := range r.log {
		e := &r.log[i]
		advance(e.t)
		if cur == nil {
			open(e.t, phase, rate)
		}
		switch e.kind {
		case entryRate:
			if e.bound != bound {
				flush()
				bound = e.bound
			}
			if e.rate == rate {
				break
			}
			rate = e.rate
			if cur.Evicted+cur.Abandoned+cur.Cancelled == 0 && cur.From.Equal(e.t) {
				cur.Rate = rate
			} else {
				open(e.t, phase, rate)
			}
			last = nil
		case entryCancel:
			cur.Cancelled += e.n
			last = nil
		case entryComplete:
			freed = e.t
		case entryPermit:
			// A deferral (a freeze, a budget) gives its permit back, and
			// its item waits a while: the next gap says nothing of the
			// rate.
			if e.result == "deferred" {
				last = nil
				break
			}
			// An abandon gives its permit back: only evictions (and
			// failbacks, which take permits of the same rate) count
			// against the rate, and only the gaps between them measure it.
			if e.result == resultFailedBack {
				permits = append(permits, e.t)
				break
			}
			// A skip (the binding had left the cluster already, or may
			// stay) evicts nothing and gives its permit back: not an
			// abandon.
			if e.result == resultSkipped {
				if e.backlog == 0 {
					last = nil
				}
				break
			}
			if e.result != "evicted" {
				cur.Abandoned++
				if e.backlog == 0 {
					last = nil // the queues drained: the next gap is not backlogged
				}
				break
			}
			cur.Evicted++
			permits = append(permits, e.t)
			if last != nil && last.backlog > 0 && !e.t.Equal(freed) {
				cur.Gaps++
				cur.gapTime += e.t.Sub(last.t)
			}
			last = e
		}
		applyFaulty(func(m time.Time) bool { return !m.After(e.t) })
	}
	advance(end)
	applyFaulty(func(m time.Time) bool { return !m.After(end) })
	flush()
	r.checkDomainBounds()
	if cur != nil {
		cur.To = end
	}
	for i := range segs {
		s := &segs[i]
		if s.Gaps > 0 && s.gapTime > 0 {
			s.Achieved = float64(s.Gaps) / s.gapTime.Seconds()
		}
		if s.Gaps >= minGapsForRate && s.Rate > 0 && math.Abs(s.Achieved-s.Rate)/s.Rate > achievedTolerance {
			r.violations[checkAchieved] = append(r.violations[checkAchieved],
				fmt.Sprintf("%s from %s: achieved %.3f/s against %.3f/s", s.Phase, s.From.Format(time.TimeOnly), s.Achieved, s.Rate))
		}
	}
	// A segment of zero length (a phase and a rate change at one instant)
	// gives what it counted to the next one.
	for i := 0; i+1 < len(segs); i++ {
		if s := &segs[i]; !s.To.After(s.From) {
			n := &segs[i+1]
			n.Evicted += s.Evicted
			n.Abandoned += s.Abandoned
			n.Cancelled += s.Cancelled
			n.MaxFaulty = max(n.MaxFaulty, s.MaxFaulty)
		}
	}
	return slices.DeleteFunc(segs, func(s segment) bool { return !s.To.After(s.From) })
}

// checkBound verifies that no window within a stretch of constant rate held
// more than rate×t+1 evictions; where names the domain they were for
// ("": all of them).
func (r *recorder) checkBound(where string, rate float64, permits []time.Time) {
	if where != "" {
		where += ": "
	}
	if rate == 0 && len(permits) > 0 {
		r.violations[checkRateBound] = append(r.violations[checkRateBound],
			fmt.Sprintf("%s%s while paused, the first at %s", where, plural(len(permits), "eviction", "evictions"), permits[0].Format(time.TimeOnly)))
		return
	}
	for i := range permits {
		for j := i + 1; j < len(permits); j++ {
			window := permits[j].Sub(permits[i]).Seconds()
			if float64(j-i+1) > rate*window+1+1e-9 {
				r.violations[checkRateBound] = append(r.violations[checkRateBound],
					fmt.Sprintf("%s%d evictions in %.1fs from %s at %.2f/s", where, j-i+1, window, permits[i].Format(time.TimeOnly), rate))
				return
			}
		}
	}
}

// checkDomainBounds verifies, under a domain rule, each domain's evictions
// against its own rate, as checkBound does for all of them: the Limiter
// gives a domain at rate r at most r×t+1 permits in any window t in which
// its rate stays the same.
func (r *recorder) checkDomainBounds() {
	rates := map[string]float64{}
	permits := map[string][]time.Time{}
	flush := func(d string) {
		r.checkBound(fmt.Sprintf("domain %q", d), rates[d], permits[d])
		permits[d] = permits[d][:0]
	}
	for _, e := range r.log {
		switch e.kind {
		case entryDomainRate:
			flush(e.domain)
			rates[e.domain] = e.rate
		case entryPermit:
			if r.domainRates != nil && (e.result == "evicted" || e.result == resultFailedBack) {
				permits[e.domain] = append(permits[e.domain], e.t)
			}
		}
	}
	for _, d := range slices.Sorted(maps.Keys(permits)) {
		flush(d)
	}
}

type phaseMark struct {
	t    time.Time
	name string
}

type faultyMark struct {
	t time.Time
	n int
}

// depthMark is the queues' lengths at t.
type depthMark struct {
	t time.Time
	n [2]int
}

package whatif

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/karmada/scheduling"
	"github.com/failoverkit/failover/prescheduling"
)

// player plays the evictions in time, as the controllers and Karmada's
// scheduler take them: each when it is due and the rate has a permit for
// it, through the eviction controller's decision path on the fleet as the
// summaries last reported it, with one Ledger holding room as the
// controllers' does; the scheduler places what each eviction removes at
// once, on the same summaries; and every StatusUpdateFrequency the
// survivors report, showing the replicas placed on them by then, which
// frees the Ledger's room and changes where the scheduler places the next.
type player struct {
	cfg        Config
	now        time.Time // the failure
	fleet      *engine.Fleet
	after      map[string]*clusterv1alpha1.Cluster
	arriving   map[string]int64
	bindingsTo map[string]map[string]bool
	rates      *rateModel
	rateWhy    string // the rate rule's reasoning, for the paused
	sched      *scheduling.Scheduler
	// unshown are the replicas placed that no report shows yet, in the
	// order they were placed; reported is the last report played.
	unshown  []placed
	reported time.Time
	// last is the moment of the last eviction.
	last  time.Time
	notes []string
}

// placed is replicas the scheduler put on a cluster at a moment.
type placed struct {
	cluster  string
	replicas int64
	req      *workv1alpha2.ReplicaRequirements
	at       time.Time
}

// maxAttempts bounds how often one item is tried: a Ledger's hold ends
// within DefaultHold, so an item held back that often is a bug of the plan.
const maxAttempts = 1000

// pending is an item waiting in its queue: ready is when it may be tried
// (due, or its retry), seq its place in line (the order it was first
// queued, which a retry keeps).
type pending struct {
	it      *item
	ready   time.Time
	seq     int
	attempt int
	domain  string
}

// clusters is the fleet as the scheduler sees it now, sorted by name.
func (p *player) clusters() []*clusterv1alpha1.Cluster {
	out := make([]*clusterv1alpha1.Cluster, 0, len(p.after))
	for _, name := range sortedKeys(p.after) {
		out = append(out, p.after[name])
	}
	return out
}

func (p *player) play(items []*item) error {
	p.sched = scheduling.NewScheduler(p.clusters())
	p.reported = p.now
	p.rescheduleDuplicated(items)
	var ledger *engine.Ledger
	if !p.cfg.DisableLedger {
		l, err := engine.NewLedger(engine.WithHold(p.cfg.CapacityHold))
		if err != nil {
			return err
		}
		ledger = l
	}
	// The eviction controller's decision path, made once with its options.
	evictor, err := engine.NewEvictor(engine.EvictorOptions{Fleet: p.fleet, Ledger: ledger,
		EnableNoExecuteTaintEviction: p.cfg.EnableNoExecuteTaintEviction, MaxClustersInTransit: p.cfg.MaxClustersInTransit})
	if err != nil {
		return err
	}
	var queue, paused []*pending
	for i, it := range items {
		if it.ev.Outcome != "" {
			continue
		}
		queue = append(queue, &pending{it: it, ready: it.due, seq: i, attempt: 1, domain: p.domainOf(it.cluster)})
	}
	waited := 0
	for t := p.now; len(queue) > 0; {
		// The items due by t, in line (queue is kept in the order each
		// was first queued: one tried again keeps its place, as in the
		// queue), and when the next of the others is.
		var ready []*pending
		var soonest time.Time
		for _, w := range queue {
			switch {
			case !w.ready.After(t):
				ready = append(ready, w)
			case soonest.IsZero() || w.ready.Before(soonest):
				soonest = w.ready
			}
		}
		if len(ready) == 0 {
			t = soonest
			continue
		}
		// A permit for the first domain in line that has one, as the
		// queue asks the Limiter: each domain named by its first item.
		var domains []string
		for _, w := range ready {
			if !slices.Contains(domains, w.domain) {
				domains = append(domains, w.domain)
			}
		}
		domain, giveBack, ok, next := p.rates.take(t, domains)
		if !ok {
			next = earliest(earliest(next, soonest), p.rates.nextTurn())
			if next.IsZero() {
				// Only a change of health could give them a permit: the
				// rule pauses them.
				paused = ready
				break
			}
			t = next
			continue
		}
		w := ready[slices.IndexFunc(ready, func(w *pending) bool { return w.domain == domain })]
		if err := p.advance(t); err != nil {
			return err
		}
		retry, went, err := p.one(w.it, t, w.attempt, evictor)
		if err != nil {
			return err
		}
		if !went {
			giveBack() // held back, refused or staying: the permit goes back, as the queue gives it
		}
		if retry > 0 && w.attempt < maxAttempts {
			if w.attempt == 1 {
				waited++
			}
			// The controllers decide a wait for room again when a summary
			// changes (the queue's gate opens), in its place in line: at
			// the next report, when it shows replicas placed, if that
			// comes before its wait ends.
			ready := t.Add(retry)
			if next := p.reported.Add(p.cfg.StatusUpdateFrequency); len(p.unshown) > 0 && next.Before(ready) {
				ready = next
			}
			w.ready, w.attempt = ready, w.attempt+1
			continue
		}
		if retry > 0 {
			w.it.ev.Outcome, w.it.ev.Code = OutcomeRefused, string(prescheduling.AwaitingCapacity)
			p.notes = append(p.notes, fmt.Sprintf("%s on %s was held back for room %d times: the plan stopped trying it", w.it.b.key, w.it.cluster, maxAttempts))
		}
		queue = slices.DeleteFunc(queue, func(q *pending) bool { return q == w })
		if went {
			p.last = maxTime(p.last, t)
			at := t.Sub(p.now).Seconds()
			w.it.ev.AtSeconds = &at
		}
	}
	// The paused would go once the rule resumes, after all the others: the
	// plan says where (or that they would wait for room then), not when.
	for _, w := range paused {
		at := maxTime(p.last, w.ready)
		if err := p.advance(at); err != nil {
			return err
		}
		retry, went, err := p.one(w.it, at, w.attempt, evictor)
		if err != nil {
			return err
		}
		if ev := w.it.ev; went || retry > 0 {
			ev.Outcome, ev.Code = OutcomePaused, CodePaused
			ev.Reason = fmt.Sprintf("the rate rule pauses evictions (%s); when it resumes: %s", p.rateWhy, cmp.Or(ev.Reason, "it goes"))
		}
	}
	if waited > 0 {
		p.notes = append(p.notes, fmt.Sprintf("%d evictions wait for room held for those before them, until the summaries show it taken "+
			"(every %v); which ones wait, and so where each lands, hangs on the order the queues take items due together: "+
			"the informer's in a controller, by key here", waited, p.cfg.StatusUpdateFrequency))
	}
	return nil
}

// advance plays the summaries' reports up to t: each shows the replicas
// placed before it on the clusters they went to.
func (p *player) advance(t time.Time) error {
	for next := p.reported.Add(p.cfg.StatusUpdateFrequency); !next.After(t); next = next.Add(p.cfg.StatusUpdateFrequency) {
		p.reported = next
		n := 0
		for n < len(p.unshown) && p.unshown[n].at.Before(next) {
			n++
		}
		for _, pl := range p.unshown[:n] {
			c := p.after[pl.cluster].DeepCopy()
			c.Status.ResourceSummary = addPlaced(c.Status.ResourceSummary, pl.replicas, pl.req)
			p.after[pl.cluster] = c
			if _, err := p.fleet.Set(c); err != nil {
				return err
			}
			p.sched.Set(c)
		}
		p.unshown = p.unshown[n:]
	}
	return nil
}

// domainOf is the disruption domain whose rate paces evictions from
// cluster: "" under the fleet rule.
func (p *player) domainOf(cluster string) string {
	if !p.cfg.Rates.DisruptionDomain.PerDomain() {
		return ""
	}
	conv, err := karmada.FromCluster(p.after[cluster])
	if err != nil {
		return ""
	}
	return domainsOf(conv, p.cfg.Rates.DisruptionDomain)[0]
}

// drain sums up the evictions' times: last is the last eviction's moment.
func drain(r *Report, now, last time.Time) Drain {
	d := Drain{}
	paused := 0
	for _, e := range r.Evictions {
		switch {
		case e.Outcome == OutcomePaused:
			paused++
			d.Evictions++
		case e.AtSeconds != nil:
			d.Evictions++
		}
	}
	switch {
	case paused > 0:
		d.Paused = true
		d.Why = fmt.Sprintf("%d of %d evictions never go while the rule pauses them (%s)", paused, d.Evictions, r.Rate.Why)
	case d.Evictions == 0:
		s := 0.0
		d.Seconds = &s
		d.Why = "nothing to evict"
	default:
		s := last.Sub(now).Seconds()
		d.Seconds = &s
		d.Why = fmt.Sprintf("%d evictions, the last %s after the failure", d.Evictions, fmtSeconds(s))
		if r.Rate.StormHoldSeconds > 0 {
			d.Why += fmt.Sprintf(" (after the storm's hold of %s, unless an operator confirms it sooner)", fmtSeconds(r.Rate.StormHoldSeconds))
		}
	}
	return d
}

// retryOf is when the eviction queue tries an item held back for room
// again at the latest: the controllers park it for min(RetryAfter, the
// summaries' period), which the queue keeps within its backoff's bounds
// (a summary that changes sooner opens its gate: see play).
func retryOf(after, period time.Duration) time.Duration {
	return min(max(min(after, period), evictionqueue.DefaultBackoffBase), evictionqueue.DefaultBackoffMax)
}

// one plays the attempt-th try of one item at now. It returns retry > 0
// when the item waits for room and is tried again after retry, and went
// when the eviction is written; what it places waits in p.unshown for the
// next report.
func (p *player) one(it *item, now time.Time, attempt int, evictor *engine.Evictor) (retry time.Duration, went bool, err error) {
	b, ev := it.b, it.ev
	if !b.spec.TargetContains(it.cluster) {
		ev.Outcome, ev.Code, ev.Reason = OutcomeStays, string(prescheduling.NothingToEvict), "an earlier eviction of the binding already moved it off "+it.cluster
		return 0, false, nil
	}
	// The eviction controller's decision path (engine.Evictor.Evict): the
	// decision at the moment it is due, the binding's budget of clusters in
	// transit, the check on the Fleet the plan holds (no fresh read
	// confirms it), the Ledger, and the graceful eviction task applied to
	// a copy of the spec.
	obj, evicted := b.object()
	step, err := evictor.Evict(context.Background(), now, b.key, obj, p.after[it.cluster], nil)
	res := step.Result
	switch {
	case err != nil:
		ev.Outcome, ev.Code, ev.Reason = OutcomeRefused, string(prescheduling.InvalidRequest), err.Error()
		return 0, false, nil
	case step.Action == engine.EvictionSkip || step.Action == engine.EvictionStays:
		ev.Outcome, ev.Code, ev.Reason = OutcomeStays, string(prescheduling.NothingToEvict), step.Why+step.Decision.Reason
		return 0, false, nil
	case step.Action == engine.EvictionInvalid:
		ev.Outcome, ev.Code, ev.Reason = OutcomeRefused, string(prescheduling.InvalidRequest), step.Err.Error()
		return 0, false, nil
	case step.Action == engine.EvictionWaitForBudget:
		ev.Outcome, ev.Code = OutcomeWaitsForBudget, CodeTransitBudget
		ev.Reason = fmt.Sprintf("%d of at most %d clusters of the binding in transit (%s): it goes once one of their graceful eviction tasks ends",
			len(step.InTransit), step.Budget, strings.Join(step.InTransit, ", "))
		return 0, false, nil
	case step.Action == engine.EvictionWaitForRoom:
		if ev.Reason == "" {
			ev.Reason = res.Reason
		}
		ev.Code = string(res.Code)
		return retryOf(res.RetryAfter, p.cfg.StatusUpdateFrequency), false, nil
	case step.Action == engine.EvictionRefused:
		ev.Outcome, ev.Code = OutcomeRefused, string(res.Code)
		ev.Reason = joinReason(ev.Reason, res.Reason, attempt)
		return 0, false, nil
	}

	// Evicted: the cluster moved into a graceful eviction task, and the
	// scheduler places what it removed. The task ends once the new copies
	// are healthy, taken as at once; the eviction controller, seeing the
	// task gone, then gives the room held back one report period later,
	// if the summaries have not shown it taken by then.
	step.Hold.ReleaseAt(now.Add(p.cfg.StatusUpdateFrequency))
	kept := slices.Clone(evicted.Clusters)
	result, term, serr := p.sched.Schedule(evicted, b.status)
	ev.Round = attempt
	if ev.Code == string(prescheduling.AwaitingCapacity) {
		ev.Outcome = OutcomeWaits
	} else {
		ev.Outcome = OutcomeMoves
	}
	ev.Code = string(res.Code)
	ev.Reason = joinReason(ev.Reason, res.Reason, attempt)
	duplicated := !b.spec.IsWorkload() || b.spec.Placement == nil || b.spec.Placement.ReplicaSchedulingType() == policyv1alpha1.ReplicaSchedulingTypeDuplicated
	had := map[string]int32{}
	for _, tc := range kept {
		had[tc.Name] = tc.Replicas
	}
	if serr == nil {
		for _, tc := range result {
			old, was := had[tc.Name]
			gain := tc.Replicas - old
			if duplicated {
				if was {
					continue
				}
				gain = tc.Replicas
			}
			if gain <= 0 && was {
				continue
			}
			ev.To = append(ev.To, Target{Name: tc.Name, Replicas: max(gain, 0)})
			if gain > 0 {
				p.unshown = append(p.unshown, placed{cluster: tc.Name, replicas: int64(gain), req: b.spec.ReplicaRequirements, at: now})
				p.arriving[tc.Name] += int64(gain)
			}
			if p.bindingsTo[tc.Name] == nil {
				p.bindingsTo[tc.Name] = map[string]bool{}
			}
			p.bindingsTo[tc.Name][b.kind+"/"+b.key] = true
		}
		evicted.Clusters = result
		b.status.SchedulerObservedAffinityName = term
	}
	switch {
	case serr != nil:
		ev.Outcome = OutcomeUnplaced
		ev.Reason = fmt.Sprintf("the check approved it (%s), but Karmada's scheduler fails: %v", res.Reason, serr)
	case duplicated && len(result) < len(b.spec.Clusters):
		ev.Outcome = OutcomeUnplaced
		ev.Reason = fmt.Sprintf("the check approved it (%s), but Karmada's scheduler replaces the copy on no cluster", res.Reason)
	case !duplicated && sumReplicas(result) < b.spec.Replicas:
		ev.Outcome = OutcomeUnplaced
		ev.Reason = fmt.Sprintf("the check approved it (%s), but Karmada's scheduler places %d of %d replicas", res.Reason, sumReplicas(result), b.spec.Replicas)
	}
	b.spec = evicted
	return 0, true, nil
}

func joinReason(waited, reason string, attempt int) string {
	if attempt > 1 && waited != "" {
		return fmt.Sprintf("waited for room (%s), then at try %d: %s", strings.TrimPrefix(waited, "waiting for room: "), attempt, reason)
	}
	return reason
}

// rescheduleDuplicated plays what Karmada's scheduler does on its own when
// the failed clusters change (their taints, so their generation): it
// schedules again every Duplicated binding (and every binding of a
// non-workload) whose affinity matches them (pkg/scheduler's
// doScheduleBinding: "Duplicated resources should always be scheduled").
// A binding it moves off a failed cluster leaves it without an eviction,
// tolerating the taint or not: those items are rescheduled, and the
// eviction controller later finds nothing to evict. A binding it cannot
// schedule keeps its result, as the scheduler leaves it.
func (p *player) rescheduleDuplicated(items []*item) {
	done := map[*binding]bool{}
	for _, it := range items {
		b := it.b
		if done[b] || (b.spec.IsWorkload() && b.spec.Placement != nil && b.spec.Placement.ReplicaSchedulingType() != policyv1alpha1.ReplicaSchedulingTypeDuplicated) {
			continue
		}
		done[b] = true
		result, term, err := p.sched.Schedule(b.spec, b.status)
		if err != nil {
			continue
		}
		had := map[string]bool{}
		for _, tc := range b.spec.Clusters {
			had[tc.Name] = true
		}
		var to []Target
		var moved []placed
		for _, tc := range result {
			if !had[tc.Name] {
				to = append(to, Target{Name: tc.Name, Replicas: tc.Replicas})
				moved = append(moved, placed{cluster: tc.Name, replicas: int64(tc.Replicas), req: b.spec.ReplicaRequirements, at: p.now})
			}
		}
		kept := func(name string) bool {
			return slices.ContainsFunc(result, func(tc workv1alpha2.TargetCluster) bool { return tc.Name == name })
		}
		left := false
		for _, other := range items {
			if other.b != b || kept(other.cluster) {
				continue
			}
			left = true
			ev := other.ev
			ev.Outcome, ev.Code, ev.To = OutcomeRescheduled, CodeRescheduled, to
			if ev.To == nil {
				ev.To = []Target{}
			}
			ev.Reason = fmt.Sprintf("karmada-scheduler places a Duplicated binding again on any change of a cluster it may use: "+
				"it leaves %s with no eviction", other.cluster)
		}
		if !left && len(to) == 0 {
			continue
		}
		for _, m := range moved {
			p.arriving[m.cluster] += m.replicas
			if p.bindingsTo[m.cluster] == nil {
				p.bindingsTo[m.cluster] = map[string]bool{}
			}
			p.bindingsTo[m.cluster][b.kind+"/"+b.key] = true
		}
		b.spec.Clusters = result
		b.status.SchedulerObservedAffinityName = term
		p.unshown = append(p.unshown, moved...)
	}
}

package whatif

import (
	"cmp"
	"context"
	"errors"
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

// clusters is the fleet as the scheduler sees it now, sorted by name.
func (p *player) clusters() []*clusterv1alpha1.Cluster {
	out := make([]*clusterv1alpha1.Cluster, 0, len(p.after))
	for _, name := range sortedKeys(p.after) {
		out = append(out, p.after[name])
	}
	return out
}

// play plays items (in queueOrder) through the library's eviction queues,
// one evictionqueue.Store per kind worked by evictionqueue.Workers on the
// plan's clock with the rate model's Limiter: each item is queued when it
// is due, and a worker takes it when the rate has a permit for it, in the
// queues' own order; the handler is the eviction controller's decision
// path (one). An eviction held back for room parks at engine.RoomGate until the
// next report that shows replicas placed, or its wait ends.
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
	workers, err := evictionqueue.NewWorkers(p.rates)
	if err != nil {
		return err
	}
	var stores [2]*evictionqueue.Store
	byItem := [2]map[evictionqueue.Item]*item{{}, {}}
	attempts := map[*item]int{}
	waited := 0
	var t time.Time // the plan's clock, as Workers.Run is at it
	var failed error
	for k := range stores {
		st, err := evictionqueue.NewStore(evictionqueue.Config{Name: []string{KindResourceBinding, KindClusterResourceBinding}[k], DomainOf: p.domainOf})
		if err != nil {
			return err
		}
		stores[k] = st
		handle := func(_ context.Context, qi evictionqueue.Item) error {
			it := byItem[k][qi]
			attempts[it]++
			waits, retry, went, err := p.one(it, t, attempts[it], evictor)
			switch {
			case err != nil:
				failed = err
				return evictionqueue.Abandon(err)
			case went:
				p.last = maxTime(p.last, t)
				at := t.Sub(p.now).Seconds()
				it.ev.AtSeconds = &at
				return nil
			case waits && attempts[it] < maxAttempts:
				if attempts[it] == 1 {
					waited++
				}
				return evictionqueue.Park(engine.RoomGate, retry, errors.New(it.ev.Reason))
			case waits:
				it.ev.Outcome, it.ev.Code = OutcomeRefused, string(prescheduling.AwaitingCapacity)
				p.notes = append(p.notes, fmt.Sprintf("%s on %s was held back for room %d times: the plan stopped trying it", it.b.key, it.cluster, maxAttempts))
			}
			// Held back, refused or staying: the permit goes back.
			return evictionqueue.Skip(errors.New(it.ev.Reason))
		}
		if err := workers.Add(st, handle, 1); err != nil {
			return err
		}
	}
	kindOf := func(it *item) int {
		if it.b.kind == KindClusterResourceBinding {
			return 1
		}
		return 0
	}
	var queued []*item // in the order the taint manager queues them: when due
	for _, it := range items {
		if it.ev.Outcome == "" {
			queued = append(queued, it)
		}
	}
	slices.SortStableFunc(queued, func(a, b *item) int { return a.due.Compare(b.due) })
	for t = p.now; ; {
		for len(queued) > 0 && !queued[0].due.After(t) {
			it := queued[0]
			queued = queued[1:]
			qi := evictionqueue.Item{Cluster: it.cluster, Key: it.b.key}
			byItem[kindOf(it)][qi] = it
			stores[kindOf(it)].Add(qi, t)
		}
		if shown, err := p.advance(t); err != nil {
			return err
		} else if shown {
			for _, st := range stores {
				st.Open(engine.RoomGate)
			}
		}
		permitAt, err := workers.Run(context.Background(), t)
		if err != nil {
			return err
		}
		if failed != nil {
			return failed
		}
		waiting := stores[0].Len() + stores[1].Len()
		if waiting == 0 && len(queued) == 0 {
			break
		}
		next := permitAt
		if len(queued) > 0 {
			next = earliest(next, queued[0].due)
		}
		for _, st := range stores {
			if at, ok := st.NextDue(); ok {
				next = earliest(next, at)
			}
			if st.Parked(engine.RoomGate) > 0 && len(p.unshown) > 0 {
				next = earliest(next, p.reported.Add(p.cfg.StatusUpdateFrequency))
			}
		}
		// A change of health may free a permit. A turn not after t is
		// played when a worker next asks the rate for one (TakeDomainAt):
		// waiting for it would not move the clock.
		if at := p.rates.nextTurn(); waiting > 0 && at.After(t) {
			next = earliest(next, at)
		}
		if next.IsZero() {
			break // only a change of health could give the waiting a permit: the rule pauses them
		}
		t = next
	}
	// The paused would go once the rule resumes, after all the others: the
	// plan says where (or that they would wait for room then), not when.
	for k, st := range stores {
		for _, qi := range st.Pending() {
			it := byItem[k][qi]
			at := maxTime(p.last, t)
			if _, err := p.advance(at); err != nil {
				return err
			}
			waits, _, went, err := p.one(it, at, attempts[it]+1, evictor)
			if err != nil {
				return err
			}
			if ev := it.ev; went || waits {
				ev.Outcome, ev.Code = OutcomePaused, CodePaused
				ev.Reason = fmt.Sprintf("the rate rule pauses evictions (%s); when it resumes: %s", p.rateWhy, cmp.Or(ev.Reason, "it goes"))
			}
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
// placed before it on the clusters they went to. It reports whether one
// showed any, which changes a summary: the controllers then decide again
// the evictions waiting for room.
func (p *player) advance(t time.Time) (shown bool, err error) {
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
				return shown, err
			}
			p.sched.Set(c)
		}
		shown = shown || n > 0
		p.unshown = p.unshown[n:]
	}
	return shown, nil
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

// one plays the attempt-th try of one item at now. It returns waits when
// the item waits for room, decided again after retry at the latest (the
// controllers park it for min(RetryAfter, the summaries' period); a
// summary that changes sooner opens its gate: see play), and went when the
// eviction is written; what it places waits in p.unshown for the next
// report.
func (p *player) one(it *item, now time.Time, attempt int, evictor *engine.Evictor) (waits bool, retry time.Duration, went bool, err error) {
	b, ev := it.b, it.ev
	if !b.spec.TargetContains(it.cluster) {
		ev.Outcome, ev.Code, ev.Reason = OutcomeStays, string(prescheduling.NothingToEvict), "an earlier eviction of the binding already moved it off "+it.cluster
		return false, 0, false, nil
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
		return false, 0, false, nil
	case step.Action == engine.EvictionSkip || step.Action == engine.EvictionStays:
		ev.Outcome, ev.Code, ev.Reason = OutcomeStays, string(prescheduling.NothingToEvict), step.Why+step.Decision.Reason
		return false, 0, false, nil
	case step.Action == engine.EvictionInvalid:
		ev.Outcome, ev.Code, ev.Reason = OutcomeRefused, string(prescheduling.InvalidRequest), step.Err.Error()
		return false, 0, false, nil
	case step.Action == engine.EvictionWaitForBudget:
		ev.Outcome, ev.Code = OutcomeWaitsForBudget, CodeTransitBudget
		ev.Reason = fmt.Sprintf("%d of at most %d clusters of the binding in transit (%s): it goes once one of their graceful eviction tasks ends",
			len(step.InTransit), step.Budget, strings.Join(step.InTransit, ", "))
		return false, 0, false, nil
	case step.Action == engine.EvictionWaitForRoom:
		if ev.Reason == "" {
			ev.Reason = res.Reason
		}
		ev.Code = string(res.Code)
		return true, min(res.RetryAfter, p.cfg.StatusUpdateFrequency), false, nil
	case step.Action == engine.EvictionRefused:
		ev.Outcome, ev.Code = OutcomeRefused, string(res.Code)
		ev.Reason = joinReason(ev.Reason, res.Reason, attempt)
		return false, 0, false, nil
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
	return false, 0, true, nil
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

// Package whatif is fleetsim's what-if planner: it takes a Karmada control
// plane's Clusters, ClusterTaintPolicies and bindings as they are now, fails
// some of the clusters, and plays what the library's controllers and
// Karmada's scheduler would then do, without writing anything: which taints
// the policies add, which bindings leave the failed clusters and where their
// replicas land (Karmada v1.18's own scheduling algorithm, in process), which
// cannot leave and why (the pre-scheduling check), which wait for room held
// by the evictions before them (karmada.Ledger), each survivor's room before
// and after, and how long the evictions take at the rate the rule sets.
package whatif

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/scheduling"
	"github.com/failoverkit/failover/prescheduling"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

// Input is a control plane's objects, as Read returns them.
type Input struct {
	// Clusters are Karmada's Clusters as read.
	Clusters []clusterv1alpha1.Cluster
	// Policies are the ClusterTaintPolicies, converted
	// (karmada.FromUnstructuredClusterTaintPolicy).
	Policies []taintpolicy.ClusterTaintPolicy
	// ResourceBindings and ClusterResourceBindings are the bindings as
	// read.
	ResourceBindings        []workv1alpha2.ResourceBinding
	ClusterResourceBindings []workv1alpha2.ClusterResourceBinding
}

// Config is how a failure is played.
type Config struct {
	// Failure is what fails.
	Failure Failure
	// Rates is the rate rule (ratelimit.DefaultConfig, or fleetsim's rate
	// flags).
	Rates ratelimit.Config
	// EnableNoExecuteTaintEviction is the controller-manager's
	// --enable-no-execute-taint-eviction: without it a NoExecute taint
	// evicts nothing, as in Karmada.
	EnableNoExecuteTaintEviction bool
	// Now is the moment of the failure.
	Now time.Time
	// SummaryLag is how long after an eviction the survivors' resource
	// summaries show its replicas placed, releasing the room the Ledger
	// holds for it (Karmada's cluster status update frequency); 0 means
	// 10s.
	SummaryLag time.Duration
}

// The taint Karmada v1.18's cluster controller gives a cluster whose Ready
// condition is False, whatever the policies say: no workload is scheduled
// onto it.
const notReadyTaintKey = "cluster.karmada.io/not-ready"

// Kinds of binding, as Eviction.Kind names them.
const (
	KindResourceBinding        = "ResourceBinding"
	KindClusterResourceBinding = "ClusterResourceBinding"
)

// CodeTolerated and CodeNoExecuteDisabled are the codes of an eviction
// that stays; CodePaused, of one the rate rule holds; CodeRescheduled, of
// one Karmada's scheduler moves on its own; CodeTransitBudget, of one
// waiting for its binding's budget of clusters in transit.
const (
	CodeTolerated         = "Tolerated"
	CodeNoExecuteDisabled = "NoExecuteEvictionDisabled"
	CodePaused            = "Paused"
	CodeRescheduled       = "Rescheduled"
	CodeTransitBudget     = "TransitBudget"
)

// binding is one binding as the plan changes it: each eviction moves a
// cluster into a task and the scheduler's result into spec.clusters.
type binding struct {
	kind, key   string
	annotations map[string]string
	spec        *workv1alpha2.ResourceBindingSpec
	status      *workv1alpha2.ResourceBindingStatus
}

// object is the binding as a Karmada object, on copies of its spec and
// status, and the copy's spec, which karmada.Evictor.Evict changes in place.
func (b *binding) object() (runtime.Object, *workv1alpha2.ResourceBindingSpec) {
	meta := metav1.ObjectMeta{Annotations: b.annotations}
	if b.kind == KindClusterResourceBinding {
		o := &workv1alpha2.ClusterResourceBinding{ObjectMeta: meta, Spec: *b.spec.DeepCopy(), Status: *b.status.DeepCopy()}
		return o, &o.Spec
	}
	o := &workv1alpha2.ResourceBinding{ObjectMeta: meta, Spec: *b.spec.DeepCopy(), Status: *b.status.DeepCopy()}
	return o, &o.Spec
}

// item is one binding on one failed cluster.
type item struct {
	b       *binding
	cluster string
	due     time.Time // when the eviction is decided
	ev      *Eviction
}

// Plan plays cfg.Failure on in at cfg.Now. The error is an *ExitError for
// a failure that names nothing the fleet has, or a policy that the
// Evaluator refuses.
func Plan(in *Input, cfg Config) (*Report, error) {
	if cfg.SummaryLag <= 0 {
		cfg.SummaryLag = 10 * time.Second
	}
	if err := cfg.Rates.Validate(); err != nil {
		return nil, usageErr("rates: %v", err)
	}
	failedNames, err := cfg.Failure.resolve(in.Clusters)
	if err != nil {
		return nil, err
	}
	isFailed := map[string]bool{}
	for _, n := range failedNames {
		isFailed[n] = true
	}
	ev, err := taintpolicy.NewEvaluator(in.Policies)
	if err != nil {
		return nil, &ExitError{Code: ExitBadObject, Err: fmt.Errorf("whatif: the ClusterTaintPolicies: %w", err)}
	}
	now := cfg.Now
	r := &Report{
		SchemaVersion: SchemaVersion,
		ReadAt:        now.UTC().Format(time.RFC3339),
		Failure:       Failed{By: cfg.Failure.By, Names: cfg.Failure.Names, Clusters: failedNames},
		Fleet: Fleet{Clusters: len(in.Clusters), ClusterTaintPolicies: len(in.Policies),
			ResourceBindings: len(in.ResourceBindings), ClusterResourceBindings: len(in.ClusterResourceBindings)},
		Taints: []Taint{}, Evictions: []Eviction{}, Clusters: []Room{}, Notes: []string{},
	}

	// The fleet after the failure: the failed clusters not Ready, with the
	// cluster controller's NoSchedule taint and what the policies add.
	after := make(map[string]*clusterv1alpha1.Cluster, len(in.Clusters))
	before := make(map[string]*clusterv1alpha1.Cluster, len(in.Clusters))
	faultyAt := map[string]time.Time{} // when each failed cluster turns faulty
	for i := range in.Clusters {
		c := &in.Clusters[i]
		before[c.Name] = c
		wasFaulty := false
		if conv, err := karmada.FromCluster(c); err == nil && failover.IsFaulty(conv) {
			r.Fleet.FaultyBefore++
			wasFaulty = true
		}
		if !isFailed[c.Name] {
			after[c.Name] = c
			continue
		}
		fc, t := failCluster(c, now, ev, in.Policies)
		after[c.Name] = fc
		r.Taints = append(r.Taints, t)
		if t.Faulty && !wasFaulty { // turns faulty: counts toward a storm
			at := now
			for _, a := range t.Added {
				if a.Effect == string(corev1.TaintEffectNoExecute) || a.Effect == string(failover.TaintEffectPreferNoExecute) {
					at = now.Add(seconds(a.AfterSeconds))
					break
				}
			}
			faultyAt[c.Name] = at
		}
	}
	fleet := &karmada.Fleet{}
	for _, name := range sortedKeys(after) {
		c := after[name]
		if _, err := fleet.Set(c); err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("cluster %s is left out of the fleet the check sees: %v", c.Name, err))
		}
		if conv, err := karmada.FromCluster(c); err == nil && failover.IsFaulty(conv) {
			r.Fleet.FaultyAfter++
		}
	}

	// The bindings on a failed cluster (copies: the plan changes them), and
	// the evictions they face.
	onFailed := func(spec *workv1alpha2.ResourceBindingSpec) bool {
		return slices.ContainsFunc(spec.Clusters, func(tc workv1alpha2.TargetCluster) bool { return isFailed[tc.Name] })
	}
	var bindings []*binding
	for i := range in.ResourceBindings {
		if rb := &in.ResourceBindings[i]; onFailed(&rb.Spec) {
			bindings = append(bindings, &binding{kind: KindResourceBinding, key: rb.Namespace + "/" + rb.Name, annotations: rb.Annotations,
				spec: rb.Spec.DeepCopy(), status: rb.Status.DeepCopy()})
		}
	}
	for i := range in.ClusterResourceBindings {
		if crb := &in.ClusterResourceBindings[i]; onFailed(&crb.Spec) {
			bindings = append(bindings, &binding{kind: KindClusterResourceBinding, key: crb.Name, annotations: crb.Annotations,
				spec: crb.Spec.DeepCopy(), status: crb.Status.DeepCopy()})
		}
	}
	var items []*item
	settled := map[string]time.Time{} // when each failed cluster's taints are all in
	for _, t := range r.Taints {
		at := now
		for _, a := range t.Added {
			at = maxTime(at, now.Add(seconds(a.AfterSeconds)))
		}
		settled[t.Cluster] = at
	}
	r.Fleet.BindingsOnFailed = len(bindings)
	for _, b := range bindings {
		for _, tc := range b.spec.Clusters {
			if !isFailed[tc.Name] {
				continue
			}
			it := &item{b: b, cluster: tc.Name, ev: &Eviction{Kind: b.kind, Binding: b.key, Cluster: tc.Name, Replicas: tc.Replicas, To: []Target{}}}
			decideItem(it, after[tc.Name], settled[tc.Name], cfg.EnableNoExecuteTaintEviction)
			items = append(items, it)
		}
	}
	items = queueOrder(items)

	p := &player{cfg: cfg, fleet: fleet, after: after, arriving: map[string]int64{}, bindingsTo: map[string]map[string]bool{}}
	if err := p.play(items); err != nil {
		return nil, err
	}
	r.Notes = append(r.Notes, p.notes...)
	dues := make([]time.Time, len(items))
	for i, it := range items {
		r.Evictions = append(r.Evictions, *it.ev)
		dues[i] = it.due
	}
	r.Rate = rateOf(cfg.Rates, after, faultyAt, r.Fleet)
	r.Drain = drain(r, cfg, now, dues, faultyAt, after)

	for _, name := range sortedKeys(after) {
		if isFailed[name] {
			continue
		}
		c0, c1 := before[name], after[name]
		zone := c0.Spec.Zone
		if len(c0.Spec.Zones) > 0 {
			zone = strings.Join(c0.Spec.Zones, ",")
		}
		r.Clusters = append(r.Clusters, Room{Name: name, Region: c0.Spec.Region, Zone: zone, Reported: c0.Status.ResourceSummary != nil,
			PodsBefore: int64(karmada.MaxReplicas(c0.Status.ResourceSummary, nil)), PodsAfter: int64(karmada.MaxReplicas(c1.Status.ResourceSummary, nil)),
			Arriving: p.arriving[name], Bindings: len(p.bindingsTo[name])})
	}
	for i := range r.Evictions {
		switch r.Evictions[i].Outcome {
		case OutcomeMoves:
			r.Totals.Moves++
		case OutcomeRefused:
			r.Totals.Refused++
		case OutcomeWaits:
			r.Totals.Waits++
		case OutcomeStays:
			r.Totals.Stays++
		case OutcomeUnplaced:
			r.Totals.Unplaced++
		case OutcomePaused:
			r.Totals.Paused++
		case OutcomeRescheduled:
			r.Totals.Rescheduled++
		case OutcomeWaitsForBudget:
			r.Totals.WaitsForBudget++
		}
	}
	return r, nil
}

// queueOrder puts items in the order the eviction queues take them: each
// queue first in, first out (the controllers give no priority), items due
// together in the order of their keys (in a controller, the informer's);
// the two queues, one per kind, take turns, as their workers do waiting in
// line for the one Limiter's permits.
func queueOrder(items []*item) []*item {
	slices.SortStableFunc(items, func(a, b *item) int {
		return cmp.Or(a.due.Compare(b.due), cmp.Compare(a.b.key, b.b.key), cmp.Compare(a.cluster, b.cluster))
	})
	out := make([]*item, 0, len(items))
	for len(items) > 0 {
		// The items due at the same moment, the two kinds in turn.
		n := 1
		for n < len(items) && items[n].due.Equal(items[0].due) {
			n++
		}
		var kinds [2][]*item
		for _, it := range items[:n] {
			k := 0
			if it.b.kind == KindClusterResourceBinding {
				k = 1
			}
			kinds[k] = append(kinds[k], it)
		}
		for i := 0; i < len(kinds[0]) || i < len(kinds[1]); i++ {
			for k := range kinds {
				if i < len(kinds[k]) {
					out = append(out, kinds[k][i])
				}
			}
		}
		items = items[n:]
	}
	return out
}

// failCluster returns c failed at now: Ready False, the cluster
// controller's NoSchedule taint, and the taints the Evaluator adds, each
// window played out until none is pending.
func failCluster(c *clusterv1alpha1.Cluster, now time.Time, ev *taintpolicy.Evaluator, policies []taintpolicy.ClusterTaintPolicy) (*clusterv1alpha1.Cluster, Taint) {
	fc := c.DeepCopy()
	t := Taint{Cluster: c.Name, Added: []AddedTaint{}}
	ready := metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionFalse, Reason: "WhatIf",
		Message: "played by fleetsim --what-if", LastTransitionTime: metav1.NewTime(now)}
	if i := slices.IndexFunc(fc.Status.Conditions, func(x metav1.Condition) bool { return x.Type == ready.Type }); i >= 0 {
		if fc.Status.Conditions[i].Status == metav1.ConditionFalse {
			ready.LastTransitionTime = fc.Status.Conditions[i].LastTransitionTime
		}
		fc.Status.Conditions[i] = ready
	} else {
		fc.Status.Conditions = append(fc.Status.Conditions, ready)
	}
	if !slices.ContainsFunc(fc.Spec.Taints, func(x corev1.Taint) bool {
		return x.Key == notReadyTaintKey && x.Effect == corev1.TaintEffectNoSchedule
	}) {
		fc.Spec.Taints = append(fc.Spec.Taints, corev1.Taint{Key: notReadyTaintKey, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &metav1.Time{Time: now}})
	}
	conv, err := karmada.FromCluster(fc)
	if err != nil {
		t.Note = fmt.Sprintf("its taints cannot be read (%v): no policy is evaluated on it", err)
		return fc, t
	}
	at := now
	for range 16 {
		res := ev.Evaluate(conv, at)
		for _, a := range res.Added {
			t.Added = append(t.Added, AddedTaint{Key: a.Key, Value: a.Value, Effect: string(a.Effect),
				Policy: policyOf(policies, a, conv), AfterSeconds: at.Sub(now).Seconds()})
		}
		conv.Taints = res.Taints
		if res.RequeueAfter <= 0 {
			break
		}
		at = at.Add(res.RequeueAfter)
	}
	fc.Spec.Taints = conv.Taints
	t.Faulty = failover.IsFaulty(conv)
	switch {
	case t.Faulty && len(t.Added) == 0:
		t.Note = "faulty before the failure: its taints stay"
	case !t.Faulty && len(t.Added) == 0:
		t.Note = "no ClusterTaintPolicy taints it: nothing leaves it"
	case !t.Faulty:
		t.Note = "no NoExecute or PreferNoExecute taint: nothing leaves it"
	}
	return fc, t
}

// policyOf names the first policy (by name) targeting c that lists taint.
func policyOf(policies []taintpolicy.ClusterTaintPolicy, taint corev1.Taint, c failover.Cluster) string {
	var names []string
	for i := range policies {
		sp := &policies[i].Spec
		target := sp.TargetCluster
		if target == nil {
			target = sp.TargetClusters
		}
		if ok, err := target.Matches(c); err != nil || !ok {
			continue
		}
		lists := slices.ContainsFunc(sp.TaintsToAdd, func(x taintpolicy.TaintToAdd) bool { return x.Key == taint.Key && x.Effect == taint.Effect }) ||
			slices.ContainsFunc(sp.Taints, func(x taintpolicy.Taint) bool { return x.Key == taint.Key && x.Effect == taint.Effect })
		if lists {
			names = append(names, policies[i].Name)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// decideItem decides, as the eviction controller does
// (karmada.DecideBindingEviction: the cluster's taints, the binding's
// applied tolerations and its spec.failover.cluster), whether and when the
// binding leaves the cluster, starting at from, when the cluster's taints
// are in.
func decideItem(it *item, c *clusterv1alpha1.Cluster, from time.Time, noExecute bool) {
	// A NoExecute taint the controller leaves out: said in the outcome.
	dropped := !noExecute && slices.ContainsFunc(c.Spec.Taints, func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute })
	at := from
	it.due = from
	for range 8 {
		d, err := karmada.DecideBindingEviction(it.b.annotations, it.b.spec, c, noExecute, at)
		if err != nil {
			it.ev.Outcome, it.ev.Code, it.ev.Reason = OutcomeRefused, string(prescheduling.InvalidRequest), err.Error()
			return
		}
		if d.Evict {
			it.due = at
			return
		}
		if d.After <= 0 {
			it.ev.Outcome, it.ev.Code, it.ev.Reason = OutcomeStays, CodeTolerated, d.Reason
			if dropped {
				it.ev.Code = CodeNoExecuteDisabled
				it.ev.Reason = "its NoExecute taint evicts nothing without --enable-no-execute-taint-eviction (as in Karmada); " + d.Reason
			}
			return
		}
		at = at.Add(d.After)
	}
	it.due = at
}

// player plays the evictions in rounds: in each, the items in queue order,
// each checked on the fleet, admitted by a Ledger holding the room of the
// ones before it, and, if it goes, scheduled by Karmada's algorithm; those
// that wait for room go in the next round, once the summaries show the
// round's replicas placed.
type player struct {
	cfg        Config
	fleet      *karmada.Fleet
	after      map[string]*clusterv1alpha1.Cluster
	arriving   map[string]int64
	bindingsTo map[string]map[string]bool
	// rescheduled are the replicas the scheduler moved on its own, which
	// the summaries show with the first round's.
	rescheduled []placed
	notes       []string
}

// clusters is the fleet as the scheduler sees it now, sorted by name.
func (p *player) clusters() []*clusterv1alpha1.Cluster {
	out := make([]*clusterv1alpha1.Cluster, 0, len(p.after))
	for _, name := range sortedKeys(p.after) {
		out = append(out, p.after[name])
	}
	return out
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
func (p *player) rescheduleDuplicated(items []*item, s *scheduling.Scheduler) {
	done := map[*binding]bool{}
	for _, it := range items {
		b := it.b
		if done[b] || (b.spec.IsWorkload() && b.spec.Placement != nil && b.spec.Placement.ReplicaSchedulingType() != policyv1alpha1.ReplicaSchedulingTypeDuplicated) {
			continue
		}
		done[b] = true
		result, term, err := s.Schedule(b.spec, b.status)
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
				moved = append(moved, placed{cluster: tc.Name, replicas: int64(tc.Replicas), req: b.spec.ReplicaRequirements})
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
		p.rescheduled = append(p.rescheduled, moved...)
	}
}

// roundHold is how long the Ledger of one round holds room: longer than
// any round, whose evictions are decided at the moments they are due.
const roundHold = 365 * 24 * time.Hour

// placed is replicas a round put on a cluster.
type placed struct {
	cluster  string
	replicas int64
	req      *workv1alpha2.ReplicaRequirements
}

func (p *player) play(items []*item) error {
	// Karmada's scheduler on the fleet after the failure, told of each
	// cluster whose summary catches up after a round.
	s := scheduling.NewScheduler(p.clusters())
	p.rescheduleDuplicated(items, s)
	var pending []*item
	for _, it := range items {
		if it.ev.Outcome == "" {
			pending = append(pending, it)
		}
	}
	for round := 1; len(pending) > 0; round++ {
		// Each round starts a Ledger afresh, once the summaries show the
		// round before placed: no hold needs to lapse within a round.
		ledger, err := karmada.NewLedger(karmada.WithHold(roundHold))
		if err != nil {
			return err
		}
		var waiting []*item
		var round_ []placed
		if round == 1 {
			round_ = p.rescheduled
		}
		for _, it := range pending {
			ok, moved := p.one(it, round, ledger, s)
			if !ok {
				waiting = append(waiting, it)
				continue
			}
			round_ = append(round_, moved...)
		}
		if len(waiting) > 0 {
			p.notes = append(p.notes, fmt.Sprintf("round %d: %d of %d evictions wait for room held for those before them; "+
				"which ones wait, and so where each lands, hangs on the order the queues take items due together: "+
				"the informer's in a controller, by key here", round, len(waiting), len(pending)))
		}
		if len(waiting) == len(pending) {
			// Cannot happen: a fresh Ledger holds nothing back. Stop
			// rather than loop.
			for _, it := range waiting {
				it.ev.Outcome = OutcomeRefused
			}
			return nil
		}
		// The summaries catch up: the round's replicas now show on the
		// clusters they went to, and the Ledger's holds end.
		for _, pl := range round_ {
			c := p.after[pl.cluster].DeepCopy()
			c.Status.ResourceSummary = addPlaced(c.Status.ResourceSummary, pl.replicas, pl.req)
			p.after[pl.cluster] = c
			if _, err := p.fleet.Set(c); err != nil {
				return err
			}
			s.Set(c)
		}
		pending = waiting
	}
	return nil
}

// one plays one item in round. It returns false when the item waits for
// room, and otherwise what the eviction placed.
func (p *player) one(it *item, round int, ledger *karmada.Ledger, s *scheduling.Scheduler) (bool, []placed) {
	b, ev := it.b, it.ev
	if !b.spec.TargetContains(it.cluster) {
		ev.Outcome, ev.Code, ev.Reason = OutcomeStays, string(prescheduling.NothingToEvict), "an earlier eviction of the binding already moved it off "+it.cluster
		return true, nil
	}
	// The eviction controller's decision path (karmada.Evictor.Evict): the
	// decision at the moment it is due, the binding's budget of clusters in
	// transit, the check on the Fleet the plan holds (no fresh read
	// confirms it), the Ledger, and the graceful eviction task applied to
	// a copy of the spec.
	obj, evicted := b.object()
	evictor := &karmada.Evictor{Fleet: p.fleet, Ledger: ledger, EnableNoExecuteTaintEviction: p.cfg.EnableNoExecuteTaintEviction}
	step, err := evictor.Evict(context.Background(), it.due, b.key, obj, p.after[it.cluster], nil)
	res := step.Result
	switch {
	case err != nil:
		ev.Outcome, ev.Code, ev.Reason = OutcomeRefused, string(prescheduling.InvalidRequest), err.Error()
		return true, nil
	case step.Action == karmada.EvictionSkip || step.Action == karmada.EvictionStays:
		ev.Outcome, ev.Code, ev.Reason = OutcomeStays, string(prescheduling.NothingToEvict), step.Why+step.Decision.Reason
		return true, nil
	case step.Action == karmada.EvictionInvalid:
		ev.Outcome, ev.Code, ev.Reason = OutcomeRefused, string(prescheduling.InvalidRequest), step.Err.Error()
		return true, nil
	case step.Action == karmada.EvictionWaitForBudget:
		ev.Outcome, ev.Code = OutcomeWaitsForBudget, CodeTransitBudget
		ev.Reason = fmt.Sprintf("%d of at most %d clusters of the binding in transit (%s): it goes once one of their graceful eviction tasks ends",
			len(step.InTransit), step.Budget, strings.Join(step.InTransit, ", "))
		return true, nil
	case step.Action == karmada.EvictionWaitForRoom:
		if ev.Reason == "" {
			ev.Reason = res.Reason
		}
		ev.Code = string(res.Code)
		return false, nil
	case step.Action == karmada.EvictionRefused:
		ev.Outcome, ev.Code = OutcomeRefused, string(res.Code)
		ev.Reason = joinReason(ev.Reason, res.Reason, round)
		return true, nil
	}

	// Evicted: the cluster moved into a graceful eviction task, and the
	// scheduler places what it removed.
	kept := slices.Clone(evicted.Clusters)
	result, term, err := s.Schedule(evicted, b.status)
	ev.Round = round
	if ev.Code == string(prescheduling.AwaitingCapacity) {
		ev.Outcome = OutcomeWaits
	} else {
		ev.Outcome = OutcomeMoves
	}
	ev.Code = string(res.Code)
	ev.Reason = joinReason(ev.Reason, res.Reason, round)
	duplicated := !b.spec.IsWorkload() || b.spec.Placement == nil || b.spec.Placement.ReplicaSchedulingType() == policyv1alpha1.ReplicaSchedulingTypeDuplicated
	had := map[string]int32{}
	for _, tc := range kept {
		had[tc.Name] = tc.Replicas
	}
	var moved []placed
	if err == nil {
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
				moved = append(moved, placed{cluster: tc.Name, replicas: int64(gain), req: b.spec.ReplicaRequirements})
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
	case err != nil:
		ev.Outcome = OutcomeUnplaced
		ev.Reason = fmt.Sprintf("the check approved it (%s), but Karmada's scheduler fails: %v", res.Reason, err)
	case duplicated && len(result) < len(b.spec.Clusters):
		ev.Outcome = OutcomeUnplaced
		ev.Reason = fmt.Sprintf("the check approved it (%s), but Karmada's scheduler replaces the copy on no cluster", res.Reason)
	case !duplicated && sumReplicas(result) < b.spec.Replicas:
		ev.Outcome = OutcomeUnplaced
		ev.Reason = fmt.Sprintf("the check approved it (%s), but Karmada's scheduler places %d of %d replicas", res.Reason, sumReplicas(result), b.spec.Replicas)
	}
	b.spec = evicted
	return true, moved
}

func joinReason(waited, reason string, round int) string {
	if round > 1 && waited != "" {
		return fmt.Sprintf("waited for room (%s), then in round %d: %s", strings.TrimPrefix(waited, "waiting for room: "), round, reason)
	}
	return reason
}

func sumReplicas(ts []workv1alpha2.TargetCluster) int32 {
	var n int32
	for _, t := range ts {
		n += t.Replicas
	}
	return n
}

// addPlaced returns s with n more replicas needing req allocated: pods and
// each resource requested.
func addPlaced(s *clusterv1alpha1.ResourceSummary, n int64, req *workv1alpha2.ReplicaRequirements) *clusterv1alpha1.ResourceSummary {
	if s == nil || n <= 0 {
		return s
	}
	out := s.DeepCopy()
	if out.Allocated == nil {
		out.Allocated = corev1.ResourceList{}
	}
	add := func(name corev1.ResourceName, q resource.Quantity) {
		cur := out.Allocated[name]
		cur.Add(q)
		out.Allocated[name] = cur
	}
	add(corev1.ResourcePods, *resource.NewQuantity(n, resource.DecimalSI))
	if req != nil {
		for name, q := range req.ResourceRequest {
			if name == corev1.ResourcePods {
				continue
			}
			total := *resource.NewMilliQuantity(q.MilliValue()*n, q.Format)
			add(name, total)
		}
	}
	return out
}

// rateOf is the rate rule as it stands once the failure's taints are in.
func rateOf(cfg ratelimit.Config, after map[string]*clusterv1alpha1.Cluster, faultyAt map[string]time.Time, f Fleet) Rate {
	out := Rate{Rule: string(cmp.Or(cfg.DisruptionDomain, ratelimit.DomainFleet)), Domains: []DomainRate{}}
	h := ratelimit.Health{Total: f.Clusters, Unhealthy: f.FaultyAfter}
	if !cfg.DisruptionDomain.PerDomain() {
		out.PerSecond = cfg.RateFor(h)
		share := fmt.Sprintf("%d of %d clusters faulty (%.0f%%)", h.Unhealthy, h.Total, 100*h.FailureRate())
		switch {
		case out.PerSecond == 0:
			out.Why = fmt.Sprintf("%s: above --unhealthy-cluster-threshold %v in a fleet of at most --large-cluster-num-threshold %d: evictions pause",
				share, cfg.UnhealthyClusterThreshold, cfg.LargeClusterNumThreshold)
		case h.FailureRate() > cfg.UnhealthyClusterThreshold:
			out.Why = fmt.Sprintf("%s: above --unhealthy-cluster-threshold %v in a large fleet: the secondary rate", share, cfg.UnhealthyClusterThreshold)
		default:
			out.Why = share + ": the primary rate"
		}
	} else {
		domains := map[string]ratelimit.Health{}
		for _, c := range after {
			conv, err := karmada.FromCluster(c)
			if err != nil {
				continue
			}
			for _, d := range domainsOf(conv, cfg.DisruptionDomain) {
				dh := domains[d]
				dh.Total++
				if failover.IsFaulty(conv) {
					dh.Unhealthy++
				}
				domains[d] = dh
			}
		}
		rates, total := cfg.DomainRates(domains)
		out.PerSecond = total
		for _, d := range sortedKeys(domains) {
			if domains[d].Unhealthy == 0 {
				continue
			}
			out.Domains = append(out.Domains, DomainRate{Name: d, State: rates[d].State.String(), Clusters: domains[d].Total,
				Faulty: domains[d].Unhealthy, PerSecond: rates[d].Rate})
		}
		out.Why = fmt.Sprintf("each %s apart, all together at most %v/s", cfg.DisruptionDomain, total)
		if total == 0 {
			out.Why = fmt.Sprintf("every %s is in FullDisruption: evictions pause (the control plane is more likely cut off)", cfg.DisruptionDomain)
		}
	}
	if hold := stormHold(cfg, f, faultyAt, after); hold > 0 {
		out.StormHoldSeconds = hold.Seconds()
		out.Why += fmt.Sprintf("; a failure storm (%d clusters faulty within --storm-window %v, more than --storm-threshold %v of %d): every eviction waits --storm-confirm %v, or until an operator confirms it (confirm=storm)",
			len(faultyAt), cfg.StormWindow, cfg.StormThreshold, f.Clusters, cfg.StormConfirm)
	}
	return out
}

// stormHold is how long a failure storm holds evictions, 0 when the
// failure is none: more clusters turn faulty within StormWindow than
// StormThreshold of the fleet. Under a domain rule a single domain in
// FullDisruption does not count, as in ratelimit.
func stormHold(cfg ratelimit.Config, f Fleet, faultyAt map[string]time.Time, after map[string]*clusterv1alpha1.Cluster) time.Duration {
	if cfg.StormThreshold <= 0 || cfg.StormWindow <= 0 || cfg.StormConfirm <= 0 {
		return 0
	}
	times := make([]time.Time, 0, len(faultyAt))
	for _, t := range faultyAt {
		times = append(times, t)
	}
	slices.SortFunc(times, time.Time.Compare)
	most := 0
	for i := range times {
		j := i
		for j < len(times) && times[j].Sub(times[i]) <= cfg.StormWindow {
			j++
		}
		most = max(most, j-i)
	}
	if cfg.DisruptionDomain.PerDomain() {
		full := fullDomains(cfg.DisruptionDomain, after)
		if len(full) == 1 {
			for name := range faultyAt {
				conv, err := karmada.FromCluster(after[name])
				if err == nil && slices.Contains(domainsOf(conv, cfg.DisruptionDomain), full[0]) {
					most--
				}
			}
		}
	}
	if float64(most) > cfg.StormThreshold*float64(f.Clusters) {
		return cfg.StormConfirm
	}
	return 0
}

// fullDomains lists the domains whose every cluster is faulty.
func fullDomains(d ratelimit.Domain, after map[string]*clusterv1alpha1.Cluster) []string {
	all, faulty := map[string]int{}, map[string]int{}
	for _, c := range after {
		conv, err := karmada.FromCluster(c)
		if err != nil {
			continue
		}
		for _, dom := range domainsOf(conv, d) {
			all[dom]++
			if failover.IsFaulty(conv) {
				faulty[dom]++
			}
		}
	}
	var out []string
	for dom, n := range all {
		if faulty[dom] == n {
			out = append(out, dom)
		}
	}
	slices.Sort(out)
	return out
}

// domainsOf is ratelimit.DomainsOf, with "" for a cluster without one, as
// the controllers file it.
func domainsOf(c failover.Cluster, d ratelimit.Domain) []string {
	if ds := ratelimit.DomainsOf(c, d); len(ds) > 0 {
		return ds
	}
	return []string{""}
}

// drain times the evictions that go, in queue order, at the rate: each
// bucket (the fleet's, or each domain's and the total) holds one permit
// and fills at its rate; a round waits for the summaries to show the one
// before it; a storm holds all.
func drain(r *Report, cfg Config, now time.Time, dues []time.Time, faultyAt map[string]time.Time, after map[string]*clusterv1alpha1.Cluster) Drain {
	d := Drain{}
	rateFor := func(cluster string) (string, float64) {
		if !cfg.Rates.DisruptionDomain.PerDomain() {
			return "", r.Rate.PerSecond
		}
		conv, err := karmada.FromCluster(after[cluster])
		if err != nil {
			return "", 0
		}
		dom := domainsOf(conv, cfg.Rates.DisruptionDomain)[0]
		for _, dr := range r.Rate.Domains {
			if dr.Name == dom {
				return dom, dr.PerSecond
			}
		}
		return dom, r.Rate.PerSecond
	}
	var start time.Time
	if r.Rate.StormHoldSeconds > 0 {
		first := now
		for _, t := range faultyAt {
			first = maxTime(first, t)
		}
		start = first.Add(seconds(r.Rate.StormHoldSeconds))
	}
	next := map[string]time.Time{}
	var nextTotal, last time.Time
	roundEnd := map[int]time.Time{}
	paused := 0
	// In queue order within each round, rounds one after the other.
	order := make([]int, 0, len(r.Evictions))
	for i := range r.Evictions {
		if r.Evictions[i].Round > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(r.Evictions[a].Round, r.Evictions[b].Round) })
	for _, i := range order {
		e := &r.Evictions[i]
		d.Evictions++
		dom, rate := rateFor(e.Cluster)
		if rate <= 0 || (cfg.Rates.DisruptionDomain.PerDomain() && r.Rate.PerSecond <= 0) {
			paused++
			e.Outcome, e.Code = OutcomePaused, CodePaused
			e.Reason = fmt.Sprintf("the rate rule pauses evictions (%s); when it resumes: %s", r.Rate.Why, e.Reason)
			continue
		}
		t := maxTime(dues[i], start)
		if e.Round > 1 {
			t = maxTime(t, roundEnd[e.Round-1].Add(cfg.SummaryLag))
		}
		t = maxTime(t, next[dom])
		if cfg.Rates.DisruptionDomain.PerDomain() {
			t = maxTime(t, nextTotal)
			nextTotal = t.Add(perPermit(r.Rate.PerSecond))
		}
		next[dom] = t.Add(perPermit(rate))
		roundEnd[e.Round] = maxTime(roundEnd[e.Round], t)
		last = maxTime(last, t)
		at := t.Sub(now).Seconds()
		e.AtSeconds = &at
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

func perPermit(rate float64) time.Duration {
	return time.Duration(math.Round(float64(time.Second) / rate))
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// fmtSeconds prints s as a duration a person reads: 90 → 1m30s, and
// below a minute to a tenth of a second (1.6 → 1.6s).
func fmtSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if s < 60 {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

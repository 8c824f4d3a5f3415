// Package whatif is fleetsim's what-if planner: it takes a Karmada control
// plane's Clusters, ClusterTaintPolicies and bindings as they are now, fails
// some of the clusters, and plays what the library's controllers and
// Karmada's scheduler would then do, without writing anything: which taints
// the policies add, which bindings leave the failed clusters and where their
// replicas land (Karmada v1.18's own scheduling algorithm, in process), which
// cannot leave and why (the pre-scheduling check), which wait for room held
// by the evictions before them (engine.Ledger), each survivor's room before
// and after, and how long the evictions take at the rate the rule sets.
package whatif

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
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
	// StatusUpdateFrequency is the controller-manager's
	// --cluster-status-update-frequency: how often each cluster's resource
	// summary is reported. The plan has every survivor report one period
	// after the failure and every period after that, each report showing
	// the replicas placed on it before it; 0 means 10s. Karmada's
	// scheduler places by these summaries, and the Ledger holds room until
	// they show it taken.
	StatusUpdateFrequency time.Duration
	// CapacityHold is --eviction-capacity-hold: how long the Ledger holds
	// the room of an approved eviction at most (engine.WithHold); 0 means
	// engine.DefaultHold. DisableLedger is --eviction-capacity-hold=0.
	CapacityHold  time.Duration
	DisableLedger bool
	// MaxClustersInTransit is --max-clusters-in-transit (0: unlimited).
	MaxClustersInTransit int
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
// status, and the copy's spec, which engine.Evictor.Evict changes in place.
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
	if cfg.StatusUpdateFrequency <= 0 {
		cfg.StatusUpdateFrequency = 10 * time.Second
	}
	if cfg.CapacityHold <= 0 {
		cfg.CapacityHold = engine.DefaultHold
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
	fleet := &engine.Fleet{}
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

	// The controllers' Limiter, played over the clusters turning faulty:
	// once to see whether a failure storm holds, once to pace the plan.
	stormModel, err := newRateModel(cfg.Rates, before, after, faultyAt, now)
	if err != nil {
		return nil, err
	}
	rates, err := newRateModel(cfg.Rates, before, after, faultyAt, now)
	if err != nil {
		return nil, err
	}
	r.Rate = rateOf(cfg.Rates, after, faultyAt, r.Fleet, stormModel.storm())
	p := &player{cfg: cfg, now: now, fleet: fleet, after: after, arriving: map[string]int64{}, bindingsTo: map[string]map[string]bool{},
		rates: rates, rateWhy: r.Rate.Why}
	if err := p.play(items); err != nil {
		return nil, err
	}
	r.Notes = append(r.Notes, p.notes...)
	for _, it := range items {
		r.Evictions = append(r.Evictions, *it.ev)
	}
	r.Drain = drain(r, now, p.last)

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
	r.Hint = noExecuteHint(r)
	return r, nil
}

// noExecuteHint says when evictions stay only because NoExecute eviction is
// off: "" when none does.
func noExecuteHint(r *Report) string {
	off := 0
	for _, e := range r.Evictions {
		if e.Code == CodeNoExecuteDisabled {
			off++
		}
	}
	if off == 0 {
		return ""
	}
	what := fmt.Sprintf("%d of %d evictions stay", off, len(r.Evictions))
	if r.Totals.Moves+r.Totals.Waits+r.Totals.Rescheduled+r.Totals.Unplaced+r.Totals.Paused == 0 {
		what = "nothing moves: " + what
	}
	return what + " only because the failure's taints are NoExecute and --enable-no-execute-taint-eviction is off " +
		"(the default, as in Karmada); if the controller-manager runs with it on, plan with --enable-no-execute-taint-eviction, " +
		"or give its flags with --controller-flags"
}

// queueOrder puts items in the order the plan reports them, which is the
// order the eviction queues take them when nothing waits: by when each is
// due, items due together in the order of their keys (in a controller, the
// informer's), the two kinds in turn. The plan queues them in it (play),
// and the library's queues and workers take them from there.
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

// rateOf is the rate rule as it stands once the failure's taints are in,
// and the failure storm's hold that began at storm (zero: none).
func rateOf(cfg ratelimit.Config, after map[string]*clusterv1alpha1.Cluster, faultyAt map[string]time.Time, f Fleet, storm time.Time) Rate {
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
	if !storm.IsZero() {
		out.StormHoldSeconds = cfg.StormConfirm.Seconds()
		out.Why += fmt.Sprintf("; a failure storm (%d clusters faulty within --storm-window %v, more than --storm-threshold %v of %d): every eviction waits --storm-confirm %v, or until an operator confirms it (confirm=storm)",
			len(faultyAt), cfg.StormWindow, cfg.StormThreshold, f.Clusters, cfg.StormConfirm)
	}
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

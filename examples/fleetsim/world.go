package main

import (
	"maps"
	"slices"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	kengine "github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/karmada/scheduling"
	"github.com/failoverkit/failover/metrics"
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
	faulty bool
	// domain is the disruption domain its items are paced in (its region,
	// zone or provider, as --disruption-domain says); "" under the fleet
	// rule.
	domain   string
	nextEval time.Time // zero: nothing pending
	dirty    bool      // conditions changed: evaluate now
	// cutOffAt is when a cutOff event made the control plane lose sight of
	// the cluster; zero once its Ready condition is True again.
	cutOffAt time.Time
	// readySince is since when it has been Ready without a break (zero
	// while it is not), and tainted whether it carries a NoExecute or
	// PreferNoExecute taint: what a failback to it waits for.
	readySince time.Time
	tainted    bool
	// kc is the cluster as the Karmada object last published (publish).
	kc *clusterv1alpha1.Cluster
	// reported is the replicas it runs as its resource summary last
	// reported them (reportSummaries), which publish writes; stale: they
	// changed since.
	reported int32
	stale    bool
	idx      int // its place in world.clusters
}

// binding is a ResourceBinding or ClusterResourceBinding with its schedule
// result, graceful eviction tasks and the health of its copies.
type binding struct {
	spec  *bindingSpecResolved
	queue int
	// gb is fleetsim's record of the binding; obj is the Karmada object
	// the engine reads and writes, which write brings up to date.
	gb  gracefulevict.Binding
	obj runtime.Object
	idx int // its place in world.bindings, which orders every pass over them
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
// Only the driver's goroutine uses it.
type world struct {
	sc       *scenario
	cfg      ratelimit.Config
	clk      clock.PassiveClock
	clusters []*clusterState
	byName   map[string]*clusterState
	// watched are the clusters the taint controller must look at: those
	// whose conditions changed (dirty) or whose window runs (nextEval),
	// so that a step does not look at the whole fleet.
	watched  map[*clusterState]struct{}
	bindings []*binding
	byKey    [2]map[string]*binding
	// onCluster indexes the bindings by the clusters of their schedule
	// results, and active holds those with open graceful eviction tasks:
	// the controllers look at these, not at every binding.
	onCluster map[string]map[*binding]struct{}
	active    map[*binding]struct{}
	load      map[string]int // copies scheduled per cluster
	// used is the replicas scheduled per cluster, against sc.Capacity.
	used map[string]int32
	// stale are the clusters whose replicas changed since their summaries
	// last reported them, and reportAt the next report: every
	// clusterStatusUpdateFrequency from the start (reportSummaries).
	stale    []*clusterState
	reportAt time.Time

	evaluator *taintpolicy.Evaluator
	tracker   *ratelimit.Tracker
	limiter   *ratelimit.Limiter
	queues    [2]*evictionqueue.Store // the engine's
	engine    *engine
	assessor  *gracefulevict.Assessor
	// The engine's decision path: the Fleet it checks on (publish keeps
	// it), the Ledger of the room held for approved evictions, and the
	// Evictor over both.
	fleet    *kengine.Fleet
	ledger   *kengine.Ledger
	evictor  *kengine.Evictor
	fleetErr error // the first cluster the Fleet refused
	// scheduler is Karmada's scheduler over the clusters as published.
	scheduler *scheduling.Scheduler
	// apis are the APIs every cluster serves: the kinds of the bindings.
	apis []clusterv1alpha1.APIEnablement

	// improvements counts taint removals. An eviction abandoned for want
	// of a target is queued again only once some cluster has lost a taint
	// since (a target may have appeared), so that a hopeless item does not
	// spend a permit on every change of the fleet.
	improvements int
	abandoned    map[itemID]int
	// scanAt is when a toleration runs out and the taint manager must look
	// again; scan asks for a look now.
	scanAt time.Time
	scan   bool

	// inFlight are the evictions accepted in the background, in the order
	// they finish.
	inFlight []*completion
	// frozen: an operator's freeze (a timeline event) holds every eviction
	// back.
	frozen  bool
	metrics *metrics.Metrics
	// stormConfirmed is when an operator last ended a storm's hold
	// (confirmStorm); zero: never.
	stormConfirmed time.Time
	// failback is the failback controller; nil when the scenario does not
	// turn failback on.
	failback *failbackState
	// appf is the application failover controller; nil when the scenario
	// does not turn it on.
	appf *appFailoverState

	rec *recorder
}

type itemID struct{ cluster, key string }

func (w *world) addCopy(b *binding, cluster string, readyAt time.Time) {
	w.load[cluster]++
	b.readyAt[cluster] = readyAt
}

// replicasOn is how many replicas (pods, in the cluster's resource
// summary) b runs on target t: its share when divided, all of them when
// duplicated, none for kinds without replicas.
func replicasOn(b *binding, t failover.TargetCluster) int32 {
	if b.spec.divided() {
		return t.Replicas
	}
	return b.spec.Replicas
}

// spare is how many more replicas cluster can take, and whether its
// capacity is known: the pre-scheduling check's capacity function.
func (w *world) spare(cluster string) (int32, bool) {
	c, ok := w.sc.Capacity[cluster]
	if !ok {
		return 0, false
	}
	return c - w.used[cluster], true
}

// setSchedule replaces b's schedule result; new copies turn Healthy at
// readyAt(cluster).
func (w *world) setSchedule(b *binding, result []failover.TargetCluster, readyAt func(string) time.Time) {
	for _, t := range b.gb.Clusters {
		w.used[t.Name] -= replicasOn(b, t)
	}
	for _, t := range result {
		w.used[t.Name] += replicasOn(b, t)
	}
	// The clusters report the replicas they run (their resource summaries)
	// at the next report (reportSummaries).
	for _, ts := range [][]failover.TargetCluster{b.gb.Clusters, result} {
		for _, t := range ts {
			if c := w.byName[t.Name]; c != nil && !c.stale && c.reported != w.used[t.Name] {
				c.stale = true
				w.stale = append(w.stale, c)
			}
		}
	}
	old := map[string]bool{}
	for _, t := range b.gb.Clusters {
		old[t.Name] = true
	}
	for _, t := range result {
		if !old[t.Name] {
			w.addCopy(b, t.Name, readyAt(t.Name))
			if w.onCluster[t.Name] == nil {
				w.onCluster[t.Name] = map[*binding]struct{}{}
			}
			w.onCluster[t.Name][b] = struct{}{}
		}
		delete(old, t.Name)
	}
	for name := range old {
		w.load[name]--
		delete(w.onCluster[name], b)
	}
	b.gb.Clusters = result
}

// reportSummaries is the member clusters reporting their resource
// summaries, as each does every --cluster-status-update-frequency: the
// clusters whose replicas changed since their last report publish the
// replicas they run now. Between reports, the scheduler and the
// pre-scheduling check see the summaries of the last report, and the
// Ledger holds the room of the evictions they do not show yet, as in
// Karmada (karmada#6518). fleetsim reports every cluster's at once, every
// clusterStatusUpdateFrequency from the start of the run.
func (w *world) reportSummaries() {
	for _, c := range w.stale {
		c.stale = false
		if c.reported != w.used[c.Name] {
			c.reported = w.used[c.Name]
			w.publish(c)
		}
	}
	w.stale = w.stale[:0]
}

// touch tells the graceful eviction controller that b changed: its tasks
// are assessed again at the next pass.
func (w *world) touch(b *binding) {
	b.dirty = true
	if len(b.gb.Tasks) > 0 {
		w.active[b] = struct{}{}
	}
}

// byIndex returns the bindings of set in the order of world.bindings.
func byIndex(set map[*binding]struct{}) []*binding {
	out := make([]*binding, 0, len(set))
	for b := range set {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *binding) int { return a.idx - b.idx })
	return out
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
// ready); on a Ready cluster, the application's own health when the
// scenario's spec.applicationFailover.timeline gives it one (appHealth).
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
		h[t.Name] = w.appHealth(b, t.Name, h[t.Name])
	}
	return h
}

// perDomain reports whether health is judged per disruption domain
// (--disruption-domain region, zone or provider).
func (w *world) perDomain() bool { return w.cfg.DisruptionDomain.PerDomain() }

// domainOf is the queues' Config.DomainOf: the domain a cluster's items are
// paced in.
func (w *world) domainOf(cluster string) string {
	if c := w.byName[cluster]; c != nil {
		return c.domain
	}
	return ""
}

// observeRate reads the rate in force, records a change and returns it.
//
// Under the fleet rule it is the Limiter's rate, and the verdict bounds the
// evictions by it. Under a domain rule the Limiter has a rate per domain
// and caps their sum at --resource-eviction-rate: the rate in force is what
// the queued items can get together, the sum of the rates of the domains
// that have queued items (of all domains, when none is queued) capped at
// that total; the verdict bounds each domain's evictions by its own rate
// and all of them by the total.
func (w *world) observeRate(now time.Time) float64 {
	if !w.perDomain() {
		r := w.limiter.Rate()
		w.rec.rate(now, r, r)
		return r
	}
	rates := w.limiter.DomainRates()
	for _, d := range slices.Sorted(maps.Keys(rates)) { // the log in one order, run after run
		w.rec.domainRate(now, d, rates[d].Rate)
	}
	r, bound := domainRateInForce(w.cfg, rates, w.pendingDomains())
	w.rec.rate(now, r, bound)
	return r
}

// domainRateInForce is, under a domain rule, the rate the items queued in
// pending can get together (all domains' when pending is empty), and the
// cap on the sum of all domains' evictions: --resource-eviction-rate while
// any domain may evict, else 0.
func domainRateInForce(cfg ratelimit.Config, rates map[string]ratelimit.DomainRate, pending []string) (rate, bound float64) {
	all := 0.0
	for _, dr := range rates {
		all += dr.Rate
	}
	if all > 0 {
		bound = cfg.ResourceEvictionRate
	}
	if len(pending) == 0 {
		return min(all, bound), bound
	}
	for _, d := range pending {
		rate += rates[d].Rate
	}
	return min(rate, bound), bound
}

// pendingDomains are the domains with items pending in either queue.
func (w *world) pendingDomains() []string {
	d := append(w.queues[qRB].PendingDomains(), w.queues[qCRB].PendingDomains()...)
	slices.Sort(d)
	return slices.Compact(d)
}

// notReady counts the clusters whose Ready condition is not True.
func (w *world) notReady() int {
	n := 0
	for _, c := range w.clusters {
		if r := c.Condition("Ready"); r == nil || r.Status != metav1.ConditionTrue {
			n++
		}
	}
	return n
}

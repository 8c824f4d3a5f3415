//go:build !failover_newest

// The model harness implements controller-runtime's manager.Manager, whose
// method set changes between releases (GetEventRecorder's result type after
// v0.23): hack/newest.sh, which builds on the newest controller-runtime,
// leaves it out with the tag failover_newest. Every other run builds it.

package controllers

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/prescheduling"
)

// TestModelApplicationFailover is the model-based test of the
// ApplicationFailoverController (issue 39): the controllers of Setup and an
// ApplicationFailoverController run in a controller-runtime manager
// (model_harness_test.go) against the fake API server, and the model plays
// everyone else: Karmada's work status controller, which writes each
// copy's health (status.aggregatedStatus[].health) Healthy, Unhealthy or
// Unknown over time, flapping between Unhealthy and Unknown; leader
// changes (a new manager with a new controller, which knows only what the
// API server holds: the timers in karmada.ApplicationTimersAnnotation),
// with a gap without any leader, mid-window; clusters that fail (a
// NoExecute taint, their copies Unknown) or fill up, placements narrowed
// to where a workload runs, so that some failovers have nowhere to go;
// Karmada's scheduler, which places the copies a failover took away; the
// budget of clusters in transit; the operator's freeze; the bad-rollout
// hold and its confirmation; a lagging cache and a slow API server; time.
//
// The invariants (afInvariants) are checked on the model's own history of
// each copy's health, as the API server stored it, not on the library's
// reading of it: all five at every failover written, (2) after every step
// too. A controller sees a change of health up to D after it
// happened (afModel.delayLocked: the cache's lag, the API's latency for
// every binding ahead in the queue, and a second), and stamps what it sees
// at the whole second at or after it; it sees nothing while no leader runs,
// and a new leader reads the timers its predecessor last wrote. The model
// bounds, from its history and the leaders' terms, the Unhealthy time any
// such controller may have counted (upper, for (1)) and must have counted
// (lower, for (2)).
//
//	go test ./controllers/ -run 'TestModelApplicationFailover$'                       # the fixed seeds, as CI runs them
//	go test ./controllers/ -run 'TestModelApplicationFailover$' -model.seed=3 -model.v # replay one seed, logging every step
//	go test ./controllers/ -run 'TestModelApplicationFailover$' -model.duration=10m    # random seeds for ten minutes
//	go test ./controllers/ -run 'TestModelApplicationFailover$' -model.invariants=12   # report only (1) and (2)
func TestModelApplicationFailover(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	seeds := afFixedSeeds
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
	stats := map[int64]*afStats{}
	run := func(seed int64) {
		t.Run("seed="+strconv.FormatInt(seed, 10), func(t *testing.T) {
			s := &afStats{}
			stats[seed] = s
			synctest.Test(t, func(t *testing.T) { runAppFailoverModel(t, seed, *modelSteps, s) })
			t.Logf("seed %d: %s", seed, s)
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
	total := &afStats{}
	for _, s := range stats {
		total.add(s)
	}
	t.Logf("%d seeds run: %s", len(stats), total)
	// Non-vacuity, as TestModelFailback holds its fixed seeds: each fixed
	// seed fails over, and together they restart mid-window, flap Unknown,
	// refuse a failover with nowhere to go, wait for a budget, hold a bad
	// rollout, freeze, and check liveness on copies due to fail over.
	if *modelSeed == 0 && *modelSeeds == 0 && *modelDuration == 0 && *modelSteps == modelDefaultSteps {
		for _, s := range seeds {
			if st := stats[s]; st != nil && st.failovers == 0 {
				t.Errorf("seed %d: no application failover written: the model no longer fails over, and its invariants hold vacuously", s)
			}
		}
		for what, n := range map[string]int{
			"restarts mid-window": total.midWindow, "Unknown flaps": total.flaps, "liveness checks": total.liveChecked,
			"early checks": total.earlyChecked, "refusals (nowhere to go)": total.refused, "waits for the budget": total.budget,
			"bad-rollout holds": total.badRollout, "failovers held by a freeze": total.frozen,
		} {
			if n == 0 {
				t.Errorf("the fixed seeds saw no %s: each must be more than 0 (%s)", what, total)
			}
		}
	}
}

// afFixedSeeds run in CI: each fails over; together they make every
// invariant and every gate non-vacuous (the test asserts it), and play
// both Unknown policies (3: Reset) and the bad-rollout hold on (1, 2, 4)
// and off (3).
var afFixedSeeds = []int64{1, 2, 3, 4}

// afInvariants, by number, as the report names them.
var afInvariants = map[string]string{
	"1": "no failover from a cluster before the copy there has been Unhealthy for the window, counted as the policy says (Healthy resets; Unknown neither starts nor resets, or resets with --application-failover-unknown=Reset), by the model's history of its health: at most what a controller that sees each change up to D late, stamps it at the whole second after, and sees nothing while no leader runs may have counted",
	"2": "a copy that has been Unhealthy for the window (the least any such controller must have counted) fails over by the latest of: the moment it had, the last leader change (a new leader lists and decides every binding), the last write of its binding (what ends a bad-rollout hold, a budget's wait, a refusal for its placement), each plus D; the last write of a Cluster (what ends a refusal, its confirm reads' disagreement) plus maxTransitRetry and D; a thaw plus freezeRecheck, a rate pause or a storm plus failbackRecheck, room or its budget last found short plus maxTransitRetry, each plus D; plus the rate's time and D for every copy due at once, and 2 s: checked after every step, unless a gate the model finds true holds it back then (the freeze, a storm, the rate paused, the bad-rollout rule, nowhere to go, no room with the Ledger's holds, the budget), and at every failover written, unless such a gate was found holding it at a check since the last one before it was due",
	"3": "never a failover with nowhere to go: the pre-scheduling check on the binding overwritten and the API server's clusters finds it feasible, as they are or as they were at some moment within the time a write may follow its confirm reads",
	"4": "never more graceful eviction tasks open on a binding than its budget of clusters in transit (MaxClustersInTransitAnnotation) after a failover",
	"5": "no failover written while the operator's freeze is set, but for one whose attempt passed its last look at the freeze less than the time a write may follow it before",
}

// afStats counts what a sequence did, for the summary and non-vacuity.
type afStats struct {
	failovers, midWindow, restarts, flaps, liveChecked, earlyChecked int
	refused, budget, badRollout, frozen, confirmed, excused          int
	violations                                                       int
}

func (s *afStats) add(o *afStats) {
	s.failovers += o.failovers
	s.midWindow += o.midWindow
	s.restarts += o.restarts
	s.flaps += o.flaps
	s.liveChecked += o.liveChecked
	s.earlyChecked += o.earlyChecked
	s.refused += o.refused
	s.budget += o.budget
	s.badRollout += o.badRollout
	s.frozen += o.frozen
	s.confirmed += o.confirmed
	s.excused += o.excused
	s.violations += o.violations
}

func (s *afStats) String() string {
	return fmt.Sprintf("%d application failovers written (each checked for (1) to (5)), %d leader changes (%d mid-window), %d Unknown flaps, liveness checked %d times on due copies (%d excused by a gate found true), refusals %d, budget waits %d, bad-rollout holds %d (confirmed %d), held by a freeze %d, %d violations",
		s.failovers, s.restarts, s.midWindow, s.flaps, s.liveChecked, s.excused, s.refused, s.budget, s.badRollout, s.confirmed, s.frozen, s.violations)
}

const (
	afNamespace = "shop"
	afDownTaint = "model.example.com/down" // a failed cluster's, NoExecute
	afMaxBind   = 8
	afLeaseGap  = 15 * time.Second // the longest the model leaves without a leader
)

// afHealth is a copy's health from at on.
type afHealth struct {
	at time.Time
	h  workv1alpha2.ResourceHealth
}

// afPair is the copy of a binding on one cluster, while the controller
// judges it (the cluster is in spec.clusters without a graceful eviction
// task): its health as the API server stored it, each change at the moment
// it was stored.
type afPair struct {
	key, cluster string
	joined       time.Time
	hist         []afHealth
}

func (p *afPair) id() string { return p.key + "@" + p.cluster }

func (p *afPair) now() workv1alpha2.ResourceHealth { return p.hist[len(p.hist)-1].h }

// afLeader is a leader's term; stop is zero while it runs.
type afLeader struct{ start, stop time.Time }

// afBinding is what the model keeps of one binding.
type afBinding struct {
	window   time.Duration
	desired  int       // copies a Duplicated binding wants
	writeAt  time.Time // the last write of it, by anyone
	roomAt   time.Time // the last check that found no room with the Ledger's holds
	budgetAt time.Time // the last check that found its budget full
}

type afModel struct {
	t      *testing.T
	seed   int64
	rnd    *rand.Rand // the steps'
	lrnd   *rand.Rand // the cache lag's and the API latency's
	scheme *runtime.Scheme
	api    client.WithWatch // through the interceptor
	raw    client.WithWatch // the fake API server itself
	events *eventLog
	logger logr.Logger
	stats  *afStats
	opts   ApplicationFailoverOptions
	reset  bool // Unknown resets the timer (--application-failover-unknown=Reset)

	ev     *EvictionController
	app    *ApplicationFailoverController
	cancel context.CancelFunc
	done   chan error

	capacity map[string]int64
	nextName int
	reported map[string]int
	excused  map[string]int

	mu       sync.Mutex // guards what the controllers' goroutines reach through the API server
	lagMax   time.Duration
	lagPrev  time.Duration
	lagEver  time.Duration
	latMax   time.Duration
	latEver  time.Duration
	busy     int
	leaders  []afLeader
	pairs    map[string]*afPair // judged now, by key@cluster
	bindings map[string]*afBinding
	// fleetLog and fleetAt are every version of every Cluster stored, for
	// (3); clusterAt is the last write of a Cluster.
	fleetLog  []clusterv1alpha1.Cluster
	fleetAt   []time.Time
	clusterAt time.Time
	// pausedAt is the last moment the rate rule paused on the fleet as
	// stored; stormAt the last check that found a storm holding.
	paused, pausedAt, stormAt time.Time
	freezeCM                  *corev1.ConfigMap
	frozenAt, thawAt          time.Time
	gate                      *freezeGate
	found                     []modelViolation
	trace                     []string
	// checks are when the model checked; gated, by copy, the checks that
	// found a gate holding its failover back.
	checks []time.Time
	gated  map[string][]time.Time
}

func runAppFailoverModel(t *testing.T, seed int64, steps int, stats *afStats) {
	m := &afModel{
		t: t, seed: seed, rnd: rand.New(rand.NewSource(seed)), lrnd: rand.New(rand.NewSource(seed + 2)),
		events: &eventLog{}, logger: logr.Discard(), stats: stats, capacity: map[string]int64{},
		reported: map[string]int{}, excused: map[string]int{}, pairs: map[string]*afPair{}, bindings: map[string]*afBinding{}, gated: map[string][]time.Time{},
	}
	// The seed chooses the policy: Unknown holds the timer but on every
	// fourth seed, which resets it as Karmada v1.18 does; the bad-rollout
	// hold is on (0.5) but on every third seed.
	if seed%4 == 3 {
		m.reset = true
		m.opts.Policy.Unknown = appfailover.UnknownResets
	}
	if seed%3 == 0 {
		m.opts.BadRolloutThreshold = 1
	}
	if *modelVerbose {
		m.logger = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, time.Now().Format("15:04:05.000"), prefix, args) }, funcr.Options{Verbosity: 1})
		modelLogOnce.Do(func() { log.SetLogger(m.logger) })
	}
	m.scheme = runtime.NewScheme()
	if err := AddToScheme(m.scheme); err != nil {
		t.Fatal(err)
	}
	apiScheme := runtime.NewScheme()
	if err := AddToScheme(apiScheme); err != nil {
		t.Fatal(err)
	}
	m.raw = fake.NewClientBuilder().WithScheme(apiScheme).Build()
	m.api = interceptor.NewClient(m.raw, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			m.latency()
			defer m.latency()
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			m.latency()
			defer m.latency()
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			switch o := obj.(type) {
			case *clusterv1alpha1.Cluster:
				m.clusterStoredLocked(ctx, c, o)
			case *workv1alpha2.ResourceBinding:
				m.bindingStoredLocked(nil, o)
			}
			return nil
		},
		Update: m.update,
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			return c.Patch(ctx, obj, patch, opts...)
		},
	})

	m.build()
	m.start()
	defer func() {
		if m.ev != nil {
			m.stop()
		}
	}()
	m.settle()
	m.check(0)
	for i := 1; i <= steps; i++ {
		what := m.step()
		m.note(fmt.Sprintf("step %d at %s: %s", i, afSince(), what))
		m.settle()
		m.check(i)
	}
	// Steps stop: the world heals and time runs on, past every window and
	// every task.
	m.note(fmt.Sprintf("drain at %s: %s", afSince(), m.heal()))
	m.settle()
	m.check(steps + 1)
	for i := range 3 {
		time.Sleep(time.Minute)
		m.note(fmt.Sprintf("drain %d at %s: 1m pass; %s", i+1, afSince(), m.schedule()))
		m.settle()
		m.check(steps + 2 + i)
	}
	for _, inv := range slices.Sorted(maps.Keys(m.reported)) {
		t.Logf("seed %d: invariant (%s) violated %d times", seed, inv, m.reported[inv])
	}
	m.mu.Lock()
	for _, why := range slices.Sorted(maps.Keys(m.excused)) {
		t.Logf("seed %d: %s: %d times", seed, why, m.excused[why])
	}
	m.mu.Unlock()
	m.events.mu.Lock()
	defer m.events.mu.Unlock()
	for _, e := range m.events.events {
		switch e.reason {
		case string(prescheduling.NoEligibleCluster), string(prescheduling.SpreadConstraintUnsatisfiable), string(prescheduling.InsufficientCapacity):
			stats.refused++
		case EventReasonClustersInTransit:
			stats.budget++
		case EventReasonBadRolloutHold:
			stats.badRollout++
		}
	}
}

func afSince() string { return time.Since(modelEpoch).Round(time.Millisecond).String() }

func (m *afModel) note(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.traceLocked(s)
}

func (m *afModel) traceLocked(s string) {
	m.trace = append(m.trace, s)
	if *modelVerbose {
		m.t.Log(s)
	}
}

// start runs a new leader: a fresh manager with the controllers of Setup
// and an ApplicationFailoverController, as the fork's controller manager
// wires them (karmada/controllermanager), each knowing nothing.
func (m *afModel) start() {
	mgr, err := newModelManager(m.scheme, m.api, m.lag, m.events, m.logger)
	if err != nil {
		m.t.Fatal(err)
	}
	ev, err := Setup(mgr, ClusterTaintPolicyOptions{}, EvictionOptions{
		Rate:                         modelRateRule,
		Registerer:                   prometheus.NewRegistry(),
		ClusterStatusUpdateFrequency: modelReport,
	}, GracefulEvictionOptions{Timeout: modelTimeout})
	if err != nil {
		m.t.Fatal(err)
	}
	// The operator's freeze as its informer would hand it over.
	ev.freeze = newFreezeGate(modelFreeze, ev.opts.Clock, nopFrozen{}, m.logger)
	ev.freeze.confirmStorm, ev.freeze.onThaw = ev.limiter.ConfirmStorm, []func(){ev.thawed}
	app, err := NewApplicationFailoverController(m.opts, ev)
	if err != nil {
		m.t.Fatal(err)
	}
	if err := app.SetupWithManager(mgr); err != nil {
		m.t.Fatal(err)
	}
	m.mu.Lock()
	m.gate = ev.freeze
	m.gate.set(m.freezeCM)
	m.leaders = append(m.leaders, afLeader{start: time.Now()})
	m.mu.Unlock()
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), m.logger))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	m.ev, m.app, m.cancel, m.done = ev, app, cancel, done
}

func (m *afModel) stop() {
	m.mu.Lock()
	m.gate = nil
	m.mu.Unlock()
	m.cancel()
	if err := <-m.done; err != nil {
		m.t.Errorf("seed %d: the manager stopped with %v", m.seed, err)
	}
	m.mu.Lock()
	m.leaders[len(m.leaders)-1].stop = time.Now()
	m.mu.Unlock()
	m.ev, m.app = nil, nil
}

func (m *afModel) lag() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lagMax <= 0 {
		return 0
	}
	return time.Duration(m.lrnd.Int63n(int64(m.lagMax)))
}

func (m *afModel) latency() {
	m.mu.Lock()
	if m.latMax <= 0 {
		m.mu.Unlock()
		return
	}
	d := time.Duration(m.lrnd.Int63n(int64(m.latMax)))
	m.busy++
	m.mu.Unlock()
	time.Sleep(d)
	m.mu.Lock()
	m.busy--
	m.mu.Unlock()
}

// writeDelayLocked is the most a failover's write follows its last look
// at the world: its read of the cluster left, its confirm reads and its
// write, each the API's latency there and back.
func (m *afModel) writeDelayLocked() time.Duration {
	return modelWriteDelay + (2*engine.MaxConfirmReads+6)*m.latEver
}

// delayLocked is D: the most a controller's view of a binding trails the
// API server's, while a leader runs: the cache's lag, then the reconciles
// ahead of it in the queue, each at most a failover's reads and writes;
// and a second for the conflicts retried and the queue's own steps.
func (m *afModel) delayLocked() time.Duration {
	return max(m.lagEver, m.lagMax, m.lagPrev) + time.Duration(len(m.bindings)+1)*m.writeDelayLocked() + time.Second
}

// settle waits for the controllers to be idle, lets the cache catch up and
// waits again, until no call to the API server is under way.
func (m *afModel) settle() {
	synctest.Wait()
	m.mu.Lock()
	lag := max(m.lagMax, m.lagPrev)
	m.lagPrev = m.lagMax
	m.mu.Unlock()
	time.Sleep(lag + time.Second)
	synctest.Wait()
	for range 500 {
		m.mu.Lock()
		busy := m.busy
		m.mu.Unlock()
		if busy == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
	}
}

// ---- the world ----

func (m *afModel) build() {
	ctx := context.Background()
	n := 4 + m.rnd.Intn(3)
	for i := range n {
		name := fmt.Sprintf("m%d", i+1)
		m.capacity[name] = int64(20 + m.rnd.Intn(20))
		cl := &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       clusterv1alpha1.ClusterSpec{Region: fmt.Sprintf("r%d", i%2+1)},
			Status: clusterv1alpha1.ClusterStatus{Conditions: []metav1.Condition{{
				Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: "Ready",
				LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour)),
			}}},
		}
		withRoom(cl, m.capacity[name])
		if err := m.api.Create(ctx, cl); err != nil {
			m.t.Fatal(err)
		}
	}
	for range 3 + m.rnd.Intn(4) {
		m.createBinding()
	}
	m.note(fmt.Sprintf("world: %d clusters, %d bindings; Unknown resets: %v, bad-rollout threshold %v", n, len(m.list()), m.reset, m.opts.BadRolloutThreshold))
}

func (m *afModel) clusterNames() []string { return slices.Sorted(maps.Keys(m.capacity)) }

func (m *afModel) clusters() []clusterv1alpha1.Cluster {
	var list clusterv1alpha1.ClusterList
	if err := m.raw.List(context.Background(), &list); err != nil {
		m.t.Fatal(err)
	}
	return list.Items
}

func (m *afModel) list() []workv1alpha2.ResourceBinding {
	var list workv1alpha2.ResourceBindingList
	if err := m.raw.List(context.Background(), &list); err != nil {
		m.t.Fatal(err)
	}
	return list.Items
}

// afBehaviors are the spec.failover.application variants: every purge
// mode, by v1.18's names and v1.19's.
func (m *afModel) behavior() *policyv1alpha1.ApplicationFailoverBehavior {
	b := &policyv1alpha1.ApplicationFailoverBehavior{DecisionConditions: policyv1alpha1.DecisionConditions{
		TolerationSeconds: ptr.To([]int32{0, 5, 15, 20, 30, 45, 60, 90}[m.rnd.Intn(8)]),
	}}
	switch m.rnd.Intn(6) {
	case 0:
	case 1:
		b.PurgeMode = policyv1alpha1.PurgeModeDirectly
	case 2:
		b.PurgeMode, b.GracePeriodSeconds = policyv1alpha1.PurgeModeGracefully, ptr.To([]int32{20, 120}[m.rnd.Intn(2)])
	case 3:
		b.PurgeMode = policyv1alpha1.Never
	case 4:
		b.PurgeMode = policyv1alpha1.PurgeMode("Immediately")
	default:
		b.PurgeMode = policyv1alpha1.PurgeMode("Graciously")
	}
	return b
}

// createBinding adds an opted-in binding placed as Karmada's scheduler
// would, its copies Healthy: Duplicated on a few clusters, or Divided.
func (m *afModel) createBinding() string {
	names := m.clusterNames()
	m.nextName++
	name := fmt.Sprintf("app-%02d", m.nextName)
	placement := &policyv1alpha1.Placement{}
	if m.rnd.Intn(3) == 0 {
		sub := slices.Clone(names)
		m.rnd.Shuffle(len(sub), func(i, j int) { sub[i], sub[j] = sub[j], sub[i] })
		placement.ClusterAffinity = &policyv1alpha1.ClusterAffinity{ClusterNames: slices.Sorted(slices.Values(sub[:2+m.rnd.Intn(len(sub)-1)]))}
	}
	divided := m.rnd.Intn(4) == 0
	if divided {
		placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated}
	} else {
		placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}
	}
	rb := &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: afNamespace, Name: name},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource:      workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: afNamespace, Name: name},
			Placement:     placement,
			PropagateDeps: true,
			Failover:      &policyv1alpha1.FailoverBehavior{Application: m.behavior()},
		},
	}
	setApplied(rb)
	eligible := m.eligible(rb, m.clusters())
	if len(eligible) == 0 {
		return "no binding created: no eligible cluster"
	}
	want := 1 + m.rnd.Intn(min(2, len(eligible)))
	if divided {
		rb.Spec.Replicas = int32(2 + m.rnd.Intn(4))
		left := rb.Spec.Replicas
		for i, c := range eligible[:want] {
			n := left / int32(want-i)
			if n > 0 {
				rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: n})
			}
			left -= n
		}
	} else {
		rb.Spec.Replicas = int32(1 + m.rnd.Intn(3))
		for _, c := range eligible[:want] {
			rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: rb.Spec.Replicas})
		}
	}
	for _, c := range rb.Spec.Clusters {
		rb.Status.AggregatedStatus = append(rb.Status.AggregatedStatus, workv1alpha2.AggregatedStatusItem{ClusterName: c.Name, Applied: true, Health: workv1alpha2.ResourceHealthy})
	}
	budget := "none"
	switch m.nextName % 3 {
	case 0:
		budget = "1"
	case 1:
		budget = "2"
	}
	if budget != "none" {
		rb.Annotations[MaxClustersInTransitAnnotation] = budget
	}
	m.mu.Lock()
	m.bindings[afNamespace+"/"+name] = &afBinding{window: time.Duration(*rb.Spec.Failover.Application.DecisionConditions.TolerationSeconds) * time.Second, desired: len(rb.Spec.Clusters)}
	m.mu.Unlock()
	if err := m.api.Create(context.Background(), rb); err != nil {
		m.t.Fatal(err)
	}
	return fmt.Sprintf("binding %s created: %v, tolerationSeconds %d, purgeMode %q, budget %s", name, targets(rb),
		*rb.Spec.Failover.Application.DecisionConditions.TolerationSeconds, rb.Spec.Failover.Application.PurgeMode, budget)
}

// eligible are the clusters Karmada's scheduler may put rb on, shuffled:
// in its affinity, not failed, not in its schedule result, not left by it.
func (m *afModel) eligible(rb *workv1alpha2.ResourceBinding, clusters []clusterv1alpha1.Cluster) []string {
	var out []string
	for i := range clusters {
		cl := &clusters[i]
		if a := rb.Spec.Placement.ClusterAffinity; a != nil && a.ClusterNames != nil && !slices.Contains(a.ClusterNames, cl.Name) {
			continue
		}
		if rb.Spec.TargetContains(cl.Name) || rb.Spec.ClusterInGracefulEvictionTasks(cl.Name) || afDown(cl) || room(cl) < int64(rb.Spec.Replicas) {
			continue
		}
		out = append(out, cl.Name)
	}
	m.rnd.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func afDown(cl *clusterv1alpha1.Cluster) bool {
	return slices.ContainsFunc(cl.Spec.Taints, func(t corev1.Taint) bool { return t.Key == afDownTaint })
}

func (m *afModel) mutateCluster(name string, f func(*clusterv1alpha1.Cluster)) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cl clusterv1alpha1.Cluster
		if err := m.api.Get(context.Background(), client.ObjectKey{Name: name}, &cl); err != nil {
			return err
		}
		f(&cl)
		return m.api.Update(context.Background(), &cl)
	})
	if err != nil {
		m.t.Fatalf("seed %d: cluster %s: %v", m.seed, name, err)
	}
}

// mutateBinding changes a binding as another writer would (Karmada's
// status controller, its scheduler, an operator); f returns false to
// write nothing.
func (m *afModel) mutateBinding(key client.ObjectKey, f func(*workv1alpha2.ResourceBinding) bool) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var rb workv1alpha2.ResourceBinding
		if err := m.api.Get(context.Background(), key, &rb); err != nil {
			return err
		}
		if !f(&rb) {
			return nil
		}
		return m.api.Update(context.Background(), &rb)
	})
	if err != nil && !apierrors.IsNotFound(err) {
		m.t.Fatalf("seed %d: binding %s: %v", m.seed, key, err)
	}
}

// setHealth writes the health of the copies of key, by cluster, as
// Karmada's work status controller does.
func (m *afModel) setHealth(key client.ObjectKey, health map[string]workv1alpha2.ResourceHealth) {
	m.mutateBinding(key, func(rb *workv1alpha2.ResourceBinding) bool {
		changed := false
		for c, h := range health {
			i := slices.IndexFunc(rb.Status.AggregatedStatus, func(it workv1alpha2.AggregatedStatusItem) bool { return it.ClusterName == c })
			if i < 0 {
				if !rb.Spec.TargetContains(c) {
					continue
				}
				rb.Status.AggregatedStatus = append(rb.Status.AggregatedStatus, workv1alpha2.AggregatedStatusItem{ClusterName: c, Applied: true})
				i = len(rb.Status.AggregatedStatus) - 1
			}
			if rb.Status.AggregatedStatus[i].Health != h {
				rb.Status.AggregatedStatus[i].Health, changed = h, true
			}
		}
		return changed
	})
}

// ---- the steps ----

// judged are the copies the controller judges now, sorted.
func (m *afModel) judged() []afPair {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []afPair
	for _, id := range slices.Sorted(maps.Keys(m.pairs)) {
		out = append(out, *m.pairs[id])
	}
	return out
}

func afKey(key string) client.ObjectKey {
	ns, name, _ := strings.Cut(key, "/")
	return client.ObjectKey{Namespace: ns, Name: name}
}

func (m *afModel) step() string {
	// A freeze lasts a few steps.
	m.mu.Lock()
	frozen := m.freezeCM != nil
	m.mu.Unlock()
	if frozen && m.rnd.Intn(3) == 0 {
		return m.toggleFreeze()
	}
	switch r := m.rnd.Intn(100); {
	case r < 22:
		return m.changeHealth()
	case r < 32:
		return m.flapUnknown()
	case r < 35:
		return m.badRollout()
	case r < 38:
		return m.confirm()
	case r < 52:
		d := []time.Duration{time.Second, 3 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute}[m.rnd.Intn(6)]
		time.Sleep(d)
		return fmt.Sprintf("%v pass", d)
	case r < 60:
		return m.changeLeader()
	case r < 65:
		return m.failCluster()
	case r < 71:
		return m.recoverCluster()
	case r < 75:
		return m.changeRoom()
	case r < 79:
		return m.replace()
	case r < 90:
		return m.schedule()
	case r < 93:
		return m.toggleFreeze()
	case r < 95:
		return m.changeBudget()
	case r < 97:
		l := []time.Duration{0, 100 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second}[m.rnd.Intn(4)]
		d := []time.Duration{0, 0, 2 * time.Millisecond, 10 * time.Millisecond}[m.rnd.Intn(4)]
		m.mu.Lock()
		m.lagMax, m.lagEver, m.latMax, m.latEver = l, max(m.lagEver, l), d, max(m.latEver, d)
		m.mu.Unlock()
		return fmt.Sprintf("cache lag up to %v, API latency up to %v", l, d)
	default:
		if len(m.list()) >= afMaxBind {
			return m.schedule()
		}
		return m.createBinding()
	}
}

// pickPair picks a judged copy, one with health h when some has it.
func (m *afModel) pickPair(h workv1alpha2.ResourceHealth) (afPair, bool) {
	ps := m.judged()
	if len(ps) == 0 {
		return afPair{}, false
	}
	var with []afPair
	for _, p := range ps {
		if p.now() == h {
			with = append(with, p)
		}
	}
	if len(with) > 0 && m.rnd.Intn(4) > 0 {
		ps = with
	}
	return ps[m.rnd.Intn(len(ps))], true
}

// changeHealth changes the health of one copy: mostly Healthy to
// Unhealthy, and back or to Unknown.
func (m *afModel) changeHealth() string {
	from := workv1alpha2.ResourceHealthy
	if m.rnd.Intn(2) == 0 {
		from = workv1alpha2.ResourceUnhealthy
	}
	p, ok := m.pickPair(from)
	if !ok {
		return "no copy to change the health of"
	}
	was := p.now()
	var to workv1alpha2.ResourceHealth
	switch r := m.rnd.Intn(10); was {
	case workv1alpha2.ResourceHealthy:
		to = []workv1alpha2.ResourceHealth{workv1alpha2.ResourceUnhealthy, workv1alpha2.ResourceUnknown}[min(r/7, 1)]
	case workv1alpha2.ResourceUnhealthy:
		to = []workv1alpha2.ResourceHealth{workv1alpha2.ResourceHealthy, workv1alpha2.ResourceUnknown}[min(r/4, 1)]
	default:
		to = []workv1alpha2.ResourceHealth{workv1alpha2.ResourceUnhealthy, workv1alpha2.ResourceHealthy}[min(r/6, 1)]
	}
	m.setHealth(afKey(p.key), map[string]workv1alpha2.ResourceHealth{p.cluster: to})
	return fmt.Sprintf("copy %s: %s -> %s", p.id(), was, to)
}

// flapUnknown makes an Unhealthy copy flap between Unknown and Unhealthy,
// as its member's agent restarts or its status lags (karmada#7431).
func (m *afModel) flapUnknown() string {
	p, ok := m.pickPair(workv1alpha2.ResourceUnhealthy)
	if !ok {
		return "no copy to flap"
	}
	key := afKey(p.key)
	var what []string
	if p.now() != workv1alpha2.ResourceUnhealthy {
		m.setHealth(key, map[string]workv1alpha2.ResourceHealth{p.cluster: workv1alpha2.ResourceUnhealthy})
		what = append(what, "Unhealthy")
	}
	for range 1 + m.rnd.Intn(3) {
		d := []time.Duration{time.Second, 4 * time.Second, 10 * time.Second, 20 * time.Second}[m.rnd.Intn(4)]
		time.Sleep(d)
		m.setHealth(key, map[string]workv1alpha2.ResourceHealth{p.cluster: workv1alpha2.ResourceUnknown})
		u := []time.Duration{300 * time.Millisecond, 2 * time.Second, 8 * time.Second, 25 * time.Second}[m.rnd.Intn(4)]
		time.Sleep(u)
		m.setHealth(key, map[string]workv1alpha2.ResourceHealth{p.cluster: workv1alpha2.ResourceUnhealthy})
		what = append(what, fmt.Sprintf("%v Unhealthy, %v Unknown", d, u))
	}
	m.mu.Lock()
	m.stats.flaps++
	m.mu.Unlock()
	return fmt.Sprintf("copy %s flaps: %s, then Unhealthy", p.id(), strings.Join(what, ", "))
}

// badRollout makes a binding's application Unhealthy on every cluster.
func (m *afModel) badRollout() string {
	bs := m.list()
	if len(bs) == 0 {
		return "no binding to roll out badly"
	}
	rb := bs[m.rnd.Intn(len(bs))]
	health := map[string]workv1alpha2.ResourceHealth{}
	for _, c := range rb.Spec.Clusters {
		health[c.Name] = workv1alpha2.ResourceUnhealthy
	}
	m.setHealth(client.ObjectKeyFromObject(&rb), health)
	return fmt.Sprintf("a bad rollout of %s: Unhealthy on %v", rb.Name, slices.Sorted(maps.Keys(health)))
}

// confirm is an operator confirming that a binding's failures are real
// (ConfirmBadRolloutAnnotation), on one unhealthy on several clusters.
func (m *afModel) confirm() string {
	for _, rb := range m.list() {
		n := 0
		for _, it := range rb.Status.AggregatedStatus {
			if it.Health == workv1alpha2.ResourceUnhealthy && rb.Spec.TargetContains(it.ClusterName) {
				n++
			}
		}
		if _, done := rb.Annotations[ConfirmBadRolloutAnnotation]; n < 2 || done {
			continue
		}
		m.mutateBinding(client.ObjectKeyFromObject(&rb), func(rb *workv1alpha2.ResourceBinding) bool {
			rb.Annotations[ConfirmBadRolloutAnnotation] = "true"
			return true
		})
		m.mu.Lock()
		m.stats.confirmed++
		m.mu.Unlock()
		return fmt.Sprintf("an operator confirms the failures of %s", rb.Name)
	}
	return "no bad rollout to confirm"
}

// changeLeader stops the leader and, after a gap in which the copies'
// health may change with no controller looking, starts a new one. It
// counts a change mid-window: a copy Unhealthy and not yet due.
func (m *afModel) changeLeader() string {
	var within []string
	now := time.Now()
	m.mu.Lock()
	d := m.delayLocked()
	for _, id := range slices.Sorted(maps.Keys(m.pairs)) {
		p := m.pairs[id]
		if p.now() != workv1alpha2.ResourceUnhealthy {
			continue
		}
		if lo := m.boundsLocked(p, now, d); !lo.due(m.bindings[p.key].window) {
			within = append(within, fmt.Sprintf("%s %v of %v", id, lo.lower.Round(time.Second), m.bindings[p.key].window))
		}
	}
	m.mu.Unlock()
	if len(within) > 0 {
		m.mu.Lock()
		m.stats.midWindow++
		m.mu.Unlock()
	}
	m.mu.Lock()
	m.stats.restarts++
	m.mu.Unlock()
	m.stop()
	gap := time.Duration(m.rnd.Int63n(int64(afLeaseGap)))
	var during string
	if gap > time.Second && m.rnd.Intn(2) == 0 {
		time.Sleep(gap / 2)
		during = "; meanwhile " + m.changeHealth()
		time.Sleep(gap / 2)
	} else {
		time.Sleep(gap)
	}
	m.start()
	return fmt.Sprintf("leader change after %v without one%s; windows running: %v", gap.Round(time.Millisecond), during, within)
}

// failCluster fails a cluster a binding runs on: a NoExecute taint (no
// workload goes there), Ready False, its copies Unknown. It keeps at
// least one cluster up.
func (m *afModel) failCluster() string {
	var up []string
	for _, cl := range m.clusters() {
		if !afDown(&cl) {
			up = append(up, cl.Name)
		}
	}
	// The rate rule pauses when more than UnhealthyClusterThreshold of a
	// small fleet fails: now and then only.
	if down := len(m.capacity) - len(up) + 1; len(up) <= 1 || float64(down) > modelRateRule.UnhealthyClusterThreshold*float64(len(m.capacity)) && m.rnd.Intn(4) > 0 {
		return m.recoverCluster()
	}
	name := up[m.rnd.Intn(len(up))]
	m.mutateCluster(name, func(cl *clusterv1alpha1.Cluster) {
		c := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
		c.Status, c.LastTransitionTime, c.Reason = metav1.ConditionFalse, metav1.Now(), "Model"
		cl.Spec.Taints = append(cl.Spec.Taints, corev1.Taint{Key: afDownTaint, Effect: corev1.TaintEffectNoExecute, TimeAdded: ptr.To(metav1.Now())})
	})
	for _, rb := range m.list() {
		if rb.Spec.TargetContains(name) {
			m.setHealth(client.ObjectKeyFromObject(&rb), map[string]workv1alpha2.ResourceHealth{name: workv1alpha2.ResourceUnknown})
		}
	}
	return fmt.Sprintf("cluster %s fails: its copies Unknown", name)
}

// recoverCluster brings a failed cluster back, its copies Healthy or not.
func (m *afModel) recoverCluster() string {
	var down []string
	for _, cl := range m.clusters() {
		if afDown(&cl) {
			down = append(down, cl.Name)
		}
	}
	if len(down) == 0 {
		return "no cluster to recover"
	}
	name := down[m.rnd.Intn(len(down))]
	m.mutateCluster(name, func(cl *clusterv1alpha1.Cluster) {
		c := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
		c.Status, c.LastTransitionTime, c.Reason = metav1.ConditionTrue, metav1.Now(), "Model"
		cl.Spec.Taints = slices.DeleteFunc(cl.Spec.Taints, func(t corev1.Taint) bool { return t.Key == afDownTaint })
	})
	h := []workv1alpha2.ResourceHealth{workv1alpha2.ResourceHealthy, workv1alpha2.ResourceHealthy, workv1alpha2.ResourceUnhealthy}[m.rnd.Intn(3)]
	for _, rb := range m.list() {
		if rb.Spec.TargetContains(name) {
			m.setHealth(client.ObjectKeyFromObject(&rb), map[string]workv1alpha2.ResourceHealth{name: h})
		}
	}
	return fmt.Sprintf("cluster %s recovers: its copies %s", name, h)
}

// changeRoom fills a cluster up (its summary reports no room), or gives it
// its room back.
func (m *afModel) changeRoom() string {
	name := m.clusterNames()[m.rnd.Intn(len(m.capacity))]
	var cl clusterv1alpha1.Cluster
	if err := m.raw.Get(context.Background(), client.ObjectKey{Name: name}, &cl); err != nil {
		m.t.Fatal(err)
	}
	n := int64(0)
	if room(&cl) == 0 || m.rnd.Intn(2) == 0 {
		n = m.capacity[name]
	}
	m.mutateCluster(name, func(cl *clusterv1alpha1.Cluster) { withRoom(cl, n) })
	return fmt.Sprintf("cluster %s summary: room %d", name, n)
}

// heal ends every cause of a failover having nowhere to go, and the
// freeze: clusters recover (their copies as they were before they failed,
// or Unhealthy) with their room, placements widen, bad rollouts are
// confirmed. What is due must then fail over.
func (m *afModel) heal() string {
	m.mu.Lock()
	frozen := m.freezeCM != nil
	m.mu.Unlock()
	var did []string
	if frozen {
		did = append(did, m.toggleFreeze())
	}
	for _, cl := range m.clusters() {
		if afDown(&cl) || room(&cl) < m.capacity[cl.Name] {
			m.mutateCluster(cl.Name, func(cl *clusterv1alpha1.Cluster) {
				c := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
				c.Status, c.LastTransitionTime, c.Reason = metav1.ConditionTrue, metav1.Now(), "Model"
				cl.Spec.Taints = slices.DeleteFunc(cl.Spec.Taints, func(t corev1.Taint) bool { return t.Key == afDownTaint })
				withRoom(cl, m.capacity[cl.Name])
			})
			did = append(did, "cluster "+cl.Name+" recovers")
		}
	}
	for _, rb := range m.list() {
		m.mutateBinding(client.ObjectKeyFromObject(&rb), func(rb *workv1alpha2.ResourceBinding) bool {
			rb.Spec.Placement.ClusterAffinity = nil
			setApplied(rb)
			if m.opts.BadRolloutThreshold < 1 {
				rb.Annotations[ConfirmBadRolloutAnnotation] = "true"
			}
			for i, it := range rb.Status.AggregatedStatus {
				if it.Health == workv1alpha2.ResourceUnknown {
					rb.Status.AggregatedStatus[i].Health = workv1alpha2.ResourceUnhealthy
				}
			}
			return true
		})
	}
	return "the world heals: " + strings.Join(did, ", ") + "; placements widened, bad rollouts confirmed, Unknown copies Unhealthy"
}

// replace narrows a binding's placement to where it runs (nowhere else to
// go), or widens it to every cluster.
func (m *afModel) replace() string {
	bs := m.list()
	if len(bs) == 0 {
		return "no binding to place"
	}
	b := bs[m.rnd.Intn(len(bs))]
	what := "placement widened to every cluster"
	m.mutateBinding(client.ObjectKeyFromObject(&b), func(rb *workv1alpha2.ResourceBinding) bool {
		if rb.Spec.Placement.ClusterAffinity == nil {
			var names []string
			for _, c := range rb.Spec.Clusters {
				names = append(names, c.Name)
			}
			rb.Spec.Placement.ClusterAffinity = &policyv1alpha1.ClusterAffinity{ClusterNames: names}
			what = fmt.Sprintf("placement narrowed to %v", names)
		} else {
			rb.Spec.Placement.ClusterAffinity = nil
		}
		setApplied(rb)
		return true
	})
	return fmt.Sprintf("binding %s: %s", b.Name, what)
}

// schedule plays Karmada's scheduler: it places on eligible clusters the
// copies or replicas a failover took away, now and then not yet; the new
// copies are Healthy, or not.
func (m *afModel) schedule() string {
	clusters := m.clusters()
	var did []string
	for _, b := range m.list() {
		if m.rnd.Intn(4) == 0 {
			continue
		}
		key := itemKey(&b)
		m.mu.Lock()
		desired := m.bindings[key].desired
		m.mu.Unlock()
		m.mutateBinding(client.ObjectKeyFromObject(&b), func(rb *workv1alpha2.ResourceBinding) bool {
			eligible := m.eligible(rb, clusters)
			before := targets(rb)
			var added []string
			if divided(rb) {
				var placed int32
				for _, c := range rb.Spec.Clusters {
					placed += c.Replicas
				}
				if placed >= rb.Spec.Replicas || len(eligible) == 0 {
					return false
				}
				rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: eligible[0], Replicas: rb.Spec.Replicas - placed})
				added = append(added, eligible[0])
			} else {
				for _, c := range eligible {
					if len(rb.Spec.Clusters) >= desired {
						break
					}
					rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: rb.Spec.Replicas})
					added = append(added, c)
				}
			}
			if len(added) == 0 {
				return false
			}
			for _, c := range added {
				h := []workv1alpha2.ResourceHealth{workv1alpha2.ResourceHealthy, workv1alpha2.ResourceHealthy, workv1alpha2.ResourceHealthy, workv1alpha2.ResourceUnhealthy}[m.rnd.Intn(4)]
				rb.Status.AggregatedStatus = slices.DeleteFunc(rb.Status.AggregatedStatus, func(it workv1alpha2.AggregatedStatusItem) bool { return it.ClusterName == c })
				rb.Status.AggregatedStatus = append(rb.Status.AggregatedStatus, workv1alpha2.AggregatedStatusItem{ClusterName: c, Applied: true, Health: h})
			}
			did = append(did, fmt.Sprintf("%s %v -> %v", rb.Name, before, targets(rb)))
			return true
		})
	}
	return fmt.Sprintf("scheduler: %v", did)
}

// toggleFreeze sets the operator's freeze, or thaws it.
func (m *afModel) toggleFreeze() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freezeCM != nil {
		m.freezeCM, m.thawAt = nil, time.Now()
		if m.gate != nil {
			m.gate.set(nil)
		}
		return "an operator thaws evictions"
	}
	m.freezeCM, m.frozenAt = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: modelFreeze.Namespace, Name: modelFreeze.Name}}, time.Now()
	if m.gate != nil {
		m.gate.set(m.freezeCM)
	}
	return "an operator freezes every eviction"
}

// changeBudget sets a binding's budget of clusters in transit.
func (m *afModel) changeBudget() string {
	bs := m.list()
	if len(bs) == 0 {
		return "no binding to budget"
	}
	b := bs[m.rnd.Intn(len(bs))]
	v := []string{"", "1", "2"}[m.rnd.Intn(3)]
	m.mutateBinding(client.ObjectKeyFromObject(&b), func(rb *workv1alpha2.ResourceBinding) bool {
		if v == "" {
			delete(rb.Annotations, MaxClustersInTransitAnnotation)
		} else {
			rb.Annotations[MaxClustersInTransitAnnotation] = v
		}
		return true
	})
	return fmt.Sprintf("binding %s: budget of clusters in transit %q", b.Name, v)
}

// ---- the API server's side: every write passes here ----

// judgedHealth is, for each cluster a binding with spec and status is
// judged on, the health its status reports (none or empty: Unknown).
func judgedHealth(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) map[string]workv1alpha2.ResourceHealth {
	out := map[string]workv1alpha2.ResourceHealth{}
	for _, c := range spec.Clusters {
		if spec.ClusterInGracefulEvictionTasks(c.Name) {
			continue
		}
		h := workv1alpha2.ResourceUnknown
		for _, it := range status.AggregatedStatus {
			if it.ClusterName == c.Name && it.Health != "" {
				h = it.Health
			}
		}
		out[c.Name] = h
	}
	return out
}

// bindingStoredLocked records, from the binding next as the API server now
// stores it (cur before, nil when created), the history of its copies'
// health. m.mu is held.
func (m *afModel) bindingStoredLocked(cur, next *workv1alpha2.ResourceBinding) {
	now, key := time.Now(), itemKey(next)
	if b := m.bindings[key]; b != nil {
		b.writeAt = now
	}
	health := judgedHealth(&next.Spec, &next.Status)
	for id, p := range m.pairs {
		if p.key != key {
			continue
		}
		if _, ok := health[p.cluster]; !ok {
			delete(m.pairs, id) // it left: a copy placed there again starts afresh
		}
	}
	for c, h := range health {
		id := key + "@" + c
		p, ok := m.pairs[id]
		if !ok {
			m.pairs[id] = &afPair{key: key, cluster: c, joined: now, hist: []afHealth{{now, h}}}
			continue
		}
		if p.now() != h {
			p.hist = append(p.hist, afHealth{now, h})
		}
	}
}

// clusterStoredLocked records a Cluster as the API server now stores it.
// m.mu is held.
func (m *afModel) clusterStoredLocked(ctx context.Context, c client.Reader, obj *clusterv1alpha1.Cluster) {
	var cl clusterv1alpha1.Cluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &cl); err != nil {
		return
	}
	now := time.Now()
	m.fleetLog = append(m.fleetLog, cl)
	m.fleetAt = append(m.fleetAt, now)
	m.clusterAt = now
	var list clusterv1alpha1.ClusterList
	if err := c.List(ctx, &list); err == nil {
		if modelRateRule.RateFor(fleetHealth(list.Items)) == 0 {
			m.paused = now
		} else if !m.paused.IsZero() {
			m.pausedAt, m.paused = now, time.Time{} // paused until now
		}
	}
}

// appFailedOver are the clusters next leaves into a new graceful eviction
// task of the ApplicationFailoverController, compared with cur.
func appFailedOver(cur, next *workv1alpha2.ResourceBindingSpec) []string {
	var out []string
	for _, t := range next.GracefulEvictionTasks {
		if t.Producer == engine.ApplicationFailoverProducer && cur.TargetContains(t.FromCluster) && !cur.ClusterInGracefulEvictionTasks(t.FromCluster) {
			out = append(out, t.FromCluster)
		}
	}
	return out
}

func (m *afModel) update(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
	m.latency()
	m.mu.Lock()
	defer m.mu.Unlock()
	if cl, ok := obj.(*clusterv1alpha1.Cluster); ok {
		if err := c.Update(ctx, obj, opts...); err != nil {
			return err
		}
		m.clusterStoredLocked(ctx, c, cl)
		return nil
	}
	rb, ok := obj.(*workv1alpha2.ResourceBinding)
	if !ok {
		return c.Update(ctx, obj, opts...)
	}
	var cur workv1alpha2.ResourceBinding
	if err := c.Get(ctx, client.ObjectKeyFromObject(rb), &cur); err != nil {
		return c.Update(ctx, obj, opts...)
	}
	var uo client.UpdateOptions
	uo.ApplyOptions(opts)
	out := appFailedOver(&cur.Spec, &rb.Spec)
	if len(out) > 0 && rb.ResourceVersion == cur.ResourceVersion {
		if uo.FieldManager != FieldManager {
			m.found = append(m.found, modelViolation{"1", "harness", fmt.Sprintf("%s: an application failover task written by %q", itemKey(rb), uo.FieldManager)})
		}
		m.checkFailoverLocked(ctx, c, &cur, &rb.Spec, out)
	}
	if err := c.Update(ctx, obj, opts...); err != nil {
		return err
	}
	var stored workv1alpha2.ResourceBinding
	if err := c.Get(ctx, client.ObjectKeyFromObject(rb), &stored); err == nil {
		m.bindingStoredLocked(&cur, &stored)
	}
	for _, cl := range out {
		m.stats.failovers++
		m.traceLocked(fmt.Sprintf("  at %s: %s failed over from %s", afSince(), itemKey(rb), cl))
	}
	return nil
}

// checkFailoverLocked is (1), (3), (4) and (5) on the failover of cur from
// out, next its spec after the write. m.mu is held.
func (m *afModel) checkFailoverLocked(ctx context.Context, c client.Reader, cur *workv1alpha2.ResourceBinding, next *workv1alpha2.ResourceBindingSpec, out []string) {
	now, key := time.Now(), itemKey(cur)
	d := m.delayLocked()
	b := m.bindings[key]
	// (1)
	for _, cl := range out {
		p := m.pairs[key+"@"+cl]
		if p == nil || b == nil {
			m.found = append(m.found, modelViolation{"1", "harness", fmt.Sprintf("%s fails over from %s, which the model does not see judged", key, cl)})
			continue
		}
		m.stats.earlyChecked++
		m.checkLateLocked(p, b, now, d, rateOf(ctx, c))
		if bd := m.boundsLocked(p, now, d); !bd.mayBeDue(b.window) {
			m.found = append(m.found, modelViolation{"1", "failed over early", fmt.Sprintf("at %s %s fails over from %s, where the copy may have counted at most %v of its %v window (D %v)\n  its health: %s\n  leaders: %s",
				afSince(), key, cl, bd.upper, b.window, d, p.describe(), m.describeLeadersLocked())})
		}
	}
	// (3)
	var list clusterv1alpha1.ClusterList
	if err := c.List(ctx, &list); err != nil {
		m.found = append(m.found, modelViolation{"3", "harness", fmt.Sprintf("listing clusters: %v", err)})
		return
	}
	for _, cl := range out {
		res, err := checkNow(cur, list.Items, cl)
		if err != nil {
			m.found = append(m.found, modelViolation{"3", "harness", fmt.Sprintf("%s: the check cannot be built: %v", key, err)})
			continue
		}
		if res.Feasible {
			continue
		}
		if at, ok := m.feasibleWithinLocked(cur, cl, m.writeDelayLocked()); ok {
			m.excused["(3): feasible on the fleet as it was since the confirm reads"]++
			m.traceLocked(fmt.Sprintf("  at %s: (3) not flagged: %s fails over from %s with nowhere to go now, feasible on the clusters as they were at %s", afSince(), key, cl, at.Sub(modelEpoch)))
			continue
		}
		m.found = append(m.found, modelViolation{"3", "nowhere to go", fmt.Sprintf("at %s %s fails over from %s though the check on the API server's clusters says %s: %s\n  the binding overwritten: clusters %v, tasks %v, placement %s\n  clusters: %s",
			afSince(), key, cl, res.Code, res.Reason, targets(cur), tasks(cur), cur.Annotations[karmada.AppliedPlacementAnnotation], describeClusters(list.Items))})
	}
	// (4)
	if v, ok := cur.Annotations[MaxClustersInTransitAnnotation]; ok {
		if budget, err := strconv.Atoi(v); err == nil && budget > 0 && len(next.GracefulEvictionTasks) > budget {
			m.found = append(m.found, modelViolation{"4", "over the budget", fmt.Sprintf("at %s %s fails over from %v, leaving %d tasks open over its budget of %d: %v",
				afSince(), key, out, len(next.GracefulEvictionTasks), budget, tasks(cur))})
		}
	}
	// (5)
	if m.freezeCM != nil && now.Sub(m.frozenAt) > m.writeDelayLocked() {
		m.found = append(m.found, modelViolation{"5", "failed over while frozen", fmt.Sprintf("at %s %s fails over from %v, %v after an operator froze every eviction", afSince(), key, out, now.Sub(m.frozenAt))})
	}
}

// rateOf is the rate rule's rate on the API server's clusters.
func rateOf(ctx context.Context, c client.Reader) float64 {
	var list clusterv1alpha1.ClusterList
	if err := c.List(ctx, &list); err != nil {
		return modelRate
	}
	return modelRateRule.RateFor(fleetHealth(list.Items))
}

// checkLateLocked is (2) on the failover of p written at now: late if it
// was due before its deadline and no check since the last one before it
// was due found a gate holding it back. m.mu is held.
func (m *afModel) checkLateLocked(p *afPair, b *afBinding, now time.Time, d time.Duration, rate float64) {
	if !m.boundsLocked(p, now, d).due(b.window) {
		return
	}
	at := m.latestDueLocked(p, b.window, now, d)
	n := 0
	for _, q := range m.pairs {
		if qb := m.bindings[q.key]; qb != nil && m.boundsLocked(q, now, d).due(qb.window) {
			n++
		}
	}
	last, why, bound := m.deadlineLocked(p, at, max(n, 1), rate, d)
	m.stats.liveChecked++
	if now.Sub(last) <= bound {
		return
	}
	since := p.joined
	for _, c := range m.checks {
		if !c.After(at) {
			since = c
		}
	}
	if g := m.gated[p.id()]; len(g) > 0 && !g[len(g)-1].Before(since) {
		m.excused["(2) a late failover, held back by a gate seen since it was due"]++
		return
	}
	m.found = append(m.found, modelViolation{"2", "failed over late", fmt.Sprintf("at %s %s fails over from %s, due since %s (a %v window), %v after %s at %s, more than the rate's time and D (%v, D %v), and no gate was seen holding it since\n  its health: %s\n  leaders: %s",
		afSince(), p.key, p.cluster, at.Sub(modelEpoch), b.window, now.Sub(last), why, last.Sub(modelEpoch), bound, d, p.describe(), m.describeLeadersLocked())})
}

// feasibleWithinLocked reports whether the check finds the failover of rb
// from cluster feasible on the API server's clusters as they were at some
// moment within window before now. m.mu is held.
func (m *afModel) feasibleWithinLocked(rb *workv1alpha2.ResourceBinding, cluster string, window time.Duration) (time.Time, bool) {
	from := time.Now().Add(-window)
	moments := []time.Time{from}
	for _, at := range m.fleetAt {
		if at.After(from) {
			moments = append(moments, at)
		}
	}
	for _, t := range moments {
		byName := map[string]clusterv1alpha1.Cluster{}
		for i, at := range m.fleetAt {
			if at.After(t) {
				break
			}
			byName[m.fleetLog[i].Name] = m.fleetLog[i]
		}
		fleet := slices.Collect(maps.Values(byName))
		slices.SortFunc(fleet, func(a, b clusterv1alpha1.Cluster) int { return strings.Compare(a.Name, b.Name) })
		if res, err := checkNow(rb, fleet, cluster); err == nil && res.Feasible {
			return t, true
		}
	}
	return time.Time{}, false
}

// ---- what a controller may and must have counted ----

// afSpan is the time from from to to.
type afSpan struct{ from, to time.Time }

func (s afSpan) len() time.Duration { return max(s.to.Sub(s.from), 0) }

// afRegion is a stretch of time over which a controller's view of a copy
// is either steady (a leader has run for D: at t it shows the health of
// some moment in [t-D, t]) or not (no leader, or one that started less
// than D ago: at t it shows the health of some moment in [w0, t], w0 being
// D before the end of the last steady stretch: what the last leader wrote).
type afRegion struct {
	afSpan
	steady bool
	w0     time.Time
}

// regionsLocked tiles [from, to] with regions, by the leaders' terms.
// m.mu is held.
func (m *afModel) regionsLocked(from, to time.Time, d time.Duration) []afRegion {
	var steady []afSpan
	for _, l := range m.leaders {
		s, e := l.start.Add(d), l.stop
		if e.IsZero() || e.After(to) {
			e = to
		}
		if s.Before(from) {
			s = from
		}
		if s.Before(e) {
			steady = append(steady, afSpan{s, e})
		}
	}
	var out []afRegion
	at, w0 := from, from.Add(-d)
	for _, s := range steady {
		if at.Before(s.from) {
			out = append(out, afRegion{afSpan: afSpan{at, s.from}, w0: w0})
		}
		out = append(out, afRegion{afSpan: s, steady: true})
		at, w0 = s.to, s.to.Add(-d)
	}
	if at.Before(to) {
		out = append(out, afRegion{afSpan: afSpan{at, to}, w0: w0})
	}
	return out
}

// afBounds is what a controller may have counted (upper) and must have
// counted (lower) of a copy's Unhealthy time by some moment, since the
// last reset it must (resetUp) or may (resetLow) have seen.
type afBounds struct {
	upper, lower      time.Duration
	upperN, lowerN    int // the stretches counted
	resetUp, resetLow time.Time
}

// mayBeDue says a controller may have decided, by then, that the copy's
// window has passed.
func (b afBounds) mayBeDue(window time.Duration) bool { return b.upperN > 0 && b.upper >= window }

// due says every controller must have decided, by then, that the copy's
// window has passed.
func (b afBounds) due(window time.Duration) bool { return b.lowerN > 0 && b.lower >= window }

// boundsLocked bounds what a controller has counted of p's Unhealthy time
// at w: from the model's history of p's health, with a view that trails it
// by up to d while a leader has run for d, and no newer view while none
// has; each stretch the controller counts is stamped at the whole second
// at or after its start and its end, and what it counted before is kept
// in whole seconds. A stretch of reset-health (Healthy; Unknown too with
// Reset) resets the timer; before the copy joined, there was none. m.mu is
// held.
func (m *afModel) boundsLocked(p *afPair, w time.Time, d time.Duration) afBounds {
	type stretch struct {
		afSpan
		u, reset bool
	}
	isReset := func(h workv1alpha2.ResourceHealth) bool {
		return h == workv1alpha2.ResourceHealthy || m.reset && h == workv1alpha2.ResourceUnknown
	}
	// Before the copy joined: no timer, a reset as long as one may look.
	farBack := p.joined.Add(-24 * time.Hour)
	ss := []stretch{{afSpan: afSpan{farBack, p.joined}, reset: true}}
	for i, h := range p.hist {
		if h.at.After(w) {
			break
		}
		end := w
		if i+1 < len(p.hist) && p.hist[i+1].at.Before(w) {
			end = p.hist[i+1].at
		}
		s := stretch{afSpan: afSpan{h.at, end}, u: h.h == workv1alpha2.ResourceUnhealthy, reset: isReset(h.h)}
		if n := len(ss); n > 0 && ss[n-1].reset && s.reset {
			ss[n-1].to = s.to // reset-health runs on
			continue
		}
		ss = append(ss, s)
	}
	var mightU, mustU, mustReset, mightReset []afSpan
	add := func(out *[]afSpan, from, to time.Time) {
		if from.Before(to) {
			*out = append(*out, afSpan{from, to})
		}
	}
	// What a controller may count is closed: a copy seen Unhealthy at the
	// very moment it turned so may fail over at once with a window of 0.
	addClosed := func(out *[]afSpan, from, to time.Time) {
		if !to.Before(from) {
			*out = append(*out, afSpan{from, to})
		}
	}
	// The regions run a moment past w, so that a copy seen at the very
	// moment it joined, or turned Unhealthy, is in one.
	for _, r := range m.regionsLocked(p.joined, w.Add(time.Nanosecond), d) {
		for _, s := range ss {
			switch {
			case r.steady && s.u:
				addClosed(&mightU, afLater(s.from, r.from), afEarlier(s.to.Add(d), r.to))
				add(&mustU, afLater(s.from.Add(d), r.from), afEarlier(s.to, r.to))
			case r.steady && s.reset:
				add(&mustReset, afLater(s.from.Add(d), r.from), afEarlier(s.to, r.to))
				add(&mightReset, afLater(s.from, r.from), afEarlier(s.to.Add(d), r.to))
			case s.u:
				// Not steady: at t the view is of some moment in [w0, t].
				if s.to.After(r.w0) {
					addClosed(&mightU, afLater(afLater(s.from, r.w0), r.from), r.to)
				}
				if !s.from.After(r.w0) && s.to.After(r.w0) {
					add(&mustU, r.from, afEarlier(s.to, r.to))
				}
			case s.reset:
				if s.to.After(r.w0) {
					add(&mightReset, afLater(afLater(s.from, r.w0), r.from), r.to)
				}
				if !s.from.After(r.w0) && s.to.After(r.w0) {
					add(&mustReset, r.from, afEarlier(s.to, r.to))
				}
			}
		}
	}
	b := afBounds{resetUp: p.joined, resetLow: p.joined}
	for _, s := range mustReset {
		b.resetUp = afLater(b.resetUp, s.to)
	}
	for _, s := range mightReset {
		b.resetLow = afLater(b.resetLow, s.to)
	}
	for _, s := range afMerge(mightU) {
		if !s.to.Before(b.resetUp) {
			s.from = afLater(s.from, b.resetUp)
			b.upper += s.len() + time.Second
			b.upperN++
		}
	}
	for _, s := range afMerge(mustU) {
		if s.to.After(b.resetLow) {
			s.from = afLater(s.from, b.resetLow)
			// A second for the stamp at its start, and one for the whole
			// seconds it is kept in.
			if l := s.len() - 2*time.Second; l > 0 {
				b.lower += l
				b.lowerN++
			}
		}
	}
	return b
}

// latestDueLocked is when p became due by the lower bound, at or before
// now (due at now): the least moment after the last reset it may have
// seen at which every controller must have found its window passed.
func (m *afModel) latestDueLocked(p *afPair, window time.Duration, now time.Time, d time.Duration) time.Time {
	lo, hi := m.boundsLocked(p, now, d).resetLow, now
	for hi.Sub(lo) > 10*time.Millisecond {
		mid := lo.Add(hi.Sub(lo) / 2)
		if m.boundsLocked(p, mid, d).due(window) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func afMerge(ss []afSpan) []afSpan {
	slices.SortFunc(ss, func(a, b afSpan) int { return a.from.Compare(b.from) })
	var out []afSpan
	for _, s := range ss {
		if n := len(out); n > 0 && !s.from.After(out[n-1].to) {
			out[n-1].to = afLater(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

func afLater(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func afEarlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (p *afPair) describe() string {
	var out []string
	for _, h := range p.hist {
		out = append(out, fmt.Sprintf("%s from %s", h.h, h.at.Sub(modelEpoch)))
	}
	return fmt.Sprintf("joined at %s: %s", p.joined.Sub(modelEpoch), strings.Join(out, ", "))
}

func (m *afModel) describeLeadersLocked() string {
	var out []string
	for _, l := range m.leaders {
		stop := "now"
		if !l.stop.IsZero() {
			stop = l.stop.Sub(modelEpoch).String()
		}
		out = append(out, fmt.Sprintf("[%s, %s)", l.start.Sub(modelEpoch), stop))
	}
	return strings.Join(out, " ")
}

// ---- the checks after every step ----

// gates says which gates hold rb's failovers back now, as the model finds
// them true: each a name.
func (m *afModel) gates(rb *workv1alpha2.ResourceBinding, clusters []clusterv1alpha1.Cluster, cluster string, now time.Time, d time.Duration) []string {
	var out []string
	m.mu.Lock()
	frozen := m.freezeCM != nil
	m.mu.Unlock()
	if frozen {
		out = append(out, "the freeze")
	}
	if m.ev != nil && m.ev.limiter.StormHold() {
		out = append(out, "a storm")
		m.mu.Lock()
		m.stormAt = now
		m.mu.Unlock()
	}
	if modelRateRule.RateFor(fleetHealth(clusters)) == 0 {
		out = append(out, "the rate paused")
	}
	// The bad-rollout rule on the model's health: a copy counts sick when
	// Unhealthy, when it may be due, or when a failover left it.
	if _, confirmed := rb.Annotations[ConfirmBadRolloutAnnotation]; !confirmed && m.opts.BadRolloutThreshold < 1 {
		health := judgedHealth(&rb.Spec, &rb.Status)
		sick, total := 0, len(health)
		m.mu.Lock()
		b := m.bindings[itemKey(rb)]
		for c, h := range health {
			p := m.pairs[itemKey(rb)+"@"+c]
			if h == workv1alpha2.ResourceUnhealthy || p != nil && b != nil && m.boundsLocked(p, now, d).mayBeDue(b.window) {
				sick++
			}
		}
		m.mu.Unlock()
		for _, t := range rb.Spec.GracefulEvictionTasks {
			if _, seen := health[t.FromCluster]; t.Producer == engine.ApplicationFailoverProducer && !seen {
				sick++
				total++
			}
		}
		threshold := m.opts.BadRolloutThreshold
		if threshold == 0 {
			threshold = DefaultBadRolloutThreshold
		}
		if sick >= 2 && float64(sick) > threshold*float64(total) {
			out = append(out, "a bad rollout")
		}
	}
	if res, err := checkNow(rb, clusters, cluster); err != nil || !res.Feasible {
		out = append(out, "nowhere to go")
	} else if m.ev != nil && m.ev.Ledger() != nil {
		// Room held for failovers in flight counts too.
		held := m.ev.Ledger().Held(now)
		less := make([]clusterv1alpha1.Cluster, len(clusters))
		for i := range clusters {
			less[i] = *clusters[i].DeepCopy()
			withRoom(&less[i], room(&clusters[i])-held[clusters[i].Name])
		}
		if res, err := checkNow(rb, less, cluster); err != nil || !res.Feasible {
			out = append(out, "no room with the Ledger's holds")
			m.mu.Lock()
			m.bindings[itemKey(rb)].roomAt = now
			m.mu.Unlock()
		}
	}
	if v, ok := rb.Annotations[MaxClustersInTransitAnnotation]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 && len(rb.Spec.GracefulEvictionTasks) >= n {
			out = append(out, "the budget")
			m.mu.Lock()
			m.bindings[itemKey(rb)].budgetAt = now
			m.mu.Unlock()
		}
	}
	return out
}

// check is (2) after a step, and reports what the writes found.
func (m *afModel) check(step int) {
	now := time.Now()
	clusters := m.clusters()
	byKey := map[string]*workv1alpha2.ResourceBinding{}
	bs := m.list()
	for i := range bs {
		byKey[itemKey(&bs[i])] = &bs[i]
	}
	m.mu.Lock()
	found := m.found
	m.found = nil
	d := m.delayLocked()
	frozen := m.freezeCM != nil
	m.mu.Unlock()
	if frozen {
		n := len(m.pendingFrozen(byKey, now, d))
		m.mu.Lock()
		m.stats.frozen += n
		m.mu.Unlock()
	}

	// The copies due now, by the least any controller must have counted.
	type due struct {
		p   *afPair
		at  time.Time
		win time.Duration
	}
	var dues []due
	m.mu.Lock()
	for _, id := range slices.Sorted(maps.Keys(m.pairs)) {
		p := m.pairs[id]
		b := m.bindings[p.key]
		if b == nil || byKey[p.key] == nil {
			continue
		}
		if m.boundsLocked(p, now, d).due(b.window) {
			cp := *p
			dues = append(dues, due{&cp, m.latestDueLocked(p, b.window, now, d), b.window})
		}
	}
	m.mu.Unlock()
	rate := modelRateRule.RateFor(fleetHealth(clusters))
	// The gates of every judged copy, as the model finds them now: a
	// failover written later is late only if none held since it was due.
	for _, p := range m.judged() {
		if rb := byKey[p.key]; rb != nil && len(m.gates(rb, clusters, p.cluster, now, d)) > 0 {
			m.mu.Lock()
			m.gated[p.id()] = append(m.gated[p.id()], now)
			m.mu.Unlock()
		}
	}
	m.mu.Lock()
	m.checks = append(m.checks, now)
	m.mu.Unlock()
	for _, du := range dues {
		rb := byKey[du.p.key]
		if gs := m.gates(rb, clusters, du.p.cluster, now, d); len(gs) > 0 {
			m.mu.Lock()
			m.stats.excused++
			m.excused["(2) held back: "+strings.Join(gs, ", ")]++
			m.mu.Unlock()
			continue
		}
		m.mu.Lock()
		last, why, bound := m.deadlineLocked(du.p, du.at, len(dues), rate, d)
		m.mu.Unlock()
		m.mu.Lock()
		m.stats.liveChecked++
		m.mu.Unlock()
		if now.Sub(last) > bound {
			m.mu.Lock()
			found = append(found, modelViolation{"2", "failed over late", fmt.Sprintf("at %s %s has not failed over from %s, due since %s (a %v window), %v after %s at %s, more than the rate's time and D (%v, D %v)\n  its health: %s\n  leaders: %s\n  binding: clusters %v, tasks %v, annotations %v\n  clusters: %s",
				afSince(), du.p.key, du.p.cluster, du.at.Sub(modelEpoch), du.win, now.Sub(last), why, last.Sub(modelEpoch), bound, d,
				du.p.describe(), m.describeLeadersLocked(), targets(rb), tasks(rb), rb.Annotations, describeClusters(clusters))})
			m.mu.Unlock()
		}
	}
	for _, v := range found {
		m.report(step, v)
	}
}

// deadlineLocked is what invariant (2) bounds a failover of p by, due
// since at, with n copies due at once at the rate: the latest of the
// moments from which a controller must decide it again (the moment, and
// why), and how long it may take from there. m.mu is held.
func (m *afModel) deadlineLocked(p *afPair, at time.Time, n int, rate float64, d time.Duration) (time.Time, string, time.Duration) {
	b := m.bindings[p.key]
	from := map[string]time.Time{
		"the window's end":                  at,
		"the last leader change":            m.leaders[len(m.leaders)-1].start.Add(d),
		"the last write of the binding":     b.writeAt.Add(d),
		"the last write of a Cluster":       m.clusterAt.Add(d + maxTransitRetry),
		"the last thaw":                     m.thawAt.Add(d + freezeRecheck),
		"the rate's last pause":             m.pausedAt.Add(d + failbackRecheck),
		"the last storm":                    m.stormAt.Add(d + failbackRecheck),
		"no room, with the Ledger's holds":  b.roomAt.Add(d + maxTransitRetry),
		"the budget of clusters in transit": b.budgetAt.Add(d + maxTransitRetry),
	}
	last, why := time.Time{}, ""
	for _, w := range slices.Sorted(maps.Keys(from)) {
		if from[w].After(last) {
			last, why = from[w], w
		}
	}
	rateTime := time.Duration(0)
	if rate > 0 {
		rateTime = time.Duration(float64(n) / rate * float64(time.Second))
	}
	return last, why, rateTime + time.Duration(n)*d + 2*time.Second
}

// pendingFrozen are the copies that may be due while the freeze holds:
// failovers the freeze holds back, for non-vacuity.
func (m *afModel) pendingFrozen(byKey map[string]*workv1alpha2.ResourceBinding, now time.Time, d time.Duration) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for id, p := range m.pairs {
		if b := m.bindings[p.key]; b != nil && byKey[p.key] != nil && m.boundsLocked(p, now, d).due(b.window) {
			out = append(out, id)
		}
	}
	return out
}

// report logs a violation: the first of each cause with the steps that
// led to it, the others counted.
func (m *afModel) report(step int, v modelViolation) {
	if f := flag.Lookup("model.invariants"); f != nil && f.Value.String() != f.DefValue && !strings.Contains(*modelCheck, v.inv) {
		return
	}
	m.mu.Lock()
	m.stats.violations++
	m.mu.Unlock()
	id := v.inv + ": " + v.kind
	m.reported[id]++
	if m.reported[id] > 1 {
		if *modelVerbose {
			m.t.Logf("seed %d, step %d: invariant (%s) again: %s", m.seed, step, v.inv, v.msg)
		}
		return
	}
	m.mu.Lock()
	trace := strings.Join(m.trace, "\n    ")
	m.mu.Unlock()
	m.t.Errorf("seed %d, step %d: invariant (%s) violated (%s): %s\n  %s\n  replay: go test ./controllers/ -run 'TestModelApplicationFailover$' -model.seed=%d -model.steps=%d\n  steps so far:\n    %s",
		m.seed, step, v.inv, v.kind, afInvariants[v.inv], v.msg, m.seed, *modelSteps, trace)
}

//go:build !failover_newest

// The model harness implements controller-runtime's manager.Manager, whose
// method set changes between releases (GetEventRecorder's result type after
// v0.23): hack/newest.sh, which builds on the newest controller-runtime,
// leaves it out with the tag failover_newest. Every other run builds it.

package controllers

import (
	"context"
	"encoding/json"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/prescheduling"
	"github.com/failoverkit/failover/ratelimit"
)

// The model-based test (issue 27) runs the three controllers Setup adds in
// a controller-runtime manager (model_harness_test.go) against a small
// world on the fake API server, and plays everyone else: the clusters'
// Ready conditions and resource summaries, Karmada's scheduler, other
// writers of bindings and policies, update conflicts, a slow API server, a
// lagging cache, a new leader, time. After every step it waits for the
// controllers to be idle (synctest.Wait), lets time run a little and checks
// the invariants of modelInvariants. The steps come from the seed; the
// interleaving of the controllers' goroutines does not, so a replay of a
// seed usually, not always, meets the same violation at the same step.
//
// TestModelFailback (model_failback_test.go) runs the same model with the
// FailbackController beside them, its steps and its invariants (j) to (m).
//
// The ClusterTaintPolicy controller taints the clusters that fail and the
// eviction controller evicts: each fixed seed must write at least one
// eviction, or the test fails: the model once passed with nothing ever
// evicted, its cache unable to serve the policy controller's unstructured
// reads. -model.policies=false runs it that way, to bisect only: every
// invariant then holds vacuously.
//
//	go test ./controllers/ -run TestModelControllers                       # the fixed seeds, as CI runs them
//	go test ./controllers/ -run TestModelControllers -model.seed=3 -model.v # replay one seed, logging every step
//	go test ./controllers/ -run TestModelControllers -model.seeds=200       # 200 random seeds
//	go test ./controllers/ -run TestModelControllers -model.duration=10m    # random seeds for ten minutes
//	go test ./controllers/ -run TestModelControllers -model.invariants=ce   # report only (c) and (e)
//	go test ./controllers/ -run TestModelControllers -model.policies=false  # taint nothing: see modelPolicies

var (
	modelSeed     = flag.Int64("model.seed", 0, "model test: replay this one seed")
	modelSeeds    = flag.Int("model.seeds", 0, "model test: run this many random seeds instead of the fixed list")
	modelDuration = flag.Duration("model.duration", 0, "model test: run random seeds for this long (wall time)")
	modelSteps    = flag.Int("model.steps", modelDefaultSteps, "model test: steps per sequence")
	modelVerbose  = flag.Bool("model.v", false, "model test: log every step and the controllers' logs")
	modelCheck    = flag.String("model.invariants", "abcdefghijklm", "model test: the invariants checked, by letter")
	// modelPolicies on (the default) serves the ClusterTaintPolicy
	// controller's unstructured reads: clusters are tainted and bindings
	// evicted. Off, the model runs as CI ran it while the harness could not
	// serve them: no cluster tainted, nothing evicted, every invariant
	// vacuous.
	modelPolicies = flag.Bool("model.policies", true, "model test: serve the ClusterTaintPolicy controller's unstructured reads, so that clusters are tainted and bindings evicted (false: nothing is, to bisect only)")
)

// modelDefaultSteps is the length of a sequence unless -model.steps says.
const modelDefaultSteps = 150

var modelLogOnce sync.Once

// modelFixedSeeds run in CI: the first eight, and two that most often
// meet causes the others rarely do (21: an eviction checked on a stale
// fleet; 29: room held for a deleted binding).
var modelFixedSeeds = []int64{1, 2, 3, 4, 5, 6, 7, 8, 21, 29}

// modelKnownFailures are fixed seeds that meet a violation not yet
// diagnosed, with what is known: the fixed list skips them, saying so, so
// that CI stays a signal; -model.seed replays them. Remove a seed once its
// cause is fixed.
var modelKnownFailures = map[int64]string{}

// modelInvariants, by letter, as the report names them.
var modelInvariants = map[string]string{
	"a": "an eviction is written only when the pre-scheduling check finds it feasible on the very object overwritten and the API server's clusters as they were at some moment since the handler's confirm read (within the time a write may follow its permit), and DecideEviction says leave on the evicted cluster as it was within the time a write may follow its permit",
	"b": "at quiescence no binding stays on a cluster whose NoExecute taint it does not tolerate unless its item is queued or a Warning Event says why and still holds",
	"c": "evictions and failbacks written over any window are at most 1 + rate × (window + the time a write may follow its permit), +1 per new leader in the window: they take permits of one Limiter",
	"d": "the Ledger holds no more than the open graceful eviction tasks (and those ended within ClusterStatusUpdateFrequency) account for, each at most its replicas on every other cluster: nothing once no task is open",
	"e": "every graceful eviction task ends within GracefulEvictionOptions.Timeout",
	"f": "a new leader holds the room of the evictions in flight that the check, asked again as the leader changed, finds somewhere to go (DESIGN, fourth round: rebuilt from the open tasks)",
	"i": "no eviction is written while an operator's freeze holds once the attempt writing it could see it: after a freeze set while the attempt read the API server, or longer before the write than an attempt takes",
	"h": "an eviction or a failback written leaves its binding with no more graceful eviction tasks open than its budget of clusters in transit (MaxClustersInTransitAnnotation) allows",
	"j": "no failback is written before its origin has been Ready, as the model's own history of its Ready condition says, for the whole window without a break (up to the second the API server's timestamps keep), nor while the origin has a NoExecute or PreferNoExecute taint: but for a failure within the time a write follows its decision (DESIGN, fifth round: a lagging cache never sends replicas to a tainted cluster)",
	"k": "never more bindings with an open failback task than FailbackOptions.MaxInFlight, fleet wide, at any write and at quiescence",
	"l": "no failback is written while the operator's freeze is set, while an eviction of the binding is in flight (a graceful eviction task open, its handler running) or may be queued (a cluster of its schedule result is faulty, but for a taint the cache has not seen yet), nor with more clusters left than its budget of clusters in transit",
	"m": "a binding whose origin has been Ready for the window, and that PlanFailback asked at quiescence would send back, goes back within one failbackRecheck and the rate's time after the window, the last leader change and the last moment a documented gate (the fleet-wide cap, the freeze, a rate pause, a faulty cluster of its schedule result, the room evictions hold) held it",
	"g": "at quiescence the queue counts in flight the open graceful eviction tasks of a taint manager, and of those that ended, whoever ended them (the GracefulEvictionController, another writer, a deletion), none that ended a cache lag (and a second) ago or more: the eviction controller sees an end in its cache",
}

// modelRateRule is the controllers' rate rule in the model.
var modelRateRule = ratelimit.Config{
	ResourceEvictionRate: modelRate, SecondaryResourceEvictionRate: 0.1,
	UnhealthyClusterThreshold: 0.55, LargeClusterNumThreshold: 10,
}

const (
	modelNamespace  = "shop"
	modelTaintKey   = "cluster.karmada.io/not-ready"
	modelRate       = 1.0 // ResourceEvictionRate, per second
	modelTimeout    = 3 * time.Minute
	modelReport     = 10 * time.Second // ClusterStatusUpdateFrequency
	modelMaxBinding = 10
	modelWriteDelay = 100 * time.Millisecond   // the most a handler's write follows its permit, but for the API's latency
	modelDownTaint  = "model.example.com/down" // another writer's, gone when the cluster is Ready again
	modelRetries    = 10 * time.Second         // the most a write is retried on conflict: a try older than that was given up
)

func TestModelControllers(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	seeds := modelFixedSeeds
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
	// evicted counts, by seed, the evictions the controllers wrote.
	evicted := map[int64]int{}
	run := func(seed int64) bool {
		return t.Run("seed="+strconv.FormatInt(seed, 10), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { evicted[seed] = runModel(t, seed, *modelSteps, nil) })
			t.Logf("seed %d: %d evictions written", seed, evicted[seed])
		})
	}
	if *modelDuration > 0 {
		r := rand.New(rand.NewSource(time.Now().UnixNano()))
		for end := time.Now().Add(*modelDuration); time.Now().Before(end); {
			run(r.Int63n(1<<40) + 1)
		}
		logEvicted(t, evicted)
		return
	}
	for _, s := range seeds {
		if why, known := modelKnownFailures[s]; known && *modelSeed == 0 {
			t.Run("seed="+strconv.FormatInt(s, 10), func(t *testing.T) { t.Skip("known failure, not yet diagnosed: " + why) })
			continue
		}
		run(s)
	}
	logEvicted(t, evicted)
	// Non-vacuity: a harness that stops tainting clusters (as one did
	// when the policy controller began to read its policies as
	// unstructured) makes every invariant hold by evicting nothing. Each
	// fixed seed fails clusters within its first steps and evicts, so one
	// that evicts nothing says the model stopped biting, not that the
	// controllers are right. Random seeds may never fail a cluster a
	// binding is on, and shorter sequences may end before the first
	// eviction: only the fixed ones, at the default length, are held to it.
	if *modelPolicies && *modelSeed == 0 && *modelSeeds == 0 && *modelSteps == modelDefaultSteps {
		for _, s := range seeds {
			if n, ran := evicted[s]; ran && n == 0 {
				t.Errorf("seed %d: the controllers wrote no eviction: the model no longer taints clusters or evicts, and its invariants hold vacuously", s)
			}
		}
	}
}

// logEvicted logs how many evictions the seeds run wrote, in all.
func logEvicted(t *testing.T, evicted map[int64]int) {
	total := 0
	for _, n := range evicted {
		total += n
	}
	t.Logf("%d seeds run, %d evictions written", len(evicted), total)
}

// model is one sequence: the world, the manager running the controllers
// and what the invariants need to remember.
type model struct {
	t      *testing.T
	seed   int64
	rnd    *rand.Rand // the steps'
	scheme *runtime.Scheme
	api    client.WithWatch // the fake API server, through the interceptor
	raw    client.WithWatch // the fake API server itself, for the test's reads: no latency
	events *eventLog        // shared by every leader: Events stay in the API
	logger logr.Logger

	ctrl   *EvictionController
	cancel context.CancelFunc
	done   chan error

	// Only the test's goroutine reads and writes these.
	capacity   map[string]int64 // pods each cluster can run
	desired    map[string]int   // copies each Duplicated binding wants
	nextName   int
	quiet      bool             // the last settle found no call to the API server under way
	newLeader  bool             // the last step changed the leader, which starts from nothing
	heldBefore map[string]int64 // what the last leader's Ledger held when it stopped
	// restorable names the open tasks a new leader promises to hold room
	// for, as the leader changed, for (f).
	restorable map[string]bool
	reported   map[string]int // violations by invariant and cause
	// excused counts what an invariant let pass because the library's
	// promise allows it, by invariant and cause.
	excused map[string]int
	// feasibleSince is when each refusal (binding@cluster@its Event's time)
	// was first seen feasible by the check, for (b).
	feasibleSince map[string]time.Time
	// pausedAt is the last check that found the rate rule pausing, or a
	// freeze holding, for (b).
	pausedAt time.Time

	// The controllers' goroutines reach these through the API server.
	mu         sync.Mutex // held by every write through the interceptor
	crnd       *rand.Rand // the injected conflicts'
	lrnd       *rand.Rand // the cache lag's and the API latency's
	ornd       *rand.Rand // another writer's removals of open tasks: the steps' sequence stays the seed's
	conflictP  float64
	lagMax     time.Duration
	lagPrev    time.Duration // lagMax before the last step, for the events still on their way
	latMax     time.Duration // the API server's latency
	latEver    time.Duration // the most latMax has been
	busy       int           // calls waiting out the latency
	evictions  []modelEviction
	starts     []time.Time // when each leader started
	ended      []endedTask
	found      []modelViolation     // found by the interceptor, reported after the step
	conflicted time.Time            // when a controller's write last met a conflict
	injected   map[string]time.Time // when each binding's eviction last met another writer
	// attempted is when the controllers' write of each binding's eviction
	// or failback was first tried, while it is retried on conflict: its
	// permit came before that, for (c).
	attempted map[string]time.Time
	// The operator's freeze, for (i): the ConfigMap that holds it (nil:
	// none), when it was set, whether it was set while an eviction's
	// handler read the API server, and whether the next such read sets it.
	freezeCM     *corev1.ConfigMap
	frozenAt     time.Time
	frozenMid    bool
	freezeOnRead bool
	gate         *freezeGate // the running leader's
	// untainted holds, by cluster, the NoExecute taints each write that
	// changed them replaced, and when: an eviction decided on a read
	// before that write may land after it, for (a).
	untainted map[string][]taintChange
	// fleetLog holds every version of every cluster the API server
	// stored, in order, for (a): the eviction controller's fleet is the
	// API server's as it was up to a cache lag ago.
	fleetLog   []clusterv1alpha1.Cluster
	fleetAt    []time.Time
	trace      []string
	checkedEvs int // evictions already checked against (c)

	// fb, when set, runs a FailbackController beside the eviction
	// controller in every leader, and the failback steps and invariants
	// (model_failback_test.go).
	fb *fbModel
}

// taintChange is a write to a cluster that changed its NoExecute taints
// at at: before is what they were.
type taintChange struct {
	at     time.Time
	before []corev1.Taint
}

type modelEviction struct {
	at           time.Time
	key, cluster string
	by           string // the writer's field manager
	// failback: a failback's write (cluster is its origin), which takes a
	// permit of the same Limiter as an eviction, for (c).
	failback bool
	// attempt is when its write was first tried: it may have met
	// conflicts and been tried again.
	attempt time.Time
}

type endedTask struct {
	at       time.Time
	replicas int64
	what     string
	// taintManager: a taint manager's task, which counts in flight (g).
	taintManager bool
	// lag is the cache's lag when it ended: a task another writer removed
	// reaches the eviction controller that much later, and its room is
	// given back a report after that.
	lag time.Duration
}

// modelViolation is one violation of invariant inv; kind names the cause
// as the harness sees it, so that each cause is reported once a sequence.
type modelViolation struct{ inv, kind, msg string }

// runModel runs the sequence of seed and returns how many evictions the
// controllers wrote. fb, when set, adds the FailbackController, its steps
// and its invariants.
func runModel(t *testing.T, seed int64, steps int, fb *fbModel) int {
	m := &model{
		t: t, seed: seed, rnd: rand.New(rand.NewSource(seed)), fb: fb,
		crnd: rand.New(rand.NewSource(seed + 1)), lrnd: rand.New(rand.NewSource(seed + 2)), ornd: rand.New(rand.NewSource(seed + 3)),
		events: &eventLog{}, injected: map[string]time.Time{}, attempted: map[string]time.Time{}, untainted: map[string][]taintChange{}, capacity: map[string]int64{}, desired: map[string]int{}, reported: map[string]int{}, excused: map[string]int{}, feasibleSince: map[string]time.Time{},
		logger: logr.Discard(),
	}
	if *modelVerbose {
		m.logger = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, time.Now().Format("15:04:05.000"), prefix, args) }, funcr.Options{Verbosity: 1})
		// The eviction handlers log through the context of the queues,
		// which carries no logger: controller-runtime's global one.
		modelLogOnce.Do(func() { log.SetLogger(m.logger) })
	}
	m.scheme = runtime.NewScheme()
	if err := AddToScheme(m.scheme); err != nil {
		t.Fatal(err)
	}
	// The fake API server registers the kinds it is asked for as
	// unstructured (the CRD the taint policy controller reads) in its
	// scheme, under its own lock: a scheme of its own, so that the
	// cache's reads of m.scheme never race with that.
	apiScheme := runtime.NewScheme()
	if err := AddToScheme(apiScheme); err != nil {
		t.Fatal(err)
	}
	m.raw = fake.NewClientBuilder().WithScheme(apiScheme).Build()
	m.api = interceptor.NewClient(m.raw, interceptor.Funcs{
		// A read takes the API's latency there and back: what it returns
		// may have changed by the time the caller has it.
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			m.latency()
			defer m.latency()
			m.freezeMidAttempt(ctx, obj)
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
			m.logClusterLocked(ctx, c, obj)
			if cl, ok := obj.(*clusterv1alpha1.Cluster); ok && m.fb != nil {
				m.fb.clusterWrittenLocked(m, ctx, c, cl)
			}
			return nil
		},
		Update: m.update,
		Delete: m.delete,
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			return c.Patch(ctx, obj, patch, opts...)
		},
	})

	m.build()
	m.start()
	// A step that fails the test stops the leader too, so that the bubble
	// ends with no goroutine left.
	defer func() {
		if m.ctrl != nil {
			m.stop()
		}
	}()
	m.settle()
	m.check(0)
	for i := 1; i <= steps; i++ {
		var what string
		if m.fb != nil {
			what = m.fbStep()
		} else {
			what = m.step()
		}
		// Now and then another writer removes an open task too, on a
		// random source of its own: each seed's steps stay as they were.
		if m.ornd.Intn(4) == 0 {
			if w, ok := m.removeTask(); ok {
				what += "; " + w
			}
		}
		m.note(fmt.Sprintf("step %d at %s: %s", i, m.since(), what))
		m.settle()
		m.check(i)
	}
	// Steps stop: time runs past the graceful eviction timeout.
	for i := range 4 {
		time.Sleep(modelTimeout / 3)
		what := fmt.Sprintf("%v pass", modelTimeout/3)
		if m.fb != nil {
			// Karmada's scheduler still answers the failbacks' requests.
			what += "; " + m.placeTriggered()
		}
		m.note(fmt.Sprintf("drain %d at %s: %s", i+1, m.since(), what))
		m.settle()
		m.check(steps + 1 + i)
	}
	if m.fb != nil && *modelVerbose {
		m.fb.logEvents(m)
	}
	for _, inv := range slices.Sorted(maps.Keys(m.reported)) {
		t.Logf("seed %d: invariant (%s) violated %d times", seed, inv, m.reported[inv])
	}
	for _, why := range slices.Sorted(maps.Keys(m.excused)) {
		t.Logf("seed %d: invariant (%s) allowed %d times", seed, why, m.excused[why])
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.evictions {
		if e.by == FieldManager && !e.failback {
			n++
		}
	}
	return n
}

var modelEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) // the bubble's start

func (m *model) since() string { return time.Since(modelEpoch).Round(time.Millisecond).String() }

func (m *model) note(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.traceLocked(s)
}

// traceLocked adds s to the steps so far. m.mu is held.
func (m *model) traceLocked(s string) {
	m.trace = append(m.trace, s)
	if *modelVerbose {
		m.t.Log(s)
	}
}

// start runs a new leader: a fresh manager with fresh controllers from
// Setup, each with a fresh Prometheus registry.
func (m *model) start() {
	mgr, err := newModelManager(m.scheme, m.api, m.lag, m.events, m.logger)
	if err != nil {
		m.t.Fatal(err)
	}
	ctrl, err := Setup(mgr, ClusterTaintPolicyOptions{}, EvictionOptions{
		Rate:                         modelRateRule,
		EnableNoExecuteTaintEviction: true,
		Registerer:                   prometheus.NewRegistry(),
		ClusterStatusUpdateFrequency: modelReport,
	}, GracefulEvictionOptions{Timeout: modelTimeout})
	if err != nil {
		m.t.Fatal(err)
	}
	// The operator's freeze as the controllers' gate reads it: the model
	// hands it the ConfigMap as its informer would (the fake manager
	// serves no clientset), the one the world holds from the start.
	ctrl.freeze = newFreezeGate(modelFreeze, ctrl.opts.Clock, nopFrozen{}, m.logger)
	ctrl.freeze.confirmStorm, ctrl.freeze.onThaw = ctrl.limiter.ConfirmStorm, []func(){ctrl.thawed}
	m.mu.Lock()
	m.gate = ctrl.freeze
	m.gate.set(m.freezeCM)
	m.mu.Unlock()
	if m.fb != nil {
		m.fb.setUp(m, mgr, ctrl) // as examples/karmadafork wires it: after the eviction controller
	}
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), m.logger))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	m.ctrl, m.cancel, m.done = ctrl, cancel, done
	m.mu.Lock()
	m.starts = append(m.starts, time.Now())
	m.mu.Unlock()
}

func (m *model) stop() {
	m.mu.Lock()
	m.gate = nil
	if m.fb != nil {
		m.fb.queue, m.fb.ledger = nil, nil
	}
	m.mu.Unlock()
	m.cancel()
	if err := <-m.done; err != nil {
		m.t.Errorf("seed %d: the manager stopped with %v", m.seed, err)
	}
	m.ctrl = nil
}

func (m *model) lag() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lagMax <= 0 {
		return 0
	}
	return time.Duration(m.lrnd.Int63n(int64(m.lagMax)))
}

// writeDelayLocked is the most a handler's write follows its permit: its
// reads of the cluster and the binding wait out the API's latency there and
// back, its write there, and a retry on conflict sleeps a little. m.mu is
// held.
func (m *model) writeDelayLocked() time.Duration { return modelWriteDelay + 6*m.latEver }

// latency is the API server's: a call takes up to latMax, during which the
// caller is busy, so that a handler call spans time in which events come.
func (m *model) latency() {
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

// settle waits for the controllers to be idle, lets time run a little (the
// cache catches up, retries on conflict end) and waits again, until no call
// to the API server is under way: a controller between two calls is still
// handling its item.
func (m *model) settle() {
	synctest.Wait()
	m.mu.Lock()
	lag := max(m.lagMax, m.lagPrev)
	m.lagPrev = m.lagMax
	m.mu.Unlock()
	time.Sleep(lag + time.Second)
	synctest.Wait()
	m.tookOver()
	for range 500 {
		m.mu.Lock()
		busy := m.busy
		m.mu.Unlock()
		if busy == 0 {
			m.quiet = true
			return
		}
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
	}
	// Handlers follow one another without a pause: there is no moment
	// at which none runs.
	m.quiet = false
}

// ---- the world ----

func (m *model) build() {
	ctx := context.Background()
	n, regions := 3+m.rnd.Intn(4), 2+m.rnd.Intn(2)
	for i := range n {
		name := fmt.Sprintf("m%d", i+1)
		m.capacity[name] = int64(8 + m.rnd.Intn(9))
		cl := &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       clusterv1alpha1.ClusterSpec{Region: fmt.Sprintf("r%d", i%regions+1)},
			Status: clusterv1alpha1.ClusterStatus{Conditions: []metav1.Condition{{
				Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: "Ready",
				LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour)),
			}}},
		}
		withRoom(cl, m.capacity[name])
		if m.fb != nil {
			// Karmada's algorithm, which the failback predicts with and
			// the model's scheduler places a failback with, places a
			// Deployment only where its API is enabled.
			cl.Status.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}}}
		}
		if err := m.api.Create(ctx, cl); err != nil {
			m.t.Fatal(err)
		}
	}
	if err := m.api.Create(ctx, m.policyObject(0)); err != nil {
		m.t.Fatal(err)
	}
	for range 4 + m.rnd.Intn(7) {
		m.createBinding()
	}
	m.catchUp()
	m.note(fmt.Sprintf("world: %d clusters in %d regions, %d bindings", n, regions, len(m.bindings())))
}

func (m *model) clusterNames() []string { return slices.Sorted(maps.Keys(m.capacity)) }

func (m *model) clusters() []clusterv1alpha1.Cluster {
	var list clusterv1alpha1.ClusterList
	if err := m.raw.List(context.Background(), &list); err != nil {
		m.t.Fatal(err)
	}
	return list.Items
}

func (m *model) bindings() []workv1alpha2.ResourceBinding {
	var list workv1alpha2.ResourceBindingList
	if err := m.raw.List(context.Background(), &list); err != nil {
		m.t.Fatal(err)
	}
	return list.Items
}

// policyObject is the ClusterTaintPolicy variant v.
func (m *model) policyObject(v int) *policyv1alpha1.ClusterTaintPolicy {
	p := &policyv1alpha1.ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "not-ready"},
		Spec: policyv1alpha1.ClusterTaintPolicySpec{
			AddOnConditions:    []policyv1alpha1.MatchCondition{{ConditionType: clusterv1alpha1.ClusterConditionReady, Operator: policyv1alpha1.MatchConditionOpIn, StatusValues: []metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionUnknown}}},
			RemoveOnConditions: []policyv1alpha1.MatchCondition{{ConditionType: clusterv1alpha1.ClusterConditionReady, Operator: policyv1alpha1.MatchConditionOpIn, StatusValues: []metav1.ConditionStatus{metav1.ConditionTrue}}},
			Taints:             []policyv1alpha1.Taint{{Key: modelTaintKey, Effect: corev1.TaintEffectNoExecute}},
		},
	}
	switch v {
	case 1: // NoSchedule too
		p.Spec.Taints = append(p.Spec.Taints, policyv1alpha1.Taint{Key: modelTaintKey, Effect: corev1.TaintEffectNoSchedule})
	case 2: // region r1 only
		p.Spec.TargetClusters = &policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "region", Operator: corev1.NodeSelectorOpIn, Values: []string{"r1"}},
		}}}
	case 3: // only an Unknown status taints
		p.Spec.AddOnConditions[0].StatusValues = []metav1.ConditionStatus{metav1.ConditionUnknown}
	}
	return p
}

// createBinding adds a binding scheduled as Karmada's scheduler would:
// Duplicated on a few eligible clusters, or Divided (Aggregated) on the
// eligible clusters with the most room.
func (m *model) createBinding() {
	names := m.clusterNames()
	m.nextName++
	name := fmt.Sprintf("app-%02d", m.nextName)
	placement := policyv1alpha1.Placement{}
	if m.rnd.Intn(2) == 0 {
		k := 2 + m.rnd.Intn(len(names)-1)
		sub := slices.Clone(names)
		m.rnd.Shuffle(len(sub), func(i, j int) { sub[i], sub[j] = sub[j], sub[i] })
		placement.ClusterAffinity = &policyv1alpha1.ClusterAffinity{ClusterNames: slices.Sorted(slices.Values(sub[:k]))}
	}
	switch m.rnd.Intn(10) {
	case 0, 1, 2:
		placement.ClusterTolerations = []corev1.Toleration{{Key: modelTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
			TolerationSeconds: ptr.To([]int64{20, 60, 150}[m.rnd.Intn(3)])}}
	case 3:
		placement.ClusterTolerations = []corev1.Toleration{{Key: modelTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	}
	divided := m.rnd.Intn(2) == 0
	if divided {
		placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated,
		}
	} else {
		placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}
	}
	rb := &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: modelNamespace, Name: name},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource:  workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: modelNamespace, Name: name},
			Placement: &placement,
		},
	}
	setApplied(rb)
	clusters := m.clusters()
	eligible := m.eligible(rb, clusters)
	if divided {
		rb.Spec.Replicas = int32(2 + m.rnd.Intn(5))
		rb.Spec.Clusters = m.divide(rb.Spec.Replicas, eligible, clusters, nil)
	} else {
		rb.Spec.Replicas = int32(1 + m.rnd.Intn(3))
		k := min(len(eligible), 1+m.rnd.Intn(3))
		m.desired[modelNamespace+"/"+name] = max(k, 1)
		for _, c := range eligible[:k] {
			rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: rb.Spec.Replicas})
		}
	}
	rb.Status.AggregatedStatus = healthy(rb.Spec.Clusters)
	// Every third binding has a budget of one cluster in transit (h): by
	// its name, not a draw, so that the seeds play as they did.
	if m.nextName%3 == 0 {
		rb.Annotations[MaxClustersInTransitAnnotation] = "1"
	}
	if err := m.api.Create(context.Background(), rb); err != nil {
		m.t.Fatal(err)
	}
}

// setApplied writes the placement into the applied-placement annotation,
// as Karmada's detector does.
func setApplied(rb *workv1alpha2.ResourceBinding) {
	raw, err := json.Marshal(rb.Spec.Placement)
	if err != nil {
		panic(err)
	}
	if rb.Annotations == nil {
		rb.Annotations = map[string]string{}
	}
	rb.Annotations[karmada.AppliedPlacementAnnotation] = string(raw)
}

func healthy(targets []workv1alpha2.TargetCluster) []workv1alpha2.AggregatedStatusItem {
	var out []workv1alpha2.AggregatedStatusItem
	for _, c := range targets {
		out = append(out, workv1alpha2.AggregatedStatusItem{ClusterName: c.Name, Applied: true, Health: workv1alpha2.ResourceHealthy})
	}
	return out
}

func divided(rb *workv1alpha2.ResourceBinding) bool {
	p := rb.Spec.Placement
	return p != nil && p.ReplicaScheduling != nil && p.ReplicaScheduling.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingTypeDivided
}

// eligible are the clusters Karmada's scheduler may put rb on, in a shuffled
// order: in its affinity, tolerating their NoSchedule and NoExecute taints,
// not evicted from.
func (m *model) eligible(rb *workv1alpha2.ResourceBinding, clusters []clusterv1alpha1.Cluster) []string {
	var out []string
	for _, cl := range clusters {
		if a := rb.Spec.Placement.ClusterAffinity; a != nil && a.ClusterNames != nil && !slices.Contains(a.ClusterNames, cl.Name) {
			continue
		}
		if slices.ContainsFunc(rb.Spec.GracefulEvictionTasks, func(t workv1alpha2.GracefulEvictionTask) bool { return t.FromCluster == cl.Name }) {
			continue
		}
		ok := true
		for _, taint := range cl.Spec.Taints {
			if taint.Effect == corev1.TaintEffectPreferNoSchedule {
				continue
			}
			if !slices.ContainsFunc(rb.Spec.Placement.ClusterTolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(logr.Discard(), &taint, false) }) {
				ok = false
			}
		}
		if ok {
			out = append(out, cl.Name)
		}
	}
	m.rnd.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func room(cl *clusterv1alpha1.Cluster) int64 {
	if cl.Status.ResourceSummary == nil {
		return 0
	}
	a := cl.Status.ResourceSummary.Allocatable[corev1.ResourcePods]
	u := cl.Status.ResourceSummary.Allocated[corev1.ResourcePods]
	return a.Value() - u.Value()
}

// divide places n replicas on the eligible clusters with the most room
// (Aggregated), adding to current.
func (m *model) divide(n int32, eligible []string, clusters []clusterv1alpha1.Cluster, current []workv1alpha2.TargetCluster) []workv1alpha2.TargetCluster {
	rooms := map[string]int64{}
	for i := range clusters {
		rooms[clusters[i].Name] = room(&clusters[i])
	}
	order := slices.Clone(eligible)
	slices.SortStableFunc(order, func(a, b string) int { return int(rooms[b] - rooms[a]) })
	out := slices.Clone(current)
	for _, c := range order {
		if n <= 0 {
			break
		}
		take := min(int64(n), max(rooms[c], 0))
		if take == 0 {
			continue
		}
		if i := slices.IndexFunc(out, func(t workv1alpha2.TargetCluster) bool { return t.Name == c }); i >= 0 {
			out[i].Replicas += int32(take)
		} else {
			out = append(out, workv1alpha2.TargetCluster{Name: c, Replicas: int32(take)})
		}
		n -= int32(take)
	}
	return out
}

// catchUp writes every cluster's resource summary as the replicas
// scheduled there leave room: the summaries catch up.
func (m *model) catchUp() {
	used := map[string]int64{}
	for _, rb := range m.bindings() {
		for _, c := range rb.Spec.Clusters {
			used[c.Name] += int64(c.Replicas)
		}
	}
	for _, name := range m.clusterNames() {
		m.mutateCluster(name, func(cl *clusterv1alpha1.Cluster) { withRoom(cl, max(m.capacity[name]-used[name], 0)) })
	}
}

func (m *model) mutateCluster(name string, f func(*clusterv1alpha1.Cluster)) {
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

// mutateBinding changes a binding as another writer would; f returns false
// to write nothing.
func (m *model) mutateBinding(key client.ObjectKey, f func(*workv1alpha2.ResourceBinding) bool) {
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

// ---- the steps ----

func (m *model) pickCluster() string {
	names := m.clusterNames()
	return names[m.rnd.Intn(len(names))]
}

func (m *model) pickBinding() (workv1alpha2.ResourceBinding, bool) {
	bs := m.bindings()
	if len(bs) == 0 {
		return workv1alpha2.ResourceBinding{}, false
	}
	return bs[m.rnd.Intn(len(bs))], true
}

// step takes one random step and says what it did.
func (m *model) step() string {
	ctx := context.Background()
	switch r := m.rnd.Intn(100); {
	case r < 22: // a cluster's Ready condition flaps
		name := m.pickCluster()
		status := metav1.ConditionTrue
		var was metav1.ConditionStatus
		m.mutateCluster(name, func(cl *clusterv1alpha1.Cluster) {
			c := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
			was = c.Status
			if c.Status == metav1.ConditionTrue {
				status = []metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionUnknown}[m.rnd.Intn(2)]
			}
			c.Status, c.LastTransitionTime, c.Reason = status, metav1.Now(), "Model"
			if status == metav1.ConditionTrue {
				cl.Spec.Taints = slices.DeleteFunc(cl.Spec.Taints, func(t corev1.Taint) bool { return t.Key == modelDownTaint })
			}
		})
		return fmt.Sprintf("cluster %s Ready %s -> %s", name, was, status)
	case r < 26: // the ClusterTaintPolicy changes
		v := m.rnd.Intn(5)
		var p policyv1alpha1.ClusterTaintPolicy
		err := m.api.Get(ctx, client.ObjectKey{Name: "not-ready"}, &p)
		switch {
		case v == 4 && err == nil:
			if err := m.api.Delete(ctx, &p); err != nil {
				m.t.Fatal(err)
			}
		case v == 4:
		case err != nil:
			if err := m.api.Create(ctx, m.policyObject(v)); err != nil {
				m.t.Fatal(err)
			}
		default:
			p.Spec = m.policyObject(v).Spec
			if err := m.api.Update(ctx, &p); err != nil {
				m.t.Fatal(err)
			}
		}
		return fmt.Sprintf("ClusterTaintPolicy variant %d (%s)", v, []string{"NoExecute on False/Unknown", "NoExecute and NoSchedule", "region r1 only", "NoExecute on Unknown only", "deleted"}[v])
	case r < 34: // a resource summary lags or jumps
		name := m.pickCluster()
		n := m.rnd.Int63n(m.capacity[name] + 1)
		m.mutateCluster(name, func(cl *clusterv1alpha1.Cluster) { withRoom(cl, n) })
		return fmt.Sprintf("cluster %s summary: room %d", name, n)
	case r < 40: // the summaries catch up
		m.catchUp()
		return "every summary catches up"
	case r < 54: // Karmada's scheduler places what was evicted
		return m.schedule()
	case r < 58: // the status of a binding
		rb, ok := m.pickBinding()
		if !ok {
			return "no binding to report on"
		}
		health := workv1alpha2.ResourceHealthy
		if m.rnd.Intn(3) == 0 {
			health = workv1alpha2.ResourceUnhealthy
		}
		m.mutateBinding(client.ObjectKeyFromObject(&rb), func(rb *workv1alpha2.ResourceBinding) bool {
			rb.Status.AggregatedStatus = healthy(rb.Spec.Clusters)
			for i := range rb.Status.AggregatedStatus {
				rb.Status.AggregatedStatus[i].Health = health
			}
			return true
		})
		return fmt.Sprintf("binding %s status: %s everywhere", rb.Name, health)
	case r < 63: // another writer changes a binding
		return m.rewrite()
	case r < 66, r >= 82 && r < 88: // and changes it back at once
		return m.blip()
	case r < 69:
		rb, ok := m.pickBinding()
		if !ok {
			return "no binding to delete"
		}
		if err := m.api.Delete(ctx, &rb); err != nil && !apierrors.IsNotFound(err) {
			m.t.Fatal(err)
		}
		return fmt.Sprintf("binding %s deleted (clusters %v, tasks %v)", rb.Name, targets(&rb), tasks(&rb))
	case r < 72:
		if len(m.bindings()) >= modelMaxBinding {
			return "no binding created: enough"
		}
		m.createBinding()
		return fmt.Sprintf("binding app-%02d created", m.nextName)
	case r < 76: // update conflicts
		p := []float64{0, 0.3, 0.7}[m.rnd.Intn(3)]
		m.mu.Lock()
		m.conflictP = p
		m.mu.Unlock()
		return fmt.Sprintf("conflicts injected into evictions with probability %.1f", p)
	case r < 78: // the cache lags, the API server is slow
		l := []time.Duration{0, 200 * time.Millisecond, 2 * time.Second, 5 * time.Second}[m.rnd.Intn(4)]
		d := []time.Duration{0, 0, 20 * time.Millisecond, 300 * time.Millisecond}[m.rnd.Intn(4)]
		m.mu.Lock()
		m.lagMax, m.latMax, m.latEver = l, d, max(m.latEver, d)
		m.mu.Unlock()
		return fmt.Sprintf("cache lag up to %v, API latency up to %v", l, d)
	case r < 82: // a new leader
		return m.changeLeader()
	case r < 91: // an operator freezes every eviction, or thaws them
		return m.toggleFreeze()
	default: // time passes
		d := []time.Duration{time.Second, 3 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 3 * time.Minute}[m.rnd.Intn(6)]
		time.Sleep(d)
		return fmt.Sprintf("%v pass", d)
	}
}

// changeLeader stops the leader and starts a new one from nothing.
func (m *model) changeLeader() string {
	m.newLeader = true
	pending := m.pending()
	if l := m.ctrl.Ledger(); l != nil {
		m.heldBefore = l.Held(time.Now())
		m.restorable = m.restorableTasks()
	}
	m.stop()
	m.start()
	return fmt.Sprintf("leader change (the old leader had queued %v)", pending)
}

// schedule plays Karmada's scheduler: it places, on eligible clusters, the
// replicas or copies the evictions took away, or now and then leaves a
// binding as it is, and reports the new copies healthy.
func (m *model) schedule() string {
	clusters := m.clusters()
	var did []string
	for _, b := range m.bindings() {
		if m.rnd.Intn(5) == 0 {
			continue
		}
		m.mutateBinding(client.ObjectKeyFromObject(&b), func(rb *workv1alpha2.ResourceBinding) bool {
			if m.fb != nil && triggered(rb) {
				// A failback asked for a fresh placement: Karmada's.
				if w, ok := m.placeAfresh(rb, clusters); ok {
					did = append(did, w)
					return true
				}
				return false
			}
			eligible := m.eligible(rb, clusters)
			before := targets(rb)
			if divided(rb) {
				var placed int32
				for _, c := range rb.Spec.Clusters {
					placed += c.Replicas
				}
				if placed >= rb.Spec.Replicas {
					return false
				}
				rb.Spec.Clusters = m.divide(rb.Spec.Replicas-placed, eligible, clusters, rb.Spec.Clusters)
			} else {
				missing := m.desired[itemKey(rb)] - len(rb.Spec.Clusters)
				for _, c := range eligible {
					if missing <= 0 {
						break
					}
					if !rb.Spec.TargetContains(c) {
						rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: rb.Spec.Replicas})
						missing--
					}
				}
			}
			if slices.Equal(before, targets(rb)) {
				return false
			}
			rb.Status.AggregatedStatus = healthy(rb.Spec.Clusters)
			did = append(did, fmt.Sprintf("%s %v -> %v", rb.Name, before, targets(rb)))
			return true
		})
	}
	return fmt.Sprintf("scheduler: %v", did)
}

// rewrite is another writer changing a binding: its placement narrowed to
// one cluster, widened to every cluster, or rescheduled elsewhere.
func (m *model) rewrite() string {
	b, ok := m.pickBinding()
	if !ok {
		return "no binding to rewrite"
	}
	clusters := m.clusters()
	var what string
	m.mutateBinding(client.ObjectKeyFromObject(&b), func(rb *workv1alpha2.ResourceBinding) bool {
		switch m.rnd.Intn(3) {
		case 0:
			if len(rb.Spec.Clusters) == 0 {
				return false
			}
			one := rb.Spec.Clusters[m.rnd.Intn(len(rb.Spec.Clusters))].Name
			rb.Spec.Placement.ClusterAffinity = &policyv1alpha1.ClusterAffinity{ClusterNames: []string{one}}
			rb.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: one, Replicas: rb.Spec.Replicas}}
			m.desired[itemKey(rb)] = 1
			what = "narrowed to " + one
		case 1:
			rb.Spec.Placement.ClusterAffinity = nil
			m.desired[itemKey(rb)] = min(m.desired[itemKey(rb)]+1, len(m.capacity))
			what = "placement widened to every cluster"
		default:
			eligible := m.eligible(rb, clusters)
			if len(rb.Spec.Clusters) == 0 || len(eligible) == 0 {
				return false
			}
			i := m.rnd.Intn(len(rb.Spec.Clusters))
			to := eligible[0]
			if rb.Spec.TargetContains(to) {
				return false
			}
			what = fmt.Sprintf("rescheduled from %s to %s", rb.Spec.Clusters[i].Name, to)
			rb.Spec.Clusters[i].Name = to
		}
		setApplied(rb)
		rb.Status.AggregatedStatus = healthy(rb.Spec.Clusters)
		return true
	})
	if what == "" {
		return fmt.Sprintf("binding %s left as it is", b.Name)
	}
	return fmt.Sprintf("binding %s %s", b.Name, what)
}

// removeTask is another writer (an operator's kubectl edit, another
// controller) taking an open graceful eviction task off its binding: the
// GracefulEvictionController does not end it, and nobody calls Ended.
func (m *model) removeTask() (string, bool) {
	var open []workv1alpha2.ResourceBinding
	for _, b := range m.bindings() {
		if len(b.Spec.GracefulEvictionTasks) > 0 {
			open = append(open, b)
		}
	}
	if len(open) == 0 {
		return "", false
	}
	b := open[m.ornd.Intn(len(open))]
	from := b.Spec.GracefulEvictionTasks[m.ornd.Intn(len(b.Spec.GracefulEvictionTasks))].FromCluster
	m.mutateBinding(client.ObjectKeyFromObject(&b), func(rb *workv1alpha2.ResourceBinding) bool {
		n := len(rb.Spec.GracefulEvictionTasks)
		rb.Spec.GracefulEvictionTasks = slices.DeleteFunc(rb.Spec.GracefulEvictionTasks, func(t workv1alpha2.GracefulEvictionTask) bool {
			return t.FromCluster == from
		})
		return len(rb.Spec.GracefulEvictionTasks) < n
	})
	return fmt.Sprintf("another writer removes the task of %s from %s", b.Name, from), true
}

// blip is another writer making a binding tolerate the taint of its faulty
// cluster for a moment, as an operator's edit reverted; the cluster fails
// just before when it has not. An eviction handler that reads the binding
// meanwhile decides to leave it, and the decision made when the toleration
// goes must not be lost.
func (m *model) blip() string {
	b, ok := m.pickBinding()
	if !ok || len(b.Spec.Clusters) == 0 {
		return "no scheduled binding to make tolerate a taint"
	}
	name := b.Spec.Clusters[m.rnd.Intn(len(b.Spec.Clusters))].Name
	var cl clusterv1alpha1.Cluster
	if err := m.raw.Get(context.Background(), client.ObjectKey{Name: name}, &cl); err != nil {
		m.t.Fatal(err)
	}
	what := ""
	if len(noExecuteTaints(cl.Spec.Taints)) == 0 {
		m.mutateCluster(name, func(cl *clusterv1alpha1.Cluster) {
			c := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
			c.Status, c.LastTransitionTime, c.Reason = metav1.ConditionFalse, metav1.Now(), "Model"
		})
		wait := time.Duration(m.rnd.Int63n(int64(1500 * time.Millisecond)))
		time.Sleep(wait)
		what = fmt.Sprintf("cluster %s Ready -> False, %v later ", name, wait)
	}
	set := func(tols []corev1.Toleration) {
		m.mutateBinding(client.ObjectKeyFromObject(&b), func(rb *workv1alpha2.ResourceBinding) bool {
			rb.Spec.Placement.ClusterTolerations = tols
			setApplied(rb)
			return true
		})
	}
	was := b.Spec.Placement.ClusterTolerations
	set(append(slices.Clone(was), corev1.Toleration{Key: modelTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}))
	d := time.Duration(m.rnd.Int63n(int64(700 * time.Millisecond)))
	time.Sleep(d)
	set(was)
	return fmt.Sprintf("%sbinding %s tolerated %s for %v", what, b.Name, modelTaintKey, d)
}

func targets(rb *workv1alpha2.ResourceBinding) []string {
	var out []string
	for _, c := range rb.Spec.Clusters {
		out = append(out, fmt.Sprintf("%s:%d", c.Name, c.Replicas))
	}
	return out
}

func tasks(rb *workv1alpha2.ResourceBinding) []string {
	var out []string
	for _, t := range rb.Spec.GracefulEvictionTasks {
		at := "?"
		if t.CreationTimestamp != nil {
			at = t.CreationTimestamp.Sub(modelEpoch).String()
		}
		out = append(out, fmt.Sprintf("from %s at %s", t.FromCluster, at))
	}
	return out
}

func (m *model) pending() []evictionqueue.Item {
	if m.ctrl == nil {
		return nil
	}
	return append(m.ctrl.Queue(ResourceBindingQueue).Pending(), m.ctrl.Queue(ClusterResourceBindingQueue).Pending()...)
}

// ---- the API server's side: writes pass here ----

// evictedFrom are the clusters next moves out of spec.clusters into a new
// graceful eviction task, compared with cur.
func evictedFrom(cur, next *workv1alpha2.ResourceBindingSpec) []string {
	var out []string
	for _, c := range cur.Clusters {
		if next.TargetContains(c.Name) {
			continue
		}
		had := slices.ContainsFunc(cur.GracefulEvictionTasks, func(t workv1alpha2.GracefulEvictionTask) bool { return t.FromCluster == c.Name })
		has := slices.ContainsFunc(next.GracefulEvictionTasks, func(t workv1alpha2.GracefulEvictionTask) bool { return t.FromCluster == c.Name })
		if has && !had || has && taskChanged(cur, next, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

func taskChanged(cur, next *workv1alpha2.ResourceBindingSpec, cluster string) bool {
	find := func(s *workv1alpha2.ResourceBindingSpec) *workv1alpha2.GracefulEvictionTask {
		for i := range s.GracefulEvictionTasks {
			if s.GracefulEvictionTasks[i].FromCluster == cluster {
				return &s.GracefulEvictionTasks[i]
			}
		}
		return nil
	}
	a, b := find(cur), find(next)
	return a != nil && b != nil && !ptr.Equal(a.CreationTimestamp, b.CreationTimestamp)
}

// endedTasks are the tasks of cur that next no longer has (or replaces).
func endedTasks(cur, next *workv1alpha2.ResourceBindingSpec) []workv1alpha2.GracefulEvictionTask {
	var out []workv1alpha2.GracefulEvictionTask
	for _, t := range cur.GracefulEvictionTasks {
		if next == nil || !slices.ContainsFunc(next.GracefulEvictionTasks, func(n workv1alpha2.GracefulEvictionTask) bool {
			return n.FromCluster == t.FromCluster && ptr.Equal(n.CreationTimestamp, t.CreationTimestamp)
		}) {
			out = append(out, t)
		}
	}
	return out
}

// endTasks records the tasks ts of key as ended, for (d). m.mu is held.
func (m *model) endTasks(key string, ts []workv1alpha2.GracefulEvictionTask, why string) {
	for _, t := range ts {
		m.ended = append(m.ended, endedTask{at: time.Now(), replicas: int64(ptr.Deref(t.Replicas, 0)), lag: max(m.lagMax, m.lagPrev),
			what: fmt.Sprintf("%s from %s (%s)", key, t.FromCluster, why), taintManager: t.Producer == karmada.TaintManagerProducer})
	}
}

// update is the API server's Update. An eviction the controllers write
// may first meet another writer's change (an injected conflict); one that
// goes through is checked against invariant (a) on the object it
// overwrites and the clusters as they are, and counted for (c).
func (m *model) update(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
	// A failback decides on its cache, with no call to the API server, and
	// writes at once: what holds at the call is what held at its decision.
	var entry fbEntry
	if m.fb != nil {
		entry = m.fb.enter(m, obj)
	}
	m.latency()
	m.mu.Lock()
	defer m.mu.Unlock()
	if cl, ok := obj.(*clusterv1alpha1.Cluster); ok {
		var cur clusterv1alpha1.Cluster
		if err := c.Get(ctx, client.ObjectKeyFromObject(cl), &cur); err == nil {
			before := noExecuteTaints(cur.Spec.Taints)
			if !slices.EqualFunc(before, noExecuteTaints(cl.Spec.Taints), func(a, b corev1.Taint) bool { return a.MatchTaint(&b) }) {
				m.untainted[cl.Name] = append(m.untainted[cl.Name], taintChange{at: time.Now(), before: before})
			}
		}
		if err := c.Update(ctx, obj, opts...); err != nil {
			return err
		}
		m.logClusterLocked(ctx, c, obj)
		if m.fb != nil {
			m.fb.clusterWrittenLocked(m, ctx, c, cl)
		}
		return nil
	}
	rb, ok := obj.(*workv1alpha2.ResourceBinding)
	if !ok {
		return c.Update(ctx, obj, opts...)
	}
	var uo client.UpdateOptions
	uo.ApplyOptions(opts)
	var cur workv1alpha2.ResourceBinding
	if err := c.Get(ctx, client.ObjectKeyFromObject(rb), &cur); err != nil {
		return c.Update(ctx, obj, opts...)
	}
	key := itemKey(rb)
	out := evictedFrom(&cur.Spec, &rb.Spec)
	// A failback's write (spec.rescheduleTriggeredAt set anew by the
	// controllers) moves the clusters it leaves into tasks too: it is no
	// eviction, for (a), (h) and (i), but a failback, for (c), (h), (j),
	// (k) and (l).
	var back *fbWrite
	if m.fb != nil && uo.FieldManager == FieldManager && rescheduled(&cur.Spec, &rb.Spec) {
		back = &fbWrite{key: key, origin: failedBackTo(&cur, rb), leaving: out}
		out = nil
	}
	// A write retried on conflict follows its permit by its retries too.
	attempt := time.Now()
	if uo.FieldManager == FieldManager && (len(out) > 0 || back != nil) {
		if at, ok := m.attempted[key]; ok && attempt.Sub(at) <= modelRetries {
			attempt = at
		}
		m.attempted[key] = attempt
	}
	if uo.FieldManager == FieldManager && (len(out) > 0 || back != nil && len(back.leaving) > 0) && m.crnd.Float64() < m.conflictP {
		from := append(slices.Clone(out), back.clusters()...)
		what := m.otherWriter(ctx, c, &cur, from[0])
		m.injected[key] = time.Now()
		m.traceLocked(fmt.Sprintf("  at %s: the eviction of %s from %v met another writer first: %s", m.since(), key, from, what))
		if err := c.Get(ctx, client.ObjectKeyFromObject(rb), &cur); err != nil {
			return c.Update(ctx, obj, opts...)
		}
	}
	if len(out) > 0 && rb.ResourceVersion == cur.ResourceVersion {
		m.checkEviction(ctx, c, &cur, out)
		if uo.FieldManager == FieldManager {
			m.checkBudget(&cur, &rb.Spec, out)
		}
	}
	if len(out) > 0 && uo.FieldManager == FieldManager {
		m.checkFreezeLocked(key, out)
	}
	if back != nil && rb.ResourceVersion == cur.ResourceVersion {
		m.fb.checkWriteLocked(m, ctx, c, &cur, back, entry)
		m.checkBudget(&cur, &rb.Spec, back.leaving)
	}
	ended := endedTasks(&cur.Spec, &rb.Spec)
	err := c.Update(ctx, obj, opts...)
	if err != nil {
		if apierrors.IsConflict(err) && uo.FieldManager == FieldManager {
			// The writer retries after a short sleep: until then it is
			// still handling the binding.
			m.conflicted = time.Now()
		}
		return err
	}
	if uo.FieldManager == FieldManager && (len(out) > 0 || back != nil) {
		delete(m.attempted, key)
		if back != nil {
			back.attempt = attempt
		}
	}
	for _, cl := range out {
		m.evictions = append(m.evictions, modelEviction{at: time.Now(), key: key, cluster: cl, by: uo.FieldManager, attempt: attempt})
		m.traceLocked(fmt.Sprintf("  at %s: %s evicted from %s by %q", m.since(), key, cl, uo.FieldManager))
	}
	m.endTasks(key, ended, "ended")
	if m.fb != nil {
		m.fb.bindingWrittenLocked(m, rb, back)
	}
	return nil
}

func (m *model) delete(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
	m.latency()
	m.mu.Lock()
	defer m.mu.Unlock()
	if rb, ok := obj.(*workv1alpha2.ResourceBinding); ok {
		var cur workv1alpha2.ResourceBinding
		if err := c.Get(ctx, client.ObjectKeyFromObject(rb), &cur); err == nil {
			m.endTasks(itemKey(rb), endedTasks(&cur.Spec, nil), "binding deleted")
		}
		if m.fb != nil {
			defer m.fb.bindingDeletedLocked(itemKey(rb))
		}
	}
	return c.Delete(ctx, obj, opts...)
}

// otherWriter changes the binding cur (and perhaps the clusters) just
// before the eviction from cluster is written, so that the write
// conflicts. Some changes leave the eviction with nowhere to go.
func (m *model) otherWriter(ctx context.Context, c client.WithWatch, cur *workv1alpha2.ResourceBinding, cluster string) string {
	var what string
	switch m.crnd.Intn(4) {
	case 0: // the placement narrowed to where it runs: nowhere new to go
		var names []string
		for _, t := range cur.Spec.Clusters {
			names = append(names, t.Name)
		}
		cur.Spec.Placement.ClusterAffinity = &policyv1alpha1.ClusterAffinity{ClusterNames: names}
		setApplied(cur)
		what = fmt.Sprintf("placement narrowed to %v", names)
	case 1: // every other cluster fills up
		var list clusterv1alpha1.ClusterList
		if err := c.List(ctx, &list); err == nil {
			for i := range list.Items {
				if !cur.Spec.TargetContains(list.Items[i].Name) {
					withRoom(&list.Items[i], 0)
					if c.Update(ctx, &list.Items[i]) == nil {
						m.logClusterLocked(ctx, c, &list.Items[i])
					}
				}
			}
		}
		what = "every cluster the binding is not on reports no room"
	case 2: // every other cluster fails
		var list clusterv1alpha1.ClusterList
		if err := c.List(ctx, &list); err == nil {
			for i := range list.Items {
				cl := &list.Items[i]
				if cl.Name == cluster || cur.Spec.TargetContains(cl.Name) {
					continue
				}
				cl.Spec.Taints = append(cl.Spec.Taints, corev1.Taint{Key: modelDownTaint, Effect: corev1.TaintEffectNoSchedule, TimeAdded: ptr.To(metav1.Now())})
				if c.Update(ctx, cl) == nil {
					m.logClusterLocked(ctx, c, cl)
				}
			}
		}
		what = "every other cluster tainted NoSchedule (model.example.com/down, until the next flap of it)"
	default:
		what = "an annotation touched"
	}
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations["model.example.com/touched"] = m.since()
	if err := c.Update(ctx, cur); err != nil {
		what += fmt.Sprintf(" (its write failed: %v)", err)
	}
	return what
}

// checkBudget is invariant (h), on the binding cur about to be overwritten
// by the controllers' eviction from out, with next its spec after the
// write: the write leaves no more tasks open than the binding's budget of
// clusters in transit. m.mu is held.
func (m *model) checkBudget(cur *workv1alpha2.ResourceBinding, next *workv1alpha2.ResourceBindingSpec, out []string) {
	v, ok := cur.Annotations[MaxClustersInTransitAnnotation]
	if !ok {
		return
	}
	budget, err := strconv.Atoi(v)
	if err != nil || budget == 0 || len(next.GracefulEvictionTasks) <= budget {
		return
	}
	m.found = append(m.found, modelViolation{"h", "over the budget of clusters in transit", fmt.Sprintf("at %s %s is evicted from %v, leaving %d tasks open (%v) over its budget of %d",
		m.since(), itemKey(cur), out, len(next.GracefulEvictionTasks), tasks(cur), budget)})
}

// checkEviction is invariant (a), on the binding cur about to be
// overwritten by an eviction from the clusters out.
func (m *model) checkEviction(ctx context.Context, c client.Reader, cur *workv1alpha2.ResourceBinding, out []string) {
	var list clusterv1alpha1.ClusterList
	if err := c.List(ctx, &list); err != nil {
		m.found = append(m.found, modelViolation{"a", "harness", fmt.Sprintf("listing clusters: %v", err)})
		return
	}
	res, err := checkNow(cur, list.Items, out...)
	if err != nil {
		m.found = append(m.found, modelViolation{"a", "harness", fmt.Sprintf("%s: the check cannot be built: %v", itemKey(cur), err)})
		return
	}
	if !res.Feasible {
		kind := "nowhere to go, the check on a stale fleet"
		if time.Since(m.injected[itemKey(cur)]) <= m.writeDelayLocked() {
			kind = "nowhere to go after a conflict"
		}
		// The check runs on the controller's fleet snapshot, which lags
		// the API server by up to a cache lag, but the clusters it moves
		// the replicas to are read fresh after the permit and before the
		// write (engine.Evictor.Evict's confirm loop), and the evicted
		// Cluster too. What the promise lets pass is only a destination
		// that failed or filled up between that read and the write: no
		// write can be conditioned on another object. So the check must
		// find it feasible on the API server's clusters as they were at
		// some moment within the time a write may follow its permit, not
		// within a cache lag.
		if at, ok := m.feasibleWithin(cur, out, m.writeDelayLocked()); ok {
			m.excused["a: "+kind+", feasible on the fleet as it was since the confirm read"]++
			m.traceLocked(fmt.Sprintf("  at %s: (a) not flagged: %s evicted from %v with nowhere to go now, feasible on the clusters as they were at %s, since the confirm read",
				m.since(), itemKey(cur), out, at.Sub(modelEpoch)))
		} else {
			m.found = append(m.found, modelViolation{"a", kind, fmt.Sprintf("at %s %s is evicted from %v though the check on the API server's clusters says %s: %s\n  the binding overwritten: clusters %v, tasks %v, placement %s\n  clusters: %s",
				m.since(), itemKey(cur), out, res.Code, res.Reason, targets(cur), tasks(cur), cur.Annotations[karmada.AppliedPlacementAnnotation], describeClusters(list.Items))})
		}
	}
	tols, _ := karmada.AppliedTolerations(cur.Annotations)
	for _, name := range out {
		for i := range list.Items {
			if list.Items[i].Name != name {
				continue
			}
			if d := failover.DecideEviction(noExecuteTaints(list.Items[i].Spec.Taints), tols, nil, time.Now()); !d.Evict {
				// The handler decides on the Cluster it read from the API
				// server, then writes the binding on the binding's
				// resourceVersion alone: no write in Kubernetes can be
				// conditioned on another object, so a taint removed
				// between that read and this write (at most the time a
				// write may follow its permit) is not seen. Karmada's own
				// taint manager decides on its informer's Cluster, with
				// the same window and a longer one. The library promises
				// the decision on the Cluster as read (Evictor.Evict), so
				// an eviction the taints as they were then call for is
				// not a violation.
				if since, ok := m.evictedWhileUntainted(name, tols); ok {
					m.excused["a: the taint went between the handler's read and its write"]++
					m.traceLocked(fmt.Sprintf("  at %s: (a) not flagged: %s evicted from %s, whose NoExecute taints, which called for it, changed %v before the write",
						m.since(), itemKey(cur), name, since))
					continue
				}
				m.found = append(m.found, modelViolation{"a", "evicted though it may stay", fmt.Sprintf("at %s %s is evicted from %s though DecideEviction says stay: %s\n  clusters: %s",
					m.since(), itemKey(cur), name, d.Reason, describeClusters(list.Items))})
			}
		}
	}
}

// logClusterLocked adds obj, if a Cluster, to fleetLog as the API server
// now stores it. m.mu is held.
func (m *model) logClusterLocked(ctx context.Context, c client.Reader, obj client.Object) {
	if _, ok := obj.(*clusterv1alpha1.Cluster); !ok {
		return
	}
	var cl clusterv1alpha1.Cluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &cl); err == nil {
		m.fleetLog = append(m.fleetLog, cl)
		m.fleetAt = append(m.fleetAt, time.Now())
	}
}

// feasibleWithin reports whether the check finds the eviction of rb from
// out feasible on the API server's clusters as they were at some moment
// within window before now, and that moment. m.mu is held.
func (m *model) feasibleWithin(rb *workv1alpha2.ResourceBinding, out []string, window time.Duration) (time.Time, bool) {
	from := time.Now().Add(-window)
	// The moments the fleet changed within the window, and its start.
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
		if res, err := checkNow(rb, fleet, out...); err == nil && res.Feasible {
			return t, true
		}
	}
	return time.Time{}, false
}

// evictedWhileUntainted reports whether cluster's NoExecute taints, as a
// write within the time a write may follow its permit replaced them,
// called for the eviction of a binding tolerating tols, and how long ago
// that write was. m.mu is held.
func (m *model) evictedWhileUntainted(cluster string, tols []corev1.Toleration) (time.Duration, bool) {
	now := time.Now()
	for _, ch := range slices.Backward(m.untainted[cluster]) {
		since := now.Sub(ch.at)
		if since > m.writeDelayLocked() {
			break
		}
		if failover.DecideEviction(ch.before, tols, nil, now).Evict {
			return since, true
		}
	}
	return 0, false
}

// restorableTasks names the open tasks of a taint manager that the check,
// asked again as a new leader's takeOver asks it, finds somewhere to go on
// the API server's clusters now, by "binding from cluster".
func (m *model) restorableTasks() map[string]bool {
	clusters := m.clusters()
	out := map[string]bool{}
	for _, rb := range m.bindings() {
		for _, t := range rb.Spec.GracefulEvictionTasks {
			if t.Producer != karmada.TaintManagerProducer {
				continue
			}
			// The binding as it was before the eviction: back on the
			// cluster the task leaves, without the task.
			before := rb.DeepCopy()
			before.Spec.GracefulEvictionTasks = slices.DeleteFunc(before.Spec.GracefulEvictionTasks, func(o workv1alpha2.GracefulEvictionTask) bool {
				return o.FromCluster == t.FromCluster
			})
			if !before.Spec.TargetContains(t.FromCluster) {
				before.Spec.Clusters = append(before.Spec.Clusters, workv1alpha2.TargetCluster{Name: t.FromCluster, Replicas: ptr.Deref(t.Replicas, 0)})
			}
			if res, err := checkNow(before, clusters, t.FromCluster); err == nil && res.Feasible {
				out[fmt.Sprintf("%s from %s", itemKey(&rb), t.FromCluster)] = true
			}
		}
	}
	return out
}

// checkNow is the pre-scheduling check, as the eviction controller runs it,
// on the binding rb and the clusters as given.
func checkNow(rb *workv1alpha2.ResourceBinding, clusters []clusterv1alpha1.Cluster, evicting ...string) (prescheduling.Result, error) {
	fleet := make([]failover.Cluster, 0, len(clusters))
	for i := range clusters {
		fc, err := karmada.FromCluster(&clusters[i])
		if err != nil {
			return prescheduling.Result{}, err
		}
		fleet = append(fleet, fc)
	}
	req, err := karmada.PreschedulingRequest(&rb.Spec, evicting...)
	if err != nil {
		return prescheduling.Result{}, err
	}
	req.ObservedAffinityName = rb.Status.SchedulerObservedAffinityName
	checker, err := prescheduling.NewChecker(prescheduling.WithCapacity(karmada.Capacity(clusters, rb.Spec.ReplicaRequirements)))
	if err != nil {
		return prescheduling.Result{}, err
	}
	return checker.Check(req, fleet), nil
}

func describeClusters(cs []clusterv1alpha1.Cluster) string {
	var out []string
	for i := range cs {
		var taints []string
		for _, t := range cs[i].Spec.Taints {
			taints = append(taints, t.Key+":"+string(t.Effect))
		}
		ready := meta.FindStatusCondition(cs[i].Status.Conditions, clusterv1alpha1.ClusterConditionReady)
		out = append(out, fmt.Sprintf("%s(%s ready=%s room=%d taints=%v)", cs[i].Name, cs[i].Spec.Region, ready.Status, room(&cs[i]), taints))
	}
	return strings.Join(out, " ")
}

// ---- the invariants ----

// check reports what the writes found since the last step and checks the
// invariants that read the world at quiescence.
func (m *model) check(step int) {
	now := time.Now()
	m.mu.Lock()
	found := m.found
	m.found = nil
	found = append(found, m.checkRate()...)
	frozen := m.freezeCM != nil
	m.mu.Unlock()

	clusters := m.clusters()
	// A freeze holds every eviction back as a pause of the rate does.
	if frozen || modelRateRule.RateFor(fleetHealth(clusters)) == 0 {
		m.pausedAt = now
	}
	byName := map[string]*clusterv1alpha1.Cluster{}
	for i := range clusters {
		byName[clusters[i].Name] = &clusters[i]
	}
	bindings := m.bindings()
	pending := m.pending()
	grace := time.Second
	m.mu.Lock()
	grace += max(m.lagMax, m.lagPrev)
	// A controller that met a conflict sleeps a little before it retries:
	// it is still handling an item, which may hold room and not be queued.
	retrying := now.Sub(m.conflicted) <= m.writeDelayLocked()
	m.mu.Unlock()
	if retrying {
		m.note(fmt.Sprintf("  at %s: (b), (d) and (f) not checked: a controller is retrying a write", m.since()))
	}
	// A new leader lists, syncs and queues again from nothing: its
	// decisions are checked from the next step on.
	starting := m.newLeader
	m.newLeader = false
	if !m.quiet {
		retrying = true
		m.note(fmt.Sprintf("  at %s: (b), (d) and (f) not checked: a controller is always calling the API server", m.since()))
	}

	// (b)
	for i := range bindings {
		if retrying || starting {
			break
		}
		rb := &bindings[i]
		tols, err := karmada.AppliedTolerations(rb.Annotations)
		if err != nil {
			continue
		}
		for _, tc := range rb.Spec.Clusters {
			cl := byName[tc.Name]
			if cl == nil {
				continue
			}
			// A taint reaches the eviction controller through the cache,
			// a lag after it is written; the API server keeps the second
			// of its timeAdded only.
			taints := slices.DeleteFunc(noExecuteTaints(cl.Spec.Taints), func(t corev1.Taint) bool {
				return t.TimeAdded != nil && t.TimeAdded.Time.After(now.Add(-grace-time.Second))
			})
			d := failover.DecideEviction(taints, tols, nil, now.Add(-grace))
			key := itemKey(rb)
			ev, ok := m.events.last(key, tc.Name)
			if !d.Evict {
				// Nothing to evict now: a refusal's window starts again
				// when the cluster is tainted again (its item queued
				// afresh, its last Event still the old refusal).
				if ok {
					delete(m.feasibleSince, fmt.Sprintf("%s@%s@%s", key, tc.Name, ev.at))
				}
				continue
			}
			// A refusal waits in its queue, parked until the fleet
			// changes: queued, it is still held to the refusal window,
			// unless the rate paused within it (its permit waits then).
			parked := ok && ev.typ == corev1.EventTypeWarning && refusalCodes[ev.reason]
			if slices.ContainsFunc(pending, func(it evictionqueue.Item) bool { return it.Key == key && it.Cluster == tc.Name }) &&
				(!parked || now.Sub(m.pausedAt) <= refusalWindow(grace)) {
				continue
			}
			why, kind := "no Event says why", "decision lost"
			if ok && ev.typ == corev1.EventTypeWarning {
				res, err := checkNow(rb, clusters, tc.Name)
				if err != nil || !res.Feasible {
					continue // refused, and the reason still holds
				}
				// What made it feasible reaches the eviction controller
				// through two lagging caches (a Ready condition, then the
				// taint the policy controller writes from it), and its
				// decision waits for a permit: flagged only once it has
				// been feasible longer than that (refusalWindow).
				id := fmt.Sprintf("%s@%s@%s", key, tc.Name, ev.at)
				since, seen := m.feasibleSince[id]
				if !seen {
					m.feasibleSince[id] = now
				}
				if !seen || now.Sub(since) <= refusalWindow(grace) {
					continue
				}
				kind = "refusal never decided again"
				why = fmt.Sprintf("refused at %s (%s: %s), never decided again though the check finds it feasible since %s: %s",
					ev.at.Sub(modelEpoch), ev.reason, ev.note, since.Sub(modelEpoch), res.Reason)
			} else if ok {
				why = fmt.Sprintf("the last Event (%s at %s) says %s", ev.reason, ev.at.Sub(modelEpoch), ev.note)
			}
			found = append(found, modelViolation{"b", kind, fmt.Sprintf("at %s %s stays on %s (%s), not queued, and %s\n  binding: clusters %v, tasks %v, placement %s\n  queued: %v\n  clusters: %s",
				m.since(), key, tc.Name, d.Reason, why, targets(rb), tasks(rb), rb.Annotations[karmada.AppliedPlacementAnnotation], pending, describeClusters(clusters))})
		}
	}

	// (d)
	if m.ctrl != nil && m.ctrl.Ledger() != nil && !retrying {
		held := m.ctrl.Ledger().Held(now)
		var total, budget int64
		for _, n := range held {
			total += n
		}
		// An eviction holds its replicas on each cluster the scheduler may
		// put them on (prescheduling.Result.Moves): at most every cluster
		// but the one it leaves.
		spread := int64(max(len(clusters)-1, 1))
		var open []string
		for i := range bindings {
			for _, t := range bindings[i].Spec.GracefulEvictionTasks {
				budget += spread * int64(ptr.Deref(t.Replicas, 0))
				open = append(open, fmt.Sprintf("%s from %s: %d", itemKey(&bindings[i]), t.FromCluster, ptr.Deref(t.Replicas, 0)))
			}
		}
		var recent []string
		m.mu.Lock()
		for _, e := range m.ended {
			if now.Sub(e.at) <= modelReport+grace+e.lag {
				budget += spread * e.replicas
				recent = append(recent, fmt.Sprintf("%s at %s: %d", e.what, e.at.Sub(modelEpoch), e.replicas))
			}
		}
		if m.fb != nil {
			// A failback holds the room its returning replicas take until
			// the summaries show them placed, or its hold passes.
			for _, w := range m.fb.writes {
				if now.Sub(w.at) <= engine.DefaultHold+grace {
					budget += spread * w.replicas
					recent = append(recent, fmt.Sprintf("failback of %s to %s at %s: %d", w.key, w.origin, w.at.Sub(modelEpoch), w.replicas))
				}
			}
		}
		m.mu.Unlock()
		if total > budget {
			found = append(found, modelViolation{"d", "held beyond the open tasks", fmt.Sprintf("at %s the Ledger holds %d replicas (%v) where the open tasks and those ended within %v account for %d\n  open tasks: %v\n  ended lately: %v",
				m.since(), total, held, modelReport, budget, open, recent)})
		}
	}

	// (f): right after a leader change, the new leader holds the room of
	// the evictions in flight that the old one held, while none has ended.
	if held := m.heldBefore; held != nil && m.ctrl != nil && m.ctrl.Ledger() != nil && !retrying {
		m.heldBefore = nil
		var before, after int64
		for _, n := range held {
			before += n
		}
		q := m.ctrl.kinds[0].q
		heldNow := m.ctrl.Ledger().Held(now)
		for _, n := range heldNow {
			after += n
		}
		// The old Ledger may have held room it should not have (d), so
		// only a new one that holds nothing at all while tasks the old
		// one could hold for are open is flagged.
		// Only the tasks the new leader promises to hold room for count
		// (takeOver): a taint manager's, whose hold has not passed, on a
		// binding the scheduler has not placed since, and which the check
		// found somewhere to go on the clusters as the leader changed. A
		// cluster the room was held on that failed since, or a binding
		// the scheduler placed, leaves nothing to hold, and an old Ledger
		// held it until then.
		var open []string
		young := 0 // tasks whose hold has not passed, which (f) counted before
		// The take-over checks again on the fleet as it finds it, between
		// the leader change and now: a task counts only if the check finds
		// it somewhere to go at both ends (a taint written meanwhile, by
		// the new leader's taint policy controller say, leaves nothing to
		// hold).
		restorableNow := m.restorableTasks()
		for i := range bindings {
			for _, t := range bindings[i].Spec.GracefulEvictionTasks {
				if t.CreationTimestamp == nil || now.Sub(t.CreationTimestamp.Time) >= engine.DefaultHold {
					continue
				}
				young++
				id := fmt.Sprintf("%s from %s", itemKey(&bindings[i]), t.FromCluster)
				if m.restorable[id] && restorableNow[id] && !scheduledSince(&bindings[i], &bindings[i].Status) {
					open = append(open, id)
				}
			}
		}
		if before > 0 && after == 0 && len(open) == 0 && young > 0 {
			m.excused["f: no open task the new leader promises to hold room for"]++
		}
		if before > 0 && after == 0 && len(open) > 0 {
			found = append(found, modelViolation{"f", "new leader forgets", fmt.Sprintf("at %s the new leader's Ledger holds nothing where the old one held %v, and tasks are open: %v (its queue counts %d in flight)",
				m.since(), held, open, q.InFlight())})
		}
	}

	// (g): the evictions in flight are the open tasks, once the events of
	// their ends have reached the controllers: an end reaches the eviction
	// controller's cache a lag after it (settle waits one lag out, but a
	// task the GracefulEvictionController ends during it ends later).
	if m.ctrl != nil && !retrying && !starting {
		var open []string
		for i := range bindings {
			for _, t := range bindings[i].Spec.GracefulEvictionTasks {
				if t.Producer == karmada.TaintManagerProducer {
					open = append(open, fmt.Sprintf("%s from %s", itemKey(&bindings[i]), t.FromCluster))
				}
			}
		}
		var traveling []string
		m.mu.Lock()
		for _, e := range m.ended {
			if e.taintManager && now.Sub(e.at) < max(grace, time.Second+e.lag) {
				traveling = append(traveling, fmt.Sprintf("%s at %s", e.what, e.at.Sub(modelEpoch)))
			}
		}
		m.mu.Unlock()
		if n := m.ctrl.Queue(ResourceBindingQueue).InFlight(); n < len(open) || n > len(open)+len(traveling) {
			kind := "in flight without a task"
			if n < len(open) {
				kind = "a task not in flight"
			}
			found = append(found, modelViolation{"g", kind, fmt.Sprintf("at %s the queue counts %d evictions in flight where %d tasks are open: %v (and %d ended within a cache lag: %v)",
				m.since(), n, len(open), open, len(traveling), traveling)})
		}
	}

	// (e)
	for i := range bindings {
		for _, t := range bindings[i].Spec.GracefulEvictionTasks {
			if t.CreationTimestamp != nil && now.Sub(t.CreationTimestamp.Time) > modelTimeout+2*grace+time.Second {
				found = append(found, modelViolation{"e", "task never ends", fmt.Sprintf("at %s %s still has its task from %s created at %s, past the %v timeout\n  binding: clusters %v, tasks %v, status %v",
					m.since(), itemKey(&bindings[i]), t.FromCluster, t.CreationTimestamp.Sub(modelEpoch), modelTimeout, targets(&bindings[i]), tasks(&bindings[i]), bindings[i].Status.AggregatedStatus)})
			}
		}
	}

	if m.fb != nil {
		found = append(found, m.fb.check(m, now, clusters, bindings, retrying || starting)...)
	}

	for _, v := range found {
		m.report(step, v)
	}
}

// refusalCodes are the reasons of the Warning Events of an eviction the
// check refused (nowhere to go): it then waits parked in its queue.
var refusalCodes = map[string]bool{
	string(prescheduling.NoEligibleCluster):             true,
	string(prescheduling.SpreadConstraintUnsatisfiable): true,
	string(prescheduling.InsufficientCapacity):          true,
}

// fleetHealth is the fleet's health as the rate rule reads it: the
// clusters with an evicting taint are faulty.
func fleetHealth(clusters []clusterv1alpha1.Cluster) ratelimit.Health {
	h := ratelimit.Health{Total: len(clusters)}
	for i := range clusters {
		if ClusterFaulty(&clusters[i]) {
			h.Unhealthy++
		}
	}
	return h
}

// refusalWindow is how long a refusal the check would now approve may wait
// to be decided again: the change that made it feasible crosses two cache
// lags (grace each), the room rechecks run at most once per report, and a
// permit at the slowest rate (SecondaryResourceEvictionRate 0.1/s) comes
// 10s after the last.
func refusalWindow(grace time.Duration) time.Duration {
	return 2*grace + modelReport + 10*time.Second
}

// checkRate is invariant (c) on the evictions written since the last
// check. m.mu is held.
func (m *model) checkRate() []modelViolation {
	var out []modelViolation
	for j := m.checkedEvs; j < len(m.evictions); j++ {
		for i := 0; i < j; i++ {
			// The permits of the writes i to j came after the first try of
			// any of them.
			first := m.evictions[i].at
			for _, e := range m.evictions[i : j+1] {
				if !e.attempt.IsZero() && e.attempt.Before(first) {
					first = e.attempt
				}
			}
			window := m.evictions[j].at.Sub(first)
			leaders := 0
			for _, s := range m.starts[1:] {
				if !s.Before(m.evictions[i].at) && !s.After(m.evictions[j].at) {
					leaders++
				}
			}
			// A write follows its permit by the handler's reads and the
			// short sleep before a retry on conflict (tens of
			// milliseconds), after the first try: the window of the
			// permits may be that much longer.
			bound := 1 + modelRate*(window+m.writeDelayLocked()).Seconds() + float64(leaders)
			if n := j - i + 1; float64(n) > bound+1e-9 {
				var evs []string
				for _, e := range m.evictions[i : j+1] {
					from := "from"
					if e.failback {
						from = "back to"
					}
					evs = append(evs, fmt.Sprintf("%s %s %s at %s", e.key, from, e.cluster, e.at.Sub(modelEpoch)))
				}
				out = append(out, modelViolation{"c", "too fast", fmt.Sprintf("%d evictions and failbacks in %v (bound %.2f at %v/s, %d new leaders): %v", n, window, bound, modelRate, leaders, evs)})
				break
			}
		}
	}
	m.checkedEvs = len(m.evictions)
	return out
}

// report logs a violation: the first of each invariant with the sequence
// that led to it, the others counted.
func (m *model) report(step int, v modelViolation) {
	if !strings.Contains(*modelCheck, v.inv) {
		return
	}
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
	test, _, _ := strings.Cut(m.t.Name(), "/")
	m.t.Errorf("seed %d, step %d: invariant (%s) violated (%s): %s\n  %s\n  replay: go test ./controllers/ -run '%s' -model.seed=%d -model.steps=%d\n  steps so far:\n    %s",
		m.seed, step, v.inv, v.kind, modelInvariants[v.inv], v.msg, test, m.seed, *modelSteps, trace)
}

// modelFreeze is the freeze ConfigMap of the model's controllers.
var modelFreeze = types.NamespacedName{Namespace: "karmada-system", Name: DefaultFreezeName}

// nopFrozen is the freeze gate's metric, unread in the model.
type nopFrozen struct{}

func (nopFrozen) EvictionsFrozen(bool) {}

// toggleFreeze thaws a freeze, or sets one now or at the next read of a
// Cluster by an eviction's handler (mid-attempt: between its first look
// at the freeze and its write).
func (m *model) toggleFreeze() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.freezeCM != nil || m.freezeOnRead:
		m.freezeOnRead = false
		m.setFreezeLocked(nil)
		return "an operator thaws evictions"
	case m.rnd.Intn(2) == 0:
		m.setFreezeLocked(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: modelFreeze.Namespace, Name: modelFreeze.Name}})
		return "an operator freezes every eviction"
	default:
		m.freezeOnRead = true
		return "an operator freezes every eviction while one is decided"
	}
}

// setFreezeLocked sets the freeze ConfigMap (nil: deleted) in the world
// and in the controllers' gate, as its informer would.
func (m *model) setFreezeLocked(cm *corev1.ConfigMap) {
	if m.fb != nil && cm == nil && m.freezeCM != nil {
		m.fb.thawedAt = time.Now()
	}
	m.freezeCM, m.frozenAt, m.frozenMid = cm, time.Time{}, false
	if cm != nil {
		m.frozenAt = time.Now()
	}
	if m.gate != nil {
		m.gate.set(cm)
	}
}

// freezeMidAttempt sets the freeze armed by toggleFreeze when an eviction's
// handler (a call holding a permit) reads a Cluster from the API server.
func (m *model) freezeMidAttempt(ctx context.Context, obj client.Object) {
	if _, handler := evictionqueue.PermitDomain(ctx); !handler {
		return
	}
	if _, ok := obj.(*clusterv1alpha1.Cluster); !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.freezeOnRead {
		return
	}
	m.freezeOnRead = false
	m.setFreezeLocked(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: modelFreeze.Namespace, Name: modelFreeze.Name}})
	m.frozenMid = true
	m.traceLocked(fmt.Sprintf("  at %s: an operator froze every eviction while one was decided", m.since()))
}

// checkFreezeLocked is invariant (i), on the eviction of key from out
// about to be written: one eviction runs at a time (a worker a queue, and
// the model's bindings are all ResourceBindings), so after a freeze set
// during its reads no write may follow; after one set between steps, a
// write already past its last look at the freeze may still land, within
// the time an attempt takes (its reads, each within the API's latency).
func (m *model) checkFreezeLocked(key string, out []string) {
	if m.freezeCM == nil {
		return
	}
	since := time.Since(m.frozenAt)
	if !m.frozenMid && since <= (2+engine.MaxConfirmReads+1)*2*m.latEver {
		return
	}
	m.found = append(m.found, modelViolation{"i", "evicted while frozen", fmt.Sprintf("at %s %s is evicted from %v %v after an operator froze every eviction (set while an eviction was decided: %v)",
		m.since(), key, out, since, m.frozenMid)})
}

// openTaintManagerTasks reports whether a binding has an open graceful
// eviction task of a taint manager.
func openTaintManagerTasks(bindings []workv1alpha2.ResourceBinding) bool {
	for i := range bindings {
		for _, t := range bindings[i].Spec.GracefulEvictionTasks {
			if t.Producer == karmada.TaintManagerProducer {
				return true
			}
		}
	}
	return false
}

// tookOver waits, after a leader change, until the new leader has taken
// over the open tasks of a taint manager (its queue counts them in flight),
// for at most 3 s: it does so once its caches have synced, and a lagging
// cache can make that come after a moment with no call under way, at which
// (f) would read a Ledger the take-over has not filled yet.
func (m *model) tookOver() {
	if !m.newLeader || m.ctrl == nil || m.ctrl.kinds[0].q == nil {
		return
	}
	q := m.ctrl.kinds[0].q
	for range 30 {
		if q.InFlight() > 0 || !openTaintManagerTasks(m.bindings()) {
			return
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
	}
}

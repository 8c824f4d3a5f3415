//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada/controllers"
	"github.com/failoverkit/failover/prescheduling"
)

// testPreferNoExecute: a PreferNoExecute taint ignores tolerations and moves
// only a binding that opted in with spec.failover.cluster, once the
// taint is 300s old (Karmada v1.18's ClusterFailoverBehavior has no
// tolerationSeconds, so the default applies); it does so without
// --enable-no-execute-taint-eviction, which only governs NoExecute.
func testPreferNoExecute(t *testing.T) {
	s := newSuite(t, "prefer")
	tasks := s.watchTasks()
	s.cluster("prefer-down", metav1.ConditionTrue)
	s.cluster("prefer-ok", metav1.ConditionTrue)
	on := bindingSpec{clusters: []string{"prefer-down"}}
	optedIn := on
	optedIn.failover = &policyv1alpha1.ClusterFailoverBehavior{}
	in := s.binding("opted-in", optedIn)
	s.binding("not-opted-in", on)
	s.start("prefer", forkOptions{Rate: rate(10, 10)}, nil)

	// Added (as stored, in whole seconds) 2s short of the default 300s.
	const left = 2 * time.Second
	deadline := time.Now().Truncate(time.Second).Add(left + time.Second)
	added := deadline.Add(-failover.DefaultPreferNoExecuteTolerationSeconds * time.Second)
	s.setTaints("prefer-down", corev1.Taint{Key: forkTaintKey, Effect: failover.TaintEffectPreferNoExecute, TimeAdded: &metav1.Time{Time: added}})
	tk := s.evicted(tasks, in, "prefer-down", left+10*time.Second)
	at := tk.CreationTimestamp.Time
	assert.False(t, at.Before(deadline), "left at %v, before the default 300s from %v", at, added)
	assert.True(t, at.Before(deadline.Add(slack)), "left at %v, long after %v", at, deadline)
	assert.Equal(t, policyv1alpha1.PurgeModeGracefully, tk.PurgeMode, "spec.failover.cluster without purgeMode")
	assert.NotContains(t, targets(&s.getBinding("opted-in").Spec), "prefer-down")

	never(t, 2*time.Second, "the binding that did not opt in evicted", func() bool { return len(tasks.from("prefer-down")) > 1 })
	other := s.getBinding("not-opted-in")
	assert.Equal(t, []string{"prefer-down"}, targets(&other.Spec))
	assert.Empty(t, other.Spec.GracefulEvictionTasks)
}

// testLargeFleet: with 7 of 12 clusters faulty (0.58, above the default
// threshold 0.55, in a fleet above 10 clusters) evictions go at the
// secondary rate; two clusters recovering (5 of 12) bring the primary rate
// back at once, for the items already waiting.
func testLargeFleet(t *testing.T) {
	s := newSuite(t, "large")
	tasks := s.watchTasks()
	const primary, secondary = 4.0, 0.5
	for i := range 12 {
		cs := clusterSpec{}
		if i < 7 {
			cs.taints = []corev1.Taint{noExecute(time.Now())}
		}
		s.newCluster(fmt.Sprintf("large-%d", i), cs)
	}
	s.bindings("b", 6, bindingSpec{clusters: []string{"large-0"}})
	r := s.start("large", forkOptions{Rate: rate(primary, secondary), EnableNoExecuteTaintEviction: true}, nil)

	eventually(t, 20*time.Second, "three evictions", func() bool { return len(tasks.from("large-0")) >= 3 })
	assert.Equal(t, secondary, r.metric(t, "eviction_rate", nil), "eviction_rate with 7 of 12 clusters faulty")
	recovered := time.Now()
	s.recover("large-5", "large-6")
	eventually(t, 10*time.Second, "the other three evictions", func() bool { return len(tasks.from("large-0")) == 6 })
	assert.Equal(t, primary, r.metric(t, "eviction_rate", nil), "eviction_rate with 5 of 12 clusters faulty")

	all := tasks.from("large-0")
	slow, fast := all[:3], all[3:]
	// Two intervals of 2s, give or take a second of truncation.
	span := slow[2].Sub(slow[0])
	assert.GreaterOrEqual(t, span, 3*time.Second, "3 evictions at %v/s took %v: faster than the secondary rate", secondary, span)
	assert.LessOrEqual(t, span, 6*time.Second, "3 evictions at %v/s took %v", secondary, span)
	// At the primary rate the three waiting items go within a second; at
	// the secondary rate the last would come 4s or more after the recovery.
	last := fast[2].Sub(recovered.Truncate(time.Second))
	assert.LessOrEqual(t, last, 2*time.Second, "the last of 3 waiting items left %v after the recovery", last)
	t.Logf("measured: secondary %.2f/s (%v), after recovery %d evictions within %v of it (tasks %v)",
		perSecond(slow), span, len(fast), last, all)
}

// testSmallFleet: with 3 of 4 clusters faulty the small fleet stops
// evicting; two recovering resume evictions at once, at the primary rate.
func testSmallFleet(t *testing.T) {
	s := newSuite(t, "small")
	tasks := s.watchTasks()
	const primary, secondary = 4.0, 0.5
	for i := range 4 {
		cs := clusterSpec{}
		if i < 3 {
			cs.taints = []corev1.Taint{noExecute(time.Now())}
		}
		s.newCluster(fmt.Sprintf("small-%d", i), cs)
	}
	s.bindings("b", 3, bindingSpec{clusters: []string{"small-0"}})
	r := s.start("small", forkOptions{Rate: rate(primary, secondary), EnableNoExecuteTaintEviction: true}, nil)

	never(t, 3*time.Second, "an eviction with 3 of 4 clusters faulty", func() bool { return len(tasks.from("small-0")) > 0 })
	assert.Zero(t, r.metric(t, "eviction_rate", nil), "eviction_rate with 3 of 4 clusters faulty")
	recovered := time.Now()
	s.recover("small-1", "small-2")
	eventually(t, 10*time.Second, "three evictions after the recovery", func() bool { return len(tasks.from("small-0")) == 3 })

	times := tasks.from("small-0")
	first, last := times[0].Sub(recovered.Truncate(time.Second)), times[2].Sub(recovered.Truncate(time.Second))
	assert.GreaterOrEqual(t, first, time.Duration(0), "evicted at %v, before the recovery at %v", times[0], recovered)
	assert.LessOrEqual(t, last, 2*time.Second, "the last of 3 items at %v/s left %v after the recovery", primary, last)
	t.Logf("measured: paused for 3s, then %d evictions, the first %v and the last %v after the recovery (tasks %v)", len(times), first, last, times)
}

// testNowhereToGo: a binding whose placement admits only the faulty cluster
// is not written, and a Warning Event on it says why; a binding beside it
// that can go elsewhere shows the fork did act on the cluster.
func testNowhereToGo(t *testing.T) {
	s := newSuite(t, "nowhere")
	tasks := s.watchTasks()
	s.cluster("nowhere-down", metav1.ConditionTrue)
	s.cluster("nowhere-ok", metav1.ConditionTrue)
	on := []string{"nowhere-down"}
	pinned := s.binding("pinned", bindingSpec{clusters: on, affinity: on})
	free := s.binding("free", bindingSpec{clusters: on})
	s.start("nowhere", forkOptions{Rate: rate(10, 10), EnableNoExecuteTaintEviction: true}, nil)

	s.fail("nowhere-down")
	s.evicted(tasks, free, "nowhere-down", 10*time.Second)
	var evs []eventsv1.Event
	eventually(t, 10*time.Second, "an Event on the pinned binding", func() bool {
		evs = s.events("pinned")
		return len(evs) > 0
	})
	ev := evs[0]
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Equal(t, string(prescheduling.NoEligibleCluster), ev.Reason)
	assert.Contains(t, ev.Note, "not evicted from cluster nowhere-down")
	t.Logf("Event: %s %s %s: %s", ev.Type, ev.Reason, ev.Action, ev.Note)

	got := s.getBinding("pinned")
	assert.Equal(t, pinned.ResourceVersion, got.ResourceVersion, "the binding was written")
	assert.Equal(t, on, targets(&got.Spec))
	assert.Empty(t, got.Spec.GracefulEvictionTasks)
}

// testRecoveryWhileQueued: at 1/s, eight bindings wait on a faulty cluster;
// after two have left, the cluster recovers: none of the others is evicted,
// and the queued items are cancelled.
func testRecoveryWhileQueued(t *testing.T) {
	s := newSuite(t, "queued")
	tasks := s.watchTasks()
	s.cluster("queued-down", metav1.ConditionTrue)
	s.cluster("queued-ok", metav1.ConditionTrue)
	const n = 8
	s.bindings("b", n, bindingSpec{clusters: []string{"queued-down"}})
	r := s.start("queued", forkOptions{Rate: rate(1, 1), EnableNoExecuteTaintEviction: true}, nil)

	s.fail("queued-down")
	eventually(t, 15*time.Second, "two evictions", func() bool { return len(tasks.from("queued-down")) >= 2 })
	s.recover("queued-down")
	recovered := time.Now()
	evicted := len(tasks.from("queued-down"))
	never(t, 3*time.Second, "an eviction after the recovery", func() bool { return len(tasks.from("queued-down")) > evicted })
	for _, at := range tasks.from("queued-down") {
		assert.False(t, at.After(recovered), "evicted at %v, after the recovery at %v", at, recovered)
	}
	q := r.eviction.Queue(controllers.ResourceBindingQueue)
	assert.Zero(t, q.Len(), "items still queued: %v", q.Pending())
	assert.Positive(t, r.metric(t, "eviction_cancelled_total", map[string]string{"queue_name": controllers.ResourceBindingQueue}), "no queued item was cancelled")
	var stayed int
	for i := range n {
		b := s.getBinding(fmt.Sprintf("b%d", i))
		if task(&b.Spec, "queued-down") == nil {
			assert.Equal(t, []string{"queued-down"}, targets(&b.Spec), "%s", b.Name)
			stayed++
		}
	}
	assert.Equal(t, n-evicted, stayed)
	t.Logf("measured: %d evicted before the recovery, %d stayed", evicted, stayed)
}

// testTasksEnd: a task ends as soon as the workload is healthy on its new
// cluster; unhealthy there, or scheduled nowhere, it ends only at the grace
// period (--graceful-eviction-timeout), counted from its creation.
func testTasksEnd(t *testing.T) {
	s := newSuite(t, "ends")
	tasks := s.watchTasks()
	s.cluster("ends-down", metav1.ConditionTrue)
	s.cluster("ends-ok", metav1.ConditionTrue)
	const grace = 6 * time.Second
	on := bindingSpec{clusters: []string{"ends-down"}}
	names := []string{"healthy", "unhealthy", "empty"}
	objs := map[string]client.Object{}
	for _, n := range names {
		objs[n] = s.binding(n, on)
	}
	s.start("ends", forkOptions{Rate: rate(10, 10), EnableNoExecuteTaintEviction: true, GracefulEvictionTimeout: grace}, nil)

	s.fail("ends-down")
	created := map[string]time.Time{}
	for _, n := range names {
		created[n] = s.evicted(tasks, objs[n], "ends-down", 10*time.Second).CreationTimestamp.Time
	}
	s.scheduled("healthy", []string{"ends-ok"}, map[string]workv1alpha2.ResourceHealth{"ends-ok": workv1alpha2.ResourceHealthy})
	s.scheduled("unhealthy", []string{"ends-ok"}, map[string]workv1alpha2.ResourceHealth{"ends-ok": workv1alpha2.ResourceUnhealthy})
	s.scheduled("empty", nil, nil)

	at := s.taskEnded("healthy", "ends-down", grace)
	assert.True(t, at.Before(created["healthy"].Add(grace-2*time.Second)), "healthy elsewhere: ended at %v, created %v", at, created["healthy"])
	for _, n := range names[1:] {
		at := s.taskEnded(n, "ends-down", grace+2*slack)
		deadline := created[n].Add(grace)
		assert.False(t, at.Before(deadline), "%s: ended at %v, before the grace period ended at %v", n, at, deadline)
		assert.True(t, at.Before(deadline.Add(slack)), "%s: ended at %v, long after %v", n, at, deadline)
		t.Logf("measured: %s task ended %v after its creation (grace %v)", n, at.Sub(created[n]).Round(10*time.Millisecond), grace)
	}
	t.Logf("measured: healthy task ended %v after its creation", at.Sub(created["healthy"]).Round(10*time.Millisecond))
}

// testInFlightBudget: with a budget of two evictions in flight
// (--max-evictions-in-flight=2), two of four bindings on a failed cluster
// leave and the others wait, though the rate would let them go;
// eviction_in_flight says 2. A copy reporting Healthy elsewhere ends its
// task, which frees a slot: the third leaves, and the gauge follows.
func testInFlightBudget(t *testing.T) {
	s := newSuite(t, "budget")
	tasks := s.watchTasks()
	s.cluster("budget-down", metav1.ConditionTrue)
	s.cluster("budget-ok", metav1.ConditionTrue)
	objs := s.bindings("b", 4, bindingSpec{clusters: []string{"budget-down"}})
	r := s.start("budget", forkOptions{Rate: rate(10, 10), EnableNoExecuteTaintEviction: true,
		GracefulEvictionTimeout: time.Minute, MaxInFlight: 2}, nil)
	inFlight := func() float64 {
		return r.metric(t, "eviction_in_flight", map[string]string{"queue_name": controllers.ResourceBindingQueue})
	}

	s.fail("budget-down")
	eventually(t, 10*time.Second, "two evictions", func() bool { return len(tasks.from("budget-down")) >= 2 })
	never(t, 2*time.Second, "a third eviction with two in flight", func() bool { return len(tasks.from("budget-down")) > 2 })
	assert.Equal(t, 2.0, inFlight(), "eviction_in_flight with two tasks open")

	var done string
	for _, o := range objs {
		if task(&s.getBinding(o.GetName()).Spec, "budget-down") != nil {
			done = o.GetName()
			break
		}
	}
	require.NotEmpty(t, done)
	s.scheduled(done, []string{"budget-ok"}, map[string]workv1alpha2.ResourceHealth{"budget-ok": workv1alpha2.ResourceHealthy})
	ended := s.taskEnded(done, "budget-down", 10*time.Second)
	eventually(t, 10*time.Second, "a third eviction once a task ended", func() bool { return len(tasks.from("budget-down")) == 3 })
	never(t, 2*time.Second, "a fourth eviction with two in flight again", func() bool { return len(tasks.from("budget-down")) > 3 })
	assert.Equal(t, 2.0, inFlight(), "eviction_in_flight: one ended, one more open")
	t.Logf("measured: the third eviction %v after the first task ended", tasks.from("budget-down")[2].Sub(ended.Truncate(time.Second)))
}

// testTransitBudget: shop's web, annotated with a budget of one cluster in
// transit, and wide, under --max-clusters-in-transit=2, each run on three
// clusters that fail at once. web leaves one cluster at a time, each
// eviction going as soon as the task before it ends (the test plays the scheduler
// and reports the copy Healthy on a cluster of its own), with a
// ClustersInTransit Event while one waits; wide has two clusters in
// transit and the third waits. A watch records, per binding, the most open
// tasks it ever shows.
func testTransitBudget(t *testing.T) {
	s := newSuite(t, "transit")
	peaks := s.watchPeaks()
	failing := []string{"transit-a", "transit-b", "transit-c"}
	for _, c := range failing {
		s.cluster(c, metav1.ConditionTrue)
	}
	healthy := []string{"transit-ok1", "transit-ok2", "transit-ok3"}
	for _, c := range healthy {
		s.cluster(c, metav1.ConditionTrue)
	}
	on := bindingSpec{clusters: failing}
	web := s.binding("web", on)
	web.Annotations[controllers.MaxClustersInTransitAnnotation] = "1"
	require.NoError(t, s.c.Update(ctxFor(t), web))
	s.binding("wide", on)
	s.start("transit", forkOptions{Rate: rate(10, 10), EnableNoExecuteTaintEviction: true,
		GracefulEvictionTimeout: time.Minute, MaxClustersInTransit: 2}, nil)
	open := func(name string) []string {
		var out []string
		for _, tk := range s.getBinding(name).Spec.GracefulEvictionTasks {
			out = append(out, tk.FromCluster)
		}
		return out
	}

	s.fail(failing...)
	eventually(t, 10*time.Second, "wide: two clusters in transit", func() bool { return len(open("wide")) == 2 })
	eventually(t, 10*time.Second, "web: one cluster in transit", func() bool { return len(open("web")) == 1 })
	never(t, 3*time.Second, "web: a second cluster in transit, or wide a third", func() bool {
		return len(open("web")) > 1 || len(open("wide")) > 2
	})
	eventually(t, 5*time.Second, "a ClustersInTransit Event on web", func() bool {
		return slices.ContainsFunc(s.events("web"), func(e eventsv1.Event) bool { return e.Reason == controllers.EventReasonClustersInTransit })
	})

	// Each task of web ends as its copy runs Healthy elsewhere, and the
	// next cluster leaves only then.
	// A waiting eviction is tried again every 10s (the default
	// --cluster-status-update-frequency), and at once when a task of its
	// binding ends: the next leaves well within the 10s.
	var placed []string
	var ended time.Time
	for round := range failing {
		var from string
		eventually(t, 15*time.Second, fmt.Sprintf("web: eviction %d", round+1), func() bool {
			o := open("web")
			if len(o) == 1 {
				from = o[0]
			}
			return len(o) == 1
		})
		if round > 0 {
			after := time.Since(ended)
			assert.Less(t, after, 5*time.Second, "web: eviction %d long after the task before it ended", round+1)
			t.Logf("measured: web's eviction %d seen %v after the task before it ended", round+1, after.Round(10*time.Millisecond))
		}
		started := time.Now()
		// The new copy runs Healthy; the copies on the failed clusters
		// not left yet report their last status, Healthy too, as the
		// assessment asks of every cluster of the result.
		placed = append(placed, healthy[round])
		result := slices.Clone(placed)
		for _, c := range targets(&s.getBinding("web").Spec) {
			if !slices.Contains(healthy, c) {
				result = append(result, c)
			}
		}
		health := map[string]workv1alpha2.ResourceHealth{}
		for _, c := range result {
			health[c] = workv1alpha2.ResourceHealthy
		}
		s.scheduled("web", result, health)
		ended = s.taskEnded("web", from, 10*time.Second)
		t.Logf("measured: web's task from %s ended %v after its copy ran elsewhere", from, time.Since(started).Round(10*time.Millisecond))
	}
	for _, c := range failing {
		assert.NotContains(t, targets(&s.getBinding("web").Spec), c, "web still on a failed cluster")
	}
	assert.Equal(t, 1, peaks.peak("web"), "web: the most clusters in transit at once")
	assert.Equal(t, 2, peaks.peak("wide"), "wide: the most clusters in transit at once")
}

// peakLog records, per binding name, the most graceful eviction tasks a
// watch ever shows open at once.
type peakLog struct {
	mu    sync.Mutex
	peaks map[string]int
}

// watchPeaks starts recording the peaks of the suite's ResourceBindings
// until the test ends.
func (s *suite) watchPeaks() *peakLog {
	s.t.Helper()
	l := &peakLog{peaks: map[string]int{}}
	s.watch(func(obj runtime.Object) {
		if rb, ok := obj.(*workv1alpha2.ResourceBinding); ok {
			l.mu.Lock()
			l.peaks[rb.Name] = max(l.peaks[rb.Name], len(rb.Spec.GracefulEvictionTasks))
			l.mu.Unlock()
		}
	}, &workv1alpha2.ResourceBindingList{})
	return l
}

func (l *peakLog) peak(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.peaks[name]
}

// otherWriter is the annotation the conflicting writer adds.
const otherWriter = "e2e.failoverkit.io/other-writer"

// testTwoReplicas: two replicas share a Lease; only the holder evicts. Its
// eviction meets a conflict (another writer changed the binding after the
// fork read it) and is redone on what the other writer left. When the
// leader stops, the standby takes over and evicts.
func testTwoReplicas(t *testing.T) {
	s := newSuite(t, "ha")
	tasks := s.watchTasks()
	s.cluster("ha-down", metav1.ConditionTrue)
	s.cluster("ha-ok", metav1.ConditionTrue)
	on := bindingSpec{clusters: []string{"ha-down"}}
	contested := s.binding("contested", on)
	inj := &bindingConflict{admin: s.c, key: client.ObjectKeyFromObject(contested)}
	opts := forkOptions{Rate: rate(10, 10), EnableNoExecuteTaintEviction: true}
	a := s.start("ha-a", opts, inj.wrap)
	b := s.start("ha-b", opts, inj.wrap)

	eventually(t, 20*time.Second, "a leader", func() bool { return a.elected() || b.elected() })
	never(t, time.Second, "two leaders", func() bool { return a.elected() && b.elected() })
	leader, standby := a, b
	if b.elected() {
		leader, standby = b, a
	}

	s.fail("ha-down")
	tk := s.evicted(tasks, contested, "ha-down", 10*time.Second)
	assert.Equal(t, policyv1alpha1.PurgeModeGracefully, tk.PurgeMode)
	require.True(t, inj.wasInjected(), "no conflicting write was made")
	got := s.getBinding("contested")
	assert.Equal(t, "kept", got.Annotations[otherWriter], "the other writer's change was overwritten")
	assert.NotContains(t, targets(&got.Spec), "ha-down")
	assert.NotNil(t, task(&got.Spec, "ha-down"))
	processed := func(r *forkRun) float64 {
		return r.metric(t, "eviction_processing_total", map[string]string{"name": controllers.ResourceBindingQueue})
	}
	// The task shows through the watch as soon as the handler's update lands,
	// a moment before the worker counts the handler's result.
	eventually(t, 5*time.Second, "the leader "+leader.name+" to count its eviction", func() bool { return processed(leader) > 0 })
	assert.Zero(t, processed(standby), "the standby %s processed evictions", standby.name)

	require.NoError(t, leader.stop())
	eventually(t, 20*time.Second, "the standby to take over", standby.elected)
	after := s.binding("after-handover", on)
	s.evicted(tasks, after, "ha-down", 10*time.Second)
	eventually(t, 5*time.Second, "the new leader "+standby.name+" to count its eviction", func() bool { return processed(standby) > 0 })
}

// bindingConflict makes the first Update of one ResourceBinding, by any
// replica, meet another writer: just before it, the admin adds an
// annotation, so the replica's resourceVersion is stale and the API server
// answers 409 Conflict.
type bindingConflict struct {
	admin client.Client
	key   client.ObjectKey

	mu       sync.Mutex
	injected bool
}

func (b *bindingConflict) wrap(c client.Client) client.Client {
	return &conflictingClient{Client: c, b: b}
}

func (b *bindingConflict) wasInjected() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.injected
}

func (b *bindingConflict) first(obj client.Object) bool {
	if _, ok := obj.(*workv1alpha2.ResourceBinding); !ok || client.ObjectKeyFromObject(obj) != b.key {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	first := !b.injected
	b.injected = true
	return first
}

type conflictingClient struct {
	client.Client
	b *bindingConflict
}

func (c *conflictingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if c.b.first(obj) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var rb workv1alpha2.ResourceBinding
			if err := c.b.admin.Get(ctx, c.b.key, &rb); err != nil {
				return err
			}
			if rb.Annotations == nil {
				rb.Annotations = map[string]string{}
			}
			rb.Annotations[otherWriter] = "kept"
			return c.b.admin.Update(ctx, &rb, client.FieldOwner("e2e-other-writer"))
		})
		if err != nil {
			return fmt.Errorf("e2e: the other writer: %w", err)
		}
	}
	return c.Client.Update(ctx, obj, opts...)
}

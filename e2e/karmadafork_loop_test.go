//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// schedulerName is the name the e2e's karmada-scheduler answers to. It
// schedules only the bindings whose spec.schedulerName it is: the other
// subtests play the scheduler themselves.
const schedulerName = "failover-e2e-scheduler"

// startKarmadaScheduler runs Karmada v1.18's own karmada-scheduler, the
// binary hack/e2e-binaries.sh builds, against the e2e API server until the
// test ends: the API server is its Karmada API server, on which it watches
// Clusters, ResourceBindings and ClusterResourceBindings. Without leader
// election or an estimator (its defaults: it counts room from the Clusters'
// resource summaries), and with its metrics off.
func startKarmadaScheduler(t *testing.T) {
	t.Helper()
	health := freeAddr(t)
	require.NoError(t, env.start("karmada-scheduler", env.bin.scheduler,
		"--kubeconfig="+filepath.Join(env.dir, "kubeconfig"),
		"--leader-elect=false",
		"--scheduler-name="+schedulerName,
		"--enable-scheduler-estimator=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address="+health,
		"--kube-api-qps=200", "--kube-api-burst=400",
		"--v=2",
	))
	p := env.procs[len(env.procs)-1]
	t.Cleanup(func() { p.terminate(10 * time.Second) })
	require.NoError(t, env.waitHTTP("karmada-scheduler", "http://"+health+"/healthz", nil, ""))
}

// podsAllocatable is every member's allocatable pods; its room is what its
// resource summary leaves of them.
const podsAllocatable = 110

// member creates a Cluster as a joined member that Karmada's cluster status
// controller reports on: Ready, the Deployment API enabled (the scheduler
// places a workload only where its API is), and a resource summary with
// room for room more pods.
func (s *suite) member(name, region string, room int64) {
	s.t.Helper()
	s.newCluster(name, clusterSpec{region: region, status: func(st *clusterv1alpha1.ClusterStatus) {
		st.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "apps/v1",
			Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}}}
		st.ResourceSummary = podSummary(podsAllocatable - room)
	}})
}

func podSummary(allocated int64) *clusterv1alpha1.ResourceSummary {
	return &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(podsAllocatable, resource.DecimalSI)},
		Allocated:   corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(allocated, resource.DecimalSI)},
	}
}

// suiteClusters is a cluster affinity for the suite's own clusters: the
// scheduler sees every subtest's.
func (s *suite) suiteClusters() *policyv1alpha1.ClusterAffinity {
	return &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: s.labels()}}
}

// scheduledBinding creates a ResourceBinding as Karmada's detector creates
// it for a PropagationPolicy, once its scheduler has placed it on the
// clusters on: the policy's permanent ID label and spec.schedulerName, which
// route it to the e2e's karmada-scheduler, and the placement as applied in
// its annotation. It waits until the scheduler has seen it
// (status.schedulerObservedGeneration) and checks that it left it there.
func (s *suite) scheduledBinding(name string, replicas int32, p policyv1alpha1.Placement, on ...string) {
	t := s.t
	t.Helper()
	ctx := ctxFor(t)
	labels := s.labels()
	labels[policyv1alpha1.PropagationPolicyPermanentIDLabel] = "e2e-" + s.name
	rb := &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name, Labels: labels},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: s.ns, Name: name,
				UID: types.UID("uid-" + s.name + "-" + name)},
			Placement:     &p,
			Replicas:      replicas,
			SchedulerName: schedulerName,
		},
	}
	rb.Annotations = s.appliedPlacement(&rb.Spec)
	per := replicas
	if p.ReplicaSchedulingType() == policyv1alpha1.ReplicaSchedulingTypeDivided {
		per = replicas / int32(len(on))
	}
	for _, c := range on {
		rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: per})
	}
	require.NoError(t, s.c.Create(ctx, rb))
	eventually(t, 20*time.Second, "karmada-scheduler to see "+name, func() bool {
		got := s.getBinding(name)
		return got.Status.SchedulerObservedGeneration == got.Generation
	})
	require.ElementsMatch(t, on, targets(&s.getBinding(name).Spec), "karmada-scheduler moved %s before any failure", name)
}

// members plays what a suite's member clusters report through Karmada's
// controllers: each binding's health on the clusters of its schedule
// result, as the binding status controller aggregates it from the Works
// (Healthy as soon as the scheduler places it there), and, once started,
// each Cluster's resource summary every period, as the cluster status
// controller reports it, with the pods of the bindings placed there by then.
type members struct {
	s      *suite
	room   map[string]int64 // the pods each cluster has room for before the failure
	period time.Duration
	ctx    context.Context // ends with the test
	wg     sync.WaitGroup
}

// playMembers starts reporting health at once; summaries wait for
// reportSummaries.
func (s *suite) playMembers(room map[string]int64, period time.Duration) *members {
	ctx, cancel := context.WithCancel(context.Background())
	m := &members{s: s, room: room, period: period, ctx: ctx}
	m.wg.Go(func() { m.loop(ctx, 100*time.Millisecond, m.reportHealth) })
	s.t.Cleanup(func() { cancel(); m.wg.Wait() })
	return m
}

// reportSummaries starts the summaries' reports: the first one period from
// now.
func (m *members) reportSummaries() { m.reportSummariesFrom(time.Now().Add(m.period)) }

// reportSummariesFrom starts the summaries' reports: the first one at
// first, then every period.
func (m *members) reportSummariesFrom(first time.Time) {
	m.wg.Go(func() {
		t := time.NewTimer(time.Until(first))
		defer t.Stop()
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		_ = m.reportRoom(m.ctx)
		m.loop(m.ctx, m.period, m.reportRoom)
	})
}

// reportSummariesAt reports the summaries at each moment at(ctx, 1),
// at(ctx, 2), … returns, until the test ends; at may block until it knows
// report k's moment, and returns at once when ctx ends.
func (m *members) reportSummariesAt(at func(ctx context.Context, k int) time.Time) {
	m.wg.Go(func() {
		for k := 1; ; k++ {
			t := time.NewTimer(time.Until(at(m.ctx, k)))
			select {
			case <-m.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			_ = m.reportRoom(m.ctx)
		}
	})
}

// loop calls f every d until ctx ends; an API error is retried at the next
// tick, as the controllers it plays retry.
func (m *members) loop(ctx context.Context, d time.Duration, f func(context.Context) error) {
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_ = f(ctx)
		}
	}
}

func (m *members) bindings(ctx context.Context) ([]workv1alpha2.ResourceBinding, error) {
	var list workv1alpha2.ResourceBindingList
	err := m.s.c.List(ctx, &list, client.InNamespace(m.s.ns), client.MatchingLabels(m.s.labels()))
	return list.Items, err
}

func (m *members) reportHealth(ctx context.Context) error {
	list, err := m.bindings(ctx)
	if err != nil {
		return err
	}
	for i := range list {
		rb := &list[i]
		var want []workv1alpha2.AggregatedStatusItem
		for _, c := range slices.Sorted(slices.Values(targets(&rb.Spec))) {
			want = append(want, workv1alpha2.AggregatedStatusItem{ClusterName: c, Health: workv1alpha2.ResourceHealthy, Applied: true})
		}
		if slices.EqualFunc(want, rb.Status.AggregatedStatus, func(a, b workv1alpha2.AggregatedStatusItem) bool {
			return a.ClusterName == b.ClusterName && a.Health == b.Health
		}) {
			continue
		}
		rb.Status.AggregatedStatus = want
		if err := m.s.c.Status().Update(ctx, rb); err != nil {
			continue // changed meanwhile: the next tick sees it
		}
	}
	return nil
}

// landed is the replicas the bindings' schedule results put on each
// cluster.
func (m *members) landed(ctx context.Context) (map[string]int64, error) {
	list, err := m.bindings(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, rb := range list {
		for _, tc := range rb.Spec.Clusters {
			out[tc.Name] += int64(tc.Replicas)
		}
	}
	return out, nil
}

func (m *members) reportRoom(ctx context.Context) error {
	landed, err := m.landed(ctx)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(m.room)) {
		err := m.s.clusterStatus(ctx, name, func(st *clusterv1alpha1.ClusterStatus) {
			st.ResourceSummary = podSummary(podsAllocatable - m.room[name] + landed[name])
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// failoverLog records, from a watch on a suite's bindings, when each one
// was seen evicted from the failed clusters (a task from one of them), seen
// rescheduled (its schedule result complete again without them) and seen
// with its tasks cleared.
type failoverLog struct {
	failed []string

	mu                            sync.Mutex
	evicted, rescheduled, cleared map[string]time.Time
	back                          map[string]bool // seen on a failed cluster after its eviction
	copies                        map[string]int  // the clusters of its first schedule result seen
}

func (s *suite) watchFailover(failed ...string) *failoverLog {
	s.t.Helper()
	l := &failoverLog{failed: failed, evicted: map[string]time.Time{}, rescheduled: map[string]time.Time{},
		cleared: map[string]time.Time{}, back: map[string]bool{}, copies: map[string]int{}}
	s.watch(func(obj runtime.Object) {
		if rb, ok := obj.(*workv1alpha2.ResourceBinding); ok {
			l.record(rb, time.Now())
		}
	}, &workv1alpha2.ResourceBindingList{})
	return l
}

func (l *failoverLog) record(rb *workv1alpha2.ResourceBinding, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	name := rb.Name
	if _, ok := l.copies[name]; !ok {
		l.copies[name] = len(rb.Spec.Clusters)
	}
	_, evicted := l.evicted[name]
	if !evicted && slices.ContainsFunc(rb.Spec.GracefulEvictionTasks, func(tk workv1alpha2.GracefulEvictionTask) bool {
		return slices.Contains(l.failed, tk.FromCluster)
	}) {
		l.evicted[name], evicted = now, true
	}
	if !evicted {
		return
	}
	onFailed := slices.ContainsFunc(rb.Spec.Clusters, func(tc workv1alpha2.TargetCluster) bool {
		return slices.Contains(l.failed, tc.Name)
	})
	if onFailed {
		l.back[name] = true
	}
	if _, ok := l.rescheduled[name]; !ok && !onFailed && complete(rb, l.copies[name]) {
		l.rescheduled[name] = now
	}
	if _, ok := l.cleared[name]; !ok && len(rb.Spec.GracefulEvictionTasks) == 0 {
		l.cleared[name] = now
	}
}

// returned lists the bindings seen on a failed cluster again after their
// eviction from one.
// first waits up to timeout for the first eviction and returns when it was
// seen.
func (l *failoverLog) first(t *testing.T, timeout time.Duration) time.Time {
	t.Helper()
	var at time.Time
	eventually(t, timeout, "a first eviction", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, e := range l.evicted {
			if at.IsZero() || e.Before(at) {
				at = e
			}
		}
		return !at.IsZero()
	})
	return at
}

// evictions are the moments the bindings were seen evicted, earliest
// first.
func (l *failoverLog) evictions() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.SortedFunc(maps.Values(l.evicted), time.Time.Compare)
}

func (l *failoverLog) returned() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(maps.Keys(l.back))
}

// complete reports whether the schedule result holds the whole workload:
// every replica of a Divided one, as many copies as before of a Duplicated
// one.
func complete(rb *workv1alpha2.ResourceBinding, copies int) bool {
	if rb.Spec.Placement.ReplicaSchedulingType() == policyv1alpha1.ReplicaSchedulingTypeDuplicated {
		return len(rb.Spec.Clusters) >= copies
	}
	var sum int32
	for _, tc := range rb.Spec.Clusters {
		sum += tc.Replicas
	}
	return sum == rb.Spec.Replicas
}

// times returns the times of what, one per binding of names, sorted, and
// whether every binding has one.
func (l *failoverLog) times(what map[string]time.Time, names []string) ([]time.Time, bool) {
	var out []time.Time
	for _, n := range names {
		if at, ok := what[n]; ok {
			out = append(out, at)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out, len(out) == len(names)
}

// done waits until every binding of names has been rescheduled and has its
// tasks cleared.
func (l *failoverLog) done(t *testing.T, timeout time.Duration, names []string) (evicted, rescheduled, cleared []time.Time) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("%d bindings evicted, rescheduled by karmada-scheduler and their tasks cleared", len(names)), func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		var ok1, ok2, ok3 bool
		evicted, ok1 = l.times(l.evicted, names)
		rescheduled, ok2 = l.times(l.rescheduled, names)
		cleared, ok3 = l.times(l.cleared, names)
		return ok1 && ok2 && ok3
	})
	return evicted, rescheduled, cleared
}

// notReady plays the failure of member clusters as Karmada's controllers
// see it: their Ready condition turns False, and Karmada's cluster
// controller taints each cluster.karmada.io/not-ready:NoSchedule the moment
// it reads that, closing it to the scheduler (the policy's NoExecute taint,
// which evicts, is the ClusterTaintPolicyController's to add). Every
// cluster is closed before any turns not Ready, so that no eviction from
// one of them is placed on another that fails with it.
func (s *suite) notReady(names ...string) {
	s.t.Helper()
	for _, n := range names {
		c := s.getCluster(n)
		s.setTaints(n, append(c.Spec.Taints, corev1.Taint{Key: forkTaintKey, Effect: corev1.TaintEffectNoSchedule})...)
	}
	for _, n := range names {
		s.setReady(n, metav1.ConditionFalse)
	}
}

// waitTaint waits for the policy's NoExecute taint on each cluster and
// returns when the last one was first seen.
func (s *suite) waitTaint(names ...string) time.Time {
	s.t.Helper()
	var at time.Time
	eventually(s.t, 10*time.Second, fmt.Sprintf("the policy's taint on %v", names), func() bool {
		for _, n := range names {
			if findTaint(s.getCluster(n).Spec.Taints, forkTaintKey, corev1.TaintEffectNoExecute) == nil {
				return false
			}
		}
		at = time.Now()
		return true
	})
	return at
}

// rateBound is the least time n evictions take at r per second: the first
// permit comes at once, each next one 1/r later.
func rateBound(n int, r float64) time.Duration {
	return time.Duration(float64(n-1) / r * float64(time.Second))
}

func ms(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }

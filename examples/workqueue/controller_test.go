package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover/ratelimit"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fleet builds Nodes (clusters) and the ConfigMaps (workloads) on each.
func fleet(workloads map[string]int, clusters ...string) []runtime.Object {
	var objs []runtime.Object
	for _, c := range clusters {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: c}})
		for i := range workloads[c] {
			objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: "apps", Name: fmt.Sprintf("%s-%d", c, i+1),
				Labels: map[string]string{ClusterLabel: c},
			}})
		}
	}
	return objs
}

// harness runs a Controller on a fake clientset and a fake clock.
type harness struct {
	t      *testing.T
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	c      *Controller

	mu        sync.Mutex
	evictions []Eviction
	failures  []time.Time
}

func start(t *testing.T, objs []runtime.Object, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, client: fake.NewClientset(objs...), clock: clocktesting.NewFakeClock(t0)}
	opts.Clock = h.clock
	opts.OnEvict = func(e Eviction) {
		h.mu.Lock()
		h.evictions = append(h.evictions, e)
		h.mu.Unlock()
	}
	opts.OnError = func(string, error) {
		h.mu.Lock()
		h.failures = append(h.failures, h.clock.Now())
		h.mu.Unlock()
	}
	c, err := New(h.client, opts)
	require.NoError(t, err)
	h.c = c
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	select {
	case <-c.Synced():
	case err := <-done:
		t.Fatalf("Run returned before syncing: %v", err)
	}
	return h
}

func (h *harness) setTaint(node string, faulty bool, wantFaulty int) {
	h.t.Helper()
	require.NoError(h.t, setTaint(context.Background(), h.client, node, faulty))
	h.eventually("the tracker counts %d faulty", func() bool {
		hl, err := h.c.Health()
		return err == nil && hl.Unhealthy == wantFaulty
	}, wantFaulty)
}

// eventually waits (in wall time, only as a bound on a failing test) for a
// state the controller reaches on its own without the fake clock moving.
func (h *harness) eventually(msg string, cond func() bool, args ...any) {
	h.t.Helper()
	require.Eventuallyf(h.t, cond, 10*time.Second, time.Millisecond, msg, args...)
}

// settle waits until every worker that holds an item is blocked in
// Limiter.Wait and n evictions have been made: only the fake clock can move
// the controller on from there.
func (h *harness) settle(evicted, waiting int) {
	h.t.Helper()
	h.eventually("want %d evicted and %d workers in Limiter.Wait", func() bool {
		// Counted from OnEvict, which runs after Stats counts the move.
		return len(h.evictedAt()) == evicted && h.c.Stats().Waiting == waiting && h.cacheCaughtUp()
	}, evicted, waiting)
}

// cacheCaughtUp reports whether the controller's informer cache shows every
// move made so far, so that its next choice of target sees the real load.
func (h *harness) cacheCaughtUp() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.evictions {
		obj, ok, err := h.c.workloads.GetIndexer().GetByKey(e.Key)
		if err != nil || !ok || obj.(*corev1.ConfigMap).Labels[ClusterLabel] != e.To {
			return false
		}
	}
	return true
}

func (h *harness) evictedAt() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []time.Duration
	for _, e := range h.evictions {
		out = append(out, e.At.Sub(t0))
	}
	return out
}

func (h *harness) workload(name string) *corev1.ConfigMap {
	h.t.Helper()
	cm, err := h.client.CoreV1().ConfigMaps("apps").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(h.t, err)
	return cm
}

func TestMovesWorkloadsOffAFaultyClusterAtTheConfiguredRate(t *testing.T) {
	// 1 of 4 faulty is under the 0.55 threshold: the primary rate, 0.5/s, one
	// eviction every 2 s, with 3 workers sharing it.
	h := start(t, fleet(map[string]int{"a": 5, "b": 1}, "a", "b", "c", "d"), Options{Workers: 3})
	h.setTaint("a", true, 1)

	// The first permit is free; the other workers each hold an item in Wait.
	h.settle(1, 3)
	for i := 2; i <= 5; i++ {
		h.clock.Step(time.Second) // half an interval: nobody's turn
		h.settle(i-1, min(3, 6-i))
		h.clock.Step(time.Second)
		h.settle(i, min(3, 5-i))
	}
	assert.Equal(t, []time.Duration{0, 2 * time.Second, 4 * time.Second, 6 * time.Second, 8 * time.Second}, h.evictedAt(),
		"one eviction per 2 s of the fake clock, whatever the number of workers")

	for i := 1; i <= 5; i++ {
		cm := h.workload(fmt.Sprintf("a-%d", i))
		assert.NotEqual(t, "a", cm.Labels[ClusterLabel], "a-%d still on the faulty cluster", i)
		assert.Equal(t, "a", cm.Annotations[EvictedFromAnnotation])
	}
	// Spread over the healthy clusters by load: b already had one.
	var on = map[string]int{}
	for i := 1; i <= 5; i++ {
		on[h.workload(fmt.Sprintf("a-%d", i)).Labels[ClusterLabel]]++
	}
	assert.Equal(t, map[string]int{"b": 1, "c": 2, "d": 2}, on)
	assert.Equal(t, "b", h.workload("b-1").Labels[ClusterLabel], "a healthy cluster's workload never moves")
	assert.Empty(t, h.workload("b-1").Annotations)
}

func TestPauseHoldsProcessingUntilTheFleetRecovers(t *testing.T) {
	// A small fleet (5 ≤ 10): above 55% faulty, evictions pause.
	h := start(t, fleet(map[string]int{"a": 3, "b": 2}, "a", "b", "c", "d", "e"), Options{Workers: 2})
	h.setTaint("a", true, 1)
	h.settle(1, 2) // a-1 moved at once (to c, the least loaded); a-2 and a-3 held in Wait

	h.setTaint("b", true, 2)
	h.setTaint("e", true, 3) // 3/5 = 60%: paused
	assert.Zero(t, h.c.Limiter().Rate())
	// b's items join the queue behind the two held in Wait.
	h.eventually("b's workloads queued", func() bool { return h.c.Stats().Queued == 2 })

	// However long the pause lasts, the workers stay in Wait and nothing moves,
	// though the items' slots at 2 s and 4 s have long passed.
	for _, d := range []time.Duration{time.Second, time.Second, 2 * time.Second, time.Hour} {
		h.clock.Step(d)
		h.settle(1, 2)
	}
	assert.Equal(t, []time.Duration{0}, h.evictedAt())

	// b and e recover (1/5 faulty). a-1 took the bucket's permit just before
	// the pause, and the pause added nothing: the first waiter goes one
	// interval after the resume, not at once, and the next one interval
	// later; b's queued items are dropped without a permit, so they do not
	// delay a's.
	resumed := h.clock.Since(t0)
	h.setTaint("b", false, 2)
	h.setTaint("e", false, 1)
	h.settle(1, 2)
	h.clock.Step(2 * time.Second)
	h.settle(2, 1)
	h.clock.Step(2 * time.Second)
	h.settle(3, 0)
	assert.Equal(t, []time.Duration{0, resumed + 2*time.Second, resumed + 4*time.Second}, h.evictedAt())
	h.eventually("b's two items dropped", func() bool { return h.c.Stats().Skipped == 2 })
	assert.Equal(t, "b", h.workload("b-1").Labels[ClusterLabel], "a recovered cluster keeps its workloads")
	assert.Equal(t, "b", h.workload("b-2").Labels[ClusterLabel])
}

func TestFailedEvictionIsRetriedWithBackoff(t *testing.T) {
	objs := fleet(map[string]int{"a": 1}, "a", "b", "c")
	failing := 2
	var mu sync.Mutex
	h := start(t, objs, Options{Workers: 1, BaseBackoff: 10 * time.Second})
	h.client.PrependReactor("update", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing == 0 {
			return false, nil, nil
		}
		failing--
		return true, nil, errors.New("injected API error")
	})
	h.setTaint("a", true, 1)

	// Attempt 1 at 0 fails. The retry waits max(backoff 10 s, next fleet slot
	// 2 s) = 10 s; its Wait permit is free by then. Attempt 2 at 10 s fails;
	// the next waits the doubled backoff, 20 s: attempt 3 at 30 s succeeds.
	failures := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.failures)
	}
	h.eventually("first attempt failed", func() bool { return failures() == 1 })
	h.clock.Step(10 * time.Second)
	h.eventually("second attempt failed", func() bool { return failures() == 2 })
	h.clock.Step(20 * time.Second)
	h.settle(1, 0)

	h.mu.Lock()
	assert.Equal(t, []time.Time{t0, t0.Add(10 * time.Second)}, h.failures)
	h.mu.Unlock()
	assert.Equal(t, []time.Duration{30 * time.Second}, h.evictedAt())
	s := h.c.Stats()
	assert.Equal(t, 2, s.Failed)
	assert.Equal(t, 1, s.Evicted)
	assert.Equal(t, "a", h.workload("a-1").Annotations[EvictedFromAnnotation])
}

func TestNewRejectsBadOptions(t *testing.T) {
	client := fake.NewClientset()
	tests := []struct {
		name    string
		client  *fake.Clientset
		opts    Options
		wantErr string
	}{
		{"nil client", nil, Options{}, "client is nil"},
		{"negative workers", client, Options{Workers: -1}, "Workers is -1"},
		{"negative backoff", client, Options{BaseBackoff: -time.Second}, "negative backoff"},
		{"invalid rate", client, Options{Rate: ratelimit.Config{ResourceEvictionRate: -1}}, "ResourceEvictionRate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.client == nil {
				_, err = New(nil, tt.opts)
			} else {
				_, err = New(tt.client, tt.opts)
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestRunTwiceIsAnError(t *testing.T) {
	h := start(t, fleet(nil, "a"), Options{})
	err := h.c.Run(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Run called twice")
}

func TestFaultyNode(t *testing.T) {
	tests := []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"no taint", &corev1.Node{}, false},
		{"NoExecute taint", &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoExecute}}}}, true},
		{"NoSchedule only (cordoned) is not faulty", &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}}}, false},
		{"faulty label", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{FaultyLabel: "true"}}}, true},
		{"faulty label false", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{FaultyLabel: "false"}}}, false},
		{"not a node", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var obj any = tt.node
			if tt.node == nil {
				obj = &corev1.ConfigMap{}
			}
			assert.Equal(t, tt.want, isFaultyNode(obj))
		})
	}
}

package ratelimit

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	testingclock "k8s.io/utils/clock/testing"
)

// node stands in for a cluster object: faulty when it carries a NoExecute taint.
func node(name string, faulty bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if faulty {
		n.Spec.Taints = []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}}
	}
	return n
}

func nodeFaulty(obj any) bool {
	n, ok := obj.(*corev1.Node)
	return ok && len(n.Spec.Taints) > 0
}

func TestNewInformerSourceRejectsNil(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	inf := cache.NewSharedIndexInformer(src, &corev1.Node{}, 0, cache.Indexers{})
	_, err := NewInformerSource(nil, nodeFaulty)
	assert.EqualError(t, err, "ratelimit: NewInformerSource: informer is nil")
	_, err = NewInformerSource(inf, nil)
	assert.EqualError(t, err, "ratelimit: NewInformerSource: faulty predicate is nil")
}

// waitHealth blocks on the Tracker's Changed channel until Health is want.
// Before the sync the channel is nil (the registration answers HasSynced
// only when asked), so it first waits for the sync as client-go's
// WaitForCacheSync waits for an informer: by asking.
func waitHealth(t *testing.T, tr *Tracker, want Health) {
	t.Helper()
	guard := time.After(30 * time.Second) // hang protection only
	guardCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.True(t, cache.WaitForCacheSync(guardCtx.Done(), func() bool { _, err := tr.Health(); return err == nil }),
		"the Tracker never synced")
	for {
		ch := tr.Changed()
		if h, err := tr.Health(); err == nil && h == want {
			return
		}
		select {
		case <-ch:
		case <-guard:
			h, err := tr.Health()
			t.Fatalf("health stayed %+v (%v), want %+v", h, err, want)
		}
	}
}

func TestInformerSourceFollowsInformer(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	src.Add(node("a", false))
	src.Add(node("b", true))
	inf := cache.NewSharedIndexInformer(src, &corev1.Node{}, 0, cache.Indexers{})
	tr, err := NewInformerSource(inf, nodeFaulty)
	require.NoError(t, err)

	_, err = tr.Health()
	assert.ErrorIs(t, err, ErrNotSynced, "before the initial list, health is unknown")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx.Done()) }()
	defer func() { cancel(); <-done; src.Shutdown() }()
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))

	waitHealth(t, tr, Health{Total: 2, Unhealthy: 1}) // initial list
	src.Add(node("c", true))
	waitHealth(t, tr, Health{Total: 3, Unhealthy: 2}) // add
	src.Modify(node("b", false))
	waitHealth(t, tr, Health{Total: 3, Unhealthy: 1}) // update: recovered
	src.Delete(node("c", true))
	waitHealth(t, tr, Health{Total: 2, Unhealthy: 0}) // delete

	// A delete the watch never reports is found on the next relist and
	// delivered as a DeletedFinalStateUnknown tombstone.
	src.DeleteDropWatch(node("a", false))
	src.ResetWatch()
	waitHealth(t, tr, Health{Total: 1, Unhealthy: 0})
}

func TestInformerSourceSyncReleasesLimiter(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	src.Add(node("a", false))
	src.Add(node("b", false))
	inf := cache.NewSharedIndexInformer(src, &corev1.Node{}, 0, cache.Indexers{})
	tr, err := NewInformerSource(inf, nodeFaulty)
	require.NoError(t, err)
	clk := testingclock.NewFakeClock(t0)
	l, err := NewLimiter(DefaultConfig(), tr, WithClock(clk))
	require.NoError(t, err)

	var wg sync.WaitGroup
	res := waitAsync(l, context.Background(), &wg)
	waitForTimers(t, clk, 1) // paused until the informer syncs (the poll timer is set)
	assert.Zero(t, l.Rate())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx.Done()) }()
	defer func() { cancel(); <-done; src.Shutdown() }()

	// The Limiter polls a source whose Health fails: once the handler has
	// the initial list, the next poll (1s, the default) lets the waiter
	// through.
	waitHealth(t, tr, Health{Total: 2})
	clk.Step(time.Second)
	require.NoError(t, <-res)
	wg.Wait()
	assert.Equal(t, 0.5, l.Rate())
}

func TestInformerHandler(t *testing.T) {
	tr := NewTracker()
	h := informerHandler{t: tr, faulty: nodeFaulty}
	ns := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}}

	h.OnAdd(node("a", true), true)
	h.OnAdd(node("b", false), false)
	h.OnAdd(ns, false) // namespaced objects are keyed "ns/x"
	h.OnUpdate(node("b", false), node("b", true))
	got, err := tr.Health()
	require.NoError(t, err)
	assert.Equal(t, Health{Total: 3, Unhealthy: 2}, got)

	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "a", Obj: node("a", true)})
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: ns})
	got, _ = tr.Health()
	assert.Equal(t, Health{Total: 1, Unhealthy: 1}, got, "tombstones delete by their key")

	h.OnDelete(node("b", true))
	got, _ = tr.Health()
	assert.Equal(t, Health{}, got, "plain deletes delete by the object's key")

	h.OnAdd("not an object", false)
	h.OnDelete(42)
	got, _ = tr.Health()
	assert.Equal(t, Health{}, got, "objects without metadata are skipped, not counted")
}

// A Limiter over a hand-fed Tracker pauses until MarkSynced, then lets the
// waiter through at once, without a clock step or a poll.
func TestUnsyncedTrackerPausesLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := NewUnsyncedTracker()
		clk := testingclock.NewFakeClock(t0)
		l, err := NewLimiter(DefaultConfig(), tr, WithClock(clk))
		require.NoError(t, err)

		var wg sync.WaitGroup
		res := waitAsync(l, context.Background(), &wg)
		settle(t, clk, 1)
		assert.Zero(t, l.Rate(), "paused while the fleet is unknown")
		tr.Set("member1", false)
		tr.Set("member2", true)
		clk.Step(time.Hour) // polling changes nothing: still unsynced
		settle(t, clk, 1)
		assert.True(t, pending(res))

		tr.MarkSynced()
		require.NoError(t, <-res)
		wg.Wait()
		assert.Equal(t, 0.5, l.Rate())
	})
}

// captureInformer hands the registered handler back to the test.
type captureInformer struct{ h cache.ResourceEventHandler }

func (c *captureInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	c.h = h
	return syncedRegistration{}, nil
}

// syncedRegistration reports the initial list as delivered. It embeds the
// interface so that it also satisfies newer client-go releases, whose
// registration has methods the source never calls (v0.37's
// HasSyncedChecker); hack/newest.sh builds the tests against those.
type syncedRegistration struct {
	cache.ResourceEventHandlerRegistration
}

func (syncedRegistration) HasSynced() bool { return true }

// An object the source cannot key is left out of fleet health and reported
// through the logger the caller gave, not klog's global one.
func TestInformerSourceLogsUnkeyableObjectsThroughGivenLogger(t *testing.T) {
	var logged []string
	logger := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	inf := &captureInformer{}
	tr, err := NewInformerSource(inf, nodeFaulty, WithSourceLogger(logger))
	require.NoError(t, err)

	inf.h.OnAdd(node("a", true), true)
	inf.h.OnAdd("not an object", true)
	inf.h.OnDelete(42)

	h, err := tr.Health()
	require.NoError(t, err)
	assert.Equal(t, Health{Total: 1, Unhealthy: 1}, h)
	require.Len(t, logged, 2)
	assert.Contains(t, logged[0], "cannot key object")
	assert.Contains(t, logged[1], "cannot key deleted object")

	_, err = NewInformerSource(&captureInformer{}, nodeFaulty, nil)
	assert.NoError(t, err, "a nil option is ignored, as everywhere in the library")
}

// TestInformerSourceSkipsATypedNilObject: an informer (or a test double)
// that delivers a nil *Node in an interface used to panic in the key
// function, on the informer's delivery goroutine. It is logged and left
// out instead, and faulty is never called with it.
func TestInformerSourceSkipsATypedNilObject(t *testing.T) {
	var logged []string
	logger := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	inf := &captureInformer{}
	faultyCalls := 0
	tr, err := NewInformerSource(inf, func(obj any) bool { faultyCalls++; return nodeFaulty(obj) }, WithSourceLogger(logger))
	require.NoError(t, err)

	var nilNode *corev1.Node
	require.NotPanics(t, func() {
		inf.h.OnAdd(nilNode, true)
		inf.h.OnUpdate(node("a", false), nilNode)
		inf.h.OnDelete(nilNode)
	})
	h, err := tr.Health()
	require.NoError(t, err)
	assert.Equal(t, Health{}, h)
	assert.Zero(t, faultyCalls)
	require.Len(t, logged, 3)
	assert.Contains(t, logged[0], "the informer delivered a nil *v1.Node")
}

package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/ratelimit"
)

var freezeName = types.NamespacedName{Namespace: "karmada-system", Name: DefaultFreezeName}

// freezeMap is the freeze ConfigMap with data.
func freezeMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: freezeName.Namespace, Name: freezeName.Name}, Data: data}
}

// The rules of readFreeze, one case each, in its order.
func TestReadFreeze(t *testing.T) {
	later := evictNow.Add(time.Hour).Format(time.RFC3339)
	for _, tc := range []struct {
		name      string
		cm        *corev1.ConfigMap
		frozen    bool
		whyHas    []string
		wantUntil time.Time
	}{
		{"1. no ConfigMap: not frozen", nil, false, nil, time.Time{}},
		{"2. an empty ConfigMap freezes, and says no reason was given", freezeMap(nil), true, []string{"no reason given"}, time.Time{}},
		{"2. the reason is said", freezeMap(map[string]string{"reason": " network partition, INC-123 "}), true,
			[]string{"network partition, INC-123"}, time.Time{}},
		{"2. a future until: frozen until then", freezeMap(map[string]string{"reason": "INC-123", "until": later}), true,
			[]string{"INC-123", "until " + later}, evictNow.Add(time.Hour)},
		{"3. an until that is not RFC 3339 freezes, naming the key and the value", freezeMap(map[string]string{"until": "tomorrow"}), true,
			[]string{`data.until "tomorrow" is not RFC 3339`}, time.Time{}},
		{"4. a past until: lapsed", freezeMap(map[string]string{"reason": "INC-123", "until": evictNow.Add(-time.Second).Format(time.RFC3339)}), false,
			[]string{"INC-123", "lapsed at"}, time.Time{}},
		{"4. until now: lapsed", freezeMap(map[string]string{"until": evictNow.Format(time.RFC3339)}), false, []string{"lapsed"}, time.Time{}},
		{"2a. confirm: storm confirms a failure storm and freezes nothing", freezeMap(map[string]string{"confirm": " storm "}), false,
			[]string{"confirms the failure storm"}, time.Time{}},
		{"2a. another confirm value freezes, naming it", freezeMap(map[string]string{"confirm": "strom"}), true,
			[]string{`data.confirm "strom" is not "storm"`}, time.Time{}},
		{"5. a misspelt key is named and still freezes", freezeMap(map[string]string{"untill": later}), true,
			[]string{"unknown keys data.untill ignored"}, time.Time{}},
		{"5. binaryData is named and still freezes", &corev1.ConfigMap{BinaryData: map[string][]byte{"until": nil}}, true,
			[]string{"binaryData.until"}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := readFreeze(tc.cm, evictNow)
			assert.Equal(t, tc.frozen, s.frozen)
			for _, want := range tc.whyHas {
				assert.Contains(t, s.why, want)
			}
			assert.True(t, tc.wantUntil.Equal(s.until), "until %v, want %v", s.until, tc.wantUntil)
		})
	}
}

// frozenGauge records what the gate reports to eviction_frozen.
type frozenGauge struct{ values []bool }

func (g *frozenGauge) EvictionsFrozen(frozen bool) { g.values = append(g.values, frozen) }

// now is eviction_frozen as last set.
func (g *frozenGauge) now(t *testing.T) bool {
	t.Helper()
	require.NotEmpty(t, g.values, "eviction_frozen never set")
	return g.values[len(g.values)-1]
}

// frozenWorld is the eviction controller on world with shop/web queued
// from member1 and a freeze gate, and a count of the API reads the handler
// makes.
func frozenWorld(t *testing.T) (*EvictionController, *freezeGate, *frozenGauge, client.Client, *int, *recorded) {
	t.Helper()
	reads := new(int)
	c := worldBuilder(t, newBinding(nil)).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			*reads++
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	events := &recorded{}
	ctrl := newController(t, EvictionOptions{Freeze: freezeName}, c, events)
	gauge := &frozenGauge{}
	ctrl.freeze = newFreezeGate(freezeName, ctrl.opts.Clock, gauge, logr.Discard())
	return ctrl, ctrl.freeze, gauge, c, reads, events
}

func handle(ctrl *EvictionController) error {
	return ctrl.evictHandler(resourceBindings())(context.Background(), evictionqueue.Item{Cluster: "member1", Key: "shop/web"})
}

// requireHeldBack checks a handler's result for an item the freeze holds
// back: deferred by after (kept, its permit back, no failure counted),
// nothing read or written, no Event.
func requireHeldBack(t *testing.T, err error, after time.Duration, c client.Client, reads *int, events *recorded, why ...string) {
	t.Helper()
	var parked *evictionqueue.ParkError
	require.True(t, errors.As(err, &parked), "not parked: %v", err)
	assert.Equal(t, after, parked.Max)
	assert.Equal(t, engine.FreezeGate, parked.Gate)
	assert.False(t, evictionqueue.IsAbandoned(err) || evictionqueue.IsSkipped(err), "the item must stay queued: %v", err)
	assert.Contains(t, err.Error(), "frozen by ConfigMap karmada-system/failover-freeze")
	for _, w := range why {
		assert.Contains(t, err.Error(), w)
	}
	assert.Zero(t, *reads, "a frozen attempt reads nothing from the API server")
	assert.Empty(t, *events)
	var b workv1alpha2.ResourceBinding
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "web"}, &b))
	assert.Empty(t, b.Spec.GracefulEvictionTasks, "evicted while frozen")
	*reads = 0
}

// Frozen, the handler holds the item back, reading and writing nothing;
// thawed (the ConfigMap deleted), the same item is evicted. eviction_frozen
// follows.
func TestFreezeHoldsEvictionsBackUntilThawed(t *testing.T) {
	ctrl, gate, gauge, c, reads, events := frozenWorld(t)
	gate.set(freezeMap(map[string]string{"reason": "network partition, INC-123"}))
	assert.True(t, gauge.now(t))
	requireHeldBack(t, handle(ctrl), freezeRecheck, c, reads, events, "network partition, INC-123")
	requireHeldBack(t, handle(ctrl), freezeRecheck, c, reads, events)
	assert.Equal(t, []bool{true}, gauge.values, "reported once per change, not per attempt")

	gate.set(nil)
	assert.False(t, gauge.now(t))
	requireEvicted(t, handle(ctrl))
}

// A freeze with an until lapses then, without an event: the item waits no
// longer than until, and is evicted once it has passed; eviction_frozen
// follows at the next look.
func TestFreezeLapsesAtUntil(t *testing.T) {
	ctrl, gate, gauge, c, reads, events := frozenWorld(t)
	clk := ctrl.opts.Clock.(*clocktesting.FakeClock)
	gate.set(freezeMap(map[string]string{"until": evictNow.Add(3 * time.Second).Format(time.RFC3339)}))
	requireHeldBack(t, handle(ctrl), 3*time.Second, c, reads, events, "until "+evictNow.Add(3*time.Second).Format(time.RFC3339))

	clk.Step(3 * time.Second)
	assert.False(t, gate.check().frozen)
	assert.False(t, gauge.now(t), "eviction_frozen after the lapse")
	requireEvicted(t, handle(ctrl))

	// The lapsed ConfigMap deleted: no second thaw reported; its reason
	// edited while frozen: reported again.
	gate.set(nil)
	assert.Equal(t, []bool{true, false}, gauge.values)
	gate.set(freezeMap(map[string]string{"reason": "INC-123"}))
	gate.set(freezeMap(map[string]string{"reason": "INC-123, still"}))
	assert.Equal(t, []bool{true, false, true, true}, gauge.values)
}

// A freeze that cannot be read freezes, and says why: the key and the
// value, in the handler's error and in what the gate reports.
func TestFreezeMalformedUntilFreezes(t *testing.T) {
	ctrl, gate, gauge, c, reads, events := frozenWorld(t)
	gate.set(freezeMap(map[string]string{"reason": "INC-123", "until": "tomorrow"}))
	assert.True(t, gauge.now(t))
	ctrl.opts.Clock.(*clocktesting.FakeClock).Step(24 * time.Hour)
	requireHeldBack(t, handle(ctrl), freezeRecheck, c, reads, events, `data.until "tomorrow" is not RFC 3339`, "INC-123")

	// Corrected to a past until: thawed.
	gate.set(freezeMap(map[string]string{"reason": "INC-123", "until": evictNow.Format(time.RFC3339)}))
	assert.False(t, gauge.now(t))
	requireEvicted(t, handle(ctrl))
}

// Until the informer has read the ConfigMap, the gate freezes: a new
// leader's queues do not start before then, and eviction_frozen says 1
// rather than a thaw nobody has seen.
func TestFreezeNotReadYetFreezes(t *testing.T) {
	ctrl, gate, gauge, c, reads, events := frozenWorld(t)
	synced := false
	gate.synced = func() bool { return synced }
	assert.False(t, gate.hasSynced())
	requireHeldBack(t, handle(ctrl), freezeRecheck, c, reads, events, "not been read yet")
	assert.True(t, gauge.now(t))

	synced = true
	assert.True(t, gate.hasSynced())
	assert.False(t, gate.check().frozen)
	assert.False(t, gauge.now(t))
	requireEvicted(t, handle(ctrl))
}

// Without EvictionOptions.Freeze nothing is watched and nothing frozen.
func TestNoFreezeConfigured(t *testing.T) {
	ctrl := newController(t, EvictionOptions{}, world(t, newBinding(nil)), &recorded{})
	assert.Nil(t, ctrl.freeze)
	assert.True(t, ctrl.freeze.hasSynced())
	requireEvicted(t, handle(ctrl))
}

// EvictionOptions.Freeze is checked, and the error names the field, the
// flag and the value.
func TestFreezeNameValidated(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    types.NamespacedName
		want string
	}{
		{"no namespace", types.NamespacedName{Name: "failover-freeze"}, "the namespace is empty"},
		{"no name", types.NamespacedName{Namespace: "karmada-system"}, "the name is empty"},
		{"a name no ConfigMap can have", types.NamespacedName{Namespace: "karmada-system", Name: "Freeze!"}, "Freeze!"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewEvictionController(EvictionOptions{Freeze: tc.n})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "EvictionOptions.Freeze (--eviction-freeze-configmap)")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := NewEvictionController(EvictionOptions{Freeze: freezeName})
	assert.NoError(t, err)
}

// The freeze informer asks the API server for the freeze ConfigMap alone,
// by a field selector on its name in its namespace, never for every
// ConfigMap; once it has read it, eviction_frozen says 1. The server here
// answers the watch-list request client-go makes first (initial events and
// the bookmark that ends them) and the plain list and watch it falls back
// to.
func TestFreezeInformerWatchesTheOneConfigMap(t *testing.T) {
	cm := freezeMap(map[string]string{"reason": "INC-123"})
	cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	cm.ResourceVersion = "7"
	requests := make(chan *http.Request, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests <- r
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		switch {
		case r.URL.Query().Get("watch") != "true":
			_ = enc.Encode(corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"},
				ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []corev1.ConfigMap{*cm}})
		case r.URL.Query().Get("sendInitialEvents") == "true":
			bookmark := &corev1.ConfigMap{TypeMeta: cm.TypeMeta, ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7",
				Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
			_ = enc.Encode(map[string]any{"type": "ADDED", "object": cm})
			_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": bookmark})
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	defer srv.Close()

	frozen := make(chan bool, 16)
	gate := newFreezeGate(freezeName, clocktesting.NewFakeClock(evictNow), gaugeFunc(func(f bool) { frozen <- f }), logr.Discard())
	require.NoError(t, gate.watch(&rest.Config{Host: srv.URL}))
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- gate.Start(ctx) }()

	timeout := time.After(time.Minute)
	var seen []string
	for read := false; !read; {
		select {
		case f := <-frozen:
			read = f && gate.hasSynced()
		case r := <-requests:
			seen = append(seen, r.URL.String())
			assert.Equal(t, "/api/v1/namespaces/karmada-system/configmaps", r.URL.Path)
			assert.Equal(t, "metadata.name=failover-freeze", r.URL.Query().Get("fieldSelector"), r.URL.String())
		case <-timeout:
			t.Fatalf("the freeze was never read; requests %v", seen)
		}
	}
	// The request that read it was sent before the read: it is in the
	// channel if the select took the read first.
	for len(seen) == 0 {
		select {
		case r := <-requests:
			seen = append(seen, r.URL.String())
			assert.Equal(t, "metadata.name=failover-freeze", r.URL.Query().Get("fieldSelector"), r.URL.String())
		case <-timeout:
			t.Fatal("the freeze was read with no request seen")
		}
	}
	s := gate.check()
	assert.True(t, s.frozen)
	assert.Contains(t, s.why, "INC-123")
	cancel()
	require.NoError(t, <-stopped)
}

// gaugeFunc is a frozenMetrics of a function.
type gaugeFunc func(bool)

func (f gaugeFunc) EvictionsFrozen(frozen bool) { f(frozen) }

// Through the real queue and Limiter: while frozen, queued items wait
// (none written, none dropped); thawed, they go at the rate in force, the
// first at once on the bucket's one permit and no burst beyond it, though
// every deferred call gave its permit back during the freeze.
func TestThawResumesAtTheRateInForce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 4
		var bindings []client.Object
		for i := range n {
			b := newBinding(nil)
			b.Name = fmt.Sprintf("web-%d", i)
			bindings = append(bindings, b)
		}
		var written atomic.Int64
		c := worldBuilder(t, bindings...).WithInterceptorFuncs(interceptor.Funcs{
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				written.Add(1)
				return c.Update(ctx, obj, opts...)
			},
		}).Build()
		ctrl := newController(t, EvictionOptions{Freeze: freezeName, DisableLedger: true}, c, &recorded{})
		clk := ctrl.opts.Clock.(*clocktesting.FakeClock)
		gauge := &frozenGauge{}
		ctrl.freeze = newFreezeGate(freezeName, clk, gauge, logr.Discard())
		ctrl.freeze.onThaw = []func(){ctrl.thawed} // as SetupWithManager does
		ctrl.freeze.set(freezeMap(map[string]string{"reason": "INC-123"}))

		tracker := ratelimit.NewTracker()
		tracker.Set("member1", true)
		tracker.Set("member2", false)
		rate := ratelimit.DefaultConfig() // 0.5/s with 1 of 2 clusters faulty
		lim, err := ratelimit.NewLimiter(rate, tracker, ratelimit.WithClock(clk))
		require.NoError(t, err)
		k := resourceBindings()
		q, err := evictionqueue.New(evictionqueue.Config{Name: ResourceBindingQueue, Pacer: lim, Clock: clk}, ctrl.evictHandler(k))
		require.NoError(t, err)
		k.q, ctrl.kinds = q, []*kind{k}
		for i := range n {
			q.Add(evictionqueue.Item{Cluster: "member1", Key: fmt.Sprintf("shop/web-%d", i)})
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = q.Run(ctx) })

		for range 120 {
			synctest.Wait()
			clk.Step(time.Second)
		}
		synctest.Wait()
		assert.Zero(t, written.Load(), "evicted while frozen")
		assert.Equal(t, n, q.Len(), "an item left the queue while frozen")

		ctrl.freeze.set(nil)
		assert.False(t, gauge.now(t))
		// The items held back are tried again at once, not at their next
		// look freezeRecheck later: the first is evicted before the clock
		// moves. Then the bucket's one permit, and 0.5/s.
		for sec := 0; written.Load() < n; sec++ {
			require.Less(t, sec, 2*n+5, "not all evicted after the thaw")
			synctest.Wait()
			if sec == 0 {
				require.Positive(t, written.Load(), "nothing evicted at the thaw: the items wait for their next look")
			}
			assert.LessOrEqual(t, written.Load(), 1+int64(float64(sec)*rate.ResourceEvictionRate), "a burst %ds after the thaw", sec)
			clk.Step(time.Second)
		}
		cancel()
		wg.Wait()
	})
}

// Each freeze and thaw is logged once, with why: the reason, and at the
// thaw what the freeze was for.
func TestFreezeAndThawAreLogged(t *testing.T) {
	var lines []string
	logger := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
	gate := newFreezeGate(freezeName, clocktesting.NewFakeClock(evictNow), &frozenGauge{}, logger)
	gate.set(nil)
	assert.Empty(t, lines, "a start without a freeze logs nothing")
	gate.set(freezeMap(map[string]string{"reason": "network partition, INC-123"}))
	gate.check()
	gate.set(nil)
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], "every automatic eviction is frozen")
	assert.Contains(t, lines[0], `"why"="network partition, INC-123"`)
	assert.Contains(t, lines[0], `"configMap"="karmada-system/failover-freeze"`)
	assert.Contains(t, lines[1], "evictions thawed")
	assert.Contains(t, lines[1], `"frozenFor"="network partition, INC-123"`)
}

// Issue 37, defect 2: a freeze created while an attempt reads the API
// server stops that attempt's write. The freeze is looked at again just
// before the write: the item is held back as any frozen one (deferred, its
// permit back), the binding is not written, and the room the decision held
// is given back.
func TestFreezeDuringAnAttemptStopsItsWrite(t *testing.T) {
	var gate *freezeGate
	var once sync.Once
	c := worldBuilder(t, newBinding(nil)).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*clusterv1alpha1.Cluster); ok && key.Name == "member1" {
				// The operator freezes while the attempt reads.
				once.Do(func() { gate.set(freezeMap(map[string]string{"reason": "INC-7"})) })
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	ctrl := newController(t, EvictionOptions{Freeze: freezeName}, c, &recorded{})
	gate = newFreezeGate(freezeName, ctrl.opts.Clock, &frozenGauge{}, logr.Discard())
	ctrl.freeze = gate

	err := handle(ctrl)
	var parked *evictionqueue.ParkError
	require.True(t, errors.As(err, &parked), "not parked: %v", err)
	assert.Equal(t, engine.FreezeGate, parked.Gate)
	assert.Contains(t, err.Error(), "INC-7")
	var b workv1alpha2.ResourceBinding
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "web"}, &b))
	assert.Empty(t, b.Spec.GracefulEvictionTasks, "written after the freeze")
	assert.Empty(t, ctrl.opts.Ledger.Held(evictNow), "room held for an eviction that was not written")

	gate.set(nil)
	requireEvicted(t, handle(ctrl), "thawed, the same item is evicted")
}

package controllers

import (
	"context"
	"fmt"
	"os"
	"reflect"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	karmadacluster "github.com/karmada-io/karmada/pkg/controllers/cluster"
	"github.com/karmada-io/karmada/pkg/sharedcli/ratelimiterflag"
	karmadautil "github.com/karmada-io/karmada/pkg/util"
	"github.com/karmada-io/karmada/pkg/util/fedinformer/keys"
	"github.com/karmada-io/karmada/pkg/util/indexregistry"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clienttesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/internal/cputime"
)

// The benchmarks of this file measure the library's controllers side by
// side with Karmada v1.18's own taint manager at a fork's scale (issue 28):
// 100, 1,000 and 5,000 clusters × 10,000 and 50,000 bindings. A tenth of
// the bindings are on member-00000, the tainted cluster whose taint is
// acted on; the others are spread over the other clusters. By default they
// run at the size CI can afford, 100 × 10,000; FAILOVER_BENCH_SCALE=full
// runs every size:
//
//	cd karmada && FAILOVER_BENCH_SCALE=full go test -run '^$' -bench 'Scale' -benchtime 1x ./controllers/
//
// Measured so on 2 shared cores (issue 28), library against Karmada:
//
//	clusters × bindings          100×10k  100×50k  1k×10k  1k×50k  5k×10k  5k×50k
//	queueing, cache, CPU ratio     1.26     1.33     1.03    1.01    1.64    1.36
//	heap per queued item ratio     0.92     1.11     0.88    1.04    1.06    0.97
//
// and decisions/s, after the Fleet's index, the Ledger's running sums and
// the handler's cached binding (three runs each, 1k×50k and 5k×50k):
//
//	decisions/s, library          13,476 12,641 13,086 | 12,986 13,004 11,731
//	decisions/s, Karmada           8,719  8,821  8,959 |  7,157  6,160  6,119
//	CPU per eviction, library     106 µs 112 µs 109 µs | 113 µs 111 µs 122 µs
//	CPU per eviction, Karmada      46 µs  51 µs  46 µs |  47 µs  52 µs  55 µs
//
// The library's CPU per eviction is its reads from the API server (the
// Cluster, and the clusters a check relies on), which the fake API server
// answers by encoding and decoding JSON; Karmada decides on its cache.

// scaleSize is a fleet of clusters holding bindings.
type scaleSize struct{ clusters, bindings int }

func (s scaleSize) String() string { return fmt.Sprintf("%dx%d", s.clusters, s.bindings) }

// onTainted is how many of the size's bindings are on member-00000.
func (s scaleSize) onTainted() int { return s.bindings / 10 }

// scaleSizes are the sizes to run: FAILOVER_BENCH_SCALE=full for every
// one, else the smallest.
func scaleSizes() []scaleSize {
	if os.Getenv("FAILOVER_BENCH_SCALE") != "full" {
		return []scaleSize{{100, 10000}}
	}
	var out []scaleSize
	for _, n := range []int{100, 1000, 5000} {
		for _, m := range []int{10000, 50000} {
			out = append(out, scaleSize{n, m})
		}
	}
	return out
}

// scaleBindings returns the size's bindings as benchBinding makes them,
// typed as the manager's cache returns them: the first tenth on
// member-00000, the others one after another on member-00001 and up.
func scaleBindings(s scaleSize) []*workv1alpha2.ResourceBinding {
	out := make([]*workv1alpha2.ResourceBinding, s.bindings)
	gvk := schema.GroupVersionKind{Group: workv1alpha2.GroupName, Version: workv1alpha2.GroupVersion.Version, Kind: "ResourceBinding"}
	for i := range out {
		cluster := "member-00000"
		if i >= s.onTainted() {
			cluster = fmt.Sprintf("member-%05d", 1+i%(s.clusters-1))
		}
		out[i] = benchBinding(fmt.Sprintf("web-%05d", i), cluster)
		out[i].SetGroupVersionKind(gvk)
	}
	return out
}

// evictionCount counts the writes that moved a binding off member-00000, and
// closes done at the want-th.
type evictionCount struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

func (e *evictionCount) add() {
	if e.n.Add(1) == e.want {
		close(e.done)
	}
}

// scaleWorld is benchWorld at size s, with the size's bindings, indexed by
// cluster for Karmada's taint manager and for the library's, as one fake
// API server; ev counts its evictions when not nil.
func scaleWorld(b *testing.B, s scaleSize, ev *evictionCount) client.WithWatch {
	b.Helper()
	objs := benchClusters(s.clusters)
	for _, rb := range scaleBindings(s) {
		objs = append(objs, rb)
	}
	var evicted func()
	if ev != nil {
		evicted = ev.add
	}
	return benchAPIServer(b, objs, nil, nil, evicted)
}

// benchAPIServer is a fake API server holding objs, its bindings indexed by
// cluster for Karmada's taint manager and for the library's. onRead, when
// set, is called for each GET and LIST it serves, onWrite for each UPDATE,
// and onEvicted for each ResourceBinding written off member-00000.
func benchAPIServer(b *testing.B, objs []client.Object, onRead, onWrite, onEvicted func()) client.WithWatch {
	b.Helper()
	call := func(f func()) {
		if f != nil {
			f()
		}
	}
	byCluster := func(o client.Object) []string { return clusterNames(&o.(*workv1alpha2.ResourceBinding).Spec) }
	scheme := benchScheme(b)
	// The fake client's default tracker manages fields, and builds a REST
	// mapper of the whole scheme for each write (about 1.7 ms, more than
	// either taint manager spends on an eviction): a plain one instead.
	tracker := clienttesting.NewObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder())
	return fake.NewClientBuilder().WithScheme(scheme).WithObjectTracker(tracker).WithObjects(objs...).
		WithIndex(&workv1alpha2.ResourceBinding{}, indexregistry.ResourceBindingIndexByFieldCluster, byCluster).
		WithIndex(&workv1alpha2.ClusterResourceBinding{}, indexregistry.ClusterResourceBindingIndexByFieldCluster, func(o client.Object) []string {
			return clusterNames(&o.(*workv1alpha2.ClusterResourceBinding).Spec)
		}).
		WithIndex(&workv1alpha2.ResourceBinding{}, clusterIndex, byCluster).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
				call(onRead)
				return c.Get(ctx, key, o, opts...)
			},
			// Karmada's taint manager keys what it lists by its kind, which
			// the manager's cache sets and the fake client leaves empty.
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				call(onRead)
				if err := c.List(ctx, list, opts...); err != nil {
					return err
				}
				return setKinds(c.Scheme(), list)
			},
			Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
				call(onWrite)
				if err := c.Update(ctx, o, opts...); err != nil {
					return err
				}
				if rb, ok := o.(*workv1alpha2.ResourceBinding); ok && !rb.Spec.TargetContains("member-00000") {
					call(onEvicted)
				}
				return nil
			},
		}).Build()
}

// setKinds sets the kind of every object of list, as the manager's cache
// does.
func setKinds(s *runtime.Scheme, list client.ObjectList) error {
	return meta.EachListItem(list, func(o runtime.Object) error {
		gvks, _, err := s.ObjectKinds(o)
		if err == nil {
			o.GetObjectKind().SetGroupVersionKind(gvks[0])
		}
		return err
	})
}

// startKarmada starts tm with its workers and returns once they exist, and
// the function that stops them. Start sets its workers up in its own
// goroutine and blocks, and a Reconcile before that would read them while
// they are set: the log line of the second worker's start is the only sign
// it gives, so a log sink waits for it.
func startKarmada(b *testing.B, tm *karmadacluster.NoExecuteTaintManager) (stop func()) {
	b.Helper()
	started := make(chan struct{})
	klog.SetLogger(logr.New(&startSink{seen: func(msg string) {
		if strings.Contains(msg, "eviction worker cluster-binding-eviction") {
			close(started)
		}
	}}))
	// Its workers log as they stop, after this returns, over the
	// benchmarks' output: they log nowhere.
	defer klog.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = tm.Start(ctx) }()
	select {
	case <-started:
	case <-time.After(time.Minute):
		b.Fatal("Karmada's taint manager did not start its workers")
	}
	return func() { cancel(); <-stopped }
}

// startSink is a logr sink that passes each message to seen once and
// discards it.
type startSink struct {
	once sync.Mutex
	seen func(msg string)
	done bool
}

func (*startSink) Init(logr.RuntimeInfo)  {}
func (*startSink) Enabled(level int) bool { return level == 0 }
func (s *startSink) Info(_ int, msg string, _ ...any) {
	s.once.Lock()
	defer s.once.Unlock()
	if !s.done && strings.Contains(msg, "eviction worker cluster-binding-eviction") {
		s.done = true
		s.seen(msg)
	}
}
func (*startSink) Error(error, string, ...any)      {}
func (s *startSink) WithValues(...any) logr.LogSink { return s }
func (s *startSink) WithName(string) logr.LogSink   { return s }
func (s *startSink) WithCallDepth(int) logr.LogSink { return s }
func (s *startSink) GetCallStackHelper() func()     { return func() {} }

var _ logr.CallStackHelperLogSink = (*startSink)(nil)

// karmadaTaintManager is Karmada v1.18's taint manager on c with its rates
// out of the way: its eviction rate at 10^6/s, and its default controller
// rate limiter (10/s, which its worker asks for every item under one key,
// so the per-item backoff would grow to its maximum) as fast.
func karmadaTaintManager(c client.Client, workers int) *karmadacluster.NoExecuteTaintManager {
	return &karmadacluster.NoExecuteTaintManager{
		Client: c, EventRecorder: record.NewFakeRecorder(0),
		ClusterTaintEvictionRetryFrequency: time.Hour, ConcurrentReconciles: workers, EnableNoExecuteTaintEviction: true,
		EvictionQueueOptions: karmadacluster.EvictionQueueOptions{ResourceEvictionRate: 1e6},
		RateLimiterOptions: ratelimiterflag.Options{RateLimiterBaseDelay: time.Nanosecond, RateLimiterMaxDelay: time.Nanosecond,
			RateLimiterQPS: 1e6, RateLimiterBucketSize: 1e6},
	}
}

// BenchmarkScaleEvictions is issue 28's eviction decisions per second with
// the pacing out of the way: the bindings on member-00000 (a tenth of the
// size's) evicted by Karmada's taint manager (a reconcile of the cluster
// queues them, one worker writes them) and by the library's (its
// reconcile of the cluster queues them, an unpaced queue with one worker
// writes them), each on a fresh fake API server holding the
// size's clusters and bindings. Both read through a cache (cacheClient,
// made before the clock starts: each binding is written once, so it need
// not see the writes); the library's fresh reads go to the fake API server,
// as they go to the API server. decisions/s is bindings evicted per second
// of wall time, cpu-ns/eviction the process's CPU time per eviction.
func BenchmarkScaleEvictions(b *testing.B) {
	ctx := context.Background()
	for _, s := range scaleSizes() {
		m := s.onTainted()
		// run times the evictions of the bindings on member-00000: prepare
		// readies a taint manager on c (the fake API server) and cc (its
		// cache) and returns what starts the evictions and what stops its
		// workers.
		run := func(b *testing.B, prepare func(c client.WithWatch, cc *cacheClient) (start, stop func())) {
			var elapsed, cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				ev := &evictionCount{want: int64(m), done: make(chan struct{})}
				c := scaleWorld(b, s, ev)
				start, stop := prepare(c, newCacheClient(b, c))
				goruntime.GC()
				cpu0, _ := cputime.Used()
				began := time.Now()
				b.StartTimer()
				start()
				<-ev.done
				b.StopTimer()
				elapsed += time.Since(began)
				cpu1, _ := cputime.Used()
				cpu += cpu1 - cpu0
				stop()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N*m)/elapsed.Seconds(), "decisions/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*m), "cpu-ns/eviction")
		}
		b.Run(fmt.Sprintf("karmada/%v", s), func(b *testing.B) {
			run(b, func(_ client.WithWatch, cc *cacheClient) (func(), func()) {
				tm := karmadaTaintManager(cc, 1)
				stop := startKarmada(b, tm)
				return func() {
					if _, err := tm.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "member-00000"}}); err != nil {
						b.Fatal(err)
					}
				}, stop
			})
		})
		b.Run(fmt.Sprintf("library/%v", s), func(b *testing.B) {
			run(b, func(c client.WithWatch, cc *cacheClient) (func(), func()) {
				ctrl, k := libraryTaintManager(b, cc)
				ctrl.reader = c
				q, err := evictionqueue.New(evictionqueue.Config{Name: k.queue}, ctrl.evictHandler(k))
				if err != nil {
					b.Fatal(err)
				}
				k.q = q
				// Its handlers log through their context's logger.
				runCtx, cancel := context.WithCancel(logr.NewContext(ctx, logr.Discard()))
				stopped := make(chan struct{})
				go func() { defer close(stopped); _ = q.Run(runCtx) }()
				return func() { queueTainted(b, ctrl, k) }, func() { cancel(); <-stopped }
			})
		})
	}
}

// libraryTaintManager is the library's EvictionController on c, as
// SetupWithManager would make it, and its ResourceBinding kind, without
// its queue.
func libraryTaintManager(b *testing.B, c client.WithWatch) (*EvictionController, *kind) {
	b.Helper()
	ctrl, err := NewEvictionController(EvictionOptions{EnableNoExecuteTaintEviction: true})
	if err != nil {
		b.Fatal(err)
	}
	ctrl.client, ctrl.reader, ctrl.recorder = c, c, &recorded{}
	syncFleet(b, ctrl, c)
	k := resourceBindings()
	ctrl.kinds = []*kind{k}
	return ctrl, k
}

// queueTainted is what the library's controllers do when member-00000's
// taints change: the reconcile of the Cluster judges and queues each of
// its bindings.
func queueTainted(b *testing.B, ctrl *EvictionController, k *kind) {
	// A controller's reconcile has its logger in its context.
	ctx := logr.NewContext(context.Background(), logr.Discard())
	if _, err := ctrl.manageClusterTaints(ctx, k, "member-00000"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkScaleQueueing is issue 28's taints → every affected binding
// queued: the CPU time, per binding, from a reconcile of member-00000,
// whose taint is new, until each of its bindings (a tenth of the size's)
// is in an eviction queue. Karmada's taint manager lists them and adds them
// to its binding-eviction worker (whose workers do not run); the library's
// reconcile of the Cluster lists them, decides for each and adds it to the
// queue (not running). Both read a cache: "cache" serves the
// reads from indexers with deep copies, as the manager's cache does; "fake"
// from the fake API server, which encodes and decodes every object it
// returns in JSON.
func BenchmarkScaleQueueing(b *testing.B) {
	ctx := context.Background()
	for _, s := range scaleSizes() {
		m := s.onTainted()
		fc := scaleWorld(b, s, nil)
		for _, reads := range []string{"cache", "fake"} {
			var c client.WithWatch = fc
			if reads == "cache" {
				c = newCacheClient(b, fc)
			}
			b.Run(fmt.Sprintf("karmada/%s/%v", reads, s), func(b *testing.B) {
				var cpu time.Duration
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					tm := karmadaTaintManager(c, 0)
					stop := startKarmada(b, tm)
					goruntime.GC()
					start, _ := cputime.Used()
					b.StartTimer()
					if _, err := tm.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "member-00000"}}); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					end, _ := cputime.Used()
					cpu += end - start
					stop()
					b.StartTimer()
				}
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*m), "cpu-ns/binding")
			})
			b.Run(fmt.Sprintf("library/%s/%v", reads, s), func(b *testing.B) {
				ctrl, k := libraryTaintManager(b, c)
				var cpu time.Duration
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					q, err := evictionqueue.New(evictionqueue.Config{Name: k.queue}, ctrl.evictHandler(k))
					if err != nil {
						b.Fatal(err)
					}
					k.q = q
					goruntime.GC()
					start, _ := cputime.Used()
					b.StartTimer()
					queueTainted(b, ctrl, k)
					b.StopTimer()
					end, _ := cputime.Used()
					cpu += end - start
					if q.Len() != m {
						b.Fatalf("queued %d bindings, want %d", q.Len(), m)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*m), "cpu-ns/binding")
			})
		}
	}
}

// cacheClient serves Get and List of Clusters and ResourceBindings from
// indexers holding what the fake API server held when it was made, as the
// manager's cache serves them: a deep copy of each object, typed, unless
// the caller passes client.UnsafeDisableDeepCopy, and a List by an indexed
// field reads the index. Everything else goes to the
// fake API server. Writes do not reach the indexers: it is for readers.
type cacheClient struct {
	client.WithWatch
	stores map[reflect.Type]toolscache.Indexer
	kinds  map[reflect.Type]schema.GroupVersionKind
}

func newCacheClient(b *testing.B, c client.WithWatch) *cacheClient {
	b.Helper()
	cc := &cacheClient{WithWatch: c, stores: map[reflect.Type]toolscache.Indexer{}, kinds: map[reflect.Type]schema.GroupVersionKind{}}
	byCluster := func(o any) ([]string, error) { return clusterNames(&o.(*workv1alpha2.ResourceBinding).Spec), nil }
	for _, l := range []struct {
		list     client.ObjectList
		indexers toolscache.Indexers
	}{
		{&clusterv1alpha1.ClusterList{}, toolscache.Indexers{}},
		{&workv1alpha2.ResourceBindingList{}, toolscache.Indexers{
			"field:" + clusterIndex: byCluster, "field:" + indexregistry.ResourceBindingIndexByFieldCluster: byCluster}},
	} {
		if err := c.List(context.Background(), l.list); err != nil {
			b.Fatal(err)
		}
		idx := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, l.indexers)
		err := meta.EachListItem(l.list, func(o runtime.Object) error {
			t := reflect.TypeOf(o)
			cc.stores[t] = idx
			cc.kinds[t] = o.GetObjectKind().GroupVersionKind()
			return idx.Add(o)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return cc
}

func (c *cacheClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	idx := c.stores[reflect.TypeOf(obj)]
	if idx == nil {
		return c.WithWatch.Get(ctx, key, obj, opts...)
	}
	k := key.Name
	if key.Namespace != "" {
		k = key.Namespace + "/" + key.Name
	}
	o, ok, err := idx.GetByKey(k)
	switch {
	case err != nil:
		return err
	case !ok:
		return c.WithWatch.Get(ctx, key, obj, opts...) // its NotFound
	}
	gopts := (&client.GetOptions{}).ApplyOptions(opts)
	if unsafe := gopts.UnsafeDisableDeepCopy != nil && *gopts.UnsafeDisableDeepCopy; unsafe {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o).Elem())
		return nil
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o.(runtime.Object).DeepCopyObject()).Elem())
	obj.GetObjectKind().SetGroupVersionKind(c.kinds[reflect.TypeOf(obj)])
	return nil
}

func (c *cacheClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	var idx toolscache.Indexer
	if items := reflect.ValueOf(list).Elem().FieldByName("Items"); items.IsValid() { // a typed list
		idx = c.stores[reflect.PointerTo(items.Type().Elem())]
	}
	if idx == nil || lo.FieldSelector == nil {
		return c.WithWatch.List(ctx, list, opts...)
	}
	reqs := lo.FieldSelector.Requirements()
	if len(reqs) != 1 {
		return fmt.Errorf("cacheClient: field selector %v: want one requirement", lo.FieldSelector)
	}
	found, err := idx.ByIndex("field:"+reqs[0].Field, reqs[0].Value)
	if err != nil {
		return err
	}
	out := make([]runtime.Object, 0, len(found))
	for _, o := range found {
		cp := o.(runtime.Object)
		if lo.UnsafeDisableDeepCopy == nil || !*lo.UnsafeDisableDeepCopy {
			cp = cp.DeepCopyObject()
			cp.GetObjectKind().SetGroupVersionKind(c.kinds[reflect.TypeOf(cp)])
		}
		out = append(out, cp)
	}
	return meta.SetList(list, out)
}

// BenchmarkScaleQueuedItem is issue 28's heap per queued item: every
// binding of the size (a tenth on member-00000, the others spread over
// the other clusters, as when every cluster fails) queued in Karmada's
// binding-eviction worker, keyed as its taint manager keys them
// (keys.FederatedKey), and in the library's eviction queue, as its taint
// manager makes its items (queueItem). retained-B/item is the heap the
// queue keeps, after a GC, per item; the bindings, as the cache holds
// them, are not counted. A fill before the measured ones lets Karmada's
// global metrics make their series for every cluster.
func BenchmarkScaleQueuedItem(b *testing.B) {
	for _, s := range scaleSizes() {
		bindings := scaleBindings(s)
		measure := func(b *testing.B, fill func() (stop func())) {
			goroutines := goruntime.NumGoroutine()
			fill()()
			var retained int64
			var before, after goruntime.MemStats
			b.ReportAllocs()
			for b.Loop() {
				settle(b, goroutines)
				gc()
				goruntime.ReadMemStats(&before)
				stop := fill()
				gc()
				goruntime.ReadMemStats(&after)
				retained += int64(after.HeapAlloc) - int64(before.HeapAlloc)
				stop()
			}
			b.ReportMetric(float64(retained)/float64(b.N*len(bindings)), "retained-B/item")
		}
		b.Run(fmt.Sprintf("karmada/%v", s), func(b *testing.B) {
			klog.SetLogger(logr.Discard()) // its queue logs as it stops
			measure(b, func() func() {
				w := karmadacluster.NewEvictionWorker(karmadacluster.EvictionWorkerOptions{
					Name:          "binding-eviction",
					ReconcileFunc: func(karmadautil.QueueKey) error { return nil },
					ResourceKindFunc: func(key any) (string, string) { // its taint manager's, for ResourceBindings
						return key.(keys.FederatedKey).Cluster, "ResourceBinding"
					},
					EvictionQueueOptions: karmadacluster.EvictionQueueOptions{ResourceEvictionRate: 1e6},
				})
				ctx, cancel := context.WithCancel(context.Background())
				w.Run(ctx, 0) // no worker: its queue only, ended by cancel
				for _, rb := range bindings {
					key, err := keys.FederatedKeyFunc(rb.Spec.Clusters[0].Name, rb)
					if err != nil {
						b.Fatal(err)
					}
					w.Add(key)
				}
				return func() { goruntime.KeepAlive(w); cancel() }
			})
		})
		b.Run(fmt.Sprintf("library/%v", s), func(b *testing.B) {
			measure(b, func() func() {
				q, err := evictionqueue.New(evictionqueue.Config{Name: ResourceBindingQueue}, func(context.Context, evictionqueue.Item) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				for _, rb := range bindings {
					q.Add(queueItem(rb, &rb.Spec, rb.Spec.Clusters[0].Name))
				}
				return func() { goruntime.KeepAlive(q) }
			})
		})
	}
}

// settle waits until no more than n goroutines run: a stopped Karmada
// queue's goroutines end after its stop returns, and hold its items until
// then.
func settle(b *testing.B, n int) {
	for deadline := time.Now().Add(time.Minute); goruntime.NumGoroutine() > n; goruntime.Gosched() {
		if time.Now().After(deadline) {
			b.Fatalf("%d goroutines still run, want %d", goruntime.NumGoroutine(), n)
		}
	}
}

// gc collects twice: a sync.Pool that has been used (the library's queue
// recycles its entries in one) is reachable from the runtime until the
// second collection after, and the queue around it with it.
func gc() {
	goruntime.GC()
	goruntime.GC()
}

// BenchmarkReconcileRequest is what controller-runtime would add to each
// binding of a tainted cluster if the Cluster's watch asked for a
// reconcile of each binding, as the library's taint manager once did: the
// request through the binding controller's workqueue to its reconciler,
// with controller-runtime's per-reconcile logger, ID and metrics. Here the
// reconciler does nothing; cpu-ns/request is the CPU time per request.
// Neither taint manager pays it now: each reconciles the Cluster and
// queues its bindings itself.
func BenchmarkReconcileRequest(b *testing.B) {
	const n = 1000
	var left atomic.Int64
	done := make(chan struct{})
	queue := make(chan workqueue.TypedRateLimitingInterface[reconcile.Request], 1)
	ctrl, err := crcontroller.NewUnmanaged("bench", crcontroller.Options{
		SkipNameValidation: ptr.To(true),
		Logger:             logr.Discard(),
		Reconciler: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			if left.Add(-1) == 0 {
				done <- struct{}{}
			}
			return reconcile.Result{}, nil
		}),
	})
	if err != nil {
		b.Fatal(err)
	}
	err = ctrl.Watch(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		queue <- q
		return nil
	}))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = ctrl.Start(ctx) }()
	defer func() { cancel(); <-stopped }()
	q := <-queue
	reqs := make([][]reconcile.Request, 2) // rounds alternate: the last of one may still be in its reconcile
	for r := range reqs {
		for i := range n {
			reqs[r] = append(reqs[r], reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "shop", Name: fmt.Sprintf("web-%d-%05d", r, i)}})
		}
	}
	var cpu time.Duration
	round := 0
	b.ReportAllocs()
	for b.Loop() {
		left.Store(n)
		start, _ := cputime.Used()
		for _, r := range reqs[round%2] {
			q.Add(r)
		}
		<-done
		end, _ := cputime.Used()
		cpu += end - start
		round++
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/request")
}

//go:build !failover_newest

// The model harness implements controller-runtime's manager.Manager, whose
// method set changes between releases (GetEventRecorder's result type after
// v0.23): hack/newest.sh, which builds on the newest controller-runtime,
// leaves it out with the tag failover_newest. Every other run builds it.

package controllers

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// This file runs the controllers in a real controller-runtime manager whose
// API server is controller-runtime's fake client: the manager's cache is
// client-go's SharedIndexInformers fed by the fake client's List and Watch
// (informerCache), its client reads that cache and writes to the fake
// (cachedClient), its API reader is the fake itself and its Events are
// kept in memory (eventLog). Everything is meant to run in a
// testing/synctest bubble: the informers, workqueues and eviction queues
// then wait on the bubble's clock, and synctest.Wait tells when they are
// all idle.

// informerCache is a cache.Cache over one SharedIndexInformer per kind, each
// listing and watching the fake API server, with controller-runtime's field
// indexes. A watch event reaches the informer lag() after it happened,
// keeping their order, as a real cache lags behind the API server.
type informerCache struct {
	scheme *runtime.Scheme
	api    client.WithWatch
	lag    func() time.Duration

	mu        sync.Mutex
	informers map[schema.GroupVersionKind]toolscache.SharedIndexInformer
	watches   []*listWatch
	ctx       context.Context // set by Start: informers made later start at once
	wg        sync.WaitGroup
}

var _ cache.Cache = (*informerCache)(nil)

func newInformerCache(scheme *runtime.Scheme, api client.WithWatch, lag func() time.Duration) *informerCache {
	return &informerCache{scheme: scheme, api: api, lag: lag, informers: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{}}
}

func (c *informerCache) informerFor(gvk schema.GroupVersionKind) (toolscache.SharedIndexInformer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if inf, ok := c.informers[gvk]; ok {
		return inf, nil
	}
	obj, err := c.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	listGVK := gvk
	listGVK.Kind += "List"
	if _, err := c.scheme.New(listGVK); err != nil {
		return nil, err
	}
	lw := &listWatch{api: c.api, lag: c.lag, newList: func() client.ObjectList {
		l, _ := c.scheme.New(listGVK)
		return l.(client.ObjectList)
	}}
	inf := toolscache.NewSharedIndexInformer(lw, obj, 0, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	c.informers[gvk] = inf
	c.watches = append(c.watches, lw)
	if c.ctx != nil {
		c.runLocked(inf)
	}
	return inf, nil
}

func (c *informerCache) runLocked(inf toolscache.SharedIndexInformer) {
	ctx := c.ctx
	c.wg.Go(func() { inf.RunWithContext(ctx) })
}

func (c *informerCache) gvkOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return gvk, err
	}
	if _, isList := obj.(client.ObjectList); isList {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	return gvk, nil
}

func (c *informerCache) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	gvk, err := c.gvkOf(obj)
	if err != nil {
		return nil, err
	}
	return c.informerFor(gvk)
}

func (c *informerCache) GetInformerForKind(_ context.Context, gvk schema.GroupVersionKind, _ ...cache.InformerGetOption) (cache.Informer, error) {
	return c.informerFor(gvk)
}

func (c *informerCache) RemoveInformer(context.Context, client.Object) error {
	return fmt.Errorf("model: RemoveInformer is not supported")
}

// Start runs the informers until ctx ends, then waits for them to stop.
func (c *informerCache) Start(ctx context.Context) error {
	c.mu.Lock()
	c.ctx = ctx
	for _, inf := range c.informers {
		c.runLocked(inf)
	}
	c.mu.Unlock()
	<-ctx.Done()
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, lw := range c.watches {
		lw.stop()
	}
	return nil
}

func (c *informerCache) WaitForCacheSync(ctx context.Context) bool {
	c.mu.Lock()
	synced := make([]toolscache.InformerSynced, 0, len(c.informers))
	for _, inf := range c.informers {
		synced = append(synced, inf.HasSynced)
	}
	c.mu.Unlock()
	return toolscache.WaitForCacheSync(ctx.Done(), synced...)
}

// indexName is controller-runtime's name of a field index.
func indexName(field string) string { return "field:" + field }

func (c *informerCache) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	gvk, err := c.gvkOf(obj)
	if err != nil {
		return err
	}
	inf, err := c.informerFor(gvk)
	if err != nil {
		return err
	}
	return inf.AddIndexers(toolscache.Indexers{indexName(field): func(o any) ([]string, error) {
		return extract(o.(client.Object)), nil
	}})
}

func (c *informerCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	gvk, err := c.gvkOf(obj)
	if err != nil {
		return err
	}
	inf, err := c.informerFor(gvk)
	if err != nil {
		return err
	}
	k := key.Name
	if key.Namespace != "" {
		k = key.Namespace + "/" + key.Name
	}
	item, ok, err := inf.GetIndexer().GetByKey(k)
	if err != nil {
		return err
	}
	if !ok {
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		return apierrors.NewNotFound(gvr.GroupResource(), key.Name)
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return toUnstructured(item.(runtime.Object), gvk, u)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(item.(runtime.Object).DeepCopyObject()).Elem())
	return nil
}

// toUnstructured sets u to o, of kind gvk, as a real cache's unstructured
// informer holds it (the ClusterTaintPolicy controller reads its policies
// so): one informer per kind here serves typed and unstructured reads. With
// -model.policies=false the read fails, the policy controller taints no
// cluster and nothing is evicted, as when the harness could not serve it.
func toUnstructured(o runtime.Object, gvk schema.GroupVersionKind, u *unstructured.Unstructured) error {
	if !*modelPolicies {
		return fmt.Errorf("model: unstructured %s read: off with -model.policies=false", gvk.Kind)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return err
	}
	u.Object = m
	u.SetGroupVersionKind(gvk)
	return nil
}

func (c *informerCache) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := c.gvkOf(list)
	if err != nil {
		return err
	}
	inf, err := c.informerFor(gvk)
	if err != nil {
		return err
	}
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	var items []any
	if lo.FieldSelector != nil && !lo.FieldSelector.Empty() {
		reqs := lo.FieldSelector.Requirements()
		if len(reqs) != 1 {
			return fmt.Errorf("model: field selector %q: only one exact match is supported", lo.FieldSelector)
		}
		if items, err = inf.GetIndexer().ByIndex(indexName(reqs[0].Field), reqs[0].Value); err != nil {
			return err
		}
	} else {
		items = inf.GetIndexer().List()
	}
	out := make([]runtime.Object, 0, len(items))
	for _, it := range items {
		o := it.(client.Object)
		if lo.Namespace != "" && o.GetNamespace() != lo.Namespace {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		out = append(out, o.DeepCopyObject())
	}
	if ul, ok := list.(*unstructured.UnstructuredList); ok {
		ul.Items = make([]unstructured.Unstructured, len(out))
		for i, o := range out {
			if err := toUnstructured(o, gvk, &ul.Items[i]); err != nil {
				return err
			}
		}
		return nil
	}
	return meta.SetList(list, out)
}

// listWatch lists and watches one kind on the fake API server. The fake's
// watch does not replay from a resourceVersion, so the watch that follows
// a list is opened before it: an event in between is seen twice, never
// missed.
type listWatch struct {
	api     client.WithWatch
	lag     func() time.Duration
	newList func() client.ObjectList

	mu   sync.Mutex
	next watch.Interface // opened before the last list, for the watch that follows it
}

var _ toolscache.ListerWatcherWithContext = (*listWatch)(nil)

func (lw *listWatch) ListWithContext(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	w, err := lw.api.Watch(ctx, lw.newList())
	if err != nil {
		return nil, err
	}
	list := lw.newList()
	if err := lw.api.List(ctx, list); err != nil {
		w.Stop()
		return nil, err
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.next != nil {
		lw.next.Stop()
	}
	lw.next = newLaggingWatch(w, lw.lag)
	return list, nil
}

func (lw *listWatch) WatchWithContext(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	lw.mu.Lock()
	w := lw.next
	lw.next = nil
	lw.mu.Unlock()
	if w != nil {
		return w, nil
	}
	in, err := lw.api.Watch(ctx, lw.newList())
	if err != nil {
		return nil, err
	}
	return newLaggingWatch(in, lw.lag), nil
}

func (lw *listWatch) List(o metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), o)
}

func (lw *listWatch) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), o)
}

// IsWatchListSemanticsUnSupported tells client-go's reflector that the fake
// cannot stream a list through a watch: it lists, then watches.
func (lw *listWatch) IsWatchListSemanticsUnSupported() bool { return true }

// stop stops a watch opened for a list and never taken.
func (lw *listWatch) stop() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.next != nil {
		lw.next.Stop()
		lw.next = nil
	}
}

// laggingWatch delivers the events of in, in order, each lag() after it
// came (never before the one ahead of it). It reads in at once, so the
// fake's fixed-size watch channel never fills.
type laggingWatch struct {
	in   watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func newLaggingWatch(in watch.Interface, lag func() time.Duration) *laggingWatch {
	w := &laggingWatch{in: in, out: make(chan watch.Event), stop: make(chan struct{})}
	go w.run(lag)
	return w
}

func (w *laggingWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *laggingWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}

func (w *laggingWatch) run(lag func() time.Duration) {
	defer close(w.out)
	type due struct {
		ev watch.Event
		at time.Time
	}
	var queue []due
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	in := w.in.ResultChan()
	for {
		var fire <-chan time.Time
		var out chan watch.Event
		var head watch.Event
		if len(queue) > 0 {
			if d := time.Until(queue[0].at); d > 0 {
				timer.Reset(d)
				fire = timer.C
			} else {
				out, head = w.out, queue[0].ev
			}
		}
		select {
		case ev, ok := <-in:
			if !ok {
				return
			}
			at := time.Now().Add(lag())
			if n := len(queue); n > 0 && at.Before(queue[n-1].at) {
				at = queue[n-1].at
			}
			queue = append(queue, due{ev, at})
		case <-fire:
		case out <- head:
			queue = queue[1:]
		case <-w.stop:
			return
		}
		timer.Stop()
	}
}

// cachedClient is the manager's client: it reads the cache and writes to
// the API server, as controller-runtime's default client does.
type cachedClient struct {
	client.Client
	cache cache.Cache
}

func (c cachedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.cache.Get(ctx, key, obj, opts...)
}

func (c cachedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.cache.List(ctx, list, opts...)
}

// recordedEvent is one Event a controller recorded.
type recordedEvent struct {
	at                time.Time
	key               string // the binding's (regarding object's) key
	typ, reason, note string
}

// eventLog keeps the Events the controllers record, for the invariants.
type eventLog struct {
	mu     sync.Mutex
	events []recordedEvent
}

var _ events.EventRecorder = (*eventLog)(nil)

func (l *eventLog) Eventf(regarding runtime.Object, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	key := ""
	if o, ok := regarding.(client.Object); ok {
		key = client.ObjectKeyFromObject(o).String()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, recordedEvent{at: time.Now(), key: key, typ: eventtype, reason: reason, note: fmt.Sprintf(note, args...)})
}

// last returns the latest Event about key whose note names cluster.
func (l *eventLog) last(key, cluster string) (recordedEvent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.events) - 1; i >= 0; i-- {
		e := l.events[i]
		// The notes say "not evicted from cluster NAME: why" and "moved
		// off cluster NAME into a graceful eviction task: why". A
		// failback's Events are about the cluster it goes back to.
		if failbackReasons[e.reason] {
			continue
		}
		if e.key == key && (strings.Contains(e.note, "cluster "+cluster+":") || strings.Contains(e.note, "cluster "+cluster+" ")) {
			return e, true
		}
	}
	return recordedEvent{}, false
}

// failbackReasons are the reasons of the FailbackController's Events.
var failbackReasons = map[string]bool{EventReasonFailedBack: true, EventReasonFailbackNotPlaced: true, EventReasonInvalidFailbackWindow: true}

// modelManager is a manager whose API reader is the fake API server itself
// and whose Events go to an eventLog.
type modelManager struct {
	manager.Manager
	api    client.Reader
	events *eventLog
}

func (m *modelManager) GetAPIReader() client.Reader                  { return m.api }
func (m *modelManager) GetEventRecorder(string) events.EventRecorder { return m.events }

// newModelManager returns a manager over the fake API server api: nothing
// it starts opens a socket (no metrics, probes or leader election) and the
// REST config it is given is never dialled.
func newModelManager(scheme *runtime.Scheme, api client.WithWatch, lag func() time.Duration, log *eventLog, logger logr.Logger) (*modelManager, error) {
	c := newInformerCache(scheme, api, lag)
	mapper := meta.NewDefaultRESTMapper(nil)
	for gvk := range scheme.AllKnownTypes() {
		scope := meta.RESTScopeNamespace
		if strings.HasPrefix(gvk.Kind, "Cluster") || gvk.Kind == "Namespace" || gvk.Kind == "Node" {
			scope = meta.RESTScopeRoot
		}
		mapper.Add(gvk, scope)
	}
	mgr, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{
		Scheme:                 scheme,
		Logger:                 logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		// Each restart adds controllers of the same names in this process.
		// The priority queue of controller-runtime before v0.25 may leave a
		// goroutine blocked for ever when its manager stops
		// (kubernetes-sigs/controller-runtime#3538, fixed by #3540): a
		// bubble that ends with it is a deadlock, which ends the test
		// binary. The model stops a manager at every leader change: its
		// controllers use client-go's workqueue.
		Controller:     config.Controller{SkipNameValidation: ptr.To(true), UsePriorityQueue: ptr.To(false)},
		MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
		NewCache:       func(*rest.Config, cache.Options) (cache.Cache, error) { return c, nil },
		NewClient: func(*rest.Config, client.Options) (client.Client, error) {
			return cachedClient{Client: api, cache: c}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	return &modelManager{Manager: mgr, api: api, events: log}, nil
}

// noExecuteTaints are the taints the eviction controller judges a binding
// by, with EnableNoExecuteTaintEviction and no spec.failover.
func noExecuteTaints(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/ratelimit"
)

// The example's stand-ins: a Node is a member cluster, and a ConfigMap
// labelled ClusterLabel=<node> is a workload scheduled to that cluster.
const (
	// ClusterLabel names the cluster (Node) a workload (ConfigMap) runs on.
	ClusterLabel = "failover.example/cluster"
	// EvictedFromAnnotation records the cluster a workload was last moved off.
	EvictedFromAnnotation = "failover.example/evicted-from"
	// FaultyLabel=true marks a Node faulty like a NoExecute taint does, so the
	// example can be tried on a real cluster without evicting its pods.
	FaultyLabel = "failover.example/faulty"

	clusterIndex = "cluster"
)

// errNoTarget means every cluster but the faulty one is faulty too. The item
// is retried with backoff: a cluster may recover.
var errNoTarget = errors.New("no healthy cluster to move to")

// Options configure a Controller. Zero fields take the defaults stated.
type Options struct {
	// Rate is the fleet-wide rate rule. The zero Config pauses everything, so
	// the zero value here means ratelimit.DefaultConfig().
	Rate ratelimit.Config
	// Workers is the number of goroutines evicting. Default 2. The rate is
	// the Limiter's whatever this is.
	Workers int
	// Namespace restricts the watched workloads; "" watches all namespaces.
	Namespace string
	// Clock drives the Limiter and the workqueue's delays. Default: real.
	Clock clock.WithTicker
	// BaseBackoff and MaxBackoff bound the per-item exponential backoff of a
	// failed eviction. Defaults 1s and 5m.
	BaseBackoff, MaxBackoff time.Duration
	// OnEvict, if set, is called after every successful eviction, from the
	// worker that made it, before that worker takes its next item.
	OnEvict func(Eviction)
	// OnError, if set, is called after every failed eviction attempt; the item
	// is then retried with backoff.
	OnError func(key string, err error)
}

// Eviction is one workload moved off a faulty cluster.
type Eviction struct {
	Key      string    // the workload, "namespace/name"
	From, To string    // the faulty cluster and the one it moved to
	Permit   time.Time // when Limiter.Wait let it through, on the Controller's clock
	At       time.Time // when the move was made
}

// Stats is a snapshot of what a Controller has done.
type Stats struct {
	Queued  int // items in the workqueue (waiting, ready or backing off)
	Waiting int // workers blocked in Limiter.Wait
	Evicted int // workloads moved
	Failed  int // eviction attempts that failed; each is retried with AddRateLimited
	Skipped int // items dropped unprocessed: their cluster recovered or they were gone
}

// Controller moves workloads off faulty clusters at the rate the fleet's
// health allows.
//
// Its workqueue is a plain client-go TypedRateLimitingInterface[string] whose
// rate limiter is MaxOf(per-item exponential backoff, DynamicRateLimiter),
// and every worker takes one Limiter.Wait permit before evicting. New items
// enter with Add, not AddRateLimited: the permit is taken at processing time,
// where a pause or a slower rate still applies, and an item is charged once.
// (Pacing new items through AddRateLimited as well would charge each item
// twice, a slot from When and a permit from Wait, halving the rate.)
// A failed eviction goes back with AddRateLimited: its delay is the larger of
// its backoff and the fleet's next slot, and while the fleet is paused it is
// the DynamicRateLimiter's re-check delay, so failing items stay off the
// workers during a pause. A retry thus costs one slot more than a first try.
//
// Nothing queued is state of its own: the queue is derived from the API
// (faulty Nodes and the ConfigMaps labelled onto them), so items left when Run
// returns are found again by the next controller's initial list.
type Controller struct {
	client    kubernetes.Interface
	opts      Options
	factory   informers.SharedInformerFactory
	wfactory  informers.SharedInformerFactory
	nodes     cache.SharedIndexInformer
	workloads cache.SharedIndexInformer
	tracker   *ratelimit.Tracker
	limiter   *ratelimit.Limiter
	clock     clock.WithTicker

	started atomic.Bool
	synced  chan struct{} // closed once Run has full caches and has queued what they hold
	waiting atomic.Int64
	// queue is set by Run before it starts the informers and workers, which
	// read it without the lock (starting them orders the write before their
	// reads); Stats, called from anywhere, reads it under mu.
	queue workqueue.TypedRateLimitingInterface[string]

	mu    sync.Mutex
	stats Stats
}

// New wires a Controller to client. It starts nothing: informers, the
// workqueue and the workers live inside Run.
func New(client kubernetes.Interface, opts Options) (*Controller, error) {
	if client == nil {
		return nil, errors.New("workqueue example: client is nil")
	}
	if opts.Rate == (ratelimit.Config{}) {
		opts.Rate = ratelimit.DefaultConfig()
	}
	if opts.Workers < 0 {
		return nil, fmt.Errorf("workqueue example: Workers is %d; want ≥ 0 (0 selects 2)", opts.Workers)
	}
	if opts.Workers == 0 {
		opts.Workers = 2
	}
	if opts.BaseBackoff < 0 || opts.MaxBackoff < 0 {
		return nil, fmt.Errorf("workqueue example: negative backoff (BaseBackoff %v, MaxBackoff %v)", opts.BaseBackoff, opts.MaxBackoff)
	}
	if opts.BaseBackoff == 0 {
		opts.BaseBackoff = time.Second
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 5 * time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}

	c := &Controller{client: client, opts: opts, clock: opts.Clock, synced: make(chan struct{})}
	// Nodes are cluster-scoped; workloads may be limited to one namespace.
	c.factory = informers.NewSharedInformerFactory(client, 0)
	c.wfactory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(opts.Namespace))
	c.nodes = c.factory.Core().V1().Nodes().Informer()
	c.workloads = c.wfactory.Core().V1().ConfigMaps().Informer()
	if err := c.workloads.AddIndexers(cache.Indexers{clusterIndex: workloadCluster}); err != nil {
		return nil, fmt.Errorf("workqueue example: indexing workloads: %w", err)
	}

	// The Tracker keeps fleet health in step with the Node informer; the
	// Limiter reads it in O(1) and wakes its waiters when it changes.
	var err error
	if c.tracker, err = ratelimit.NewInformerSource(c.nodes, isFaultyNode); err != nil {
		return nil, err
	}
	if c.limiter, err = ratelimit.NewLimiter(opts.Rate, c.tracker, ratelimit.WithClock(opts.Clock)); err != nil {
		return nil, err
	}

	if _, err := c.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.nodeChanged(obj) },
		UpdateFunc: func(_, obj any) { c.nodeChanged(obj) },
	}); err != nil {
		return nil, fmt.Errorf("workqueue example: watching nodes: %w", err)
	}
	if _, err := c.workloads.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.workloadChanged(obj) },
		UpdateFunc: func(_, obj any) { c.workloadChanged(obj) },
	}); err != nil {
		return nil, fmt.Errorf("workqueue example: watching workloads: %w", err)
	}
	return c, nil
}

// NewQueueRateLimiter is the rate limiter of the controller's workqueue:
// per-item exponential backoff (base, max) combined with a slot of the
// fleet-wide Limiter. MaxOf asks both and returns the larger delay, and
// Forget resets both.
func NewQueueRateLimiter(l *ratelimit.Limiter, base, max time.Duration) workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, max),
		ratelimit.NewDynamicRateLimiter[string](l),
	)
}

// Synced is closed once Run has synced its caches and queued every workload
// on a faulty cluster they hold.
func (c *Controller) Synced() <-chan struct{} { return c.synced }

// Limiter is the fleet-wide Limiter the workers wait on.
func (c *Controller) Limiter() *ratelimit.Limiter { return c.limiter }

// Health is the fleet's health as the Tracker sees it.
func (c *Controller) Health() (ratelimit.Health, error) { return c.tracker.Health() }

// Stats returns what the controller has done so far.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	s, q := c.stats, c.queue
	c.mu.Unlock()
	if q != nil {
		s.Queued = q.Len()
	}
	s.Waiting = int(c.waiting.Load())
	return s
}

// Run starts the informers, waits for their caches, runs the workers and
// blocks until ctx ends; then it shuts the queue down, waits for the workers
// and stops the informers, so no goroutine outlives it. A Controller runs
// once: informers cannot be restarted.
func (c *Controller) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("workqueue example: Run called twice; create a new Controller")
	}
	// The workqueue starts its delay goroutine when created, so it is created
	// here and not in New.
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		NewQueueRateLimiter(c.limiter, c.opts.BaseBackoff, c.opts.MaxBackoff),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "evictions", Clock: c.clock},
	)
	c.mu.Lock()
	c.queue = q
	c.mu.Unlock()
	defer func() {
		c.factory.Shutdown()
		c.wfactory.Shutdown()
	}()
	c.factory.Start(ctx.Done())
	c.wfactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.nodes.HasSynced, c.workloads.HasSynced) {
		c.queue.ShutDown()
		return fmt.Errorf("workqueue example: caches did not sync: %w", ctx.Err())
	}
	// Events of the initial lists may have come in an order (a faulty node
	// before its workloads, or the reverse) in which neither handler saw both;
	// with both caches full, one pass finds every workload to move.
	for _, obj := range c.nodes.GetIndexer().List() {
		c.nodeChanged(obj)
	}
	close(c.synced)

	var wg sync.WaitGroup
	for range c.opts.Workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// processNext handles one item; false means the worker should stop.
func (c *Controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)

	// An item whose cluster recovered (or whose workload is gone) costs no
	// permit.
	if _, ok := c.evictionNeeded(key); !ok {
		c.skip(key)
		return true
	}

	// The guard: the pause and the rate in force now are enforced here, at
	// processing time, whatever delay the item was queued with.
	c.waiting.Add(1)
	err := c.limiter.Wait(ctx)
	c.waiting.Add(-1)
	permit := c.clock.Now()
	if err != nil {
		// Shutting down. The item is not lost: it is derived from the API
		// and the next controller lists it again.
		return false
	}
	// Health may have changed while we waited; the permit is spent either way.
	from, ok := c.evictionNeeded(key)
	if !ok {
		c.skip(key)
		return true
	}
	to, err := c.evict(ctx, key)
	if err != nil {
		// Requeue first, so that whoever OnError tells sees the retry
		// already scheduled.
		c.queue.AddRateLimited(key)
		c.mu.Lock()
		c.stats.Failed++
		c.mu.Unlock()
		if c.opts.OnError != nil {
			c.opts.OnError(key, err)
		}
		return true
	}
	c.queue.Forget(key)
	c.mu.Lock()
	c.stats.Evicted++
	c.mu.Unlock()
	if c.opts.OnEvict != nil {
		c.opts.OnEvict(Eviction{Key: key, From: from, To: to, Permit: permit, At: c.clock.Now()})
	}
	return true
}

func (c *Controller) skip(key string) {
	c.queue.Forget(key)
	c.mu.Lock()
	c.stats.Skipped++
	c.mu.Unlock()
}

// evictionNeeded reports whether the workload key still sits on a faulty
// cluster, and which.
func (c *Controller) evictionNeeded(key string) (cluster string, needed bool) {
	obj, exists, err := c.workloads.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return "", false
	}
	cluster = obj.(*corev1.ConfigMap).Labels[ClusterLabel]
	return cluster, c.clusterFaulty(cluster)
}

func (c *Controller) clusterFaulty(name string) bool {
	obj, exists, err := c.nodes.GetIndexer().GetByKey(name)
	return err == nil && exists && isFaultyNode(obj)
}

// evict moves the workload to the healthy cluster running the fewest
// workloads and records where it came from.
func (c *Controller) evict(ctx context.Context, key string) (to string, err error) {
	obj, exists, err := c.workloads.GetIndexer().GetByKey(key)
	if err != nil {
		return "", err
	}
	if !exists {
		return "", fmt.Errorf("workload %s is gone", key)
	}
	cm := obj.(*corev1.ConfigMap)
	from := cm.Labels[ClusterLabel]
	if to, err = c.pickTarget(from); err != nil {
		return "", err
	}
	cm = cm.DeepCopy()
	cm.Labels[ClusterLabel] = to
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[EvictedFromAnnotation] = from
	// The update carries the cached resourceVersion: if the cache is behind
	// an earlier move of this workload, the API server refuses this one
	// (Conflict), and the retry finds the workload already moved.
	if _, err := c.client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return "", err
	}
	return to, nil
}

func (c *Controller) pickTarget(from string) (string, error) {
	best, bestLoad := "", 0
	for _, obj := range c.nodes.GetIndexer().List() {
		n := obj.(*corev1.Node)
		if n.Name == from || isFaultyNode(n) {
			continue
		}
		ws, err := c.workloads.GetIndexer().ByIndex(clusterIndex, n.Name)
		if err != nil {
			return "", err
		}
		if best == "" || len(ws) < bestLoad || (len(ws) == bestLoad && n.Name < best) {
			best, bestLoad = n.Name, len(ws)
		}
	}
	if best == "" {
		return "", errNoTarget
	}
	return best, nil
}

func (c *Controller) nodeChanged(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok || !isFaultyNode(n) {
		return
	}
	ws, err := c.workloads.GetIndexer().ByIndex(clusterIndex, n.Name)
	if err != nil {
		return
	}
	keys := make([]string, 0, len(ws))
	for _, w := range ws {
		if key, err := cache.MetaNamespaceKeyFunc(w); err == nil {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys) // a stable order makes the demo's output repeatable
	for _, k := range keys {
		c.queue.Add(k)
	}
}

func (c *Controller) workloadChanged(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || !c.clusterFaulty(cm.Labels[ClusterLabel]) {
		return
	}
	if key, err := cache.MetaNamespaceKeyFunc(cm); err == nil {
		c.queue.Add(key)
	}
}

// workloadCluster indexes workloads by the cluster they run on.
func workloadCluster(obj any) ([]string, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, nil
	}
	if c, ok := cm.Labels[ClusterLabel]; ok && c != "" {
		return []string{c}, nil
	}
	return nil, nil
}

// isFaultyNode reads a Node as a member cluster: faulty when it carries a
// NoExecute or PreferNoExecute taint (failover.IsFaulty), or FaultyLabel=true.
// On a real cluster the node lifecycle controller adds
// node.kubernetes.io/unreachable:NoExecute to a node that stops reporting, so
// a lost node is a faulty cluster here.
func isFaultyNode(obj any) bool {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return false
	}
	return n.Labels[FaultyLabel] == "true" || failover.IsFaulty(failover.Cluster{
		Name:   n.Name,
		Labels: n.Labels,
		Region: n.Labels[corev1.LabelTopologyRegion],
		Zone:   n.Labels[corev1.LabelTopologyZone],
		Taints: n.Spec.Taints,
	})
}

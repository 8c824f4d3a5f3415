package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/taintpolicy"
)

// Defaults for the zero fields of Config.
const (
	DefaultWorkers            = 2
	DefaultResyncPeriod       = 10 * time.Minute
	DefaultFieldManager       = "failover-taintcontroller"
	DefaultMaxConflictRetries = 5
)

// Config configures a Controller. Only Client is required.
type Config struct {
	// Client reaches the API server that stores the Cluster and
	// ClusterTaintPolicy objects.
	Client dynamic.Interface
	// Workers is how many clusters are evaluated and written in parallel.
	// Default DefaultWorkers.
	Workers int
	// ResyncPeriod is how often the informers replay every object, so every
	// cluster is evaluated again even if no event arrives. Default
	// DefaultResyncPeriod.
	ResyncPeriod time.Duration
	// FieldManager names this controller in the managedFields of the clusters
	// it updates. Default DefaultFieldManager.
	FieldManager string
	// MaxConflictRetries is how many times one evaluation re-reads and
	// retries after an update conflict before the cluster goes back to the
	// queue with backoff. Default DefaultMaxConflictRetries.
	MaxConflictRetries int
	// Clock supplies the evaluation time and paces the queue's delays.
	// Default the real clock.
	Clock clock.WithTicker
	// Registerer receives the controller's metrics. Nil: none are registered.
	Registerer prometheus.Registerer
	// EvaluatorOptions are passed to taintpolicy.NewEvaluator.
	EvaluatorOptions []taintpolicy.Option
}

// Controller keeps the spec.taints of Karmada Cluster objects as the
// ClusterTaintPolicy objects in the same API server decide.
//
// Each cluster is a key in a work queue. A worker takes a key, reads the
// cluster from the informer cache, evaluates it against the current policies
// at the clock's now, and, if the desired taint list differs from the one on
// the object, sends an Update carrying the resourceVersion it read. On a
// conflict it reads the cluster again from the API server, evaluates that
// object and tries again (up to MaxConflictRetries times, then the key goes
// back to the queue with backoff). Because the Evaluator only adds or
// removes taints whose key and effect a policy targeting the cluster lists,
// and every write starts from the object the server last returned, a taint
// written by anyone else survives. When the Evaluator reports a window still
// open (Result.RequeueAfter), the key is queued again after that delay.
//
// Policies are re-read from the informer cache whenever one is added,
// changed (a new generation) or deleted, and every cluster is queued. A
// deleted policy no longer lists its taints, so the controller no longer
// touches them: they stay on the clusters until removed by hand or by another
// policy that lists the same key and effect. This is deliberate; removing
// every taint of a policy that was deleted by mistake would make workloads
// return to clusters that are still failing.
//
// A Controller runs once: Run blocks until its context ends. Its methods are
// safe for concurrent use.
type Controller struct {
	cfg      Config
	clusters dynamic.NamespaceableResourceInterface
	factory  dynamicinformer.DynamicSharedInformerFactory
	clusterInformer,
	policyInformer informers.GenericInformer
	metrics *controllerMetrics

	// queue is created in Run: the delaying queue starts a goroutine when it
	// is built, and constructors start none.
	queue workqueue.TypedRateLimitingInterface[string]
	ran   atomic.Bool

	// evaluator is safe for concurrent use and keeps its per-cluster memory
	// when its policies are replaced.
	evaluator *taintpolicy.Evaluator

	// policyGeneration counts policy events; workers bring the evaluator's
	// policies up to date when it is ahead of evaluatorGeneration. Handlers
	// only bump it, so policies are always read from a complete cache by a
	// worker, never from a half-filled one during the initial list (which
	// could drop a taint that a not-yet-seen policy also lists).
	policyGeneration atomic.Uint64

	// mu serializes policy reloads; evaluatorGeneration is the generation
	// whose policies the evaluator holds.
	mu                  sync.Mutex
	evaluatorGeneration atomic.Uint64
}

// New returns a Controller for cfg. It validates cfg and starts nothing.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil {
		return nil, errors.New("controller: Config.Client is nil")
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("controller: Config.Workers is %d, want at least 1", cfg.Workers)
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.ResyncPeriod < 0 {
		return nil, fmt.Errorf("controller: Config.ResyncPeriod is %v, want positive", cfg.ResyncPeriod)
	}
	if cfg.ResyncPeriod == 0 {
		cfg.ResyncPeriod = DefaultResyncPeriod
	}
	if cfg.FieldManager == "" {
		cfg.FieldManager = DefaultFieldManager
	}
	if cfg.MaxConflictRetries < 0 {
		return nil, fmt.Errorf("controller: Config.MaxConflictRetries is %d, want 0 or more", cfg.MaxConflictRetries)
	}
	if cfg.MaxConflictRetries == 0 {
		cfg.MaxConflictRetries = DefaultMaxConflictRetries
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	m, err := newControllerMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("controller: registering metrics: %w", err)
	}
	evaluator, err := taintpolicy.NewEvaluator(nil, cfg.EvaluatorOptions...)
	if err != nil {
		return nil, fmt.Errorf("controller: Config.EvaluatorOptions: %w", err)
	}

	factory := dynamicinformer.NewDynamicSharedInformerFactory(cfg.Client, cfg.ResyncPeriod)
	c := &Controller{
		cfg:             cfg,
		clusters:        cfg.Client.Resource(ClusterGVR),
		factory:         factory,
		clusterInformer: factory.ForResource(ClusterGVR),
		policyInformer:  factory.ForResource(PolicyGVR),
		metrics:         m,
		evaluator:       evaluator,
	}
	// Generation 1 is "policies never loaded"; the first sync loads them.
	c.policyGeneration.Store(1)
	if _, err := c.clusterInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.clusterAdded,
		UpdateFunc: c.clusterUpdated,
		DeleteFunc: c.clusterDeleted,
	}); err != nil {
		return nil, fmt.Errorf("controller: cluster informer: %w", err)
	}
	if _, err := c.policyInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.policiesChanged() },
		UpdateFunc: c.policyUpdated,
		DeleteFunc: func(any) { c.policiesChanged() },
	}); err != nil {
		return nil, fmt.Errorf("controller: policy informer: %w", err)
	}
	return c, nil
}

// Run starts the informers, waits for their caches, and runs the workers
// until ctx ends. It then stops taking keys, lets the workers finish the
// cluster each is writing, stops the informers and returns nil. It returns
// an error if the caches never sync or if Run was already called.
func (c *Controller) Run(ctx context.Context) error {
	if !c.ran.CompareAndSwap(false, true) {
		return errors.New("controller: Run called twice")
	}
	logger := klog.FromContext(ctx)
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "taintcontroller", Clock: c.cfg.Clock},
	)
	defer c.factory.Shutdown()
	defer c.queue.ShutDown()

	c.factory.Start(ctx.Done())
	logger.Info("Waiting for informer caches")
	for gvr, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("controller: cache for %s never synced", gvr)
		}
	}

	logger.Info("Starting workers", "workers", c.cfg.Workers)
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker, time.Second) })
	}
	<-ctx.Done()
	logger.Info("Stopping workers")
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	name, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(name)
	requeueAfter, err := c.sync(ctx, name)
	if err != nil {
		c.metrics.syncs.WithLabelValues("error").Inc()
		// A closed context is shutdown, not a failure worth a log line.
		if ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Evaluating cluster failed; retrying with backoff", "cluster", name)
		}
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	if requeueAfter > 0 {
		c.queue.AddAfter(name, requeueAfter)
	}
	return true
}

// sync brings the taints of one cluster to what the policies decide and
// returns when the cluster should be evaluated again (0: only on events).
func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	logger := klog.FromContext(ctx).WithValues("cluster", name)
	obj, exists, err := c.clusterInformer.Informer().GetIndexer().GetByKey(name)
	if err != nil {
		return 0, err
	}
	if !exists {
		c.forget(name)
		return 0, nil
	}
	cached, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return 0, fmt.Errorf("controller: cluster %q: cache holds %T", name, obj)
	}
	// The cache's object is shared with every other reader: write to a copy.
	u := cached.DeepCopy()
	for attempt := 0; ; attempt++ {
		cluster, err := karmada.FromUnstructuredCluster(u)
		if err != nil {
			return 0, err
		}
		res, err := c.evaluate(ctx, cluster)
		if err != nil {
			return 0, err
		}
		if !res.Changed() {
			c.metrics.syncs.WithLabelValues("unchanged").Inc()
			return res.RequeueAfter, nil
		}
		if err := karmada.ApplyUnstructuredTaints(u, res.Taints); err != nil {
			return 0, err
		}
		updated, err := c.clusters.Update(ctx, u, metav1.UpdateOptions{FieldManager: c.cfg.FieldManager})
		switch {
		case err == nil:
			c.metrics.syncs.WithLabelValues("updated").Inc()
			c.metrics.taintChanges.WithLabelValues("added").Add(float64(len(res.Added)))
			c.metrics.taintChanges.WithLabelValues("removed").Add(float64(len(res.Removed)))
			logger.Info("Updated cluster taints", "added", taintList(res.Added), "removed", taintList(res.Removed),
				"resourceVersion", updated.GetResourceVersion(), "requeueAfter", res.RequeueAfter)
			return res.RequeueAfter, nil
		case apierrors.IsNotFound(err):
			return 0, nil
		case !apierrors.IsConflict(err) || attempt >= c.cfg.MaxConflictRetries:
			return 0, fmt.Errorf("controller: updating cluster %q: %w", name, err)
		}
		// Someone wrote the cluster since it was read. The cache may still be
		// behind, so read the server's current object; the next evaluation
		// starts from it and therefore keeps whatever that writer did.
		c.metrics.conflicts.Inc()
		logger.V(2).Info("Update conflicted; reading the cluster again", "attempt", attempt+1)
		u, err = c.clusters.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("controller: reading cluster %q after a conflict: %w", name, err)
		}
	}
}

// evaluate runs the evaluator at the clock's now, first loading the policies
// if any changed since they were last loaded.
func (c *Controller) evaluate(ctx context.Context, cluster failover.Cluster) (taintpolicy.Result, error) {
	if err := c.loadPolicies(ctx); err != nil {
		return taintpolicy.Result{}, err
	}
	return c.evaluator.Evaluate(cluster, c.cfg.Clock.Now()), nil
}

// loadPolicies replaces the evaluator's policies with every valid policy in
// the cache, if a policy event arrived since the last load. An invalid
// policy is logged, counted and left out: a typo in one policy neither stops
// the others nor makes the controller remove that policy's taints (an
// ignored policy lists none, and unlisted taints are never touched).
func (c *Controller) loadPolicies(ctx context.Context) error {
	if c.evaluatorGeneration.Load() == c.policyGeneration.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Read the generation before the cache: an event arriving while we list
	// bumps it again, and the next sync loads once more.
	gen := c.policyGeneration.Load()
	if c.evaluatorGeneration.Load() == gen {
		return nil
	}
	logger := klog.FromContext(ctx)
	objs, err := c.policyInformer.Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	policies := make([]taintpolicy.ClusterTaintPolicy, 0, len(objs))
	invalid := 0
	for _, obj := range objs {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		p, err := PolicyFromUnstructured(u)
		if err == nil {
			// The evaluator's options can refuse a policy Validate accepts
			// (WithDenyNoExecute); ask it, one policy at a time, so one
			// refusal does not block the whole set.
			_, err = taintpolicy.NewEvaluator([]taintpolicy.ClusterTaintPolicy{p}, c.cfg.EvaluatorOptions...)
		}
		if err != nil {
			invalid++
			logger.Error(err, "Ignoring invalid ClusterTaintPolicy", "policy", u.GetName())
			continue
		}
		policies = append(policies, p)
	}
	if err := c.evaluator.SetPolicies(policies); err != nil {
		return fmt.Errorf("controller: loading policies: %w", err)
	}
	c.metrics.policies.WithLabelValues("valid").Set(float64(len(policies)))
	c.metrics.policies.WithLabelValues("invalid").Set(float64(invalid))
	c.evaluatorGeneration.Store(gen)
	logger.V(1).Info("Loaded ClusterTaintPolicies", "valid", len(policies), "invalid", invalid)
	return nil
}

// forget drops what the evaluator remembers about a deleted cluster.
func (c *Controller) forget(name string) {
	c.evaluator.Forget(name)
}

func (c *Controller) clusterAdded(obj any) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		c.queue.Add(u.GetName())
	}
}

// clusterUpdated queues a cluster whose evaluation input changed, and every
// cluster on a resync (same resourceVersion). Heartbeat-only status writes
// are skipped.
func (c *Controller) clusterUpdated(oldObj, newObj any) {
	oldU, ok1 := oldObj.(*unstructured.Unstructured)
	newU, ok2 := newObj.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return
	}
	if oldU.GetResourceVersion() != newU.GetResourceVersion() {
		oldC, err1 := karmada.FromUnstructuredCluster(oldU)
		newC, err2 := karmada.FromUnstructuredCluster(newU)
		if err1 == nil && err2 == nil && apiequality.Semantic.DeepEqual(oldC, newC) {
			return
		}
	}
	c.queue.Add(newU.GetName())
}

func (c *Controller) clusterDeleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		c.queue.Add(u.GetName())
	}
}

// policyUpdated ignores resyncs and metadata-only edits: a ClusterTaintPolicy
// has no status, so its generation moves exactly when its spec does.
func (c *Controller) policyUpdated(oldObj, newObj any) {
	oldU, ok1 := oldObj.(*unstructured.Unstructured)
	newU, ok2 := newObj.(*unstructured.Unstructured)
	if ok1 && ok2 && oldU.GetGeneration() == newU.GetGeneration() {
		return
	}
	c.policiesChanged()
}

func (c *Controller) policiesChanged() {
	c.policyGeneration.Add(1)
	for _, name := range c.clusterInformer.Informer().GetIndexer().ListKeys() {
		c.queue.Add(name)
	}
}

// taintList renders taints for a log line.
func taintList(taints []corev1.Taint) []string {
	out := make([]string, 0, len(taints))
	for _, t := range taints {
		out = append(out, t.ToString())
	}
	return out
}

package fork

import (
	"context"
	"errors"
	"fmt"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/metrics"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

// FieldManager is the field manager of every write the reconcilers make.
const FieldManager = "karmadafork"

// Queue names: the names Karmada v1.18's taint manager gives its two queues,
// so the name label of the eviction series (metrics.WithKarmadaNames) is the
// one existing dashboards filter on.
const (
	ResourceBindingQueue        = "binding-eviction"
	ClusterResourceBindingQueue = "cluster-binding-eviction"
)

// Options configure Setup. The zero value of each field means the default
// stated beside it, except Rate, which main fills from flags
// (ratelimit.Config.AddFlags beside Karmada's ClusterFailoverOptions.AddFlags).
type Options struct {
	// Rate is the fleet-wide eviction rate rule; it is validated.
	Rate ratelimit.Config
	// EnableNoExecuteTaintEviction is Karmada's
	// --enable-no-execute-taint-eviction: without it NoExecute taints evict
	// nothing (PreferNoExecute taints, which a binding opts into with
	// spec.failover.cluster, still do).
	EnableNoExecuteTaintEviction bool
	// NoExecuteTaintEvictionPurgeMode is Karmada's
	// --no-execute-taint-eviction-purge-mode: the purge mode of a task for
	// a binding without spec.failover.cluster. Default Gracefully.
	NoExecuteTaintEvictionPurgeMode failover.PurgeMode
	// GracefulEvictionTimeout ends a task without its own
	// gracePeriodSeconds this long after it was created (Karmada's
	// --graceful-eviction-timeout). Default 10m.
	GracefulEvictionTimeout time.Duration
	// Workers is the number of handler goroutines of each eviction queue.
	// The Limiter paces all of them together. Default 1.
	Workers int
	// Registerer receives the library's metrics, with Karmada's names
	// (metrics.WithKarmadaNames). Default controller-runtime's
	// metrics.Registry, which the manager serves.
	Registerer prometheus.Registerer
	// Now is the clock of the decisions. Default time.Now.
	Now func() time.Time
}

// Fork is the failover loop added to a manager by Setup.
type Fork struct {
	// Limiter paces both eviction queues; its rate follows fleet health.
	Limiter *ratelimit.Limiter
	// Queues are the eviction queues, by name (ResourceBindingQueue and
	// ClusterResourceBindingQueue).
	Queues map[string]*evictionqueue.Queue
}

// AddToScheme adds the kinds the reconcilers read and write: Kubernetes'
// own (Events, Leases) and Karmada v1.18's Cluster, policy and work kinds.
func AddToScheme(s *runtime.Scheme) error {
	return errors.Join(
		clientgoscheme.AddToScheme(s),
		clusterv1alpha1.Install(s),
		policyv1alpha1.Install(s),
		workv1alpha2.Install(s),
	)
}

// Setup adds the four reconcilers and the two eviction queues to mgr, whose
// scheme must hold AddToScheme's kinds. ctx is used only to get the Cluster
// informer that feeds fleet health. Nothing runs until mgr starts.
func Setup(ctx context.Context, mgr manager.Manager, opts Options) (*Fork, error) {
	if err := opts.Rate.Validate(); err != nil {
		return nil, err
	}
	if opts.NoExecuteTaintEvictionPurgeMode == "" {
		opts.NoExecuteTaintEvictionPurgeMode = failover.PurgeModeGracefully
	}
	switch opts.NoExecuteTaintEvictionPurgeMode {
	case failover.PurgeModeGracefully, failover.PurgeModeDirectly:
	default:
		return nil, fmt.Errorf("fork: Options.NoExecuteTaintEvictionPurgeMode (--no-execute-taint-eviction-purge-mode) %q: want Gracefully or Directly", opts.NoExecuteTaintEvictionPurgeMode)
	}
	if opts.GracefulEvictionTimeout < 0 {
		return nil, fmt.Errorf("fork: Options.GracefulEvictionTimeout (--graceful-eviction-timeout) %v: must not be negative", opts.GracefulEvictionTimeout)
	}
	if opts.GracefulEvictionTimeout == 0 {
		opts.GracefulEvictionTimeout = 10 * time.Minute
	}
	if opts.Workers < 0 {
		return nil, fmt.Errorf("fork: Options.Workers %d: must not be negative", opts.Workers)
	}
	if opts.Registerer == nil {
		opts.Registerer = crmetrics.Registry
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}

	m, err := metrics.New(opts.Registerer, metrics.WithKarmadaNames())
	if err != nil {
		return nil, err
	}
	inf, err := mgr.GetCache().GetInformer(ctx, &clusterv1alpha1.Cluster{})
	if err != nil {
		return nil, fmt.Errorf("fork: the Cluster informer: %w", err)
	}
	srcOpts := []ratelimit.SourceOption{ratelimit.WithSourceLogger(mgr.GetLogger().WithName("fleet-health"))}
	var domainOf func(cluster string) string // nil under the fleet rule
	if domain := opts.Rate.DisruptionDomain; domain.PerDomain() {
		// --disruption-domain: the Tracker counts each Cluster in its
		// region (zone, provider), and each queue paces an item by its
		// cluster's domain, read from the cache when the item is queued.
		srcOpts = append(srcOpts, ratelimit.WithDomains(func(obj any) []string { return clusterDomains(obj, domain) }))
		cache := mgr.GetCache()
		domainOf = func(name string) string {
			var c clusterv1alpha1.Cluster
			if err := cache.Get(context.Background(), client.ObjectKey{Name: name}, &c); err != nil {
				return "" // gone: the domain of clusters without one
			}
			return clusterDomains(&c, domain)[0]
		}
	}
	tracker, err := ratelimit.NewInformerSource(inf, clusterFaulty, srcOpts...)
	if err != nil {
		return nil, err
	}
	limiter, err := ratelimit.NewLimiter(opts.Rate, tracker, ratelimit.WithMetrics(m))
	if err != nil {
		return nil, err
	}

	assessor, err := gracefulevict.NewAssessor(gracefulevict.WithDefaultTimeout(opts.GracefulEvictionTimeout))
	if err != nil {
		return nil, err
	}
	f := &forker{
		opts:     opts,
		client:   mgr.GetClient(),
		reader:   mgr.GetAPIReader(),
		recorder: mgr.GetEventRecorder(FieldManager),
		assessor: assessor,
	}
	if err := f.indexBindings(ctx, mgr); err != nil {
		return nil, err
	}
	out := &Fork{Limiter: limiter, Queues: map[string]*evictionqueue.Queue{}}
	for _, k := range []*kind{resourceBindings(), clusterResourceBindings()} {
		q, err := evictionqueue.New(evictionqueue.Config{
			Name:    k.name,
			Workers: opts.Workers,
			Pacer:   limiter,
			Metrics: m,
			Logger:  mgr.GetLogger().WithName(k.name),
			// A multi-zone cluster's items are paced by its first zone.
			DomainOf: domainOf,
		}, f.evictHandler(k))
		if err != nil {
			return nil, err
		}
		k.queue = q
		out.Queues[k.name] = q
		f.kinds = append(f.kinds, k)
		// A plain RunnableFunc needs leader election: only the leader
		// evicts, and a standby's queue stays empty because its
		// controllers do not run either.
		if err := mgr.Add(manager.RunnableFunc(q.Run)); err != nil {
			return nil, err
		}
	}

	evaluator, err := taintpolicy.NewEvaluator(nil)
	if err != nil {
		return nil, err
	}
	if err := f.setupTaints(mgr, evaluator); err != nil {
		return nil, err
	}
	if err := f.setupRecovery(mgr); err != nil {
		return nil, err
	}
	for _, k := range f.kinds {
		if err := f.setupTaintManager(mgr, k); err != nil {
			return nil, err
		}
		if err := f.setupGraceful(mgr, k); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// forker holds what the reconcilers share.
type forker struct {
	opts     Options
	client   client.Client // the manager's cached client
	reader   client.Reader // the API server itself, for decisions that must not act on a stale cache
	recorder eventRecorder
	assessor *gracefulevict.Assessor
	kinds    []*kind
}

// eventRecorder is the one method of controller-runtime's recorder used.
type eventRecorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// clusterFaulty is fleet health's question: a Cluster with a NoExecute or
// PreferNoExecute taint is faulty. One that does not convert counts as
// faulty: its taints cannot be read, so it cannot be trusted as a target.
func clusterFaulty(obj any) bool {
	c, ok := obj.(*clusterv1alpha1.Cluster)
	if !ok {
		return false
	}
	fc, err := karmada.FromCluster(c)
	if err != nil {
		return true
	}
	return failover.IsFaulty(fc)
}

// clusterDomains is the disruption domains a Cluster counts in
// (ratelimit.DomainsOf): never empty, [""] for one without a region (zone,
// provider) or that does not convert.
func clusterDomains(obj any, d ratelimit.Domain) []string {
	c, ok := obj.(*clusterv1alpha1.Cluster)
	if !ok {
		return []string{""}
	}
	fc, err := karmada.FromCluster(c)
	if err != nil {
		return []string{""}
	}
	if ds := ratelimit.DomainsOf(fc, d); len(ds) > 0 {
		return ds
	}
	return []string{""}
}

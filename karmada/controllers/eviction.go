package controllers

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/metrics"
	"github.com/failoverkit/failover/ratelimit"
)

// DefaultClusterStatusUpdateFrequency is Karmada's
// --cluster-status-update-frequency: how often its cluster status
// controller reports the Clusters' resource summaries, which free the room
// the Ledger holds.
const DefaultClusterStatusUpdateFrequency = 10 * time.Second

// DefaultRefusalRecheck is how long an eviction refused for want of a
// target waits at most before it is decided again (EvictionOptions).
const DefaultRefusalRecheck = time.Minute

// Queue names: the names Karmada v1.18's taint manager gives its two
// queues, so the name label of the eviction series (Karmada's names,
// metrics.WithKarmadaNames) keeps the values existing dashboards filter on.
const (
	ResourceBindingQueue        = "binding-eviction"
	ClusterResourceBindingQueue = "cluster-binding-eviction"
)

// EvictionOptions tune the EvictionController. The zero value of each
// field means the default stated beside it. Inside karmada-controller-manager
// the init function fills the fields that mirror Karmada's own flags from
// them (package controllermanager).
type EvictionOptions struct {
	// Rate is the eviction rate rule shared by both queues, for the fleet
	// or per disruption domain (ratelimit.Config.AddFlags). The zero Config
	// means ratelimit.DefaultConfig(). It is validated.
	Rate ratelimit.Config
	// EnableNoExecuteTaintEviction is Karmada's
	// --enable-no-execute-taint-eviction, false by default as there: a
	// NoExecute taint alone then evicts nothing. A PreferNoExecute taint
	// still moves a binding that opted in with spec.failover.cluster.
	EnableNoExecuteTaintEviction bool
	// NoExecuteTaintEvictionPurgeMode is Karmada's
	// --no-execute-taint-eviction-purge-mode: the purge mode of the task of
	// a binding without spec.failover.cluster (karmada.EvictionPurgeMode).
	// Gracefully or Directly; default Gracefully.
	NoExecuteTaintEvictionPurgeMode failover.PurgeMode
	// StatefulFailoverInjection is Karmada's feature gate of that name
	// (default off): when on, the task of a binding whose
	// spec.failover.cluster has statePreservation rules carries the state
	// they extract from the evicted copy (karmada.PreservedLabelState).
	StatefulFailoverInjection bool
	// Workers is the number of handler goroutines of each eviction queue,
	// at most evictionqueue.MaxWorkers. The Limiter paces all of them
	// together. Default 1.
	Workers int
	// Registerer receives the eviction series under Karmada's names
	// (metrics.WithKarmadaNames: Karmada's own collectors, when registered
	// there already, are adopted). Default controller-runtime's
	// metrics.Registry, which the manager serves and on which
	// karmada-controller-manager registers its collectors.
	Registerer prometheus.Registerer
	// Clock is the clock of the decisions, the Limiter and the queues.
	// Default the real clock.
	Clock clock.WithTicker

	// Ledger holds room on the clusters the scheduler will put evicted
	// replicas on, for the evictions approved and not placed yet
	// (engine.Ledger). Resource summaries lag behind the scheduler, so
	// without it evictions checked one after another all count the same
	// room, and the scheduler puts them all where the summaries show most
	// (Karmada issue 6518). With it, an eviction the scheduler would put
	// where the room left is short waits (prescheduling.AwaitingCapacity):
	// it is tried again, without counting a failure or using up the rate,
	// until the summaries show the replicas in flight placed, their tasks
	// end or their hold passes (engine.WithHold). Both queues share it.
	// Nil means a new engine.Ledger holding for engine.DefaultHold, unless
	// DisableLedger is set. A task that ends, whoever ends it, gives its
	// room back at the summaries' next report, seen in the controller's
	// reconcile of the binding.
	Ledger *engine.Ledger
	// DisableLedger turns the Ledger off: every eviction the check finds
	// feasible goes ahead at once, counting the room the summaries show.
	DisableLedger bool
	// RefusalRecheck is how long an eviction the pre-scheduling check
	// refused (nowhere to go) waits at most before it is decided again. It
	// is decided again sooner when the fleet changes in a way that may
	// change the answer: a cluster loses its evicting taints or appears,
	// or a resource summary changes (all the changes of one
	// ClusterStatusUpdateFrequency decided together, within that period).
	// It waits parked in its queue, no longer than the queue's BackoffMax
	// (5m) whatever this says. Default DefaultRefusalRecheck.
	RefusalRecheck time.Duration
	// MaxInFlight caps the evictions of each queue in flight at once: a
	// handler call, and an eviction whose graceful eviction task is open
	// (evictionqueue.Config.MaxInFlight, as the descheduler KEP-1397
	// counts evictions that finish later against its limits). An eviction
	// beyond it waits in its queue. 0, the default: unlimited, as in
	// Karmada.
	MaxInFlight int
	// InFlightTTL is how long an eviction counts in flight at most when its
	// task is not seen to end nor seen removed from its binding by another
	// writer (evictionqueue.Config.InFlightTTL): then it is decided again,
	// and found done. Default Karmada's
	// --graceful-eviction-timeout default, 10m: the Assessor ends a task
	// without its own grace period then.
	InFlightTTL time.Duration
	// ClusterStatusUpdateFrequency is how often Karmada's cluster status
	// controller reports the Clusters' resource summaries (its
	// --cluster-status-update-frequency): an eviction the Ledger holds back
	// is checked again this often (at least the queues' backoff base, 1s),
	// as the reports free the room. Default
	// DefaultClusterStatusUpdateFrequency.
	ClusterStatusUpdateFrequency time.Duration
	// Freeze names the ConfigMap whose existence freezes every automatic
	// eviction: an operator's brake, stored in the API so that every
	// replica and every new leader honours it (karmada-controller-manager's
	// --eviction-freeze-configmap, default karmada-system/failover-freeze,
	// DefaultFreezeName). Its optional data keys are FreezeReasonKey, why
	// (free text, logged), and FreezeUntilKey, when the freeze lapses (RFC
	// 3339); FreezeConfirmKey set to ConfirmStorm makes it no freeze but
	// the operator's confirmation that ends a failure storm's hold
	// (ratelimit.Config.StormThreshold). While frozen, each queued item is deferred before anything
	// else (evictionqueue.RetryAfter: it stays queued, its permit goes
	// back, no failure is counted) and decided again at most 10s later;
	// taints, graceful eviction tasks and cancellations go on. An until
	// that cannot be read freezes until the ConfigMap is corrected or
	// deleted, and the log line says why. The queues start only once the
	// ConfigMap has been read: one that cannot be read (RBAC) evicts
	// nothing. The zero value watches no ConfigMap and never freezes.
	Freeze types.NamespacedName
	// MaxClustersInTransit is the budget of clusters in transit of a
	// binding without a MaxClustersInTransitAnnotation of its own: how many
	// of its clusters may be in graceful eviction at once (its open tasks,
	// whoever wrote them). An eviction beyond it is deferred
	// (evictionqueue.RetryAfter: it stays queued, its permit goes back, no
	// failure is counted) and tried again at once when the controller's
	// reconcile of the binding sees one of its tasks gone, and at least
	// every min(ClusterStatusUpdateFrequency, 10s). The count is read from the binding itself on each attempt, so
	// every new leader honours it. karmada-controller-manager's
	// --max-clusters-in-transit. 0, the default: unlimited, as in Karmada.
	MaxClustersInTransit int
}

// withDefaults validates o and fills in the defaults of its zero fields.
func (o EvictionOptions) withDefaults() (EvictionOptions, error) {
	if o.Rate == (ratelimit.Config{}) {
		o.Rate = ratelimit.DefaultConfig()
	}
	if err := o.Rate.Validate(); err != nil {
		return o, err
	}
	if o.NoExecuteTaintEvictionPurgeMode == "" {
		o.NoExecuteTaintEvictionPurgeMode = failover.PurgeModeGracefully
	}
	switch o.NoExecuteTaintEvictionPurgeMode {
	case failover.PurgeModeGracefully, failover.PurgeModeDirectly:
	default:
		return o, fmt.Errorf("controllers: EvictionOptions.NoExecuteTaintEvictionPurgeMode (--no-execute-taint-eviction-purge-mode) %q: want Gracefully or Directly", o.NoExecuteTaintEvictionPurgeMode)
	}
	if o.Workers < 0 || o.Workers > evictionqueue.MaxWorkers {
		return o, fmt.Errorf("controllers: EvictionOptions.Workers %d: want 0 (the default, 1) to %d", o.Workers, evictionqueue.MaxWorkers)
	}
	if o.Registerer == nil {
		o.Registerer = crmetrics.Registry
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	switch {
	case o.DisableLedger && o.Ledger != nil:
		return o, fmt.Errorf("controllers: EvictionOptions.Ledger is set and DisableLedger too: want one or the other")
	case !o.DisableLedger && o.Ledger == nil:
		l, err := engine.NewLedger()
		if err != nil {
			return o, err
		}
		o.Ledger = l
	}
	if o.ClusterStatusUpdateFrequency < 0 {
		return o, fmt.Errorf("controllers: EvictionOptions.ClusterStatusUpdateFrequency (--cluster-status-update-frequency) %v: must not be negative", o.ClusterStatusUpdateFrequency)
	}
	if o.ClusterStatusUpdateFrequency == 0 {
		o.ClusterStatusUpdateFrequency = DefaultClusterStatusUpdateFrequency
	}
	switch {
	case o.RefusalRecheck < 0:
		return o, fmt.Errorf("controllers: EvictionOptions.RefusalRecheck %v: must not be negative", o.RefusalRecheck)
	case o.RefusalRecheck == 0:
		o.RefusalRecheck = DefaultRefusalRecheck
	}
	if o.MaxInFlight < 0 {
		return o, fmt.Errorf("controllers: EvictionOptions.MaxInFlight %d: must not be negative (0: unlimited)", o.MaxInFlight)
	}
	switch {
	case o.InFlightTTL < 0:
		return o, fmt.Errorf("controllers: EvictionOptions.InFlightTTL %v: must not be negative", o.InFlightTTL)
	case o.InFlightTTL == 0:
		o.InFlightTTL = 10 * time.Minute
	}
	if err := validFreezeName(o.Freeze); err != nil {
		return o, err
	}
	if o.MaxClustersInTransit < 0 {
		return o, fmt.Errorf("controllers: EvictionOptions.MaxClustersInTransit (--max-clusters-in-transit) %d: must not be negative (0: unlimited)", o.MaxClustersInTransit)
	}
	return o, nil
}

// EvictionController replaces Karmada's taint manager. For each
// ResourceBinding and ClusterResourceBinding scheduled on a cluster with an
// evicting taint, failover.DecideEviction says now, later (the binding is
// reconciled again at the earliest deadline) or never: NoExecute taints
// (only with EnableNoExecuteTaintEviction) against the tolerations of the
// applied placement (karmada.AppliedTolerations), PreferNoExecute taints by
// spec.failover.cluster. Now puts the binding into the eviction queue of
// its kind; both queues are paced by one ratelimit.Limiter whose rate
// follows the health of the fleet, read from the Clusters' taints through
// the manager's informer (ClusterFaulty, and ClusterDomains under a
// disruption domain). A cluster that is no longer faulty cancels its queued
// items.
//
// A queue's handler decides again on fresh reads (a cluster that recovered,
// or a binding that moved or now tolerates the taint, is left alone), runs
// the pre-scheduling check with the binding's placement and the fleet
// (capacity from the clusters' resource summaries, karmada.Capacity), and
// then moves the cluster from spec.clusters into a graceful eviction task
// written as Karmada's taint manager writes it (producer TaintManager,
// reason TaintUntolerated, karmada.EvictionPurgeMode, the preserved label
// state), with optimistic concurrency: a conflict starts the attempt again
// from the fresh reads. The clusters a feasible check moves replicas to are
// read fresh, and the check run again on them, before the write. Infeasible:
// nothing is written, the item parks in its queue at engine.RefusedGate (its
// permit goes back to the Limiter, its place in line kept), a Warning Event
// on the binding says why, and the eviction is decided again when a cluster
// recovers or reports room, and at least every RefusalRecheck. Written, the eviction counts in flight in its queue until
// the controller's reconcile of the binding sees its task gone, whoever
// removed it (the GracefulEvictionController, Karmada's, another writer),
// or the binding gone, or InFlightTTL passes: one end path, which gives
// back what the eviction held.
//
// The queues run as manager Runnables that need leader election, as the
// controllers do: only the leader evicts. Before its first eviction, a
// queue takes over the evictions its kind's open tasks say are still under
// way (a restart, a new leader), and reads the operator's freeze
// (EvictionOptions.Freeze), which every replica watches: while it holds,
// each attempt is deferred before anything else.
type EvictionController struct {
	opts     EvictionOptions
	client   client.Client // the manager's cached client
	reader   client.Reader // the API server itself, for decisions that must not act on a stale cache
	recorder eventRecorder
	limiter  *ratelimit.Limiter
	kinds    []*kind
	// fleet is the clusters as the check reads them, fed by the manager's
	// Cluster informer: converted once per change, not once per eviction.
	fleet *engine.Fleet
	// evictor is the decision path on fleet with the controller's options,
	// made once.
	evictor *engine.Evictor
	// freeze is the operator's freeze (EvictionOptions.Freeze); nil when
	// no ConfigMap is watched.
	freeze *freezeGate
	// requests records what the handlers send the API server.
	requests requestMetrics
	// metrics are the controller's series, which a FailbackController
	// sharing it records on too; nil before SetupWithManager.
	metrics *metrics.Metrics

	mu              sync.Mutex
	lastRoomRecheck time.Time       // see recheckOnRoom
	roomLetPass     bool            // recheckOnRoom let a change pass since lastRoomRecheck
	faulty          map[string]bool // clusters seen faulty, for setFaulty
	unschedulable   map[string]bool // clusters seen with a NoSchedule taint, for setUnschedulable
}

// NewEvictionController checks opts and fills in their defaults. It touches
// no manager, so a bad option is reported before anything starts.
func NewEvictionController(opts EvictionOptions) (*EvictionController, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &EvictionController{opts: opts, fleet: &engine.Fleet{}, requests: (*metrics.Metrics)(nil)}
	if c.evictor, err = c.newEvictor(); err != nil {
		return nil, err
	}
	return c, nil
}

// newEvictor is the decision path on c.fleet with the controller's options.
func (c *EvictionController) newEvictor() (*engine.Evictor, error) {
	return engine.NewEvictor(engine.EvictorOptions{
		Fleet:                           c.fleet,
		Ledger:                          c.opts.Ledger,
		EnableNoExecuteTaintEviction:    c.opts.EnableNoExecuteTaintEviction,
		NoExecuteTaintEvictionPurgeMode: c.opts.NoExecuteTaintEvictionPurgeMode,
		StatefulFailoverInjection:       c.opts.StatefulFailoverInjection,
		MaxClustersInTransit:            c.opts.MaxClustersInTransit,
	})
}

// SetupWithManager adds the controller to mgr, whose scheme must hold
// AddToScheme's kinds: the fleet health source on the manager's Cluster
// informer, the Limiter, the two eviction queues (as Runnables), the
// bindings' index by cluster, and the reconcilers of Clusters and of both
// binding kinds. Call it once, before mgr starts; nothing runs until then.
func (c *EvictionController) SetupWithManager(mgr manager.Manager) error {
	// Neither call blocks before the manager starts.
	ctx := context.Background()
	m, err := metrics.New(c.opts.Registerer, metrics.WithKarmadaNames())
	if err != nil {
		return err
	}
	inf, err := mgr.GetCache().GetInformer(ctx, &clusterv1alpha1.Cluster{})
	if err != nil {
		return fmt.Errorf("controllers: the Cluster informer: %w", err)
	}
	srcOpts := []ratelimit.SourceOption{ratelimit.WithSourceLogger(mgr.GetLogger().WithName("fleet-health"))}
	var domainOf func(cluster string) string // nil under the fleet rule
	if domain := c.opts.Rate.DisruptionDomain; domain.PerDomain() {
		// The Tracker counts each Cluster in its region (zone, provider),
		// and each queue paces an item by its cluster's domain, read from
		// the cache once, when the queue first has a pending item of the
		// cluster (evictionqueue.Config.DomainOf), and again when the
		// Cluster's region, zone or provider changes (watchDomains): a
		// cluster that moved takes its queued items along, and no permit
		// reads or converts a Cluster.
		srcOpts = append(srcOpts, ratelimit.WithDomains(ClusterDomains(domain)))
		cache := mgr.GetCache()
		domainOf = func(name string) string {
			var cl clusterv1alpha1.Cluster
			if err := cache.Get(context.Background(), client.ObjectKey{Name: name}, &cl); err != nil {
				return "" // gone: the domain of clusters without one
			}
			// A multi-zone cluster's items are paced by its first zone.
			return ClusterDomains(domain)(&cl)[0]
		}
	}
	fed, err := inf.AddEventHandler(feedFleet(c.fleet, mgr.GetLogger().WithName("fleet")))
	if err != nil {
		return fmt.Errorf("controllers: the Cluster informer: %w", err)
	}
	tracker, err := ratelimit.NewInformerSource(inf, ClusterFaulty, srcOpts...)
	if err != nil {
		return err
	}
	c.recorder = mgr.GetEventRecorder(FieldManager)
	limiter, err := ratelimit.NewLimiter(c.opts.Rate, tracker,
		ratelimit.WithMetrics(stormEvents{Metrics: m, recorder: c.recorder, freeze: c.opts.Freeze}),
		ratelimit.WithClock(c.opts.Clock), ratelimit.WithLogger(mgr.GetLogger().WithName("eviction-rate")))
	if err != nil {
		return err
	}

	if stormEnabled(c.opts.Rate) {
		if err := mgr.Add(healthFollower{src: tracker, limiter: limiter, clock: c.opts.Clock}); err != nil {
			return err
		}
	}
	c.client = mgr.GetClient()
	c.reader = mgr.GetAPIReader()
	c.requests, c.metrics = m, m
	c.limiter = limiter
	if c.opts.Freeze != (types.NamespacedName{}) {
		c.freeze = newFreezeGate(c.opts.Freeze, c.opts.Clock, m, mgr.GetLogger().WithName("eviction-freeze"))
		c.freeze.confirmStorm = limiter.ConfirmStorm
		c.freeze.onThaw = append(c.freeze.onThaw, c.thawed)
		if err := c.freeze.setupWithManager(mgr); err != nil {
			return err
		}
	}
	c.kinds = []*kind{resourceBindings(), clusterResourceBindings()}
	for _, k := range c.kinds {
		m.WaitingForTransitBudget(k.queue, 0) // from 0 before the first
	}
	if err := indexBindings(ctx, mgr, c.kinds); err != nil {
		return err
	}
	for _, k := range c.kinds {
		q, err := evictionqueue.New(evictionqueue.Config{
			Name:        k.queue,
			Workers:     c.opts.Workers,
			Pacer:       limiter,
			MaxInFlight: c.opts.MaxInFlight,
			InFlightTTL: c.opts.InFlightTTL,
			Metrics:     m,
			Clock:       c.opts.Clock,
			Logger:      mgr.GetLogger().WithName(k.queue),
			DomainOf:    domainOf,
		}, c.evictHandler(k))
		if err != nil {
			return err
		}
		k.q = q
		// A plain RunnableFunc needs leader election: only the leader
		// evicts, and a standby's queue stays empty because its
		// controllers do not run either. Before its first eviction the
		// leader takes over the evictions its predecessor left in flight,
		// and it reads the freeze, which every replica watches.
		cache := mgr.GetCache()
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			if !cache.WaitForCacheSync(ctx) || !toolscache.WaitForCacheSync(ctx.Done(), fed.HasSynced, c.freeze.hasSynced) {
				return nil // stopped before the cache, the fleet and the freeze synced
			}
			if err := c.takeOver(ctx, k); err != nil {
				return err
			}
			return q.Run(ctx)
		})); err != nil {
			return err
		}
	}
	if domainOf != nil {
		if err := c.watchDomains(inf); err != nil {
			return err
		}
	}
	if err := mgr.Add(manager.RunnableFunc(c.recheckRefusals)); err != nil {
		return err
	}
	if err := c.setupRecovery(mgr); err != nil {
		return err
	}
	for _, k := range c.kinds {
		if err := c.setupTaintManager(mgr, k); err != nil {
			return err
		}
	}
	return nil
}

// watchDomains tells both queues when a Cluster's region, zone or
// provider changes (Queue.DomainChanged), so that its pending items are
// paced in its new domain: the queues read a cluster's domain once per
// change, not once per permit.
func (c *EvictionController) watchDomains(inf interface {
	AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
}) error {
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*clusterv1alpha1.Cluster)
			n, ok2 := newObj.(*clusterv1alpha1.Cluster)
			if !ok1 || !ok2 || !domainFieldsChanged(&o.Spec, &n.Spec) {
				return
			}
			for _, k := range c.kinds {
				k.q.DomainChanged(n.Name)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("controllers: watching the Clusters' domains: %w", err)
	}
	return nil
}

// domainFieldsChanged reports whether a Cluster's update may have moved it
// to another disruption domain: its provider, region or zones changed.
func domainFieldsChanged(o, n *clusterv1alpha1.ClusterSpec) bool {
	return o.Provider != n.Provider || o.Region != n.Region || o.Zone != n.Zone || !slices.Equal(o.Zones, n.Zones)
}

// Limiter is the Limiter that paces both queues; nil before
// SetupWithManager.
func (c *EvictionController) Limiter() *ratelimit.Limiter { return c.limiter }

// Ledger is the Ledger of the evictions in flight, for a program that
// reads it (a metric, the fork's what-if); nil when
// EvictionOptions.DisableLedger is set.
func (c *EvictionController) Ledger() *engine.Ledger { return c.opts.Ledger }

// Queue is the eviction queue named name (ResourceBindingQueue or
// ClusterResourceBindingQueue); nil before SetupWithManager or for another
// name.
func (c *EvictionController) Queue(name string) *evictionqueue.Queue {
	for _, k := range c.kinds {
		if k.queue == name {
			return k.q
		}
	}
	return nil
}

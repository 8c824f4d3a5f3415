package metrics

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Label names, as the eviction-queue design document names them.
const (
	labelQueue   = "queue_name"
	labelCluster = "cluster_name"
	labelKind    = "resource_kind"
	labelResult  = "result"
)

// Metrics is the Prometheus implementation of ratelimit.Metrics and
// evictionqueue.Metrics. Create it with New; one value serves every Limiter
// and every queue of a process, the queue_name label keeping queues apart.
//
// The series, with the namespace of WithNamespace prefixed to each name:
//
//	eviction_total                       gauge     queue_name               items queued now (pending and backing off)
//	evict_kind_total                     gauge     cluster_name, resource_kind  items queued now by cluster and kind
//	eviction_processing_latency_seconds  histogram queue_name               first enqueue to processing
//	eviction_processing_total            counter   queue_name, result       processing attempts by result
//	eviction_cancelled_total             counter   queue_name               items dropped because their cluster recovered
//	eviction_in_flight                   gauge     queue_name               background evictions not yet confirmed
//	eviction_unmatched_removals_total    counter   queue_name               Removed calls with no matching Added (a caller bug)
//	cluster_fault_num                    gauge                              faulty clusters
//	cluster_failure_rate                 gauge                              faulty / total, 0 for an empty fleet
//	eviction_rate                        gauge                              permits per second in force now
//
// The queue gauges are not running sums of Inc and Dec: they are counts kept
// under one mutex and read under it at scrape time, so a scrape sees
// eviction_total and evict_kind_total of one and the same moment, and
// concurrent Added and Removed calls can never leave them different from the
// number of items actually queued. The zero value is not usable; a nil
// *Metrics records nothing.
type Metrics struct {
	queueDepth   *prometheus.Desc
	kindDepth    *prometheus.Desc
	latency      *prometheus.HistogramVec
	processed    *prometheus.CounterVec
	cancelled    *prometheus.CounterVec
	inFlight     *prometheus.GaugeVec
	unmatched    *prometheus.CounterVec
	faultNum     prometheus.Gauge
	failureRate  prometheus.Gauge
	evictionRate prometheus.Gauge

	// healthMu keeps cluster_fault_num and cluster_failure_rate from one
	// FleetHealth call together when calls race.
	healthMu sync.Mutex

	mu sync.Mutex
	// items counts queued items per (queue, cluster, kind): the unit in which
	// Added and Removed are matched, so a Removed for one queue can never
	// consume an item another queue added.
	items map[itemKey]int
	// byQueue and byKind are the sums of items that eviction_total and
	// evict_kind_total show. Entries at zero are removed from byKind (and its
	// series deleted); byQueue keeps them, a queue's depth of 0 being news.
	byQueue map[string]int
	byKind  map[kindKey]int
}

type itemKey struct{ queue, cluster, kind string }

type kindKey struct{ cluster, kind string }

// New creates the series and registers them on reg. It returns an error when
// reg is nil, when an option is invalid, or when reg refuses a series (for
// example because another Metrics with the same namespace is registered on
// it); in that case whatever New had registered is unregistered again.
func New(reg prometheus.Registerer, opts ...Option) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("metrics: registerer is nil; pass prometheus.NewRegistry() or the registry you serve")
	}
	o := options{buckets: DefaultLatencyBuckets()}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	ns := o.namespace
	m := &Metrics{
		queueDepth: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "eviction_total"),
			"Number of items in the eviction queue now, pending or backing off.",
			[]string{labelQueue}, nil),
		kindDepth: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "evict_kind_total"),
			"Number of items in the eviction queues now by the cluster evicted from and the resource's APIVersion/Kind.",
			[]string{labelCluster, labelKind}, nil),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "eviction_processing_latency_seconds",
			Help:    "Time from an item's first enqueue to its processing.",
			Buckets: o.buckets,
		}, []string{labelQueue}),
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "eviction_processing_total",
			Help: "Number of eviction processing attempts by result (success, error, abandoned).",
		}, []string{labelQueue, labelResult}),
		cancelled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "eviction_cancelled_total",
			Help: "Number of queued items dropped because their cluster recovered.",
		}, []string{labelQueue}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "eviction_in_flight",
			Help: "Number of evictions accepted and finishing in the background, not yet confirmed.",
		}, []string{labelQueue}),
		unmatched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "eviction_unmatched_removals_total",
			Help: "Number of removals reported for items never reported added; ignored, non-zero means a caller bug.",
		}, []string{labelQueue}),
		faultNum: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Name: "cluster_fault_num",
			Help: "Number of faulty member clusters.",
		}),
		failureRate: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Name: "cluster_failure_rate",
			Help: "Faulty member clusters divided by all member clusters; 0 when there are none.",
		}),
		evictionRate: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Name: "eviction_rate",
			Help: "Evictions per second the fleet-wide rate limiter allows now; 0 while paused.",
		}),
		items:   make(map[itemKey]int),
		byQueue: make(map[string]int),
		byKind:  make(map[kindKey]int),
	}
	if err := m.register(reg, ns); err != nil {
		return nil, err
	}
	return m, nil
}

// series lists what New registers, each with its name for error messages.
func (m *Metrics) series() []namedCollector {
	return []namedCollector{
		{"eviction_total", queueGauges{m}},
		{"eviction_processing_latency_seconds", m.latency},
		{"eviction_processing_total", m.processed},
		{"eviction_cancelled_total", m.cancelled},
		{"eviction_in_flight", m.inFlight},
		{"eviction_unmatched_removals_total", m.unmatched},
		{"cluster_fault_num", m.faultNum},
		{"cluster_failure_rate", m.failureRate},
		{"eviction_rate", m.evictionRate},
	}
}

type namedCollector struct {
	name string
	prometheus.Collector
}

// register is all or nothing: a registry that refuses one series keeps none of
// ours, so a caller can fix the cause (say, pick a namespace) and call New again.
func (m *Metrics) register(reg prometheus.Registerer, namespace string) error {
	cs := m.series()
	for i, c := range cs {
		if err := reg.Register(c.Collector); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done.Collector)
			}
			return fmt.Errorf("metrics: registering %s: %w", prometheus.BuildFQName(namespace, "", c.name), err)
		}
	}
	return nil
}

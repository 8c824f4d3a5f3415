package metrics

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Label names, as the eviction-queue design document names them.
const (
	labelQueue   = "queue_name"
	labelGate    = "gate"
	labelCluster = "cluster_name"
	labelKind    = "resource_kind"
	labelResult  = "result"
	labelDomain  = "domain"
	labelState   = "state"
	labelVerb    = "verb"
	labelReason  = "reason"
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
//	eviction_in_flight_expired_total     counter   queue_name               background evictions not confirmed within InFlightTTL
//	eviction_unmatched_removals_total    counter   queue_name               Removed calls with no matching Added (a caller bug)
//	cluster_fault_num                    gauge                              faulty clusters
//	cluster_failure_rate                 gauge                              faulty / total, 0 for an empty fleet
//	eviction_rate                        gauge                              permits per second in force now
//	eviction_frozen                      gauge                              1 while an operator's freeze holds evictions back
//	eviction_storm_hold                  gauge                              1 while a failure storm holds evictions back
//	eviction_waiting_for_transit_budget  gauge     queue_name               evictions waiting for their binding's transit budget
//	eviction_queue_parked                gauge     queue_name, gate         items parked at a gate of their queue, by the gate's reason
//	eviction_api_requests_total          counter   queue_name, verb         requests an eviction sent the API server, by verb
//	domain_disruption_state              gauge     domain, state            1 for each disruption domain's state now
//	domain_eviction_rate                 gauge     domain                   each disruption domain's permits per second
//	failback_total                       counter   result                   failback decisions by result
//	failback_waiting                     gauge     reason                   failed-over bindings not gone back yet, by reason
//	failback_in_flight                   gauge                              bindings going back now (failback tasks open)
//
// The domain series exist only under a disruption domain
// (ratelimit.Config.DisruptionDomain other than fleet), through
// ratelimit.DomainMetrics; eviction_rate is then the most all domains may
// take together.
//
// The queue gauges are not running sums of Inc and Dec: they are counts kept
// under one mutex and read under it at scrape time, so a scrape sees
// eviction_total and evict_kind_total of one and the same moment, and
// concurrent Added and Removed calls can never leave them different from the
// number of items actually queued. WithKarmadaNames renames the first four
// series to Karmada's and sets the gauges on every change instead.
//
// The zero value is not usable; a nil *Metrics records nothing.
type Metrics struct {
	// queueDepth and kindDepth describe the queue gauges read at scrape time
	// (default naming). With WithKarmadaNames they are nil and depthVec and
	// kindVec, Karmada's GaugeVecs or ours built alike, are set instead.
	queueDepth   *prometheus.Desc
	kindDepth    *prometheus.Desc
	depthVec     *prometheus.GaugeVec
	kindVec      *prometheus.GaugeVec
	latency      *prometheus.HistogramVec
	processed    *prometheus.CounterVec
	cancelled    *prometheus.CounterVec
	inFlight     *prometheus.GaugeVec
	expired      *prometheus.CounterVec
	unmatched    *prometheus.CounterVec
	faultNum     prometheus.Gauge
	failureRate  prometheus.Gauge
	evictionRate prometheus.Gauge
	frozen       prometheus.Gauge
	stormHold    prometheus.Gauge
	// transitWaiting is eviction_waiting_for_transit_budget.
	transitWaiting *prometheus.GaugeVec
	// parked is eviction_queue_parked.
	parked *prometheus.GaugeVec
	// apiRequests is eviction_api_requests_total.
	apiRequests *prometheus.CounterVec
	domainState *prometheus.GaugeVec
	domainRate  *prometheus.GaugeVec
	// failbacks, failbackWaiting and failbackInFlight are failback_total,
	// failback_waiting and failback_in_flight.
	failbacks        *prometheus.CounterVec
	failbackWaiting  *prometheus.GaugeVec
	failbackInFlight prometheus.Gauge
	// appFailovers and appFailoverHeld are application_failover_total and
	// application_failover_held.
	appFailovers    *prometheus.CounterVec
	appFailoverHeld *prometheus.GaugeVec

	// healthMu keeps cluster_fault_num and cluster_failure_rate from one
	// FleetHealth call together when calls race, and a domain's state
	// series from one DomainRate call.
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
//
// With WithKarmadaNames, a series Karmada has already registered on reg is
// adopted rather than refused; see WithKarmadaNames.
func New(reg prometheus.Registerer, opts ...Option) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("metrics: registerer is nil; pass prometheus.NewRegistry() or the registry you serve")
	}
	var o options
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
		cancelled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "eviction_cancelled_total",
			Help: "Number of queued items dropped because their cluster recovered.",
		}, []string{labelQueue}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "eviction_in_flight",
			Help: "Number of evictions accepted and finishing in the background, not yet confirmed.",
		}, []string{labelQueue}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "eviction_in_flight_expired_total",
			Help: "Number of background evictions not confirmed within the queue's InFlightTTL (and retried or dropped).",
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
		frozen: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Name: "eviction_frozen",
			Help: "1 while an operator's freeze holds every automatic eviction back, 0 otherwise.",
		}),
		stormHold: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Name: "eviction_storm_hold",
			Help: "1 while a failure storm (much of the fleet faulty at once) holds every eviction back, 0 otherwise.",
		}),
		transitWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "eviction_waiting_for_transit_budget",
			Help: "Number of evictions waiting because their binding's budget of clusters in transit is used up.",
		}, []string{labelQueue}),
		parked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "eviction_queue_parked",
			Help: "Number of items parked at a gate of their queue (waiting for a change, with no permit), by the gate's reason.",
		}, []string{labelQueue, labelGate}),
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "eviction_api_requests_total",
			Help: "Number of requests the eviction handlers sent the API server, by verb (get, update).",
		}, []string{labelQueue, labelVerb}),
		domainState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "domain_disruption_state",
			Help: "1 for the disruption state (Normal, PartialDisruption, FullDisruption) each disruption domain is in now.",
		}, []string{labelDomain, labelState}),
		domainRate: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "domain_eviction_rate",
			Help: "Evictions per second the rate limiter allows now in each disruption domain; 0 while paused.",
		}, []string{labelDomain}),
		items:   make(map[itemKey]int),
		byQueue: make(map[string]int),
		byKind:  make(map[kindKey]int),
	}
	m.failbacks, m.failbackWaiting, m.failbackInFlight = newFailbackSeries(ns)
	m.appFailovers, m.appFailoverHeld = newAppFailoverSeries(ns)
	var shared []series
	if o.karmadaNames {
		shared = m.karmadaSeries(o.buckets)
	} else {
		shared = m.librarySeries(ns, o.buckets)
	}
	if err := m.register(reg, ns, shared); err != nil {
		return nil, err
	}
	return m, nil
}

// librarySeries creates the queue series under the library's names and
// labels, the names of the eviction-queue design document.
func (m *Metrics) librarySeries(ns string, buckets []float64) []series {
	if buckets == nil {
		buckets = DefaultLatencyBuckets()
	}
	m.queueDepth = prometheus.NewDesc(prometheus.BuildFQName(ns, "", "eviction_total"),
		"Number of items in the eviction queue now, pending or backing off.",
		[]string{labelQueue}, nil)
	m.kindDepth = prometheus.NewDesc(prometheus.BuildFQName(ns, "", "evict_kind_total"),
		"Number of items in the eviction queues now by the cluster evicted from and the resource's APIVersion/Kind.",
		[]string{labelCluster, labelKind}, nil)
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: ns, Name: "eviction_processing_latency_seconds",
		Help:    "Time from an item's first enqueue to its processing.",
		Buckets: buckets,
	}, []string{labelQueue})
	m.processed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "eviction_processing_total",
		Help: "Number of eviction processing attempts by result (success, error, abandoned, deferred).",
	}, []string{labelQueue, labelResult})
	return []series{
		{name: "eviction_total", Collector: queueGauges{m}},
		{name: "eviction_processing_latency_seconds", Collector: m.latency, karmadaShips: true},
		{name: "eviction_processing_total", Collector: m.processed, karmadaShips: true},
	}
}

// Karmada v1.18's eviction series (pkg/metrics/cluster.go): names, label
// names and help strings must match Karmada's to the byte: only then does a
// registry holding Karmada's collectors answer AlreadyRegisteredError with
// Karmada's collector to adopt, rather than refuse ours as inconsistent.
const (
	karmadaQueueDepth = "eviction_queue_depth"
	karmadaKind       = "eviction_kind_total"
	karmadaLatency    = "eviction_processing_latency_seconds"
	karmadaProcessed  = "eviction_processing_total"
)

// KarmadaLatencyBuckets returns the buckets of Karmada v1.18's
// eviction_processing_latency_seconds: 15 buckets doubling from 1 ms (to
// about 16 s). They are the default under WithKarmadaNames, so the histogram
// is the same whether Karmada or this package registered it.
func KarmadaLatencyBuckets() []float64 {
	return prometheus.ExponentialBuckets(0.001, 2, 15)
}

// karmadaSeries creates the queue series as Karmada v1.18 builds them; each
// adopts the collector Karmada registered under its name, if any.
func (m *Metrics) karmadaSeries(buckets []float64) []series {
	explicitBuckets := buckets != nil
	if buckets == nil {
		buckets = KarmadaLatencyBuckets()
	}
	m.depthVec = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: karmadaQueueDepth,
		Help: "Current depth of the eviction queue",
	}, []string{"name"})
	m.kindVec = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: karmadaKind,
		Help: "Number of resources in the eviction queue by resource kind",
	}, []string{"member_cluster", labelKind})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    karmadaLatency,
		Help:    "Latency of processing an eviction task in seconds",
		Buckets: buckets,
	}, []string{"name"})
	m.processed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: karmadaProcessed,
		Help: "Total number of evictions processed",
	}, []string{"name", labelResult})
	return []series{
		{name: karmadaQueueDepth, Collector: m.depthVec, adopt: func(c prometheus.Collector) error {
			return adoptAs(c, &m.depthVec, karmadaQueueDepth)
		}},
		{name: karmadaKind, Collector: m.kindVec, adopt: func(c prometheus.Collector) error {
			return adoptAs(c, &m.kindVec, karmadaKind)
		}},
		{name: karmadaLatency, Collector: m.latency, adopt: func(c prometheus.Collector) error {
			if explicitBuckets {
				return fmt.Errorf("metrics: %s is already registered (by Karmada) with its own buckets; "+
					"WithLatencyBuckets cannot change them: drop that option", karmadaLatency)
			}
			return adoptAs(c, &m.latency, karmadaLatency)
		}},
		{name: karmadaProcessed, Collector: m.processed, adopt: func(c prometheus.Collector) error {
			return adoptAs(c, &m.processed, karmadaProcessed)
		}},
	}
}

// adoptAs makes *dst the collector already registered under name, which must
// be of the type Karmada uses for it and describe the same series as *dst,
// label names in the same order. The registry calls two series the same
// whatever the order of their label names, but values are written by
// position: adopting {resource_kind, member_cluster} for {member_cluster,
// resource_kind} would write every value under the other label.
func adoptAs[T prometheus.Collector](existing prometheus.Collector, dst *T, name string) error {
	c, ok := existing.(T)
	if !ok {
		return fmt.Errorf("metrics: %s is already registered as a %T, not the %T Karmada registers; cannot adopt it",
			name, existing, *dst)
	}
	if have, want := describe(c), describe(*dst); have != want {
		return fmt.Errorf("metrics: %s is already registered as %s, not as Karmada v1.18 registers it (%s); cannot adopt it",
			name, have, want)
	}
	*dst = c
	return nil
}

// describe is c's descriptors as text: name, help and label names in order.
// c is one of the vectors Karmada registers, each of one descriptor.
func describe(c prometheus.Collector) string {
	ch := make(chan *prometheus.Desc, 4)
	c.Describe(ch)
	close(ch)
	var s []string
	for d := range ch {
		s = append(s, d.String())
	}
	return strings.Join(s, "; ")
}

// series is one collector New registers.
type series struct {
	name string // unprefixed, for error messages
	prometheus.Collector
	// karmadaShips marks a library-named series whose name Karmada also
	// uses, so that a clash can point at WithKarmadaNames.
	karmadaShips bool
	// adopt, when set, takes over the collector already registered under the
	// same name, labels and help instead of failing.
	adopt func(existing prometheus.Collector) error
}

// register is all or nothing: a registry that refuses one series keeps none of
// ours, so a caller can fix the cause (say, pick a namespace) and call New again.
// Adopted collectors were never ours and stay registered.
func (m *Metrics) register(reg prometheus.Registerer, ns string, queueSeries []series) error {
	cs := append(queueSeries,
		series{name: "eviction_cancelled_total", Collector: m.cancelled},
		series{name: "eviction_in_flight", Collector: m.inFlight},
		series{name: "eviction_in_flight_expired_total", Collector: m.expired},
		series{name: "eviction_unmatched_removals_total", Collector: m.unmatched},
		series{name: "cluster_fault_num", Collector: m.faultNum},
		series{name: "cluster_failure_rate", Collector: m.failureRate},
		series{name: "eviction_rate", Collector: m.evictionRate},
		series{name: "eviction_frozen", Collector: m.frozen},
		series{name: "eviction_storm_hold", Collector: m.stormHold},
		series{name: "eviction_waiting_for_transit_budget", Collector: m.transitWaiting},
		series{name: "eviction_queue_parked", Collector: m.parked},
		series{name: "eviction_api_requests_total", Collector: m.apiRequests},
		series{name: "domain_disruption_state", Collector: m.domainState},
		series{name: "domain_eviction_rate", Collector: m.domainRate},
		series{name: "failback_total", Collector: m.failbacks},
		series{name: "failback_waiting", Collector: m.failbackWaiting},
		series{name: "failback_in_flight", Collector: m.failbackInFlight},
		series{name: "application_failover_total", Collector: m.appFailovers},
		series{name: "application_failover_held", Collector: m.appFailoverHeld},
	)
	var ours []prometheus.Collector
	for _, c := range cs {
		err := reg.Register(c.Collector)
		if err == nil {
			ours = append(ours, c.Collector)
			continue
		}
		var already prometheus.AlreadyRegisteredError
		if c.adopt != nil && errors.As(err, &already) {
			if err = c.adopt(already.ExistingCollector); err == nil {
				continue
			}
		} else {
			err = registerError(c, ns, err)
		}
		for _, done := range ours {
			reg.Unregister(done)
		}
		return err
	}
	return nil
}

// registerError names the series reg refused and, where the likely cause is
// known, the way out.
func registerError(c series, ns string, err error) error {
	var already prometheus.AlreadyRegisteredError
	switch {
	case c.adopt != nil:
		return fmt.Errorf("metrics: registering %s with Karmada v1.18's labels and help: %w; "+
			"the registry holds a different series of that name, which WithKarmadaNames cannot adopt", c.name, err)
	case c.karmadaShips && ns == "" && !errors.As(err, &already):
		// Same name, other labels or help: Karmada's series, or one like it.
		// (An identical collector is another Metrics: a namespace helps there.)
		return fmt.Errorf("metrics: registering %s: %w; karmada-controller-manager registers its own %s "+
			"on its registry: pass metrics.WithKarmadaNames() to share Karmada's series", c.name, err, c.name)
	default:
		return fmt.Errorf("metrics: registering %s: %w", prometheus.BuildFQName(ns, "", c.name), err)
	}
}

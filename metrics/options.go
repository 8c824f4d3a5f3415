package metrics

import (
	"fmt"
	"math"

	"github.com/prometheus/client_golang/prometheus"
)

// Option configures New.
type Option func(*options) error

type options struct {
	namespace    string
	buckets      []float64 // nil: the default of the naming in use
	karmadaNames bool
}

// WithKarmadaNames gives the four queue series Karmada v1.18 ships
// (pkg/metrics/cluster.go) Karmada's names, labels and help, so that
// Karmada's dashboards and alerts read what the library's queues record:
//
//	eviction_queue_depth                 gauge     name                           instead of eviction_total{queue_name}
//	eviction_kind_total                  gauge     member_cluster, resource_kind  instead of evict_kind_total{cluster_name, resource_kind}
//	eviction_processing_latency_seconds  histogram name                           instead of …{queue_name}
//	eviction_processing_total            counter   name, result                   instead of …{queue_name, result}
//
// karmada-controller-manager registers these on controller-runtime's
// metrics.Registry when it starts. New adopts a collector already registered
// under one of the names (through prometheus.AlreadyRegisteredError) and
// records into it, and registers its own, built as Karmada builds it, where
// there is none. Call New after Karmada has registered its collectors: the
// other way round Karmada's MustRegister would panic on ours.
//
// These four never take the WithNamespace prefix, since Karmada's have none;
// the series Karmada does not ship (eviction_cancelled_total,
// eviction_in_flight, eviction_in_flight_expired_total,
// eviction_unmatched_removals_total, cluster_fault_num, cluster_failure_rate,
// eviction_rate and the domain series) keep the library's names, labels and
// the prefix. The latency buckets default to KarmadaLatencyBuckets;
// WithLatencyBuckets applies only when New creates the histogram, and New
// fails if it would adopt Karmada's instead.
//
// The queue gauges stay exact (counts kept under one lock, a (member_cluster,
// resource_kind) series deleted at 0), but are set on every change instead of
// read at scrape time, so one scrape may read eviction_queue_depth and
// eviction_kind_total a change apart. The name label is the queue's
// evictionqueue.Config.Name: Karmada's taint manager uses
// "binding-eviction" and "cluster-binding-eviction", so queues named alike
// keep dashboards filtered on those. The result label also takes
// "abandoned", "deferred" and "skipped", which Karmada never records. The
// library owns the values it sets: do not run Karmada's own eviction
// workers alongside queues of the same names.
func WithKarmadaNames() Option {
	return func(o *options) error {
		o.karmadaNames = true
		return nil
	}
}

// WithNamespace prefixes every series name with prefix and an underscore, so
// "karmada" gives karmada_eviction_total. The default is no prefix, the names
// of the eviction-queue design document. Use a distinct namespace to register
// two Metrics on one registry.
func WithNamespace(prefix string) Option {
	return func(o *options) error {
		if prefix != "" && !validNamespace(prefix) {
			return fmt.Errorf("metrics: namespace %q is not a valid metric name prefix (want [a-zA-Z_][a-zA-Z0-9_]*)", prefix)
		}
		o.namespace = prefix
		return nil
	}
}

// WithLatencyBuckets sets the upper bounds, in seconds, of the
// eviction_processing_latency_seconds buckets. They must be positive, finite
// and strictly increasing; +Inf is always added. The default is
// DefaultLatencyBuckets, or KarmadaLatencyBuckets with WithKarmadaNames.
func WithLatencyBuckets(upperBounds []float64) Option {
	b := append([]float64(nil), upperBounds...)
	return func(o *options) error {
		if len(b) == 0 {
			return fmt.Errorf("metrics: latency buckets are empty")
		}
		for i, v := range b {
			if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				return fmt.Errorf("metrics: latency bucket %d is %v; want a positive finite number of seconds", i, v)
			}
			if i > 0 && v <= b[i-1] {
				return fmt.Errorf("metrics: latency bucket %d (%v) is not above bucket %d (%v); buckets must increase strictly", i, v, i-1, b[i-1])
			}
		}
		o.buckets = b
		return nil
	}
}

// DefaultLatencyBuckets returns the default latency bucket bounds: 16 buckets
// growing by a constant factor (about 2.7) from 1 ms to 1 hour. The range is
// wide because the latency measures waiting, not work: at the secondary rate
// of 0.1 evictions per second, the 300th item of an outage waits 50 minutes.
func DefaultLatencyBuckets() []float64 {
	return prometheus.ExponentialBucketsRange(0.001, 3600, 16)
}

func validNamespace(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

package evictionqueue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Defaults for the zero values of Config fields.
const (
	DefaultWorkers     = 1
	DefaultMaxRetries  = 5
	DefaultInFlightTTL = 10 * time.Minute
	DefaultBackoffBase = time.Second
	DefaultBackoffMax  = 5 * time.Minute
)

// MaxWorkers bounds Config.Workers: Run starts one goroutine per worker, and
// a paced queue never needs more workers than evictions in progress at once.
const MaxWorkers = 10000

// Item is one resource to evict from one cluster. Its identity is (Cluster,
// Key): the queue holds at most one item per identity.
type Item struct {
	Cluster      string // the faulty cluster the resource is evicted from
	Key          string // the binding: "namespace/name", or "name" when cluster-scoped
	ResourceKind string // the workload's APIVersion and Kind, for metrics, e.g. "apps/v1/Deployment"
	Priority     int32  // higher first; first-in-first-out among equal priority
}

// Handler evicts one item. It returns nil when the eviction is done,
// [ErrInProgress] when it was accepted and finishes in the background,
// [Skip] (reason) when there was nothing to do and nothing was written,
// [Abandon] (err) to drop the item without retry, [RetryAfter] to try it
// again later without counting a failure, and any other error to retry it
// with backoff. ctx ends when [Queue.Run] ends.
type Handler func(ctx context.Context, it Item) error

// Pacer hands out processing permits; *ratelimit.Limiter satisfies it. Wait
// blocks until one permit is granted, or returns an error when ctx ends and
// then takes none (the queue ends the wait of a worker whose item was
// cancelled). Queues sharing a Pacer share its rate. A plain Pacer's permit
// granted for an item gone meanwhile is lost: the queue keeps none.
type Pacer interface {
	Wait(ctx context.Context) error
}

// DomainPacer is a Pacer whose permits are for a disruption domain and can
// be given back, as x/time/rate's Reserve and Cancel; *ratelimit.Limiter
// satisfies it. WaitDomain blocks until a permit for one of the domains
// listed is granted (the first preferred), and returns which, with a
// function that gives it back unused. The list is a plain value: the queue
// reads it from its own state before it asks (the domains with pending
// items, by their head items at that moment), so the pacer calls nothing of
// the queue, and nothing of the queue runs under the pacer's lock; when a
// domain gains its first pending item or loses its last, the queue ends the
// wait (through ctx) and asks again. The queue gives a permit back when no item of its domain
// is left, and when the handler skips or abandons the item: the rate limits
// evictions started, not decisions. PacesByDomain reports whether rates
// differ by domain: New then requires Config.DomainOf.
type DomainPacer interface {
	Pacer
	WaitDomain(ctx context.Context, domains []string) (domain string, giveBack func(), err error)
	PacesByDomain() bool
}

// Metrics receives the queue's measurements; package metrics implements it.
// The queue calls it with its lock held, in order, so gauges built from
// Added and Removed are exact at every moment: it must be quick and must not
// call the queue.
type Metrics interface {
	Added(queue, cluster, kind string)                     // an item became pending (or backing off)
	Removed(queue, cluster, kind string)                   // it stopped being pending: taken by a worker, cancelled, dropped
	Processed(queue, result string, latency time.Duration) // one attempt: success, error or abandoned; latency from first enqueue
	Cancelled(queue string, n int)                         // n items dropped because their cluster recovered
	InFlight(queue string, n int)                          // background evictions now awaiting confirmation
}

// ExpiryMetrics is a Metrics that also counts background evictions not
// confirmed within InFlightTTL (package metrics' is), once per expiry.
type ExpiryMetrics interface {
	InFlightExpired(queue string)
}

// The result label values passed to Metrics.Processed.
const (
	ResultSuccess   = "success"   // the handler returned nil or ErrInProgress
	ResultError     = "error"     // the handler returned another error or panicked
	ResultAbandoned = "abandoned" // the handler returned Abandon
	ResultDeferred  = "deferred"  // the handler returned RetryAfter
	ResultSkipped   = "skipped"   // the handler returned Skip: nothing to do, nothing written
)

// Config configures a Queue. The zero value of every field but Name is valid
// and means the default stated beside it.
type Config struct {
	Name        string        // the queue_name metric label, e.g. "resource-binding"; required
	Workers     int           // handler goroutines Run starts; default 1, at most MaxWorkers
	Pacer       Pacer         // one permit per handler call; nil: unpaced
	MaxRetries  int           // attempts after the first before an item is dropped as failed; default 5
	MaxInFlight int           // handler calls plus background evictions allowed at once; 0: unlimited
	InFlightTTL time.Duration // how long a background eviction may stay unconfirmed; default 10m
	Metrics     Metrics       // nil: none
	Clock       clock.WithTicker

	// DomainOf maps an item's cluster to its disruption domain (as
	// ratelimit.DomainsOf; one zone of a multi-zone cluster). With a
	// DomainPacer, a worker takes a permit for one of the domains with
	// pending items, then that domain's head item: a paused domain holds
	// back no other, and the order holds within each domain. It is read
	// once per cluster, when the queue first has a pending item of it, and
	// again when the caller calls Queue.DomainChanged, which moves the
	// cluster's pending items to its new domain: never per permit, and never
	// under a pacer's lock. It is called with the queue's lock held, so it
	// must not call the queue. nil: one domain.
	DomainOf func(cluster string) string

	// BackoffBase is the wait before the first retry of a failed item; each
	// further failure of the same item doubles it. Default 1s.
	BackoffBase time.Duration
	// BackoffMax caps the wait between retries. Default 5m.
	BackoffMax time.Duration
	// OnOutcome, when set, is told every item event (see OutcomeKind), to
	// emit Kubernetes Events say: one call at a time, in order, without the
	// queue's lock (it may call the queue), maybe from another of the
	// queue's goroutines shortly after the event. A panic in it reaches the
	// caller of the method delivering (CancelCluster, Complete), or is
	// logged in the queue's own goroutines; later outcomes still come.
	OnOutcome func(Outcome)
	// Logger receives what the queue logs (a panic in OnOutcome in one of
	// its own goroutines). The zero Logger means klog's global logger.
	Logger klog.Logger
}

// withDefaults validates c and fills in the defaults of its zero fields.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("evictionqueue: Name must not be empty"))
	}
	negative := func(field string, v any, neg bool) {
		if neg {
			errs = append(errs, fmt.Errorf("evictionqueue: %s must not be negative, got %v", field, v))
		}
	}
	negative("Workers", c.Workers, c.Workers < 0)
	negative("MaxRetries", c.MaxRetries, c.MaxRetries < 0)
	negative("MaxInFlight", c.MaxInFlight, c.MaxInFlight < 0)
	negative("InFlightTTL", c.InFlightTTL, c.InFlightTTL < 0)
	negative("BackoffBase", c.BackoffBase, c.BackoffBase < 0)
	negative("BackoffMax", c.BackoffMax, c.BackoffMax < 0)
	if c.Workers > MaxWorkers {
		errs = append(errs, fmt.Errorf("evictionqueue: Workers must not exceed %d, got %d", MaxWorkers, c.Workers))
	}
	if len(errs) > 0 {
		return c, errors.Join(errs...)
	}
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	c.MaxRetries = cmp.Or(c.MaxRetries, DefaultMaxRetries)
	c.InFlightTTL = cmp.Or(c.InFlightTTL, DefaultInFlightTTL)
	c.BackoffBase = cmp.Or(c.BackoffBase, DefaultBackoffBase)
	c.BackoffMax = cmp.Or(c.BackoffMax, DefaultBackoffMax)
	if c.BackoffBase > c.BackoffMax {
		return c, fmt.Errorf("evictionqueue: BackoffBase %v must not exceed BackoffMax %v", c.BackoffBase, c.BackoffMax)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger.GetSink() == nil {
		c.Logger = klog.Background()
	}
	return c, nil
}

// backoff is the wait after an item's n-th failure (n ≥ 1):
// BackoffBase·2^(n-1), capped at BackoffMax.
func (c *Config) backoff(n int) time.Duration {
	d := c.BackoffBase
	for i := 1; i < n && d < c.BackoffMax; i++ {
		if d > c.BackoffMax/2 { // doubling would pass the cap, or overflow
			return c.BackoffMax
		}
		d *= 2
	}
	return min(d, c.BackoffMax)
}

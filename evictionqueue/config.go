package evictionqueue

import (
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
// [Abandon] (err) to drop the item without retry, and any other error to retry
// it with backoff. ctx ends when [Queue.Run] ends.
type Handler func(ctx context.Context, it Item) error

// Pacer hands out processing permits; *ratelimit.Limiter satisfies it. Wait
// blocks until one permit is granted, or returns an error when ctx ends; it
// must then take no permit, as *ratelimit.Limiter does, since the queue also
// ends the wait of a worker whose item was cancelled. Queues that share one
// Pacer share its rate. A permit a plain Pacer granted for an item that has
// gone meanwhile is lost: the queue never keeps one for later.
type Pacer interface {
	Wait(ctx context.Context) error
}

// DomainPacer is a Pacer whose permits are for a disruption domain and can
// be given back; *ratelimit.Limiter satisfies it. WaitDomain blocks until
// a permit for one of the domains that domains lists is granted (the first
// listed preferred), and returns which, with a function that gives the
// permit back unused; like Wait, it takes nothing when ctx ends. It calls
// domains each time it looks for a permit, so a list that changes (a
// cluster moved) is read again. PacesByDomain reports whether its rates
// differ by domain (a Limiter with a disruption domain): New then requires
// Config.DomainOf, since without it every item would be paced as if it had
// no domain.
//
// The queue gives a permit back when no item of its domain is left to take
// with it, and when the handler abandons the item (Abandon: nothing was
// done): the rate limits evictions started, not decisions.
type DomainPacer interface {
	Pacer
	WaitDomain(ctx context.Context, domains func() []string) (domain string, giveBack func(), err error)
	PacesByDomain() bool
}

// Metrics receives the queue's measurements; package metrics implements it
// with Prometheus. The queue calls it with its lock held, in the order the
// changes happen, so gauges built from Added and Removed are exact at every
// moment: implementations must be quick and must not call back into the queue.
type Metrics interface {
	Added(queue, cluster, kind string)                     // an item became pending (or backing off)
	Removed(queue, cluster, kind string)                   // it stopped being pending: taken by a worker, cancelled, dropped
	Processed(queue, result string, latency time.Duration) // one attempt: success, error or abandoned; latency from first enqueue
	Cancelled(queue string, n int)                         // n items dropped because their cluster recovered
	InFlight(queue string, n int)                          // background evictions now awaiting confirmation
}

// The result label values passed to Metrics.Processed.
const (
	ResultSuccess   = "success"   // the handler returned nil or ErrInProgress
	ResultError     = "error"     // the handler returned another error or panicked
	ResultAbandoned = "abandoned" // the handler returned Abandon
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

	// DomainOf maps an item's cluster to its disruption domain (its region,
	// zone or provider, as ratelimit.DomainsOf; for a multi-zone cluster, one
	// of its zones). It is read when a worker asks for a permit and again
	// when it takes an item with it, so a cluster that moved takes its items
	// along; it must be quick and must not call the Pacer. With it, and a
	// Pacer that is a DomainPacer (*ratelimit.Limiter is), a worker takes a
	// permit for one of the domains that have pending items and then that
	// domain's head item: a paused domain does not hold back the others, and
	// priority-then-FIFO order holds within each domain. nil: one domain.
	DomainOf func(cluster string) string

	// BackoffBase is the wait before the first retry of a failed item; each
	// further failure of the same item doubles it. Default 1s.
	BackoffBase time.Duration
	// BackoffMax caps the wait between retries. Default 5m.
	BackoffMax time.Duration
	// OnOutcome, when set, is told every item event (see OutcomeKind), for
	// example to emit Kubernetes Events. It is called without the queue's lock
	// held, so it may call the queue, and one call at a time, in the order the
	// events happened; the call may come from another of the queue's
	// goroutines than the one that caused the event, shortly after it. A slow
	// OnOutcome delays the worker that delivers, not the queue's state. A
	// panic in OnOutcome reaches the caller of the queue method that was
	// delivering (CancelCluster, Complete); in a worker or Run's scheduler,
	// where nothing could recover it, it is logged instead. Either way the
	// later outcomes are still delivered.
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
	negInt := func(field string, v int) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("evictionqueue: %s must not be negative, got %d", field, v))
		}
	}
	negDur := func(field string, v time.Duration) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("evictionqueue: %s must not be negative, got %v", field, v))
		}
	}
	negInt("Workers", c.Workers)
	if c.Workers > MaxWorkers {
		errs = append(errs, fmt.Errorf("evictionqueue: Workers must not exceed %d, got %d", MaxWorkers, c.Workers))
	}
	negInt("MaxRetries", c.MaxRetries)
	negInt("MaxInFlight", c.MaxInFlight)
	negDur("InFlightTTL", c.InFlightTTL)
	negDur("BackoffBase", c.BackoffBase)
	negDur("BackoffMax", c.BackoffMax)
	if len(errs) > 0 {
		return c, errors.Join(errs...)
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.InFlightTTL == 0 {
		c.InFlightTTL = DefaultInFlightTTL
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = DefaultBackoffMax
	}
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

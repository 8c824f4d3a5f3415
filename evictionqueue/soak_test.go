package evictionqueue_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/ratelimit"
)

var soak = flag.Duration("soak", 0, "run TestSoak for this long (e.g. 5m) instead of a few rounds")

// TestSoak drives several queues with several workers each on one Limiter
// through random health flaps, domain moves, adds, cancels, completes and
// handler results (success, error, panic, Abandon, ErrInProgress), on a fake
// clock in a synctest bubble, and checks throughout:
//   - the bound: over any window the evictions (handler calls not
//     abandoned) are at most 1 + ∫ rate dt, per domain and in total, which
//     comes to: between two consecutive evictions of a bucket, the rate in
//     force integrates to at least one permit;
//   - nothing is handled while its domain (or the total) is paused;
//   - every add has exactly one outcome: once the queues have drained, each
//     identity added n times has left with n final outcomes.
//
// Each round is a fresh bubble with its own seed, alternating the fleet rule
// and the region rule. go test -run TestSoak ./evictionqueue -soak=5m (the
// flag after the package) runs rounds for five minutes of wall time and
// logs the figures.
func TestSoak(t *testing.T) {
	var total soakFigures
	start := time.Now()
	for seed := uint64(0); ; seed++ {
		if *soak == 0 && seed == 4 || *soak > 0 && time.Since(start) > *soak {
			break
		}
		var f soakFigures
		synctest.Test(t, func(t *testing.T) { f = soakRound(t, seed) })
		if t.Failed() {
			t.Fatalf("seed %d failed", seed)
		}
		total.add(f)
	}
	t.Logf("%s in %v", total, time.Since(start).Round(time.Second))
}

// soakFigures are what a soak counted.
type soakFigures struct {
	rounds, ops, adds, calls, evictions, abandons, cancelled, flaps, moves int
	simulated                                                              time.Duration
	// tightest is the smallest ∫ rate between two consecutive evictions of
	// one bucket: at least 1 when the bound holds.
	tightest float64
}

func (f *soakFigures) add(g soakFigures) {
	if f.rounds == 0 || g.tightest < f.tightest {
		f.tightest = g.tightest
	}
	f.rounds += g.rounds
	f.ops += g.ops
	f.adds += g.adds
	f.calls += g.calls
	f.evictions += g.evictions
	f.abandons += g.abandons
	f.cancelled += g.cancelled
	f.flaps += g.flaps
	f.moves += g.moves
	f.simulated += g.simulated
}

func (f soakFigures) String() string {
	return fmt.Sprintf("%d rounds, %v simulated, %d ops: %d adds, %d health flaps, %d domain moves; %d handler calls: "+
		"%d evictions, %d abandons; %d cancelled; tightest gap between evictions %.4f permits (bound: ≥ 1)",
		f.rounds, f.simulated, f.ops, f.adds, f.flaps, f.moves, f.calls, f.evictions, f.abandons, f.cancelled, f.tightest)
}

// rateLog is the rates in force over time, one series per bucket ("" is
// the total; under the fleet rule "fleet" is the fleet's bucket), and the
// evictions each bucket gave.
type rateLog struct {
	rates     map[string][]rateAt
	evictions map[string][]time.Time
}

type rateAt struct {
	at   time.Time
	rate float64
}

func (l *rateLog) now(bucket string) float64 {
	s := l.rates[bucket]
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1].rate
}

func (l *rateLog) set(at time.Time, bucket string, r float64) {
	if s := l.rates[bucket]; len(s) == 0 || s[len(s)-1].rate != r {
		l.rates[bucket] = append(s, rateAt{at, r})
	}
}

// integral is ∫ rate dt of bucket over [a, b].
func (l *rateLog) integral(bucket string, a, b time.Time) float64 {
	s, sum := l.rates[bucket], 0.0
	for i, c := range s {
		from, to := c.at, b
		if i+1 < len(s) && s[i+1].at.Before(b) {
			to = s[i+1].at
		}
		if from.Before(a) {
			from = a
		}
		if to.After(from) {
			sum += c.rate * to.Sub(from).Seconds()
		}
	}
	return sum
}

// tightest checks every bucket's evictions against the bound and returns
// the smallest integral between two consecutive ones.
func (l *rateLog) tightest(t *testing.T) float64 {
	least := 1e18
	for bucket, evs := range l.evictions {
		for i := 1; i < len(evs); i++ {
			got := l.integral(bucket, evs[i-1], evs[i])
			least = min(least, got)
			if got < 1-1e-6 {
				t.Errorf("bucket %q: evictions at %v and %v, with %.4f permits of rate between them", bucket, evs[i-1], evs[i], got)
			}
		}
	}
	return least
}

func soakRound(t *testing.T, seed uint64) soakFigures {
	rng := rand.New(rand.NewPCG(seed, 22))
	regions := []string{"east", "west", "north"}
	perDomain := seed%2 == 1
	cfg := ratelimit.Config{ResourceEvictionRate: 2, SecondaryResourceEvictionRate: 0.5, UnhealthyClusterThreshold: 0.5, LargeClusterNumThreshold: 3}
	if perDomain {
		cfg.DisruptionDomain = ratelimit.DomainRegion
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	tracker := ratelimit.NewTracker()

	var (
		// mu guards what the handlers and the driver share. The queues
		// call DomainOf with their locks held, so the regions have their
		// own mutex: the driver holds mu while it asks the Limiter for its
		// rates, and no handler records an eviction before they are logged.
		mu       sync.Mutex
		regionMu sync.Mutex
		region   = map[string]string{}
		faulty   = map[string]bool{}
		log      = rateLog{rates: map[string][]rateAt{}, evictions: map[string][]time.Time{}}
		f        = soakFigures{rounds: 1}
		adds     = map[string]int{} // queue/cluster/key -> accepted adds
		finals   = map[string]int{} // queue/cluster/key -> final outcomes
		inFlight []func() bool      // Completes of background evictions
		draining bool
	)
	clusters := make([]string, 12)
	for i := range clusters {
		clusters[i] = fmt.Sprintf("c%02d", i)
		region[clusters[i]] = regions[i%len(regions)]
		tracker.SetInDomains(clusters[i], false, region[clusters[i]])
	}
	lim, err := ratelimit.NewLimiter(cfg, tracker, ratelimit.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	// record puts the rates in force now in the log; called after every
	// change of health, at the instant the Limiter reads it.
	record := func() {
		now := clk.Now()
		if !perDomain {
			log.set(now, "fleet", lim.Rate())
			log.set(now, "", lim.Rate())
			return
		}
		rates := lim.DomainRates()
		all := len(rates) > 0
		for _, d := range regions {
			log.set(now, d, rates[d].Rate)
			all = all && rates[d].State == ratelimit.FullDisruption
		}
		total := cfg.ResourceEvictionRate
		if all {
			total = 0
		}
		log.set(now, "", total)
	}
	record()

	outcome := func(name string) func(evictionqueue.Outcome) {
		return func(o evictionqueue.Outcome) {
			switch o.Kind {
			case evictionqueue.Succeeded, evictionqueue.Completed, evictionqueue.Abandoned, evictionqueue.Failed, evictionqueue.Cancelled:
				mu.Lock()
				finals[name+"/"+o.Item.Cluster+"/"+o.Item.Key]++
				mu.Unlock()
			}
		}
	}
	var queues []*evictionqueue.Queue
	for i := range 3 {
		name := fmt.Sprintf("q%d", i)
		handlerRng := rand.New(rand.NewPCG(seed, uint64(i)+100))
		var q *evictionqueue.Queue
		h := func(ctx context.Context, it evictionqueue.Item) error {
			mu.Lock()
			locked := true
			defer func() {
				if locked {
					mu.Unlock()
				}
			}()
			now := clk.Now()
			// The bucket the permit was charged to: the domain the queue
			// filed the item under, which follows a move once the
			// driver calls DomainChanged.
			bucket, ok := evictionqueue.PermitDomain(ctx)
			if !ok {
				t.Errorf("%s/%s: handler call without a permit domain", it.Cluster, it.Key)
			}
			if !perDomain {
				bucket = "fleet"
			}
			if log.now(bucket) <= 0 || log.now("") <= 0 {
				t.Errorf("%s/%s handled at %v while %q is paused", it.Cluster, it.Key, now, bucket)
			}
			f.calls++
			result := handlerRng.IntN(20)
			if draining {
				result = 0
			}
			if result >= 4 && result < 8 { // abandoned: the permit goes back
				f.abandons++
				if result < 6 {
					// Found out later: another worker may have taken a
					// permit meanwhile, and then this one cannot go back.
					wait := time.Duration(handlerRng.IntN(3000)) * time.Millisecond
					mu.Unlock()
					locked = false
					select {
					case <-clk.After(wait):
					case <-ctx.Done():
					}
				}
				return evictionqueue.Abandon(errors.New("no target"))
			}
			f.evictions++
			log.evictions[bucket] = append(log.evictions[bucket], now)
			log.evictions[""] = append(log.evictions[""], now)
			switch {
			case result == 8 || result == 9:
				return errors.New("apiserver said no")
			case result == 10:
				panic("handler bug")
			case result == 11 || result == 12:
				inFlight = append(inFlight, func() bool { return q.Complete(it) })
				return evictionqueue.ErrInProgress
			}
			return nil
		}
		q, err = evictionqueue.New(evictionqueue.Config{
			Name: name, Workers: 1 + i, Pacer: lim, Clock: clk, MaxRetries: 3,
			BackoffBase: time.Second, BackoffMax: 4 * time.Second, InFlightTTL: time.Minute,
			OnOutcome: outcome(name),
			DomainOf: func(cluster string) string {
				regionMu.Lock()
				defer regionMu.Unlock()
				return region[cluster]
			},
		}, h)
		if err != nil {
			t.Fatal(err)
		}
		queues = append(queues, q)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, q := range queues {
		wg.Go(func() {
			if err := q.Run(ctx); err != nil {
				t.Error(err)
			}
		})
	}

	// setHealth changes one cluster's health or region, as the driver does
	// and the Tracker learns of at once.
	setHealth := func(c string, bad bool, r string) {
		mu.Lock()
		defer mu.Unlock()
		faulty[c] = bad
		regionMu.Lock()
		moved := region[c] != r
		region[c] = r
		regionMu.Unlock()
		tracker.SetInDomains(c, bad, r)
		record()
		if moved { // as an informer's update handler does
			for _, q := range queues {
				q.DomainChanged(c)
			}
		}
	}
	start := clk.Now()
	for range 800 {
		synctest.Wait()
		f.ops++
		c := clusters[rng.IntN(len(clusters))]
		switch op := rng.IntN(20); {
		case op < 8:
			q := queues[rng.IntN(len(queues))]
			it := evictionqueue.Item{Cluster: c, Key: fmt.Sprintf("b%d", rng.IntN(30)), Priority: int32(rng.IntN(2))}
			if q.Add(it) {
				mu.Lock()
				adds[q.Name()+"/"+it.Cluster+"/"+it.Key]++
				f.adds++
				mu.Unlock()
			}
		case op < 12:
			f.flaps++
			setHealth(c, !faulty[c], region[c]) // only the driver writes them
		case op < 13:
			f.moves++
			setHealth(c, faulty[c], regions[rng.IntN(len(regions))])
		case op < 14:
			for _, q := range queues {
				f.cancelled += q.CancelCluster(c)
			}
		case op < 15:
			mu.Lock()
			var done func() bool
			if len(inFlight) > 0 {
				done, inFlight = inFlight[0], inFlight[1:]
			}
			mu.Unlock()
			if done != nil {
				done()
			}
		default:
			clk.Step(time.Duration(rng.IntN(800)) * time.Millisecond)
		}
	}

	// Drain: every cluster healthy, every call a success, every background
	// eviction completed, until nothing is queued or in flight.
	mu.Lock()
	draining = true
	mu.Unlock()
	for _, c := range clusters {
		setHealth(c, false, region[c])
	}
	for range 100000 {
		synctest.Wait()
		mu.Lock()
		pending := inFlight
		inFlight = nil
		mu.Unlock()
		for _, done := range pending {
			done()
		}
		n := 0
		for _, q := range queues {
			n += q.Len() + q.InFlight()
		}
		if n == 0 && len(pending) == 0 {
			break
		}
		clk.Step(100 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	f.simulated = clk.Since(start)

	mu.Lock()
	defer mu.Unlock()
	for _, q := range queues {
		if q.Len()+q.InFlight() != 0 {
			t.Errorf("%s: %d items left after draining", q.Name(), q.Len()+q.InFlight())
		}
	}
	for id, n := range adds {
		if finals[id] != n {
			t.Errorf("%s: added %d times, %d final outcomes", id, n, finals[id])
		}
	}
	for id, n := range finals {
		if adds[id] == 0 {
			t.Errorf("%s: %d final outcomes, never added", id, n)
		}
	}
	f.tightest = log.tightest(t)
	return f
}

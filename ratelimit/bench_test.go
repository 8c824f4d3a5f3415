package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/tools/cache"
)

const benchFleet = 10000

func benchTracker() *Tracker {
	tr := NewTracker()
	for i := range benchFleet {
		tr.Set(fmt.Sprintf("member-%05d", i), i%3 == 0)
	}
	return tr
}

func benchIndexer(b *testing.B) cache.Indexer {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for i := range benchFleet {
		if err := idx.Add(node(fmt.Sprintf("member-%05d", i), i%3 == 0)); err != nil {
			b.Fatal(err)
		}
	}
	return idx
}

// listHealth is what the source document's DynamicRateLimiter does on every
// When: list every cluster from the informer cache and count the faulty ones.
func listHealth(idx cache.Indexer) Health {
	objs := idx.List()
	h := Health{Total: len(objs)}
	for _, o := range objs {
		if nodeFaulty(o) {
			h.Unhealthy++
		}
	}
	return h
}

// BenchmarkHealth compares Tracker.Health with listing 10,000 clusters.
func BenchmarkHealth(b *testing.B) {
	b.Run("tracker-10000", func(b *testing.B) {
		tr := benchTracker()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tr.Health(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("indexer-list-10000", func(b *testing.B) {
		idx := benchIndexer(b)
		b.ReportAllocs()
		for b.Loop() {
			if h := listHealth(idx); h.Total != benchFleet {
				b.Fatal(h)
			}
		}
	})
}

// fastConfig's rate is so high that Wait and When never block: the benchmarks
// measure bookkeeping, not pacing.
var fastConfig = Config{ResourceEvictionRate: 1e9, SecondaryResourceEvictionRate: 1e9, UnhealthyClusterThreshold: 0.55, LargeClusterNumThreshold: 10}

func benchLimiter(b *testing.B) *Limiter {
	l, err := NewLimiter(fastConfig, benchTracker())
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// runGoroutines runs body on n goroutines for b.N calls in all.
func runGoroutines(b *testing.B, n int, body func()) {
	b.ReportAllocs()
	if n == 1 {
		for b.Loop() {
			body()
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				body()
			}
		}()
	}
	wg.Wait()
}

// BenchmarkWait is the cost of one Limiter.Wait; x/time/rate's Wait is the
// reference for a token bucket's bookkeeping.
func BenchmarkWait(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("limiter/goroutines-%d", n), func(b *testing.B) {
			l := benchLimiter(b)
			runGoroutines(b, n, func() {
				if err := l.Wait(ctx); err != nil {
					b.Error(err)
				}
			})
		})
		b.Run(fmt.Sprintf("x-time-rate/goroutines-%d", n), func(b *testing.B) {
			l := rate.NewLimiter(rate.Limit(1e9), 1)
			runGoroutines(b, n, func() {
				if err := l.Wait(ctx); err != nil {
					b.Error(err)
				}
			})
		})
	}
}

// BenchmarkWhen is the cost of one DynamicRateLimiter.When, against the
// source document's When: list the fleet and apply the rule on every call.
func BenchmarkWhen(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("dynamic/goroutines-%d", n), func(b *testing.B) {
			d := NewDynamicRateLimiter[string](benchLimiter(b))
			runGoroutines(b, n, func() { d.When("ns/name") })
		})
	}
	b.Run("list-10000-per-call/goroutines-1", func(b *testing.B) {
		idx := benchIndexer(b)
		cfg := DefaultConfig()
		b.ReportAllocs()
		for b.Loop() {
			_ = cfg.RateFor(listHealth(idx))
		}
	})
}

// BenchmarkAchievedRate runs workers goroutines calling Wait on one Limiter
// for a window of real time and reports permits per second against the
// configured rate. The first permit of each window is the bucket's burst of
// one (r×t + 1 permits in t), so rate-ratio counts the permits after it:
// (permits − 1) / (r × t). A permit is never handed out sooner than one
// interval after the one before, however late its waiter woke (that is the
// bound over any window), so each wake-up's latency is lost to the rate:
// the intervals (50ms) are kept well above it, as an eviction rate's are.
func BenchmarkAchievedRate(b *testing.B) {
	const r, window = 20.0, 5 * time.Second
	for _, workers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("workers-%d", workers), func(b *testing.B) {
			cfg := fastConfig
			cfg.ResourceEvictionRate, cfg.SecondaryResourceEvictionRate = r, r
			var permits atomic.Int64
			var windows int
			for b.Loop() {
				l, err := NewLimiter(cfg, benchTracker())
				if err != nil {
					b.Fatal(err)
				}
				// The context's deadline is the window: permits granted
				// before it are counted.
				ctx, cancel := context.WithTimeout(context.Background(), window)
				var wg sync.WaitGroup
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for l.Wait(ctx) == nil {
							permits.Add(1)
						}
					}()
				}
				wg.Wait()
				cancel()
				windows++
			}
			achieved := float64(permits.Load()-int64(windows)) / (float64(windows) * window.Seconds())
			b.ReportMetric(achieved, "permits/s")
			b.ReportMetric(achieved/r, "rate-ratio")
		})
	}
}

package evictionqueue_test

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/ratelimit"
)

// BenchmarkPermit is the cost of one permit under --disruption-domain
// region with 10, 1,000 and 5,000 clusters with pending items, and
// held-ns/op how long the Limiter's lock is held for it: the reservation
// path (the queue lists its pending domains from its own state, then asks
// the Limiter with that plain list) beside a replica of the callback path it
// replaced (the Limiter called the queue with its lock held, and the queue
// read Config.DomainOf for every cluster with pending items). DomainOf costs
// what the Karmada fork's does in kind: a cache lookup and a conversion.
func BenchmarkPermit(b *testing.B) {
	for _, clusters := range []int{10, 1000, 5000} {
		for _, path := range []string{"callback", "reservation"} {
			b.Run(fmt.Sprintf("clusters=%d/%s", clusters, path), func(b *testing.B) {
				benchPermit(b, clusters, path == "callback")
			})
		}
	}
}

// benchCluster is what the fork's cache holds for a cluster.
type benchCluster struct {
	name, region string
	labels       map[string]string
}

func benchPermit(b *testing.B, n int, callback bool) {
	const regions = 5
	cache := make(map[string]*benchCluster, n)
	tr := ratelimit.NewTracker()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("member-%d", i)
		r := fmt.Sprintf("region-%d", i%regions)
		cache[names[i]] = &benchCluster{name: names[i], region: r, labels: map[string]string{
			"topology.kubernetes.io/region": r, "env": "prod", "team": "payments", "tier": "1", "cloud": "aws",
		}}
		tr.SetInDomains(names[i], false, r)
	}
	domainOf := func(c string) string {
		cl := cache[c]
		if cl == nil {
			return ""
		}
		conv := *cl // the conversion: a copy with its labels
		conv.labels = maps.Clone(cl.labels)
		return conv.region
	}
	cfg := ratelimit.DefaultConfig()
	cfg.DisruptionDomain = ratelimit.DomainRegion
	lim, err := ratelimit.NewLimiter(cfg, tr)
	if err != nil {
		b.Fatal(err)
	}
	st, err := evictionqueue.NewStore(evictionqueue.Config{Name: "bench", DomainOf: domainOf})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range names { // two items per cluster: one stays pending
		st.Add(evictionqueue.Item{Cluster: c, Key: "ns/a"}, now)
		st.Add(evictionqueue.Item{Cluster: c, Key: "ns/b"}, now)
	}
	// pendingClusters and limiterMu stand for what the callback path had:
	// the queue's clusters with pending items, and the Limiter's lock, held
	// while it called the queue.
	var limiterMu sync.Mutex
	pendingClusters := names
	var held time.Duration
	b.ReportAllocs()
	for b.Loop() {
		// Every bucket holds its permit again. A step of an hour took the
		// clock past 2262, where UnixNano overflows and no permit is free,
		// within the 2.5 million steps of a fast path's second.
		now = now.Add(time.Minute)
		var domain string
		var giveBack func()
		var ok bool
		if callback {
			start := time.Now()
			limiterMu.Lock()
			for _, c := range pendingClusters { // pendingSet.refresh
				_ = domainOf(c)
			}
			domain, giveBack, ok, _ = lim.TakeDomainAt(now, st.PendingDomains())
			limiterMu.Unlock()
			held += time.Since(start)
		} else {
			ds := st.PendingDomains() // the queue's lock, not the Limiter's
			start := time.Now()
			domain, giveBack, ok, _ = lim.TakeDomainAt(now, ds)
			held += time.Since(start)
		}
		if !ok {
			b.Fatal("no permit")
		}
		it, ok := st.TakeFrom(domain, now)
		if !ok {
			giveBack()
			b.Fatal("no item")
		}
		st.Done(it, nil, now)
		st.Add(it, now) // as many pending as before
	}
	b.ReportMetric(float64(held.Nanoseconds())/float64(b.N), "held-ns/op")
}

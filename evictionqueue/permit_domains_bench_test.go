package evictionqueue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/ratelimit"
)

// BenchmarkPermitDomains is issue 28's lock time per permit: 5,000
// clusters with pending items under --disruption-domain zone, spread over
// 10 to 5,000 zones, so that as many domains have pending items.
// held-ns/op is how long the Limiter's lock is held for a permit
// (TakeDomainAt, given the queue's list of pending domains), queue-ns/op
// how long the queue takes to make that list (Store.PendingDomains, under
// the queue's own lock). In "free" every domain holds a permit, and the
// first domain listed takes it; in "none" no domain holds one, which the
// Limiter learns by looking at every domain listed, as a worker does that
// wakes before the next permit is due. Time stands still in both.
func BenchmarkPermitDomains(b *testing.B) {
	for _, domains := range []int{10, 100, 1000, 5000} {
		for _, free := range []bool{true, false} {
			name := "none"
			if free {
				name = "free"
			}
			b.Run(fmt.Sprintf("domains=%d/%s", domains, name), func(b *testing.B) {
				benchPermitDomains(b, 5000, domains, free)
			})
		}
	}
}

func benchPermitDomains(b *testing.B, clusters, domains int, free bool) {
	tr := ratelimit.NewTracker()
	zoneOf := make(map[string]string, clusters)
	names := make([]string, clusters)
	for i := range names {
		names[i] = fmt.Sprintf("member-%d", i)
		zoneOf[names[i]] = fmt.Sprintf("zone-%d", i%domains)
		tr.SetInDomains(names[i], false, zoneOf[names[i]])
	}
	cfg := ratelimit.DefaultConfig()
	cfg.DisruptionDomain = ratelimit.DomainZone
	lim, err := ratelimit.NewLimiter(cfg, tr)
	if err != nil {
		b.Fatal(err)
	}
	// DomainOf is read once per cluster, when its first item is pending.
	st, err := evictionqueue.NewStore(evictionqueue.Config{Name: "bench", DomainOf: func(c string) string { return zoneOf[c] }})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range names { // two items per cluster: one stays pending
		st.Add(evictionqueue.Item{Cluster: c, Key: "ns/a"}, now)
		st.Add(evictionqueue.Item{Cluster: c, Key: "ns/b"}, now)
	}
	if got := len(st.PendingDomains()); got != domains {
		b.Fatalf("%d domains with pending items, want %d", got, domains)
	}
	if !free { // every domain's permit taken, and time stands still
		for range domains {
			if _, _, ok, _ := lim.TakeDomainAt(now, st.PendingDomains()); !ok {
				break
			}
		}
	}
	var held, listed time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		ds := st.PendingDomains()
		listed += time.Since(start)
		start = time.Now()
		domain, giveBack, ok, _ := lim.TakeDomainAt(now, ds)
		held += time.Since(start)
		if ok != free {
			b.Fatalf("permit %v, want %v", ok, free)
		}
		if !ok {
			continue
		}
		it, ok := st.TakeFrom(domain, now)
		if !ok {
			b.Fatal("no item")
		}
		st.Done(it, nil, now)
		st.Add(it, now) // as many pending as before
		// The bucket stays full, and time still: a clock that moved would
		// have the Limiter read its source, which it does once a poll,
		// not once a permit.
		giveBack()
	}
	b.ReportMetric(float64(held.Nanoseconds())/float64(b.N), "held-ns/op")
	b.ReportMetric(float64(listed.Nanoseconds())/float64(b.N), "queue-ns/op")
}

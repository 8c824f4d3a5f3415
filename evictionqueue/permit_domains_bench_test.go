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
// 10 to 5,000 zones, so that as many domains have pending items. Time
// stands still: a clock that moved would have the Limiter read its source,
// which it does once a poll, not once a permit.
//
//   - take: a permit from the Limiter (TakeDomainAt, given the queue's
//     list of pending domains) and back, for a domain that holds one: what a
//     worker does under the Limiter's lock for each permit.
//   - none: the same when no domain holds a permit, which the Limiter
//     learns by looking at every domain listed, as a worker does that wakes
//     before the next permit is due.
//   - list: the queue's list of its pending domains (Store.PendingDomains),
//     made under the queue's own lock before each permit, after the head
//     item of the first domain was handled and added again.
func BenchmarkPermitDomains(b *testing.B) {
	for _, domains := range []int{10, 100, 1000, 5000} {
		b.Run(fmt.Sprintf("domains=%d/take", domains), func(b *testing.B) {
			lim, st, now := permitDomains(b, 5000, domains)
			ds := st.PendingDomains()
			b.ReportAllocs()
			for b.Loop() {
				_, giveBack, ok, _ := lim.TakeDomainAt(now, ds)
				if !ok {
					b.Fatal("no permit")
				}
				giveBack()
			}
		})
		b.Run(fmt.Sprintf("domains=%d/none", domains), func(b *testing.B) {
			lim, st, now := permitDomains(b, 5000, domains)
			ds := st.PendingDomains()
			for range ds { // every domain's permit taken
				if _, _, ok, _ := lim.TakeDomainAt(now, ds); !ok {
					break
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, ok, _ := lim.TakeDomainAt(now, ds); ok {
					b.Fatal("a permit")
				}
			}
		})
		b.Run(fmt.Sprintf("domains=%d/list", domains), func(b *testing.B) {
			_, st, now := permitDomains(b, 5000, domains)
			ds := st.PendingDomains()
			b.ReportAllocs()
			for b.Loop() {
				it, ok := st.TakeFrom(ds[0], now)
				if !ok {
					b.Fatal("no item")
				}
				st.Done(it, nil, now)
				st.Add(it, now) // as many pending as before
				ds = st.PendingDomains()
			}
		})
	}
}

// permitDomains is a Limiter pacing by zone and a Store with two pending
// items for each of n clusters, spread over the given number of zones.
func permitDomains(b *testing.B, n, domains int) (*ratelimit.Limiter, *evictionqueue.Store, time.Time) {
	b.Helper()
	tr := ratelimit.NewTracker()
	zoneOf := make(map[string]string, n)
	names := make([]string, n)
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
	return lim, st, now
}

package evictionqueue

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"k8s.io/client-go/util/workqueue"
)

// benchItems returns n distinct items of 100 clusters, grouped by cluster as
// a taint manager adds them: when a cluster fails, its bindings are listed
// and added together.
func benchItems(n int) []Item {
	its := make([]Item, n)
	per := max(n/100, 1)
	for i := range its {
		its[i] = Item{Cluster: fmt.Sprintf("member-%d", i/per), Key: fmt.Sprintf("ns-%d/binding-%d", i%37, i), ResourceKind: "apps/v1/Deployment"}
	}
	return its
}

// BenchmarkAddProcess adds 20,000 items and waits until one unpaced worker
// has handled them all: the queue's own overhead per item. The client-go
// case does the same with a workqueue (Add, then Get and Done in a worker).
// Rounds alternate between two sets of keys: the last item of a round may
// still be in its handler when the next round starts adding.
//
// Measured with -benchtime 30x -count 6 on 2 shared cores (issue 31): each
// domain's line (a heap by compareOrder plus a run for entries that arrive
// in order), the entry pool and the last-cluster cache at 4.8-7.1 ms
// (median 5.4) per 20,000 items against client-go's 5.1-6.4 ms (median
// 5.4): 0.94x best to best, 1.01x median to median, 727 allocs; a heap
// alone was about 3.5x, without the pool about 1.5x, without the cache
// about 1.1x.
func BenchmarkAddProcess(b *testing.B) {
	const n = 20000
	all := benchItems(2 * n)
	sets := [2][]Item{all[:n], all[n:]}
	b.Run("evictionqueue", func(b *testing.B) {
		done := make(chan struct{})
		count := 0
		q, err := New(Config{Name: "bench"}, func(context.Context, Item) error {
			if count++; count == n {
				count = 0
				done <- struct{}{}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error)
		go func() { ran <- q.Run(ctx) }()
		b.ReportAllocs()
		round := 0
		for b.Loop() {
			for _, it := range sets[round%2] {
				q.Add(it)
			}
			<-done
			round++
		}
		b.StopTimer()
		cancel()
		if err := <-ran; err != nil {
			b.Fatal(err)
		}
	})
	b.Run("client-go-workqueue", func(b *testing.B) {
		var keys [2][]string
		for r, set := range sets {
			for _, it := range set {
				keys[r] = append(keys[r], it.Cluster+"/"+it.Key)
			}
		}
		q := workqueue.NewTyped[string]()
		done := make(chan struct{})
		worker := make(chan struct{})
		go func() {
			defer close(worker)
			count := 0
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				q.Done(k)
				if count++; count == n {
					count = 0
					done <- struct{}{}
				}
			}
		}()
		b.ReportAllocs()
		round := 0
		for b.Loop() {
			for _, k := range keys[round%2] {
				q.Add(k)
			}
			<-done
			round++
		}
		b.StopTimer()
		q.ShutDown()
		<-worker
	})
}

// BenchmarkCancelCluster cancels a cluster's 100 items (and adds them back
// for the next round) with 10,000 and with 200,000 items queued. The cost
// should not grow with the queue.
func BenchmarkCancelCluster(b *testing.B) {
	for _, queued := range []int{10000, 200000} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) {
			q, err := New(Config{Name: "bench"}, func(context.Context, Item) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			for _, it := range benchItems(queued - 100) {
				q.Add(it)
			}
			target := make([]Item, 100)
			for i := range target {
				target[i] = Item{Cluster: "recovered", Key: fmt.Sprintf("ns/b-%d", i)}
				q.Add(target[i])
			}
			b.ReportAllocs()
			for b.Loop() {
				if q.CancelCluster("recovered") != 100 {
					b.Fatal("cancelled the wrong number of items")
				}
				for _, it := range target {
					q.Add(it)
				}
			}
		})
	}
}

// BenchmarkQueuedItem fills a queue with 100,000 waiting items and reports
// the heap they keep (retained-B/item, measured after a GC) and what filling
// it allocated (alloc-B/item), next to a client-go workqueue holding the same
// keys. The items' strings are shared with the caller and not counted.
func BenchmarkQueuedItem(b *testing.B) {
	const n = 100000
	its := benchItems(n)
	measure := func(b *testing.B, fill func() any) {
		var retained, allocated uint64
		var before, after runtime.MemStats
		rounds := 0
		b.ReportAllocs()
		for b.Loop() {
			runtime.GC()
			runtime.ReadMemStats(&before)
			q := fill()
			runtime.ReadMemStats(&after)
			allocated += after.TotalAlloc - before.TotalAlloc
			runtime.GC()
			runtime.ReadMemStats(&after)
			retained += after.HeapAlloc - before.HeapAlloc
			runtime.KeepAlive(q)
			rounds++
		}
		b.ReportMetric(float64(retained)/float64(rounds*n), "retained-B/item")
		b.ReportMetric(float64(allocated)/float64(rounds*n), "alloc-B/item")
	}
	b.Run("evictionqueue", func(b *testing.B) {
		measure(b, func() any {
			q, _ := New(Config{Name: "bench"}, func(context.Context, Item) error { return nil })
			for _, it := range its {
				q.Add(it)
			}
			return q
		})
	})
	b.Run("client-go-workqueue", func(b *testing.B) {
		keys := make([]string, n)
		for i, it := range its {
			keys[i] = it.Cluster + "/" + it.Key
		}
		measure(b, func() any {
			q := workqueue.NewTyped[string]()
			for _, k := range keys {
				q.Add(k)
			}
			q.ShutDown() // its goroutine ends; the items stay
			return q
		})
	})
}

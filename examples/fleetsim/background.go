package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
)

// Background evictions: the handler returns ErrInProgress and the driver
// lands the scheduler's answer, then calls Complete, some time later.

// completion is a background eviction: at `at` the scheduler's answer
// lands and the queue is told Complete.
type completion struct {
	at    time.Time
	queue int
	item  evictionqueue.Item
	b     *binding
	// added is what the scheduler adds to the schedule result: new
	// clusters, or more replicas on a cluster. It is merged into the
	// result as it is when the answer lands, which other evictions of the
	// same binding may have changed meanwhile.
	added []failover.TargetCluster
	ready func(string) time.Time
}

// scheduleDelta is what result adds to base.
func scheduleDelta(base, result []failover.TargetCluster) []failover.TargetCluster {
	had := map[string]int32{}
	for _, t := range base {
		had[t.Name] = t.Replicas
	}
	var out []failover.TargetCluster
	for _, t := range result {
		r, ok := had[t.Name]
		switch {
		case !ok:
			out = append(out, t)
		case t.Replicas > r:
			out = append(out, failover.TargetCluster{Name: t.Name, Replicas: t.Replicas - r})
		}
	}
	return out
}

// mergeSchedule adds added to result.
func mergeSchedule(result, added []failover.TargetCluster) []failover.TargetCluster {
	out := slices.Clone(result)
	for _, a := range added {
		if i := slices.IndexFunc(out, func(t failover.TargetCluster) bool { return t.Name == a.Name }); i >= 0 {
			out[i].Replicas += a.Replicas
		} else {
			out = append(out, a)
		}
	}
	sortTargets(out)
	return out
}

// pendingAdditions are the scheduler's answers for b not landed yet.
func (w *world) pendingAdditions(b *binding) []failover.TargetCluster {
	var out []failover.TargetCluster
	for _, c := range w.inFlight {
		if c.b == b {
			out = mergeSchedule(out, c.added)
		}
	}
	return out
}

// completeDue lands the scheduler's answer for the background evictions due
// by now and returns them; the caller tells their queues Complete.
func (w *world) completeDue(now time.Time) []*completion {
	var done []*completion
	for len(w.inFlight) > 0 && !w.inFlight[0].at.After(now) {
		c := w.inFlight[0]
		w.inFlight = w.inFlight[1:]
		b := c.b
		before := slices.Clone(b.gb.Clusters)
		// The evicted copy left the result when the eviction was accepted;
		// count it again so that the check sees the move as a whole.
		before = append(before, failover.TargetCluster{Name: c.item.Cluster, Replicas: sumReplicas(c.added)})
		result := mergeSchedule(b.gb.Clusters, c.added)
		w.setSchedule(b, result, c.ready)
		if !slices.ContainsFunc(w.inFlight, func(o *completion) bool { return o.b == b }) {
			b.gb.ObservedGeneration = b.gb.Generation
		}
		w.touch(b)
		w.rec.evict(c.queue, b, c.item.Cluster, before, result, w.byName, false)
		w.checkCopies(b)
		w.rec.completed(now)
		done = append(done, c)
	}
	return done
}

func sumReplicas(ts []failover.TargetCluster) int32 {
	var n int32
	for _, t := range ts {
		n += t.Replicas
	}
	return n
}

// checkCopies records a workload left with no copy anywhere: none in its
// schedule result, none on its way there (a background eviction's answer
// not landed yet) and none kept by an open graceful eviction task; or a
// divided workload whose scheduled and incoming replicas do not add up.
func (w *world) checkCopies(b *binding) {
	pending := w.pendingAdditions(b)
	if len(b.gb.Clusters)+len(pending)+len(b.gb.Tasks) == 0 {
		w.rec.violation(checkLastCopy, b.key()+": no copy left anywhere")
	}
	if n := b.replicas() + sumReplicas(pending); b.spec.divided() && n != b.spec.Replicas {
		w.rec.violation(checkLastCopy, fmt.Sprintf("%s: %s scheduled or incoming, want %d", b.key(), plural(int(n), "replica", "replicas"), b.spec.Replicas))
	}
}

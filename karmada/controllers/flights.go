package controllers

import (
	"sync"

	"github.com/failoverkit/failover/karmada/engine"
)

// flights are the evictions of one queue this controller counts in flight
// (it wrote their task, or took them over from open tasks), by binding key
// and cluster, so that a binding seen without the task of one of them ends
// it in time proportional to the binding's clusters, not to every eviction
// in flight. An eviction leaves when it ends: its binding's reconcile sees
// its task gone (endRemoved) or the binding gone (bindingGone), or its
// queue decides it again (an expiry of InFlightTTL).
type flights struct {
	mu    sync.Mutex
	next  uint64
	byKey map[string]map[string]flight // binding key -> cluster -> its record
}

// flight is the record of one eviction in flight.
type flight struct {
	// serial tells a record made again from the one read before.
	serial uint64
	// endsAtOnce: its task ends as soon as it is stamped
	// (gracefulevict.Task.EndsAtOnce), so its end says nothing of where
	// the replicas went.
	endsAtOnce bool
	// hold is the room the Ledger holds for it; zero: none.
	hold engine.Hold
	// writing: its task is being written (recorded before the write, so
	// that an end seen right after it finds the record); gone: a
	// reconcile saw the binding without the task while it was, which
	// says nothing until the write has returned (see written).
	writing, gone bool
}

// add records the eviction of key from cluster as in flight, its task
// ending at once or not, and the room held for it. A record made again
// replaces the one before, with a new serial.
func (f *flights) add(key, cluster string, endsAtOnce bool, hold engine.Hold) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byKey == nil {
		f.byKey = map[string]map[string]flight{}
	}
	m := f.byKey[key]
	if m == nil {
		m = map[string]flight{}
		f.byKey[key] = m
	}
	f.next++
	m[cluster] = flight{serial: f.next, endsAtOnce: endsAtOnce, hold: hold}
}

// writing records the eviction of key from cluster as in flight while its
// task is being written: add's record, marked writing.
func (f *flights) writing(key, cluster string, endsAtOnce bool, hold engine.Hold) {
	f.add(key, cluster, endsAtOnce, hold)
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.byKey[key][cluster]
	r.writing = true
	f.byKey[key][cluster] = r
}

// sawGone notes that a reconcile saw the binding key without the task from
// cluster while the task was being written.
func (f *flights) sawGone(key, cluster string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.byKey[key][cluster]; ok && r.writing {
		r.gone = true
		f.byKey[key][cluster] = r
	}
}

// written ends the writing of the task of key from cluster and reports
// whether a reconcile saw the binding without it meanwhile: it may have
// ended already, and the writer must look.
func (f *flights) written(key, cluster string) (sawGone bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.byKey[key][cluster]
	if !ok || !r.writing {
		return false
	}
	sawGone = r.gone
	r.writing, r.gone = false, false
	f.byKey[key][cluster] = r
	return sawGone
}

// forget drops the record of the eviction of key from cluster.
func (f *flights) forget(key, cluster string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropLocked(key, cluster)
}

func (f *flights) dropLocked(key, cluster string) {
	m := f.byKey[key]
	delete(m, cluster)
	if len(m) == 0 {
		delete(f.byKey, key)
	}
}

// of returns the records of key, by cluster. Nil when none.
func (f *flights) of(key string) map[string]flight {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.byKey[key]
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]flight, len(m))
	for cl, r := range m {
		out[cl] = r
	}
	return out
}

// take drops the record of key from cluster and reports true if it is
// still r: not made again, nor dropped, since it was read.
func (f *flights) take(key, cluster string, r flight) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if got, ok := f.byKey[key][cluster]; !ok || got != r {
		return false
	}
	f.dropLocked(key, cluster)
	return true
}

// takeBinding drops every record of key and returns their clusters.
func (f *flights) takeBinding(key string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.byKey[key]
	delete(f.byKey, key)
	out := make([]string, 0, len(m))
	for cl := range m {
		out = append(out, cl)
	}
	return out
}

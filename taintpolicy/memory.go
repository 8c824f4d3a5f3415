package taintpolicy

import (
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// memory stands in for lastTransitionTime where a cluster does not give one:
// for each cluster and condition type it holds the state first seen (present
// or absent, and the status) and when. It holds only conditions that lack a
// time, drops an entry once the condition carries a time or no policy reads
// its type, and drops a cluster on Forget.
type memory struct {
	mu       sync.Mutex
	clusters map[string]map[string]firstSeen

	// size counts the clusters with entries, so that in the common case (no
	// cluster lacks a time) an evaluation takes no lock at all. It changes
	// only under mu; an evaluation racing with another one of the same
	// cluster may miss a prune, which the next evaluation does.
	size atomic.Int64
}

type firstSeen struct {
	present bool
	status  metav1.ConditionStatus
	since   time.Time
}

func (m *memory) nonEmpty() bool { return m.size.Load() > 0 }

// resolve fills in since for the conditions a policy with windows reads that
// carry no time, and prunes what is no longer needed.
func (m *memory) resolve(cluster string, cp *compiled, conds []condState, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := m.clusters[cluster]
	for t := range conds {
		st := &conds[t]
		if !st.resolved {
			continue
		}
		name := cp.condTypes[t]
		if st.timed || !st.windowed {
			delete(seen, name) // no-op on a nil map
			continue
		}
		if prev, ok := seen[name]; ok && prev.present == st.present && prev.status == st.status {
			// Concurrent or replayed evaluations may arrive out of order:
			// the earliest evaluation that saw the state wins.
			if now.Before(prev.since) {
				prev.since = now
				seen[name] = prev
			}
			st.since = prev.since
			continue
		}
		if seen == nil {
			if m.clusters == nil {
				m.clusters = make(map[string]map[string]firstSeen)
			}
			seen = make(map[string]firstSeen, 1)
			m.clusters[cluster] = seen
			m.size.Add(1)
		}
		seen[name] = firstSeen{present: st.present, status: st.status, since: now}
		st.since = now
	}
	if seen == nil {
		return
	}
	for name := range seen {
		if _, ok := cp.typeIndex[name]; !ok {
			delete(seen, name)
		}
	}
	if len(seen) == 0 {
		delete(m.clusters, cluster)
		m.size.Add(-1)
	}
}

func (m *memory) forget(cluster string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.clusters[cluster]; ok {
		delete(m.clusters, cluster)
		m.size.Add(-1)
	}
}

// len returns the number of clusters remembered, for tests.
func (m *memory) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.clusters)
}

package ratelimit

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/failoverkit/failover"
)

// Health is a snapshot of the fleet: how many clusters there are and how many
// of them are faulty (failover.IsFaulty).
type Health struct {
	Total     int
	Unhealthy int
}

// FailureRate is Unhealthy/Total, 0 for an empty fleet.
func (h Health) FailureRate() float64 {
	if h.Total <= 0 {
		return 0
	}
	return float64(h.Unhealthy) / float64(h.Total)
}

// check rejects counts no fleet can have, which would read as healthy: 5
// faulty of 0 is a failure rate of 0.
func (h Health) check() error {
	if h.Total < 0 || h.Unhealthy < 0 || h.Unhealthy > h.Total {
		return fmt.Errorf("ratelimit: health source answered an impossible Health{Total: %d, Unhealthy: %d}; want 0 <= Unhealthy <= Total",
			h.Total, h.Unhealthy)
	}
	return nil
}

// HealthSource reports the fleet's health. An error means "unknown": a
// Limiter pauses until the source answers again, as for an impossible
// Health (a negative count, or more unhealthy clusters than clusters).
type HealthSource interface {
	Health() (Health, error)
}

// Notifier is optionally implemented by a HealthSource that knows when its
// answer changes: the channel is closed at the next change after the call.
// A Limiter re-times its waiters the moment it closes instead of polling.
type Notifier interface {
	Changed() <-chan struct{}
}

// ErrNotSynced is the Health error of a Tracker that does not know the whole
// fleet yet (NewInformerSource before its initial list, NewUnsyncedTracker
// before MarkSynced): a partial fleet's failure rate means nothing.
var ErrNotSynced = errors.New("ratelimit: fleet health has not synced yet")

// DomainHealthSource is a HealthSource that also knows the health of each
// disruption domain that has clusters (Config.DisruptionDomain), as a
// Limiter with a disruption domain needs. DomainHealth fails when Health
// would.
type DomainHealthSource interface {
	HealthSource
	DomainHealth() (map[string]Health, error)
}

// Tracker is an incremental HealthSource: callers tell it when a cluster
// appears, changes or goes away (Set(name, failover.IsFaulty(c))), and Set,
// Delete and Health are O(1) whatever the fleet's size. It also keeps each
// domain's health (DomainHealthSource): a cluster set with SetInDomains
// counts in each domain it names, one with none in "". It is a Notifier;
// setting a cluster to the state it has wakes nobody.
//
// The zero value is an empty fleet, ready to use. A Tracker is safe for
// concurrent use.
type Tracker struct {
	mu       sync.Mutex
	clusters map[string]trackedCluster
	nFaulty  int
	// domains counts each domain's clusters and faulty ones.
	domains map[string]Health
	// changed is made by Changed, so that updates nobody watches allocate
	// nothing.
	changed chan struct{}
	// For domainsErr: SetInDomains was called; Set added a cluster;
	// NewInformerSource had no WithDomains.
	withDomains, plainSet, noDomains bool

	// Until synced, Health fails with ErrNotSynced: hasSynced is an
	// informer's handler registration's, markSynced is closed by
	// MarkSynced; neither set, synced from the start.
	hasSynced  func() bool
	markSynced chan struct{}
	syncedDone atomic.Bool
}

// trackedCluster is what a Tracker knows of one cluster.
type trackedCluster struct {
	faulty  bool
	domains []string // never empty: [""] for a cluster without a domain
}

// noDomain is the domains of a cluster set without any.
var noDomain = []string{""}

// NewTracker returns an empty Tracker, synced from the start.
func NewTracker() *Tracker { return &Tracker{} }

// NewUnsyncedTracker returns an empty Tracker whose Health fails with
// ErrNotSynced, pausing a Limiter, until MarkSynced. It is for a Tracker fed
// by hand, from a controller-runtime Reconcile say: after a restart the
// first events describe part of the fleet, whose failure rate could resume
// evictions the full fleet forbids. Call MarkSynced once every cluster known
// at start has been Set; Sets and Deletes before it are kept.
func NewUnsyncedTracker() *Tracker {
	return &Tracker{markSynced: make(chan struct{})}
}

// MarkSynced declares that the Tracker knows the whole fleet: Health
// answers, and a waiting Limiter re-reads it at once. It does nothing again,
// nor on a Tracker from NewTracker or NewInformerSource.
func (t *Tracker) MarkSynced() {
	if t.markSynced == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.markSynced:
	default:
		close(t.markSynced)
	}
}

// Set records whether cluster is faulty, adding it (in the domain "") if new.
func (t *Tracker) Set(cluster string, faulty bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, known := t.clusters[cluster]
	if known && old.faulty == faulty {
		return
	}
	domains := noDomain
	if known {
		domains = old.domains
	} else {
		t.plainSet = true
	}
	t.setLocked(cluster, old, known, trackedCluster{faulty: faulty, domains: domains})
}

// SetInDomains records whether cluster is faulty and the disruption domains
// it counts in (DomainsOf gives them), adding it if new. No domain means the
// domain ""; a domain repeated counts once.
func (t *Tracker) SetInDomains(cluster string, faulty bool, domains ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.withDomains = true
	old, known := t.clusters[cluster]
	// An informer's resync repeats itself: no need to sort for that.
	if known && old.faulty == faulty && slices.Equal(old.domains, domains) {
		return
	}
	if len(domains) == 0 {
		domains = noDomain
	} else {
		domains = slices.Compact(slices.Sorted(slices.Values(domains)))
	}
	if known && old.faulty == faulty && slices.Equal(old.domains, domains) {
		return
	}
	t.setLocked(cluster, old, known, trackedCluster{faulty: faulty, domains: domains})
}

// setLocked replaces cluster's state by c and notifies.
func (t *Tracker) setLocked(cluster string, old trackedCluster, known bool, c trackedCluster) {
	if t.clusters == nil {
		t.clusters = make(map[string]trackedCluster)
		t.domains = make(map[string]Health)
	}
	if known {
		t.countLocked(old, -1)
	}
	t.clusters[cluster] = c
	t.countLocked(c, +1)
	t.notifyLocked()
}

// countLocked adds (n = 1) or removes (n = -1) c's counts.
func (t *Tracker) countLocked(c trackedCluster, n int) {
	f := 0
	if c.faulty {
		f = n
	}
	t.nFaulty += f
	for _, d := range c.domains {
		h := t.domains[d]
		h.Total += n
		h.Unhealthy += f
		if h.Total == 0 {
			delete(t.domains, d)
			continue
		}
		t.domains[d] = h
	}
}

// Delete removes cluster from the fleet; unknown clusters are ignored.
func (t *Tracker) Delete(cluster string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, known := t.clusters[cluster]
	if !known {
		return
	}
	delete(t.clusters, cluster)
	t.countLocked(c, -1)
	t.notifyLocked()
}

func (t *Tracker) notifyLocked() {
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// Health returns the fleet's size and faulty count, or ErrNotSynced.
func (t *Tracker) Health() (Health, error) {
	if !t.isSynced() {
		return Health{}, ErrNotSynced
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return Health{Total: len(t.clusters), Unhealthy: t.nFaulty}, nil
}

// DomainHealth returns the health of every domain that has a cluster, in a
// new map. It fails as Health does, and when the Tracker knows no domain:
// made by NewInformerSource without WithDomains, or fed with Set only.
func (t *Tracker) DomainHealth() (map[string]Health, error) {
	if !t.isSynced() {
		return nil, ErrNotSynced
	}
	if err := t.domainsErr(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.domains), nil
}

// domainsErr says why the Tracker cannot tell domains apart: every cluster
// would count in "", and a Limiter judging per domain would never hand out
// a permit for any other.
func (t *Tracker) domainsErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.noDomains:
		return errors.New("ratelimit: the health source is a Tracker from NewInformerSource without WithDomains, " +
			"so it knows no cluster's domain: pass WithDomains")
	case t.plainSet && !t.withDomains:
		return errors.New("ratelimit: the health source is a Tracker fed with Set, which records no domain: " +
			"feed it with SetInDomains")
	}
	return nil
}

// DomainsOf returns the domains cluster c counts in under d: its Region, its
// Zones (or Zone), or its Provider; "" for a cluster without one, so that
// every cluster with no region shares one domain. Under DomainFleet: nil.
func DomainsOf(c failover.Cluster, d Domain) []string {
	switch d {
	case DomainRegion:
		return []string{c.Region}
	case DomainZone:
		if len(c.Zones) > 0 {
			return c.Zones
		}
		return []string{c.Zone}
	case DomainProvider:
		return []string{c.Provider}
	}
	return nil
}

func (t *Tracker) isSynced() bool {
	if t.syncedDone.Load() {
		return true
	}
	switch {
	case t.hasSynced != nil:
		if !t.hasSynced() {
			return false
		}
	case t.markSynced != nil:
		select {
		case <-t.markSynced:
		default:
			return false
		}
	}
	t.syncedDone.Store(true)
	return true
}

// Changed returns a channel closed at the next change of Health. Before the
// sync that change is the sync: MarkSynced closes it; from
// NewInformerSource it is nil until then, since a registration tells of its
// sync only when asked, and a Limiter polls a failing source anyway.
func (t *Tracker) Changed() <-chan struct{} {
	if !t.isSynced() {
		if t.markSynced != nil {
			return t.markSynced
		}
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	return t.changed
}

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

// check rejects counts no fleet can have. A source that answers them (say,
// faulty clusters counted before the fleet list is loaded) would otherwise
// read as a healthy fleet: 5 faulty of 0 is a failure rate of 0.
func (h Health) check() error {
	if h.Total < 0 || h.Unhealthy < 0 || h.Unhealthy > h.Total {
		return fmt.Errorf("ratelimit: health source answered an impossible Health{Total: %d, Unhealthy: %d}; want 0 <= Unhealthy <= Total",
			h.Total, h.Unhealthy)
	}
	return nil
}

// HealthSource reports the fleet's health. An error means "unknown", and a
// Limiter pauses until the source answers again; so does an impossible
// Health (a negative count, or more unhealthy clusters than clusters).
type HealthSource interface {
	Health() (Health, error)
}

// Notifier is optionally implemented by a HealthSource that knows when its
// answer changes. The channel it returns is closed once the health changes
// after the call; callers then call Changed again for the next change. A
// Limiter whose source is a Notifier re-times its waiters the moment the
// channel closes instead of polling.
type Notifier interface {
	Changed() <-chan struct{}
}

// ErrNotSynced is returned by the Health of a Tracker that does not know the
// whole fleet yet: one made by NewInformerSource until its informer has
// delivered its initial list, or one made by NewUnsyncedTracker until
// MarkSynced. A partial fleet would give a meaningless failure rate.
var ErrNotSynced = errors.New("ratelimit: fleet health has not synced yet")

// DomainHealthSource is optionally implemented by a HealthSource that also
// knows the health of each disruption domain (a region, zone or provider; see
// Config.DisruptionDomain). A Limiter whose Config has a disruption domain
// needs one. DomainHealth returns every domain that has clusters, and fails
// when Health would.
type DomainHealthSource interface {
	HealthSource
	DomainHealth() (map[string]Health, error)
}

// Tracker is an incremental HealthSource: callers tell it when a cluster
// appears, changes or goes away (typically Set(name, failover.IsFaulty(c))),
// and Set, Delete and Health are O(1) whatever the size of the fleet: nothing
// is ever listed.
//
// Tracker also keeps health per disruption domain (DomainHealthSource): a
// cluster set with SetInDomains counts in each domain it names (a multi-zone
// cluster in each of its zones; DomainsOf lists them), and one set with Set,
// or with no domain, counts in the domain "". Keeping it costs O(domains of
// the cluster) per change; Health stays O(1), and DomainHealth is
// O(domains).
//
// Tracker is a Notifier: the channel from Changed is closed on every Set or
// Delete that alters Health or a domain's health. Setting a cluster to the
// state it already has costs a map lookup and wakes nobody.
//
// The zero value is an empty fleet, ready to use. A Tracker is safe for
// concurrent use.
type Tracker struct {
	mu       sync.Mutex
	clusters map[string]trackedCluster
	nFaulty  int
	// domains counts each domain's clusters and faulty ones; a domain
	// leaves when its last cluster does.
	domains map[string]Health
	// changed is created on demand by Changed, so that updates nobody watches
	// allocate nothing; nil means no one holds the current channel.
	changed chan struct{}
	// What the Tracker was told of domains, for domainsErr: withDomains,
	// SetInDomains was called (or WithDomains given); plainSet, Set added
	// a cluster; noDomains, NewInformerSource had no WithDomains.
	withDomains, plainSet, noDomains bool

	// Until the Tracker knows the whole fleet Health fails with
	// ErrNotSynced. hasSynced, for a Tracker fed by an informer, is its
	// handler registration's HasSynced; markSynced, for NewUnsyncedTracker,
	// is closed by MarkSynced. Neither set: synced from the start.
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

// NewTracker returns an empty Tracker, synced from the start: an empty fleet
// is a fleet, and Health answers at once.
func NewTracker() *Tracker { return &Tracker{} }

// NewUnsyncedTracker returns an empty Tracker whose Health fails with
// ErrNotSynced, pausing a Limiter, until MarkSynced is called. It is for a
// Tracker fed by hand, for example from a controller-runtime Reconcile: after
// a restart the first events describe part of the fleet, and a failure rate
// computed from them could resume evictions the full fleet would forbid (or
// the reverse). Call MarkSynced once every cluster known at start has been
// Set, typically after the cache has synced and its list has been walked.
// Sets and Deletes before MarkSynced are kept.
func NewUnsyncedTracker() *Tracker {
	return &Tracker{markSynced: make(chan struct{})}
}

// MarkSynced declares that the Tracker now knows the whole fleet: Health
// answers from then on, and the Changed channel is closed so a waiting
// Limiter re-reads it at once. Calling it again does nothing, and so does
// calling it on a Tracker from NewTracker (always synced) or
// NewInformerSource (its informer decides when it has synced).
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

// Set records whether cluster is faulty, adding it to the fleet if it is new.
// A cluster it already knows keeps its domains; a new one counts in the
// domain "".
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
// it counts in (DomainsOf gives them for a failover.Cluster), adding it to
// the fleet if it is new. No domain, or only "", means the domain "";
// repeated domains count once.
func (t *Tracker) SetInDomains(cluster string, faulty bool, domains ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.withDomains = true
	old, known := t.clusters[cluster]
	// An informer's resync repeats what it said before: answer that
	// without copying and sorting the domains, as below.
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

// setLocked replaces cluster's old state (if known) by c and notifies.
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

// Health returns the fleet's size and faulty count. It fails only with
// ErrNotSynced, for a Tracker not synced yet (see NewInformerSource and
// NewUnsyncedTracker).
func (t *Tracker) Health() (Health, error) {
	if !t.isSynced() {
		return Health{}, ErrNotSynced
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return Health{Total: len(t.clusters), Unhealthy: t.nFaulty}, nil
}

// DomainHealth returns the health of every domain that has a cluster (see
// SetInDomains), in a new map. It fails as Health does, and also when the
// Tracker cannot know domains: made by NewInformerSource without
// WithDomains, or fed with Set and never with SetInDomains.
func (t *Tracker) DomainHealth() (map[string]Health, error) {
	if !t.isSynced() {
		return nil, ErrNotSynced
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.domainsErrLocked(); err != nil {
		return nil, err
	}
	return maps.Clone(t.domains), nil
}

func (t *Tracker) domainsErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.domainsErrLocked()
}

// domainsErrLocked says why the Tracker cannot tell clusters' domains
// apart, or nil: then every cluster would count in the domain "", and a
// Limiter judging health per domain would never hand out a permit for any
// other.
func (t *Tracker) domainsErrLocked() error {
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

// DomainsOf returns the domains cluster c counts in under domain kind d: its
// Region, its Zones (or, without Zones, its Zone), or its Provider. A
// cluster without one counts in the domain "": under DomainRegion, every
// cluster with no region shares that one domain. Under DomainFleet (or "")
// it returns nil, which a Tracker counts as "".
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

// Changed returns a channel that is closed at the next change of Health.
// Before the Tracker has synced, that change is the sync itself: Health
// answers ErrNotSynced whatever the events, so they change nothing. For a
// Tracker from NewUnsyncedTracker the channel is closed by MarkSynced; for
// one from NewInformerSource it is nil until the sync, since a handler
// registration tells of its sync only when asked (HasSynced), and a Limiter
// polls a source whose Health fails (WithPollInterval) and so sees the sync
// at its next poll.
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

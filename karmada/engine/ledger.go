package engine

import (
	"strings"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/prescheduling"
	"github.com/failoverkit/failover/reservation"
)

// DefaultHold is how long a Ledger holds room for an approved eviction at
// most: Karmada's scheduler keeps its own assumptions of in-flight workloads
// (SchedulingOvercommitProtection) as long.
const DefaultHold = reservation.DefaultHold

// Ledger holds room for the evictions a pre-scheduling check approved until
// the clusters' resource summaries show their replicas placed, their
// graceful eviction task ends ([Ledger.ReleaseAt] the summaries' next
// report), or a hold passes ([WithHold], default [DefaultHold]).
//
// It is reservation.Ledger, which holds the room with no Karmada types
// and which a controller that is not Karmada's uses with its own record of
// the clusters' room, read through Karmada's resource summaries: a
// cluster's pods are its allocated and allocating pods, and its room once
// evictions in flight are held there is karmada.MaxReplicas of its summary with
// their replicas and requests added to allocating, as Karmada's own
// scheduler deducts its in-flight assumptions from a summary
// (deductAssumedWorkloadsFromSummary). See reservation.Ledger for how
// room is held and released; in short:
//
// Resource summaries lag behind the scheduler, so checks run one after
// another all see the same room, and so does the scheduler: Karmada issue
// 6518 has 15 one-replica workloads failed over from one cluster all placed
// on a survivor with room for 10, while another with room for 5 stays empty.
// The check predicts where the scheduler puts what an eviction removes
// (prescheduling.Result.Moves), from the summaries as the scheduler sees
// them; [Ledger.Admit] then holds an eviction back, with Code
// prescheduling.AwaitingCapacity, when the room those clusters have left
// after the evictions in flight is short, and otherwise records the moves
// against that room. Only evictions the scheduler places by room are held
// back (prescheduling.Result.PlacedByRoom); the moves of the others are
// held all the same, as they take room from the evictions placed by it. The
// summaries show replicas placed when a cluster's pods have grown by them
// since the room was held, oldest first.
//
// A Ledger is safe for concurrent use, and reads no clock: every method that
// depends on time takes now. Its zero value is not usable; use [NewLedger].
type Ledger struct {
	core *reservation.Ledger
}

// LedgerOption configures a Ledger: the reservation Ledger's options.
type LedgerOption = reservation.LedgerOption

// WithHold sets how long room is held for an approved eviction at most
// (reservation.WithHold). It must be positive.
func WithHold(d time.Duration) LedgerOption { return reservation.WithHold(d) }

// NewLedger returns an empty Ledger configured by opts; an option given a
// value it cannot take is an error naming it. Nil options are skipped.
func NewLedger(opts ...LedgerOption) (*Ledger, error) {
	core, err := reservation.NewLedger(opts...)
	if err != nil {
		return nil, err
	}
	return &Ledger{core: core}, nil
}

// Admit decides, at now, whether the eviction of the binding key from
// cluster, which the check answered r, may go ahead, given the room the
// evictions in flight will take. key is the binding's key, as an eviction
// queue names it; one binding may leave several clusters at once, each
// with room of its own held (the library's eviction controller holds room
// per graceful eviction task). summaries are the fleet's resource
// summaries as they are now (a [Fleet]'s Summary, or karmada.SummariesOf a
// list of Clusters), and req the binding's spec.replicaRequirements, as
// for karmada.Capacity.
//
// An infeasible r comes back as it is. A feasible r whose moves fit in the
// room left on each cluster they go to comes back as it is, and the room is
// held for the eviction (replacing what was held for it before). Otherwise
// the answer is infeasible with Code prescheduling.AwaitingCapacity, a
// Reason naming the clusters short of room, and RetryAfter, when the hold
// of the first eviction in the way passes: the eviction should be tried
// again, not abandoned, and sooner than that, since the room frees as soon
// as the summaries show the replicas in flight placed, which only a later
// Admit sees. In an eviction queue's handler, return
// evictionqueue.RetryAfter(min(RetryAfter, how often the summaries are
// reported), err) for it and evictionqueue.Abandon for the other infeasible
// codes; call Release when the eviction then fails. Nil summaries make a
// feasible r infeasible with Code prescheduling.InvalidRequest.
func (l *Ledger) Admit(now time.Time, key, cluster string, r prescheduling.Result, summaries karmada.Summaries, req *workv1alpha2.ReplicaRequirements) prescheduling.Result {
	return l.admit(now, holdKey(key, cluster), r, summaries, req)
}

// admit is Admit for the hold named hold.
func (l *Ledger) admit(now time.Time, hold string, r prescheduling.Result, summaries karmada.Summaries, req *workv1alpha2.ReplicaRequirements) prescheduling.Result {
	return l.core.Admit(now, hold, r, roomsOf(summaries, req), requestsOf(req))
}

// Hold is the room a Ledger holds for one eviction, as Evictor.Evict
// ([EvictionStep].Hold) and [Ledger.Restore] give it: a caller keeps the
// value and gives the room back through it, never through its key. The
// zero Hold holds nothing, and its methods do nothing.
type Hold struct {
	ledger *Ledger
	key    string
}

// String names the hold in its Ledger, as [Ledger.Keys] lists it, for a
// log; empty for the zero Hold.
func (h Hold) String() string { return h.key }

// IsZero reports whether h holds nothing.
func (h Hold) IsZero() bool { return h.ledger == nil }

// Release gives the room back now: the eviction failed, or its binding is
// gone ([Ledger.Release]).
func (h Hold) Release() {
	if h.ledger != nil {
		h.ledger.release(h.key)
	}
}

// ReleaseAt gives the room back at at, if the hold would not end sooner:
// the eviction's task ended, and the summaries' next report shows the
// replicas where they went ([Ledger.ReleaseAt]).
func (h Hold) ReleaseAt(at time.Time) {
	if h.ledger != nil {
		h.ledger.releaseAt(h.key, at)
	}
}

// TaskEnded gives back the room held for an eviction whose graceful
// eviction task ended, by the one rule every caller follows: the replicas
// run where they went, and the summaries show them at their next report,
// reportEvery from now (--cluster-status-update-frequency); released at
// once, their room would be counted again by the evictions checked
// meanwhile. A task that ends as soon as it is stamped (endsAtOnce:
// gracefulevict.Task.EndsAtOnce) says nothing of where they are: the room
// stays held until the summaries show them or the hold passes.
func (h Hold) TaskEnded(now time.Time, endsAtOnce bool, reportEvery time.Duration) {
	if !endsAtOnce {
		h.ReleaseAt(now.Add(reportEvery))
	}
}

// TaskEnded is Hold.TaskEnded for the eviction of the binding key from
// cluster, for a caller that did not keep its Hold.
func (l *Ledger) TaskEnded(now time.Time, key, cluster string, endsAtOnce bool, reportEvery time.Duration) {
	Hold{ledger: l, key: holdKey(key, cluster)}.TaskEnded(now, endsAtOnce, reportEvery)
}

// Restore holds the room of r's moves for the eviction of the binding key
// from cluster as Admit would have at since, without asking whether they
// fit: for an eviction approved before this Ledger existed (a
// predecessor's, found as an open graceful eviction task, created at since,
// when a controller starts or a new leader is elected). The hold ends when
// it would have; one that has ended by now, an infeasible r, or nil
// summaries hold nothing. Like Admit it replaces what was held for the
// eviction; summaries and req are as for Admit. It returns the Hold that
// gives the room back, the zero Hold when nothing is held.
func (l *Ledger) Restore(now time.Time, key, cluster string, r prescheduling.Result, summaries karmada.Summaries, req *workv1alpha2.ReplicaRequirements, since time.Time) Hold {
	if !r.Feasible || summaries == nil || !since.Add(l.core.Hold()).After(now) {
		return Hold{}
	}
	hold := holdKey(key, cluster)
	// The only error is nil summaries, ruled out above.
	_ = l.core.Restore(now, hold, r, roomsOf(summaries, req), requestsOf(req), since)
	return Hold{ledger: l, key: hold}
}

// ReleaseWorkload gives back, at once, the room held for every eviction of
// the workload key (every cluster it leaves): its binding is gone, and its
// replicas with it.
func (l *Ledger) ReleaseWorkload(now time.Time, key string) {
	prefix := key + "@"
	for _, h := range l.core.Keys(now) {
		if strings.HasPrefix(h, prefix) && !strings.Contains(h[len(prefix):], "@") {
			l.core.Release(h)
		}
	}
}

// Keys lists the holds room is held for at now, in no order, named as
// [Hold.String] names them: for a log, or a test.
func (l *Ledger) Keys(now time.Time) []string { return l.core.Keys(now) }

// Release gives back the room held for the eviction of the binding key
// from cluster: it failed, or its graceful eviction task ended (the
// replicas run where they went). Releasing an eviction nothing is held for
// does nothing. A caller that has the eviction's [Hold] releases through
// it.
func (l *Ledger) Release(key, cluster string) { l.release(holdKey(key, cluster)) }

// release gives back the room held under hold.
func (l *Ledger) release(hold string) { l.core.Release(hold) }

// ReleaseAt gives back the room held for the eviction of the binding key
// from cluster at at, if the hold would not end sooner: for an eviction
// whose graceful eviction task ended, at the summaries' next report. The
// replicas then run where they went, but the summaries may not show them
// yet; released at once, their room would be counted again by the
// evictions checked meanwhile. ReleaseAt of an eviction nothing is held
// for does nothing. A caller that has the eviction's [Hold] releases
// through it.
func (l *Ledger) ReleaseAt(key, cluster string, at time.Time) { l.releaseAt(holdKey(key, cluster), at) }

// releaseAt gives back the room held under hold at at.
func (l *Ledger) releaseAt(hold string, at time.Time) { l.core.ReleaseAt(hold, at) }

// Held returns the replicas held on each cluster at now, by name: for a
// metric, or a test. A cluster is as an Admit or Restore last read it, or
// as Settle found it.
func (l *Ledger) Held(now time.Time) map[string]int64 { return l.core.Held(now) }

// Settle gives back, on every cluster room is held on, the room of the
// replicas its summary (summaries) shows placed, and the holds that have
// run out by now: reservation.Ledger.Settle. Admit settles the clusters
// it reads; call Settle before Held to see every cluster as the summaries
// show it. Nil summaries settles only the holds that have run out.
func (l *Ledger) Settle(now time.Time, summaries karmada.Summaries) {
	l.core.Settle(now, roomsOf(summaries, nil))
}

// summaryRooms reads the room of clusters from their resource summaries,
// for the workload whose replicas require req.
type summaryRooms struct {
	summaries karmada.Summaries
	req       *workv1alpha2.ReplicaRequirements
}

var _ reservation.Rooms = summaryRooms{}

// roomsOf is summaries as reservation.Rooms; nil without summaries.
func roomsOf(summaries karmada.Summaries, req *workv1alpha2.ReplicaRequirements) reservation.Rooms {
	if summaries == nil {
		return nil
	}
	return summaryRooms{summaries: summaries, req: req}
}

func requestsOf(req *workv1alpha2.ReplicaRequirements) corev1.ResourceList {
	if req == nil {
		return nil
	}
	return req.ResourceRequest
}

// Pods is the cluster's allocated and allocating pods.
func (s summaryRooms) Pods(cluster string) (int64, bool) {
	summary, ok := s.summaries(cluster)
	return karmada.AllocatedPods(summary), ok
}

// Fit is the room the cluster's summary shows for the workload with the
// replicas held there added to what it allocates.
func (s summaryRooms) Fit(cluster string, replicas int64, requests corev1.ResourceList) int32 {
	summary, _ := s.summaries(cluster)
	return karmada.MaxReplicas(deduct(summary, replicas, requests), s.req)
}

// deduct returns s with replicas more pods, and requests more of each
// resource, allocating: the room held for evictions in flight there. The
// copy shares all but Allocating with s, which it must not change: a deep
// copy of the summary (its allocatable modelings too) for each cluster a
// held eviction goes to cost more than the rest of an Admit.
func deduct(s *clusterv1alpha1.ResourceSummary, replicas int64, requests corev1.ResourceList) *clusterv1alpha1.ResourceSummary {
	if s == nil {
		return nil
	}
	out := *s
	out.Allocating = make(corev1.ResourceList, len(s.Allocating)+1+len(requests))
	for name, q := range s.Allocating {
		out.Allocating[name] = q.DeepCopy()
	}
	add := func(res corev1.ResourceName, q resource.Quantity) {
		cur := out.Allocating[res]
		cur.Add(q)
		out.Allocating[res] = cur
	}
	add(corev1.ResourcePods, *resource.NewQuantity(replicas, resource.DecimalSI))
	for res, q := range requests {
		add(res, q)
	}
	return &out
}

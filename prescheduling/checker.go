package prescheduling

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/failoverkit/failover"
)

// Request is one pre-scheduling question: may the workload with this
// placement and schedule result leave the Evicting clusters?
type Request struct {
	// Placement is the workload's placement (from its PropagationPolicy).
	Placement Placement
	// Scheduled is the current schedule result, evicted clusters included.
	Scheduled []failover.TargetCluster
	// Evicting are the clusters the workload is being evicted from. Only
	// those in Scheduled have a copy to replace; every one of them is ruled
	// out as a target. When none is in Scheduled there is nothing to evict
	// and the answer is infeasible, so that a queue abandons the item.
	// Clusters of graceful eviction tasks still open belong here too: the
	// scheduler never places the workload back on them.
	Evicting []string
	// ObservedAffinityName is the clusterAffinities term the scheduler last
	// scheduled the workload with (a binding's
	// status.schedulerObservedAffinityName). The scheduler tries that term
	// and the ones after it, never one before; empty, or a name no term
	// has, means from the first.
	ObservedAffinityName string
	// ResourceUID is the workload's UID (a binding's spec.resource.uid).
	// When Karmada's scheduler divides replicas by weight, a tie between
	// two clusters falls by it; empty, the check allows for either fall.
	ResourceUID string
}

// Result is the answer to a Request.
type Result struct {
	// Feasible is true when the scheduler has somewhere to put what the
	// eviction removes.
	Feasible bool
	// Reason explains the answer in a sentence an operator can act on.
	Reason string
	// Code names the answer for programs (an Event's reason, a metric
	// label): Feasible, or why not. Its values are stable; Reason's words
	// are not.
	Code Code
	// Candidates are the eligible target clusters, sorted by name: those
	// the scheduler may use that are not faulty; for Duplicated only those
	// that do not run the workload yet. With clusterAffinities they are
	// those of the term the answer is about, or of the first term tried when
	// none schedules.
	Candidates []string
	// Moves, when Feasible, are where the scheduler puts what the eviction
	// removes: each cluster that gains replicas, by name, with the most it
	// may gain (a new Duplicated copy gains them all; which clusters a
	// weighted division favours may hang on the workload's UID). A caller
	// that counts room taken by evictions in flight reserves these; see
	// reservation.Ledger. A workload without replicas moves none. An
	// [Index] may give some of them as Fanout instead: [Result.AllMoves]
	// lists both.
	Moves []failover.TargetCluster
	// Fanout, when not nil, are more moves of a feasible answer, too many to
	// list one by one: a Duplicated placement without spread constraints
	// gets a copy on every cluster it allows (see [Fanout]). Only an
	// [Index] gives it; a [Checker] lists every move in Moves.
	Fanout *Fanout
	// PlacedByRoom, when Feasible, is true when the scheduler picks the
	// Moves by the clusters' room: a Divided placement by Aggregated or
	// dynamic weights, which its estimator decides. Room that evictions in
	// flight will take there changes where it puts this one (see
	// reservation.Ledger). A Duplicated or static weight placement lands on the
	// same clusters whatever their room.
	PlacedByRoom bool
	// AffinityName names the clusterAffinities term a feasible answer is
	// scheduled under: the first, from Request.ObservedAffinityName on,
	// under which the scheduler can schedule at all, as it tries them.
	// Empty without clusterAffinities or when the answer is infeasible.
	AffinityName string
	// Err is non-nil when the request or placement is invalid; Reason is
	// then its message and Feasible is false.
	Err error
	// RetryAfter, with Code AwaitingCapacity, is how long until the room
	// held for evictions in flight is released at the latest; zero
	// otherwise.
	RetryAfter time.Duration
}

// Code is a Result's machine-readable answer. The values are CamelCase so
// that a controller can use them as the reason of a Kubernetes Event.
type Code string

// The Codes a Result carries.
const (
	// Feasible: the scheduler has somewhere to put what the eviction removes.
	Feasible Code = "Feasible"
	// NothingToEvict: no cluster of Request.Evicting is in the schedule result.
	NothingToEvict Code = "NothingToEvict"
	// NoEligibleCluster: too few eligible clusters (not evicted from, not
	// faulty, matching the affinity, tolerating the taints).
	NoEligibleCluster Code = "NoEligibleCluster"
	// SpreadConstraintUnsatisfiable: there are eligible clusters, but not
	// enough of them in the groups the spread constraints require.
	SpreadConstraintUnsatisfiable Code = "SpreadConstraintUnsatisfiable"
	// InsufficientCapacity: the known spare capacity of the clusters the
	// scheduler may use does not cover the evicted replicas.
	InsufficientCapacity Code = "InsufficientCapacity"
	// InvalidRequest: the request or its placement is invalid; Result.Err
	// says how.
	InvalidRequest Code = "InvalidRequest"
	// AwaitingCapacity: the scheduler would place the workload where
	// evictions already approved, and not yet placed, will take the room
	// (see reservation.Ledger). Unlike the other codes, it is worth retrying:
	// Result.RetryAfter says when the room held for them is released at the
	// latest. The Checker itself never answers it.
	AwaitingCapacity Code = "AwaitingCapacity"
	// Unconfirmed: the check found somewhere to go on the caller's copy
	// of the fleet, but the clusters the caller read afresh do not confirm
	// it (the karmada module's engine.Evictor reads a few): the fleet changed faster than the
	// copy follows, or the placement needs more clusters read than the
	// caller reads. Like AwaitingCapacity, it is worth retrying once the
	// copy has caught up. The Checker itself never answers it.
	Unconfirmed Code = "Unconfirmed"
)

// Checker runs pre-scheduling checks. Its zero value and nil are usable and
// know no capacities; it is immutable once built and safe for concurrent use.
type Checker struct {
	capacity func(cluster string) (replicas int32, known bool)
}

// Option configures a Checker. It returns an error for a value it cannot
// take, which NewChecker reports.
type Option func(*Checker) error

// WithCapacity gives the check the room the scheduler's estimator sees: f
// returns how many more replicas of the workload cluster can take (for
// Karmada, karmada.Capacity over the clusters' resource summaries, as its
// general estimator counts), and whether that is known. The scheduler orders
// and selects clusters by that room, and an Aggregated or dynamically
// weighted division places replicas only where they fit; the check follows
// it. A static weight division shares whatever the room; the check then
// answers as the scheduler places, and Reason names the clusters that may
// get more than they have room for. A capacity that is not known is taken
// as the workload's replicas, which is what the scheduler assumes when no
// estimator answers, and a feasible Reason says so; without WithCapacity,
// every capacity is unknown. f must be safe for concurrent use if Check is
// called concurrently. A nil f is an error.
func WithCapacity(f func(cluster string) (replicas int32, known bool)) Option {
	return func(c *Checker) error {
		if f == nil {
			return errors.New("prescheduling: WithCapacity: capacity function is nil")
		}
		c.capacity = f
		return nil
	}
}

// NewChecker returns a Checker configured by opts. It fails, naming the
// option, when an option is given a value it cannot take; nil options are
// skipped.
func NewChecker(opts ...Option) (*Checker, error) {
	c := &Checker{}
	var errs []error
	for _, o := range opts {
		if o != nil {
			errs = append(errs, o(c))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// Check decides whether req can be carried out on fleet: whether Karmada
// v1.18's scheduler, rescheduling the binding as the eviction leaves it,
// places what the eviction removes, on clusters the library accepts as
// targets.
//
// The check follows the scheduler step by step (the package doc lists what
// it reads and where it refuses what the scheduler would do). Its filters:
// a cluster in Evicting is out; a cluster that keeps the workload passes
// whatever its taints, any other must tolerate its NoSchedule and NoExecute
// taints (Kubernetes toleration matching); every cluster must match the
// affinity term and have the provider, region or zone a spread constraint
// groups by (by zone, its Zones, else its Zone). Then its order: the
// clusters that keep the workload first, then those with the most room (the
// capacity function, see WithCapacity), then by name; its selection by the
// region and cluster spread constraints (the fewest regions that hold the
// cluster constraint's minGroups, the best cluster of each, then the best of
// the rest up to its maxGroups; by cluster alone, the first maxGroups,
// swapped for clusters with more room while a Divided workload's replicas
// do not fit); and its division (every selected cluster for Duplicated;
// for Divided, the replicas of the clusters it keeps stay and the rest go by
// room, or all by the static weights).
//
// Feasible: for Duplicated (also a nil ReplicaScheduling), the new schedule
// runs the workload on as many clusters as before, not counting a faulty
// cluster it adds; for Divided, every replica is placed, none on a faulty
// cluster the workload does not run on yet. The replicas are read from
// Scheduled: every copy's for Duplicated, their sum for Divided.
//
// With clusterAffinities, the terms are tried from ObservedAffinityName on,
// as the scheduler does: the next term only when the scheduler could not
// schedule under one at all. An empty fleet, or no eligible cluster, is
// infeasible. Clusters the fleet does not list cannot be targets, and the
// scheduler drops the copies of those that keep the workload. Cluster names
// in fleet must be unique, as in any cluster lister; a name listed twice
// among the clusters the scheduler may use is reported as invalid input.
func (c *Checker) Check(req Request, fleet []failover.Cluster) Result {
	if err := validateRequest(&req); err != nil {
		return invalid(err)
	}
	p, err := compile(&req.Placement)
	if err != nil {
		return invalid(err)
	}
	s := newScan(&req, p)
	if err := errors.Join(s.duplicateScheduled(), s.replicaSum()); err != nil {
		return invalid(err)
	}
	if len(s.evicted) == 0 {
		return nothingToEvict(&req)
	}
	if err := s.run(fleet); err != nil {
		return invalid(err)
	}
	return s.answer(c)
}

// start is the term the scheduler tries first: the one it last scheduled
// the workload under, else the first.
func (s *scan) start() int {
	n := s.req.ObservedAffinityName
	if n == "" {
		return 0
	}
	return max(slices.IndexFunc(s.p.terms, func(t term) bool { return t.name == n }), 0)
}

func nothingToEvict(req *Request) Result {
	return Result{Code: NothingToEvict, Reason: fmt.Sprintf("nothing to evict: %s %s not in the schedule result (%s)",
		list(req.Evicting, 5), isAre(len(req.Evicting)), list(names(req.Scheduled), 5))}
}

// answer tries the affinity terms, once the scan has filtered the fleet,
// as the scheduler tries them.
func (s *scan) answer(c *Checker) Result {
	p := s.p
	start := s.start()
	var first Result
	for i := start; i < len(p.terms); i++ {
		r, scheduled := s.decide(i, c)
		if r.Err != nil {
			return r
		}
		if scheduled {
			if r.Feasible {
				r.AffinityName = p.terms[i].name
			}
			return r
		}
		if i == start {
			first = r
		} else {
			first.Reason += "; " + r.Reason
		}
	}
	if len(p.terms) > start+1 {
		first.Reason = "no clusterAffinities term can take the workload: " + first.Reason
	}
	return first
}

func invalid(err error) Result { return Result{Code: InvalidRequest, Reason: err.Error(), Err: err} }

func validateRequest(req *Request) error {
	if len(req.Evicting) == 0 {
		return fmt.Errorf("prescheduling: request.evicting is empty: name the clusters the workload is evicted from")
	}
	for i, e := range req.Evicting {
		if e == "" {
			return fmt.Errorf("prescheduling: request.evicting[%d] is empty", i)
		}
	}
	for i, t := range req.Scheduled {
		if t.Name == "" {
			return fmt.Errorf("prescheduling: request.scheduled[%d].name is empty", i)
		}
		if t.Replicas < 0 {
			return fmt.Errorf("prescheduling: request.scheduled[%d].replicas: %d: must not be negative", i, t.Replicas)
		}
	}
	return nil
}

func names(ts []failover.TargetCluster) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

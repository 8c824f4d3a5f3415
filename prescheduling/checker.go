package prescheduling

import (
	"errors"
	"fmt"

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
	Evicting []string
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
	// Candidates are the eligible target clusters, sorted by name: for
	// Duplicated the clusters that do not run the workload yet, for Divided
	// every cluster that may take the evicted replicas (those it already
	// runs on included). With clusterAffinities they are those of the
	// feasible term, or of the first term when none is.
	Candidates []string
	// AffinityName is the first clusterAffinities term that is feasible;
	// empty without clusterAffinities or when none is.
	AffinityName string
	// Err is non-nil when the request or placement is invalid; Reason is
	// then its message and Feasible is false.
	Err error
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
)

// Checker runs pre-scheduling checks. Its zero value and nil are usable and
// know no capacities; it is immutable once built and safe for concurrent use.
type Checker struct {
	capacity func(cluster string) (replicas int32, known bool)
}

// Option configures a Checker. It returns an error for a value it cannot
// take, which NewChecker reports.
type Option func(*Checker) error

// WithCapacity lets Divided checks count spare capacity: f returns how many
// more replicas of the workload cluster can take, and whether that is known.
// A Divided eviction is then feasible only when the known spare capacity of
// the eligible clusters the scheduler may use (at most a cluster spread
// constraint's MaxGroups in all) covers the evicted replicas, or when one of
// them has an unknown capacity: unknown is assumed sufficient (not zero), and
// Reason says so. f must be safe for concurrent use if Check is called
// concurrently. A nil f is an error.
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

// Check decides whether req can be carried out on fleet.
//
// A cluster is eligible when it is not being evicted from, not faulty
// (failover.IsFaulty), tolerates its NoSchedule taints (Kubernetes toleration
// matching), has a value for every spread constraint's field or label (as
// Karmada's scheduler requires; by zone, a cluster's zones are its Zones, else
// its Zone) and matches the affinity.
//
// Duplicated (also a nil ReplicaScheduling): feasible when some set of
// eligible clusters not already running the workload, at least one per
// evicted copy, added to the remaining clusters makes every spread
// constraint hold at once: between MinGroups and MaxGroups (0: no maximum)
// groups by cluster, region, zone, provider or label, all counted over that
// one schedule. That is how Karmada v1.18's scheduler selects: regions first,
// then clusters within the chosen regions, so a region constraint [1,1] with a
// cluster constraint [4,4] needs one region with 4 clusters. A cluster that
// spans zones counts in each of them.
//
// Divided: feasible when some eligible cluster can take the evicted replicas;
// a cluster the workload already runs on counts, and a Weighted division with
// a static weight list allows only the clusters it weighs (and, as in
// Karmada, ignores the spread constraints). The spread constraints hold at
// once as for Duplicated, a new cluster being needed only when none the
// workload runs on is eligible. With WithCapacity, the spare capacity of the
// clusters the scheduler may use must cover the evicted replicas: those the
// workload keeps plus, when a cluster constraint's MaxGroups caps the
// schedule, only as many added clusters as it allows, those with the most
// spare capacity first (see WithCapacity).
//
// The check is exact for the number of clusters together with one other kind
// of group (what Karmada's scheduler enforces). Where it cannot tell — several
// kinds of group besides clusters, clusters that span zones, the spare
// capacity of the groups the scheduler will pick by its own scores — it
// answers infeasible only when no choice can work, and a feasible Reason says
// what it could not check.
//
// With clusterAffinities, each term is tried in order and the first feasible
// one is reported. An empty fleet, or no eligible cluster, is infeasible.
// Clusters the fleet does not list cannot be targets; remaining clusters the
// fleet does not list keep their copies and count as groups only when
// spreading by cluster. Cluster names in fleet must be unique, as in any
// cluster lister: each entry is judged on its own, and a name that comes out
// as a candidate twice is reported as invalid input.
func (c *Checker) Check(req Request, fleet []failover.Cluster) Result {
	if err := validateRequest(&req); err != nil {
		return invalid(err)
	}
	p, err := compile(&req.Placement)
	if err != nil {
		return invalid(err)
	}
	s := newScan(&req, p)
	if err := s.duplicateScheduled(); err != nil {
		return invalid(err)
	}
	if len(s.evicted) == 0 {
		return Result{Code: NothingToEvict, Reason: fmt.Sprintf("nothing to evict: %s %s not in the schedule result (%s)",
			list(req.Evicting, 5), isAre(len(req.Evicting)), list(names(req.Scheduled), 5))}
	}
	if err := s.run(fleet); err != nil {
		return invalid(err)
	}
	var first Result
	for i := range p.terms {
		var r Result
		if p.duplicated {
			r = s.duplicated(i)
		} else {
			r = s.divided(i, c)
		}
		if r.Err != nil {
			return r
		}
		if r.Feasible {
			r.AffinityName = p.terms[i].name
			return r
		}
		if i == 0 {
			first = r
		} else {
			first.Reason += "; " + r.Reason
		}
	}
	if len(p.terms) > 1 {
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

// sortCandidates sorts cs by name and reports a name listed twice.
func sortCandidates(cs []*failover.Cluster) ([]string, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	out := sortedNames(len(cs), func(i int) string { return cs[i].Name })
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, fmt.Errorf("prescheduling: fleet lists cluster %q more than once", out[i])
		}
	}
	return out, nil
}

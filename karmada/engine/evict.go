package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/prescheduling"
)

// The decision path of one eviction, written once over a Fleet, a Ledger and
// the binding: the controllers call it on what they read fresh from the API
// server, a simulation or a what-if planner on what it holds.

// MaxConfirmReads bounds the clusters one eviction reads fresh, besides
// the one it leaves, to confirm the clusters a check's approval relies on
// ([Evictor.Evict]): whatever the fleet and the placement, an eviction
// sends the API server at most this many reads more.
const MaxConfirmReads = 8

// TransitBudgetError is the error of a karmada.MaxClustersInTransitAnnotation
// that is not a non-negative integer: the Evictor's default budget applies
// instead.
type TransitBudgetError struct {
	// Value is the annotation's value.
	Value string
	// Default is the budget that applies instead.
	Default int
}

// Error says which annotation, its value, and the budget that applies.
func (e *TransitBudgetError) Error() string {
	return fmt.Sprintf("karmada: annotation %s %q: want a non-negative integer (0: unlimited); the default budget %d applies",
		karmada.MaxClustersInTransitAnnotation, e.Value, e.Default)
}

// Evictor decides one eviction at a time on a Fleet: decide again, wait for
// the binding's budget of clusters in transit, check that the replicas have
// somewhere to go, hold their room in the Ledger, and write the graceful
// eviction task into the binding's spec. It writes nothing to an API
// server: the caller reads the binding and the cluster, calls
// [Evictor.Evict], and writes the binding back when told to evict.
//
// Make one with [NewEvictor], once: its options are validated there, not
// on every eviction. An Evictor is safe for concurrent use as far as its
// Fleet and Ledger are (both are).
type Evictor struct {
	opts EvictorOptions
}

// EvictorOptions are an [Evictor]'s options, which [NewEvictor] validates.
type EvictorOptions struct {
	// Fleet is the fleet the check runs on. Required.
	Fleet *Fleet
	// Ledger holds room for the evictions approved and not placed yet; nil:
	// none, every eviction the check finds feasible goes ahead.
	Ledger *Ledger
	// EnableNoExecuteTaintEviction is Karmada's
	// --enable-no-execute-taint-eviction (karmada.DecideBindingEviction).
	EnableNoExecuteTaintEviction bool
	// NoExecuteTaintEvictionPurgeMode is Karmada's
	// --no-execute-taint-eviction-purge-mode (karmada.EvictionPurgeMode):
	// empty, Gracefully or Directly.
	NoExecuteTaintEvictionPurgeMode failover.PurgeMode
	// StatefulFailoverInjection is Karmada's feature gate of that name: the
	// task carries the state spec.failover.cluster preserves
	// (karmada.PreservedLabelState).
	StatefulFailoverInjection bool
	// MaxClustersInTransit is the budget of clusters in transit of a binding
	// without a karmada.MaxClustersInTransitAnnotation: how many of its
	// clusters may be in open graceful eviction tasks at once. 0: unlimited;
	// it must not be negative.
	MaxClustersInTransit int
}

// NewEvictor returns the Evictor with opts, validated once: a nil Fleet, an
// unknown purge mode or a negative MaxClustersInTransit is an error naming
// the field and the value.
func NewEvictor(opts EvictorOptions) (*Evictor, error) {
	if opts.Fleet == nil {
		return nil, errors.New("karmada: engine.EvictorOptions.Fleet is nil: the check needs a fleet")
	}
	if opts.MaxClustersInTransit < 0 {
		return nil, fmt.Errorf("karmada: engine.EvictorOptions.MaxClustersInTransit %d: want a non-negative integer (0: unlimited)", opts.MaxClustersInTransit)
	}
	switch opts.NoExecuteTaintEvictionPurgeMode {
	case "", failover.PurgeModeGracefully, failover.PurgeModeDirectly:
	default:
		return nil, fmt.Errorf("karmada: engine.EvictorOptions.NoExecuteTaintEvictionPurgeMode %q: want Gracefully or Directly", opts.NoExecuteTaintEvictionPurgeMode)
	}
	return &Evictor{opts: opts}, nil
}

// Options returns the options e was made with.
func (e *Evictor) Options() EvictorOptions { return e.opts }

// EvictionAction says what [Evictor.Evict] found to do.
type EvictionAction int

// What Evictor.Evict found to do.
const (
	// EvictionSkip: nothing to evict; Why says why (the binding is being
	// deleted, or no longer scheduled on the cluster).
	EvictionSkip EvictionAction = iota
	// EvictionStays: decided again, the binding no longer leaves the
	// cluster; Decision says why.
	EvictionStays
	// EvictionInvalid: the binding cannot be decided or checked; Err says
	// why, and Result.Code is prescheduling.InvalidRequest when it is the
	// check's request that is invalid.
	EvictionInvalid
	// EvictionWaitForBudget: the binding's budget of clusters in transit
	// is used up; InTransit and Budget say by which clusters. Try again
	// when one of its tasks ends.
	EvictionWaitForBudget
	// EvictionWaitForRoom: the Ledger holds the room back for evictions
	// before it (Result.Code prescheduling.AwaitingCapacity, with
	// Result.RetryAfter). Try again when the summaries catch up.
	EvictionWaitForRoom
	// EvictionRefused: the check says no (Result: nowhere to go). Decide
	// again when the fleet changes.
	EvictionRefused
	// EvictionEvict: the binding's spec now holds the graceful eviction
	// task from the cluster, and Hold names the room held for it in the
	// Ledger: write the binding, and Release Hold if the write fails.
	EvictionEvict
	// EvictionUnconfirmed: the check found somewhere to go on the Fleet,
	// but the clusters read fresh do not confirm it (Result.Code
	// prescheduling.Unconfirmed; see Evict): the fleet changed faster than
	// the Fleet follows, or the placement needs more than MaxConfirmReads
	// clusters read. Nothing is held. Try again once the Fleet has caught
	// up.
	EvictionUnconfirmed
)

var actionNames = [...]string{"Skip", "Stays", "Invalid", "WaitForBudget", "WaitForRoom", "Refused", "Evict", "Unconfirmed"}

// String names a.
func (a EvictionAction) String() string {
	if a >= 0 && int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("EvictionAction(%d)", int(a))
}

// EvictionStep is what [Evictor.Evict] found for one eviction.
type EvictionStep struct {
	// Action is what to do.
	Action EvictionAction
	// Why says why, for EvictionSkip.
	Why string
	// Err is why, for EvictionInvalid.
	Err error
	// Decision is the decision that it is time, once made (the taint's for
	// Evict, the caller's for EvictApplication): its Reason says why the
	// binding leaves the cluster (EvictionEvict), or stays (EvictionStays).
	Decision failover.EvictionDecision
	// Result is the check's answer, once asked, after the Ledger's
	// (EvictionWaitForRoom, EvictionRefused, EvictionEvict).
	Result prescheduling.Result
	// Budget is the binding's budget of clusters in transit, for
	// EvictionWaitForBudget.
	Budget int
	// InTransit are the clusters its open tasks come from, for
	// EvictionWaitForBudget.
	InTransit []string
	// BudgetErr, whatever the Action, is a *TransitBudgetError when the
	// binding's MaxClustersInTransitAnnotation cannot be read.
	BudgetErr error
	// Hold is the room held, for EvictionEvict with a Ledger: Release it
	// if the write fails, keep it to give the room back when the task
	// ends. The zero Hold otherwise.
	Hold Hold
	// Reads counts the clusters read through confirm, at most
	// MaxConfirmReads, once the check is asked.
	Reads int
	// RecordErr, for EvictionEvict, says what was wrong with the binding's
	// karmada.FailedOverFromAnnotation, which the eviction replaced with a
	// record of this failover alone.
	RecordErr error
}

// Confirm reads the clusters named names afresh, before an eviction relies
// on them: one per name, in order, nil for one that is gone.
type Confirm func(ctx context.Context, names []string) ([]*clusterv1alpha1.Cluster, error)

// holdKey names the room the Ledger holds for the eviction of the binding
// key from cluster, which the graceful eviction task from cluster gives
// back. No Kubernetes name holds "@".
func holdKey(key, cluster string) string { return key + "@" + cluster }

// Evict decides the eviction of binding (a *workv1alpha2.ResourceBinding or
// *workv1alpha2.ClusterResourceBinding), named key, from cluster at now,
// on both as given: the caller reads them as current as it must (the
// fork's handler reads the cluster from the API server, and the binding
// from its cache, which its write's resourceVersion confirms). With
// EvictionEvict, the
// binding's spec has been changed in place, and its
// karmada.FailedOverFromAnnotation records the failover
// (karmada.RecordFailover); with any other action, nothing is changed.
//
// The check runs on the Fleet with cluster in place of the Fleet's copy.
// With confirm, a feasible answer is then confirmed on fresh reads, one
// cluster at a time, so that a Fleet that lags never sends replicas to a
// cluster already tainted, at a cost that grows with neither the fleet nor
// the clusters the placement allows: the eviction is approved once the
// check on the clusters read fresh and those the binding keeps, as the
// Fleet holds them, alone ([Fleet.CheckWithin]) is feasible and moves
// replicas only to clusters read fresh. Karmada's scheduler then places on
// the fleet as it is, whatever the clusters not read have become since the
// Fleet saw them, but for one choice: a region, which it picks by the room
// of every cluster of the region (TestEvictorConfirmIsSound holds this
// path to it against Karmada's own algorithm, on a Fleet that lags far
// behind). The clusters read are those that answer moves replicas to,
// else the one the Fleet's answer moves the most replicas to, else its
// next candidate: one for a Duplicated copy, the few that take a Divided
// workload's replicas, never every cluster a region-wide placement
// allows. A read that differs from the Fleet's copy (its resourceVersion)
// asks the Fleet's check again. When MaxConfirmReads reads do not confirm
// the answer, or nothing is left to read, the eviction waits
// (EvictionUnconfirmed). Nil confirm takes the Fleet for the truth, as a
// simulation or a planner does. A cluster that does not convert is no
// target and is logged to the logr.Logger in ctx.
//
// An error is one to try again later: confirm's, a binding whose tasks
// cannot be read, a state to preserve that cannot be read yet; no room is
// then held, and of the step only BudgetErr is set.
func (e *Evictor) Evict(ctx context.Context, now time.Time, key string, binding runtime.Object, cluster *clusterv1alpha1.Cluster, confirm Confirm) (EvictionStep, error) {
	return e.evict(ctx, now, key, binding, cluster, confirm, taintCause{e})
}

// evict is the one decision path of an eviction, whatever its cause: Evict
// and EvictApplication differ only in c, which answers the first step's
// "is it time?" and writes the graceful eviction task.
func (e *Evictor) evict(ctx context.Context, now time.Time, key string, binding runtime.Object, cluster *clusterv1alpha1.Cluster, confirm Confirm, c cause) (EvictionStep, error) {
	meta, spec, status, toLib, err := bindingParts(binding)
	if err != nil {
		return EvictionStep{}, err
	}
	if err := e.made(); err != nil {
		return EvictionStep{}, err
	}
	if cluster == nil {
		return EvictionStep{}, fmt.Errorf("karmada: Evictor.Evict %s: the cluster is nil", key)
	}

	if !meta.GetDeletionTimestamp().IsZero() {
		return EvictionStep{Action: EvictionSkip, Why: fmt.Sprintf("binding %s is being deleted", key)}, nil
	}
	if !spec.TargetContains(cluster.Name) {
		return EvictionStep{Action: EvictionSkip, Why: fmt.Sprintf("binding %s is no longer scheduled on %s", key, cluster.Name)}, nil
	}
	d, err := c.decide(meta.GetAnnotations(), spec, cluster, now)
	if err != nil {
		return EvictionStep{Action: EvictionInvalid, Err: err}, nil
	}
	step := EvictionStep{Decision: d}
	if !d.Evict {
		step.Action = EvictionStays
		return step, nil
	}

	// The binding's budget of clusters in transit, counted on the binding
	// as given: whoever wrote its open tasks, they are there.
	var lib *gracefulevict.Binding
	budget := e.opts.MaxClustersInTransit
	if v, ok := meta.GetAnnotations()[karmada.MaxClustersInTransitAnnotation]; ok {
		n, err := gracefulevict.ParseTransitBudget(v)
		if err != nil {
			step.BudgetErr = &TransitBudgetError{Value: v, Default: e.opts.MaxClustersInTransit}
		} else {
			budget = int(n)
		}
	}
	if budget > 0 {
		b, err := toLib()
		if err != nil {
			return EvictionStep{BudgetErr: step.BudgetErr}, err
		}
		lib = &b
		if open := gracefulevict.InTransit(b.Tasks); !gracefulevict.TransitBudget(budget).Allows(open) {
			step.Action, step.Budget, step.InTransit = EvictionWaitForBudget, budget, open
			return step, nil
		}
	}

	// Is there somewhere to go?
	// The Fleet's check validates the placement, compiled once for every
	// binding that has it.
	req, err := karmada.PreschedulingRequestUnvalidated(spec, cluster.Name)
	var loss *karmada.LossError
	if err != nil && !errors.As(err, &loss) {
		step.Action, step.Err = EvictionInvalid, err
		step.Result = prescheduling.Result{Code: prescheduling.InvalidRequest, Reason: err.Error()}
		return step, nil
	}
	// The scheduler resumes at the clusterAffinities term it last
	// scheduled the binding under, never one before it.
	req.ObservedAffinityName = status.SchedulerObservedAffinityName
	view, res, err := e.check(ctx, spec, req, cluster, confirm)
	if err != nil {
		return EvictionStep{BudgetErr: step.BudgetErr}, err
	}
	step.Reads = view.reads
	// One eviction per graceful eviction task: a binding may leave several
	// clusters, each with room of its own held.
	hold := holdKey(key, cluster.Name)
	if e.opts.Ledger != nil {
		res = e.opts.Ledger.admit(now, hold, res, view.summary, spec.ReplicaRequirements)
	}
	step.Result = res
	if !res.Feasible {
		switch res.Code {
		case prescheduling.InvalidRequest:
			step.Action, step.Err = EvictionInvalid, fmt.Errorf("karmada: %w", res.Err)
		case prescheduling.AwaitingCapacity:
			step.Action = EvictionWaitForRoom
		case prescheduling.Unconfirmed:
			step.Action = EvictionUnconfirmed
		default:
			step.Action = EvictionRefused
		}
		return step, nil
	}

	// Move the cluster into a graceful eviction task.
	if lib == nil {
		b, err := toLib()
		if err != nil {
			e.release(hold)
			return EvictionStep{BudgetErr: step.BudgetErr}, err
		}
		lib = &b
	}
	task, err := c.task(spec, status, cluster.Name, d.Reason, now)
	if err != nil {
		e.release(hold)
		return EvictionStep{BudgetErr: step.BudgetErr}, err
	}
	var annotations map[string]string
	var recordErr error
	if c.recordsOrigin() {
		annotations, recordErr = karmada.RecordFailover(meta.GetAnnotations(), spec, cluster.Name, now)
	}
	karmada.ApplyBinding(spec, gracefulevict.Evict(*lib, cluster.Name, task))
	if annotations != nil {
		meta.SetAnnotations(annotations)
	}
	step.Action, step.RecordErr = EvictionEvict, recordErr
	if e.opts.Ledger != nil {
		step.Hold = Hold{ledger: e.opts.Ledger, key: hold}
	}
	return step, nil
}

// release gives back the room held under hold: nothing moves.
func (e *Evictor) release(hold string) {
	if e.opts.Ledger != nil {
		e.opts.Ledger.release(hold)
	}
}

// made is an error for an Evictor not made by NewEvictor, which has no
// Fleet to check on.
func (e *Evictor) made() error {
	if e == nil || e.opts.Fleet == nil {
		return errors.New("karmada: engine.Evictor: not made by NewEvictor: it has no Fleet")
	}
	return nil
}

// bindingParts are what Evict reads of a ResourceBinding or a
// ClusterResourceBinding.
func bindingParts(o runtime.Object) (metav1.Object, *workv1alpha2.ResourceBindingSpec, *workv1alpha2.ResourceBindingStatus, func() (gracefulevict.Binding, error), error) {
	switch b := o.(type) {
	case *workv1alpha2.ResourceBinding:
		if b != nil {
			return b, &b.Spec, &b.Status, func() (gracefulevict.Binding, error) { return karmada.FromResourceBinding(b) }, nil
		}
	case *workv1alpha2.ClusterResourceBinding:
		if b != nil {
			return b, &b.Spec, &b.Status, func() (gracefulevict.Binding, error) { return karmada.FromClusterResourceBinding(b) }, nil
		}
	}
	return nil, nil, nil, nil, fmt.Errorf("karmada: Evictor.Evict: binding %T: want a *ResourceBinding or a *ClusterResourceBinding, not nil", o)
}

// Check is the check [Evictor.Evict] runs: the pre-scheduling check for
// req, the request of a binding with spec (see karmada.PreschedulingRequest), on
// the Fleet with evicting, read fresh, in place of the Fleet's copy (nil:
// the Fleet's copy), and, with confirm, its confirmation on at most
// MaxConfirmReads fresh reads: a feasible answer they do not confirm comes
// back infeasible, with Code prescheduling.Unconfirmed. It holds no room.
func (e *Evictor) Check(ctx context.Context, spec *workv1alpha2.ResourceBindingSpec, req prescheduling.Request, evicting *clusterv1alpha1.Cluster, confirm Confirm) (prescheduling.Result, error) {
	if err := e.made(); err != nil {
		return prescheduling.Result{}, err
	}
	if spec == nil {
		return prescheduling.Result{}, errors.New("karmada: Evictor.Check: the binding's spec is nil")
	}
	_, res, err := e.check(ctx, spec, req, evicting, confirm)
	return res, err
}

// check runs the pre-scheduling check for req on the Fleet with evicting in
// place of the Fleet's copy and, with confirm, confirms a feasible answer on
// fresh reads (see [Evictor.Evict]), or answers prescheduling.Unconfirmed.
func (e *Evictor) check(ctx context.Context, spec *workv1alpha2.ResourceBindingSpec, req prescheduling.Request, evicting *clusterv1alpha1.Cluster, confirm Confirm) (*freshView, prescheduling.Result, error) {
	logger := logr.FromContextOrDiscard(ctx)
	view := &freshView{fleet: e.opts.Fleet, fresh: map[string]*clusterv1alpha1.ResourceSummary{}, in: map[string]bool{}}
	if evicting != nil {
		view.put(evicting, logger)
	}
	res := e.opts.Fleet.Check(req, spec.ReplicaRequirements, view.overrides...)
	if !res.Feasible || confirm == nil {
		return view, res, nil
	}
	for {
		within := e.opts.Fleet.CheckWithin(req, spec.ReplicaRequirements, view.overrides...)
		var next string
		if within.Feasible {
			if next = view.firstStale(within.AllMoves()); next == "" {
				return view, res, nil // confirmed
			}
		} else if next = view.mostGainingStale(res); next == "" {
			next = view.firstStaleName(res.Candidates)
		}
		if next == "" || view.reads == MaxConfirmReads {
			return view, view.unconfirmed(res, within), nil
		}
		read, err := confirm(ctx, []string{next})
		if err != nil {
			return nil, prescheduling.Result{}, err
		}
		if len(read) != 1 {
			return nil, prescheduling.Result{}, fmt.Errorf("karmada: confirm read %d clusters for 1 name", len(read))
		}
		view.reads++
		switch cl := read[0]; {
		case cl == nil:
			view.drop(next)
		case cl.Name != next:
			return nil, prescheduling.Result{}, fmt.Errorf("karmada: confirm read cluster %q for %q", cl.Name, next)
		default:
			view.put(cl, logger)
			if cl.ResourceVersion != "" && cl.ResourceVersion == e.opts.Fleet.resourceVersion(next) {
				continue // as the Fleet holds it: the Fleet's answer stands
			}
		}
		if res = e.opts.Fleet.Check(req, spec.ReplicaRequirements, view.overrides...); !res.Feasible {
			return view, res, nil
		}
	}
}

// task is the graceful eviction task for cluster, as Karmada v1.18's taint
// manager writes it: producer TaintManager, reason TaintUntolerated, the
// purge mode EvictionPurgeMode derives, and with StatefulFailoverInjection
// the state spec.failover.cluster preserves (an error while it cannot be
// read: the eviction is retried, as in Karmada). gracefulevict.Evict sets
// FromCluster and carries the replicas over. Two fields Karmada leaves for
// later are set at once: the creation time (the grace period counts from
// the eviction) and, as the message, why.
func (e *Evictor) task(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, cluster, why string, now time.Time) (gracefulevict.Task, error) {
	created := metav1.NewTime(now)
	t := gracefulevict.Task{
		PurgeMode:         karmada.EvictionPurgeMode(spec.Failover, string(e.opts.NoExecuteTaintEvictionPurgeMode)),
		Reason:            karmada.TaintUntoleratedReason,
		Message:           why,
		Producer:          karmada.TaintManagerProducer,
		CreationTimestamp: &created,
	}
	if e.opts.StatefulFailoverInjection && spec.Failover != nil && spec.Failover.Cluster != nil {
		state, err := karmada.PreservedLabelState(spec.Failover.Cluster, status.AggregatedStatus, cluster)
		if err != nil {
			return gracefulevict.Task{}, err
		}
		t.PreservedLabelState = state
	}
	return t, nil
}

// freshView is the Fleet as one check sees it, with the clusters read fresh
// over it, which the check takes as overrides.
type freshView struct {
	fleet *Fleet
	// reads counts the clusters read through confirm.
	reads int
	// fresh holds the summaries of the clusters read fresh (nil for one
	// that is gone), in whether each is in the fleet (read, and it
	// converts), and overrides what the check takes of them.
	fresh     map[string]*clusterv1alpha1.ResourceSummary
	in        map[string]bool
	overrides []Fresh
}

// put sets cl, read fresh, over the Fleet. One that does not convert is
// left out, and logged: whose taints cannot be read is no target.
func (v *freshView) put(cl *clusterv1alpha1.Cluster, logger logr.Logger) {
	fr, err := FreshCluster(cl)
	if err != nil {
		logger.Error(err, "cluster left out of the fleet", "cluster", cl.Name)
	}
	v.set(cl.Name, fr, cl.Status.ResourceSummary, err == nil)
}

// firstStale returns the first of moves not read fresh, "" when every one
// was.
func (v *freshView) firstStale(moves iter.Seq[failover.TargetCluster]) string {
	for m := range moves {
		if _, ok := v.fresh[m.Name]; !ok {
			return m.Name
		}
	}
	return ""
}

// firstStaleName returns the first of names not read fresh, "" when every
// one was.
func (v *freshView) firstStaleName(names []string) string {
	for _, n := range names {
		if _, ok := v.fresh[n]; !ok {
			return n
		}
	}
	return ""
}

// unconfirmed is res, feasible on the Fleet, which the clusters read fresh
// do not confirm (within is the check on them alone).
func (v *freshView) unconfirmed(res, within prescheduling.Result) prescheduling.Result {
	names := slices.Sorted(maps.Keys(v.fresh))
	why := within.Reason
	if within.Feasible {
		why = fmt.Sprintf("it moves replicas to clusters not read (at most %d are)", MaxConfirmReads)
	}
	return prescheduling.Result{
		Code:       prescheduling.Unconfirmed,
		Candidates: res.Candidates,
		Reason: fmt.Sprintf("the clusters read afresh (%s) do not confirm what the fleet as last seen says (%s): %s",
			strings.Join(names, ", "), res.Reason, why),
	}
}

// mostGainingStale returns, of res's moves not read fresh, the one that
// gains the most replicas, the first by name among equals; "" when every
// one was read. Every move of a fan-out gains as much: the first of it not
// read stands for all.
func (v *freshView) mostGainingStale(res prescheduling.Result) string {
	best, most := "", int32(-1)
	for _, m := range res.Moves {
		if _, ok := v.fresh[m.Name]; !ok && m.Replicas > most {
			best, most = m.Name, m.Replicas
		}
	}
	if f := res.Fanout; f != nil {
		for name := range f.Names() {
			if _, ok := v.fresh[name]; ok {
				continue
			}
			if f.Replicas > most || f.Replicas == most && name < best {
				best = name
			}
			break
		}
	}
	return best
}

// drop takes the cluster named name out: it is gone.
func (v *freshView) drop(name string) { v.set(name, GoneCluster(name), nil, false) }

func (v *freshView) set(name string, fr Fresh, s *clusterv1alpha1.ResourceSummary, in bool) {
	if _, ok := v.fresh[name]; !ok {
		v.overrides = append(v.overrides, fr)
	} else {
		for i := range v.overrides {
			if v.overrides[i].Name() == name {
				v.overrides[i] = fr
			}
		}
	}
	v.fresh[name], v.in[name] = s, in
}

// summary is a Summaries: a fresh read's, else the Fleet's.
func (v *freshView) summary(name string) (*clusterv1alpha1.ResourceSummary, bool) {
	if s, ok := v.fresh[name]; ok {
		return s, v.in[name] || s != nil
	}
	return v.fleet.Summary(name)
}

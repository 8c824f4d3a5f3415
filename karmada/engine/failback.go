package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/failback"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/scheduling"
	"github.com/failoverkit/failover/prescheduling"
)

// The graceful eviction tasks a failback writes, for the clusters a binding
// leaves to go back where it came from.
const (
	FailbackProducer = "FailbackController"
	FailbackReason   = "FailedBack"
)

// FailbackOptions are what [PlanFailback] reads.
type FailbackOptions struct {
	// Fleet is where the origins' health is read. Required.
	Fleet *Fleet
	// Scheduler is Karmada's scheduling algorithm on the fleet as it is,
	// which predicts where a fresh placement puts the binding. Required.
	Scheduler *scheduling.Scheduler
	// Window is how long an origin must have been healthy without a break
	// (the controllers' --failback-stabilization-window), unless a
	// binding's karmada.FailbackWindowAnnotation says otherwise: 0 is off.
	Window time.Duration
	// Ledger, when set, holds the room a failback's replicas will take on
	// the clusters they go to, as it holds an eviction's, and holds a
	// failback back while the room left after the evictions and failbacks
	// in flight is short. Optional.
	Ledger *Ledger
}

// FailbackAction is what [PlanFailback] decided for a binding.
type FailbackAction int

// The FailbackActions.
const (
	// FailbackNone: nothing to go back to (no origin recorded, failback
	// off), or only a record to write (FailbackStep.RecordChanged).
	FailbackNone FailbackAction = iota
	// FailbackWait: an origin is not healthy long enough yet, or the
	// binding has clusters in transit: decide again after
	// FailbackStep.After (0: on a change of the binding or the origin).
	FailbackWait
	// FailbackNotPlaced: an origin has been healthy long enough, but a
	// fresh placement would not put replicas back there now, or not
	// without shrinking a cluster the binding keeps: decide again when the
	// fleet changes.
	FailbackNotPlaced
	// FailbackGo: the binding has been changed in place to go back; write
	// it.
	FailbackGo
)

func (a FailbackAction) String() string {
	switch a {
	case FailbackNone:
		return "none"
	case FailbackWait:
		return "wait"
	case FailbackNotPlaced:
		return "not-placed"
	case FailbackGo:
		return "go"
	}
	return fmt.Sprintf("FailbackAction(%d)", int(a))
}

// FailbackStep is [PlanFailback]'s answer.
type FailbackStep struct {
	Action FailbackAction
	// Origin is the origin decided on, for FailbackNotPlaced and
	// FailbackGo; for FailbackWait, the one whose window ends first.
	Origin failback.Origin
	// After is when to decide again, for FailbackWait.
	After time.Duration
	// Placement is the fresh placement predicted, for FailbackNotPlaced
	// and FailbackGo.
	Placement []workv1alpha2.TargetCluster
	// Hold is the room held for the replicas going back, for FailbackGo
	// with a Ledger: Release it if the write fails. It settles as the
	// clusters' summaries show the replicas placed, or when the hold
	// passes.
	Hold Hold
	// Leaving are the clusters the binding leaves, whose copies wait in
	// graceful eviction tasks until the returning copies are healthy, for
	// FailbackGo.
	Leaving []string
	// Why says why, in words an operator can act on.
	Why string
	// WindowErr, whatever the Action, says what is wrong with the
	// binding's karmada.FailbackWindowAnnotation: FailbackOptions.Window
	// applies instead.
	WindowErr error
	// RecordChanged is true when the binding's karmada.FailedOverFromAnnotation
	// was changed in place (origins made moot dropped, or the origin
	// returned to): write the binding, whatever the Action.
	RecordChanged bool
	// FirstTerm is true, for FailbackGo, when the binding goes back to a
	// clusterAffinities term before the one the scheduler observes: its
	// status.schedulerObservedAffinityName was cleared in place, so that
	// Karmada's scheduler, which starts a fresh placement from the term it
	// observes, starts from the first. Write the status (the status
	// subresource) before the spec: the scheduler acts on the spec's
	// change, not on the status's.
	FirstTerm bool
}

// PlanFailback decides, at now, whether binding (a *ResourceBinding or a
// *ClusterResourceBinding) goes back to a cluster it failed over from, by
// its karmada.FailedOverFromAnnotation. Without a window (0: off) it
// changes nothing. The origins made moot (the binding runs there again, its
// placement changed) are dropped first. A binding
// with graceful eviction tasks open waits: its copies are still moving. An
// origin that has been healthy for the window (failback.Decide) is returned
// to when Karmada's algorithm, asked for a fresh placement
// (spec.rescheduleTriggeredAt) on the fleet as it is without the clusters
// that placement leaves, puts replicas back on it and shrinks no cluster
// the binding keeps: a copy leaving a cluster waits there in a graceful
// eviction task (producer FailbackProducer, reason FailbackReason) until
// the copies it is replaced by are healthy, so the binding never has fewer
// replicas running than before; a copy cannot shrink in place that way. For
// FailbackGo the binding is changed in place: the leaving clusters' copies
// in tasks, spec.rescheduleTriggeredAt now, the origin out of the record.
//
// An error is a binding or a record that cannot be read; a record that does
// not parse is left as it is. A window annotation that cannot be read is
// FailbackStep.WindowErr, and FailbackOptions.Window applies.
func PlanFailback(opts FailbackOptions, now time.Time, binding runtime.Object) (FailbackStep, error) {
	if opts.Fleet == nil || opts.Scheduler == nil {
		return FailbackStep{}, errors.New("karmada: PlanFailback: FailbackOptions.Fleet and .Scheduler are required")
	}
	meta, spec, status, toLib, err := bindingParts(binding)
	if err != nil {
		return FailbackStep{}, err
	}
	annotations := meta.GetAnnotations()
	rec, err := failback.ParseRecord(annotations[karmada.FailedOverFromAnnotation])
	if err != nil {
		return FailbackStep{}, fmt.Errorf("karmada: annotation %s: %w", karmada.FailedOverFromAnnotation, err)
	}
	var step FailbackStep
	setRecord := func(r failback.Record) {
		if r.String() != annotations[karmada.FailedOverFromAnnotation] {
			annotations = karmada.WithRecord(annotations, r)
			meta.SetAnnotations(annotations)
			step.RecordChanged = true
		}
	}
	// Off, it changes nothing, the record included: the next eviction's
	// write drops what is moot.
	window, werr := karmada.FailbackWindow(annotations, opts.Window)
	step.WindowErr = werr
	if window <= 0 {
		step.Why = fmt.Sprintf("failback is off (stabilization window %v)", window)
		return step, nil
	}
	live := karmada.MootOrigins(rec, spec, karmada.PlacementFingerprint(spec.Placement))
	setRecord(live)
	if len(live) == 0 {
		step.Why = "nothing to go back to"
		return step, nil
	}
	if len(spec.GracefulEvictionTasks) > 0 {
		from := make([]string, len(spec.GracefulEvictionTasks))
		for i, t := range spec.GracefulEvictionTasks {
			from[i] = t.FromCluster
		}
		step.Action = FailbackWait
		step.Why = fmt.Sprintf("its copies are still moving: graceful eviction tasks from %s are open", strings.Join(from, ", "))
		return step, nil
	}

	// The first origin healthy for its window; else the one whose window
	// ends first.
	var ready *failback.Origin
	var waits []string
	for i := range live {
		o := live[i]
		var d failback.Decision
		if cl, ok := opts.Fleet.Cluster(o.Cluster); ok {
			conv, err := karmada.FromCluster(cl)
			if err != nil {
				waits = append(waits, fmt.Sprintf("cluster %s cannot be read: %v", o.Cluster, err))
				continue
			}
			d = failback.Decide(o, &conv, window, now)
		} else {
			d = failback.Decide(o, nil, window, now)
		}
		if d.Return {
			ready = &live[i]
			break
		}
		if d.After > 0 && (step.After == 0 || d.After < step.After) {
			step.After, step.Origin = d.After, o
		}
		waits = append(waits, d.Reason)
	}
	if ready == nil {
		step.Action = FailbackWait
		step.Why = strings.Join(waits, "; ")
		return step, nil
	}
	step.Origin = *ready

	// Karmada's scheduler places afresh from the clusterAffinities term it
	// observes (karmada#5070): a binding that fell back to a later term
	// goes back to the first only if that is cleared. Tried first; then
	// from the term observed.
	from := []*workv1alpha2.ResourceBindingStatus{status}
	if terms := spec.Placement.ClusterAffinities; len(terms) > 1 && status.SchedulerObservedAffinityName != "" &&
		status.SchedulerObservedAffinityName != terms[0].AffinityName {
		first := status.DeepCopy()
		first.SchedulerObservedAffinityName = ""
		from = []*workv1alpha2.ResourceBindingStatus{first, status}
	}
	var fresh []workv1alpha2.TargetCluster
	var leaving []string
	var why string
	for _, st := range from {
		first := ""
		if st != status {
			first = spec.Placement.ClusterAffinities[0].AffinityName
		}
		if fresh, leaving, why = predictReturn(opts.Scheduler, spec, st, ready.Cluster, first, now); why == "" {
			step.FirstTerm = first != ""
			break
		}
	}
	step.Placement = fresh
	if why != "" {
		step.Action, step.Why = FailbackNotPlaced, why
		return step, nil
	}

	// The room the replicas going back take, held against the evictions
	// and failbacks in flight.
	if opts.Ledger != nil {
		hold := holdKey(meta.GetNamespace()+"/"+meta.GetName(), "back:"+ready.Cluster)
		if meta.GetNamespace() == "" {
			hold = holdKey(meta.GetName(), "back:"+ready.Cluster)
		}
		res := opts.Ledger.admit(now, hold, gains(spec, fresh), opts.Fleet.Summary, spec.ReplicaRequirements)
		if !res.Feasible {
			step.Action, step.Why = FailbackNotPlaced, res.Reason
			return step, nil
		}
		step.Hold = Hold{ledger: opts.Ledger, key: hold}
	}

	// Go: the copies that leave wait in tasks, and the scheduler places
	// the binding afresh.
	lib, err := toLib()
	if err != nil {
		step.Hold.Release()
		return FailbackStep{}, err
	}
	created := metav1.NewTime(now)
	message := fmt.Sprintf("back to %s, healthy for the %v window", ready.Cluster, window)
	for _, c := range leaving {
		lib = gracefulevict.Evict(lib, c, gracefulevict.Task{
			PurgeMode: failover.PurgeModeGracefully, Reason: FailbackReason, Message: message,
			Producer: FailbackProducer, CreationTimestamp: &created,
		})
	}
	karmada.ApplyBinding(spec, lib)
	spec.RescheduleTriggeredAt = &created
	step.Action, step.Leaving = FailbackGo, leaving
	if step.FirstTerm {
		// Back in the placement's first term: the record has served.
		status.SchedulerObservedAffinityName = ""
		setRecord(nil)
		step.Why = fmt.Sprintf("cluster %s has been healthy for the %v window, and a fresh placement from the first clusterAffinities term %q puts it back there (%s)",
			ready.Cluster, window, spec.Placement.ClusterAffinities[0].AffinityName, placementString(fresh))
		return step, nil
	}
	setRecord(live.Remove(ready.Cluster))
	step.Why = fmt.Sprintf("cluster %s has been healthy for the %v window, and a fresh placement puts %s there (%s)",
		ready.Cluster, window, replicasOn(fresh, ready.Cluster), placementString(fresh))
	return step, nil
}

// predictReturn is the fresh placement Karmada's scheduler gives a binding
// placed as spec, with status, and the clusters it leaves; or why it is no
// failback: to origin, or, when firstTerm is set (status names no term),
// to the placement's first clusterAffinities term.
func predictReturn(s *scheduling.Scheduler, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, origin, firstTerm string, now time.Time) (fresh []workv1alpha2.TargetCluster, leaving []string, why string) {
	// Where a fresh placement puts it, and again without the clusters it
	// leaves, which the scheduler will not place on while their copies wait
	// in tasks.
	var term string
	if fresh, term, why = predictFresh(s, spec, status, nil, now); why != "" {
		return nil, nil, why
	}
	for _, t := range spec.Clusters {
		if !slices.ContainsFunc(fresh, func(f workv1alpha2.TargetCluster) bool { return f.Name == t.Name }) {
			leaving = append(leaving, t.Name)
		}
	}
	if len(leaving) > 0 {
		if fresh, term, why = predictFresh(s, spec, status, leaving, now); why != "" {
			return nil, nil, why
		}
	}
	if firstTerm == "" {
		return fresh, leaving, returns(spec, fresh, origin, leaving)
	}
	if term != firstTerm {
		return fresh, leaving, fmt.Sprintf("a fresh placement would not go back to the first clusterAffinities term %q: Karmada's scheduler would place it as %s under %q",
			firstTerm, placementString(fresh), term)
	}
	return fresh, leaving, shrinks(spec, fresh, origin, leaving)
}

// predictFresh is the fresh placement Karmada's scheduler gives spec now,
// with the copies on leaving in graceful eviction tasks; or why there is
// none.
func predictFresh(s *scheduling.Scheduler, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, leaving []string, now time.Time) (placement []workv1alpha2.TargetCluster, term, why string) {
	sp := spec.DeepCopy()
	at := metav1.NewTime(now)
	sp.RescheduleTriggeredAt = &at
	for _, c := range leaving {
		sp.GracefulEvictionTasks = append(sp.GracefulEvictionTasks, workv1alpha2.GracefulEvictionTask{FromCluster: c, Reason: FailbackReason, Producer: FailbackProducer})
	}
	st := status.DeepCopy()
	if st.LastScheduledTime == nil || !st.LastScheduledTime.Time.Before(now) {
		before := metav1.NewTime(now.Add(-time.Second))
		st.LastScheduledTime = &before
	}
	out, term, err := s.Schedule(sp, st)
	if err != nil {
		return nil, "", fmt.Sprintf("Karmada's scheduler would not place it afresh: %v", err)
	}
	slices.SortFunc(out, func(a, b workv1alpha2.TargetCluster) int { return strings.Compare(a.Name, b.Name) })
	return out, term, ""
}

// gains is a feasible answer moving, to each cluster of fresh, the replicas
// it has beyond what spec runs there: what a failback's replicas take,
// placed by room as the scheduler places a division by room.
func gains(spec *workv1alpha2.ResourceBindingSpec, fresh []workv1alpha2.TargetCluster) prescheduling.Result {
	r := prescheduling.Result{Feasible: true, Code: prescheduling.Feasible}
	for _, f := range fresh {
		had := int32(0)
		for _, t := range spec.Clusters {
			if t.Name == f.Name {
				had = t.Replicas
			}
		}
		if f.Replicas > had {
			r.Moves = append(r.Moves, failover.TargetCluster{Name: f.Name, Replicas: f.Replicas - had})
		}
	}
	r.PlacedByRoom = spec.Placement.ReplicaScheduling != nil &&
		spec.Placement.ReplicaScheduling.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingTypeDivided &&
		(spec.Placement.ReplicaScheduling.ReplicaDivisionPreference == policyv1alpha1.ReplicaDivisionPreferenceAggregated ||
			spec.Placement.ReplicaScheduling.WeightPreference != nil && spec.Placement.ReplicaScheduling.WeightPreference.DynamicWeight != "")
	return r
}

// returns says why fresh is not a failback to origin for a binding now
// placed as spec: it puts nothing there, or shrinks a cluster it keeps.
func returns(spec *workv1alpha2.ResourceBindingSpec, fresh []workv1alpha2.TargetCluster, origin string, leaving []string) string {
	i := slices.IndexFunc(fresh, func(t workv1alpha2.TargetCluster) bool { return t.Name == origin })
	duplicated := spec.Placement.ReplicaSchedulingType() == policyv1alpha1.ReplicaSchedulingTypeDuplicated
	if i < 0 || !duplicated && fresh[i].Replicas == 0 && spec.Replicas > 0 {
		return fmt.Sprintf("a fresh placement would not put it back on %s: Karmada's scheduler would place it as %s", origin, placementString(fresh))
	}
	return shrinks(spec, fresh, origin, leaving)
}

// shrinks says why fresh is not a failback for a binding now placed as
// spec: it shrinks a cluster the binding keeps, while the copies on origin
// start.
func shrinks(spec *workv1alpha2.ResourceBindingSpec, fresh []workv1alpha2.TargetCluster, origin string, leaving []string) string {
	if spec.Placement.ReplicaSchedulingType() == policyv1alpha1.ReplicaSchedulingTypeDuplicated {
		return ""
	}
	for _, t := range spec.Clusters {
		if slices.Contains(leaving, t.Name) {
			continue
		}
		j := slices.IndexFunc(fresh, func(f workv1alpha2.TargetCluster) bool { return f.Name == t.Name })
		if j >= 0 && fresh[j].Replicas < t.Replicas {
			return fmt.Sprintf("a fresh placement (%s) would shrink %s from %d to %d replicas while the copies on %s start: a failback moves whole copies only",
				placementString(fresh), t.Name, t.Replicas, fresh[j].Replicas, origin)
		}
	}
	return ""
}

func replicasOn(ts []workv1alpha2.TargetCluster, name string) string {
	for _, t := range ts {
		switch {
		case t.Name == name && t.Replicas == 1:
			return "1 replica"
		case t.Name == name && t.Replicas > 1:
			return fmt.Sprintf("%d replicas", t.Replicas)
		}
	}
	return "a copy"
}

func placementString(ts []workv1alpha2.TargetCluster) string {
	if len(ts) == 0 {
		return "nowhere"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("%s:%d", t.Name, t.Replicas)
	}
	return strings.Join(parts, ", ")
}

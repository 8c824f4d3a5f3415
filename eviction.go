package failover

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// ClusterFailoverBehavior is a workload's opt-in to cluster failover: how its
// copy leaves a cluster with a PreferNoExecute taint, and after how long. Its
// JSON is that of Karmada's policy/v1alpha1 ClusterFailoverBehavior (a
// PropagationPolicy's spec.failover.cluster). A nil *ClusterFailoverBehavior
// means the workload has not opted in: PreferNoExecute taints never move it.
//
// +k8s:deepcopy-gen=true
type ClusterFailoverBehavior struct {
	// PurgeMode says how the copy on the cluster left behind is removed;
	// empty means Gracefully. [DecideEviction] does not read it.
	PurgeMode PurgeMode `json:"purgeMode,omitempty"`
	// TolerationSeconds is how long the workload stays on a cluster after a
	// PreferNoExecute taint was added; nil means 300, 0 means at once. A
	// negative value counts as 0.
	TolerationSeconds *int32 `json:"tolerationSeconds,omitempty"`
}

// DefaultPreferNoExecuteTolerationSeconds is how long a workload that opted in
// to cluster failover stays on a cluster with a PreferNoExecute taint when
// its ClusterFailoverBehavior.TolerationSeconds is nil (Karmada's default).
const DefaultPreferNoExecuteTolerationSeconds = 300

// EvictionDecision is the answer of [DecideEviction] for one workload on one
// cluster.
type EvictionDecision struct {
	// Evict says the workload must leave the cluster now.
	Evict bool
	// After, when Evict is false and After is positive, is how long until the
	// earliest deadline still to come: decide again then. Zero with Evict
	// false means never, as far as the current taints go.
	After time.Duration
	// Reason says which taint and which rule decided, in words.
	Reason string
}

// maxSeconds is the longest toleration a time.Duration can hold.
const maxSeconds = math.MaxInt64 / int64(time.Second)

// noFaultyTaint is the Reason for a cluster with no NoExecute or
// PreferNoExecute taint: a constant, so that the common case allocates
// nothing.
const noFaultyTaint = "no NoExecute or PreferNoExecute taint"

// DecideEviction answers the taint manager's question for one workload on
// one cluster: must it leave now, later, or never? taints are the cluster's,
// tolerations the workload placement's clusterTolerations, failover its
// spec.failover.cluster (nil when it has not opted in), now the current time.
// The rules, as in Karmada v1.18's taint manager (needEvictionWithCurrentTime)
// and the cluster failover proposal:
//
//  1. NoSchedule and PreferNoSchedule taints never evict.
//  2. A NoExecute taint that no toleration tolerates evicts now. Matching is
//     k8s.io/api's [corev1.Toleration.ToleratesTaint], without the Lt and Gt
//     operators, as in Karmada.
//  3. When every NoExecute taint is tolerated, each taint is assigned the
//     first toleration that tolerates it (the "used" tolerations). A used
//     toleration with TolerationSeconds sets a deadline of TimeAdded +
//     TolerationSeconds for every NoExecute taint it tolerates; a used
//     toleration without TolerationSeconds sets none (tolerates forever).
//  4. A PreferNoExecute taint ignores tolerations. With failover nil it never
//     evicts; otherwise its deadline is TimeAdded + failover.TolerationSeconds
//     (nil means 300 s); a TolerationSeconds of 0 evicts at once.
//  5. A taint without TimeAdded sets no deadline (Karmada: "should not
//     happen"), and Reason says its time is missing; rule 4's 0 still evicts.
//  6. The earliest deadline decides: reached (at or before now) evicts now;
//     otherwise After is the time left. No deadline means the workload stays
//     (After 0).
//
// Bad input never panics and has a defined answer: a toleration whose
// operator is not Equal, Exists or empty, or whose effect is not a known
// taint effect, tolerates nothing (so a NoExecute taint it was meant for
// evicts now, and Reason names the toleration); a negative TolerationSeconds,
// in a toleration or in failover, counts as 0 and Reason says so; one longer
// than a time.Duration holds (some 292 years) counts as that long.
//
// DecideEviction allocates nothing when taints has no NoExecute or
// PreferNoExecute taint.
func DecideEviction(taints []corev1.Taint, tolerations []corev1.Toleration, failover *ClusterFailoverBehavior, now time.Time) EvictionDecision {
	faulty := false
	for i := range taints {
		if e := taints[i].Effect; e == corev1.TaintEffectNoExecute || e == TaintEffectPreferNoExecute {
			faulty = true
			break
		}
	}
	if !faulty {
		return EvictionDecision{Reason: noFaultyTaint}
	}

	// Rule 2: every NoExecute taint needs a toleration. The first that
	// tolerates it is "used" (Karmada's GetMatchingTolerations keeps only
	// those), for rule 3.
	var used []bool
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		j := firstTolerating(tolerations, t)
		if j < 0 {
			return EvictionDecision{Evict: true, Reason: fmt.Sprintf("taint %s is not tolerated%s", taintString(t), badTolerations(tolerations))}
		}
		if used == nil {
			used = make([]bool, len(tolerations))
		}
		used[j] = true
	}

	d := deadlines{now: now}
	// Rule 3: the deadlines of the used tolerations.
	for j := range used {
		tol := &tolerations[j]
		if !used[j] || tol.TolerationSeconds == nil {
			continue
		}
		secs, note := *tol.TolerationSeconds, ""
		if secs < 0 {
			secs, note = 0, fmt.Sprintf(" (negative tolerationSeconds %d counts as 0)", *tol.TolerationSeconds)
		}
		// Beyond what a time.Duration holds (some 292 years) the product
		// would wrap to a time in the past.
		secs = min(secs, maxSeconds)
		for i := range taints {
			t := &taints[i]
			if t.Effect != corev1.TaintEffectNoExecute || !tol.ToleratesTaint(klog.Logger{}, t, false) {
				continue
			}
			d.add(t, time.Duration(secs)*time.Second, fmt.Sprintf("clusterTolerations[%d] tolerates it for %ds%s", j, secs, note))
		}
	}
	// Rule 4: PreferNoExecute, for workloads that opted in.
	if failover != nil {
		secs, note := int64(DefaultPreferNoExecuteTolerationSeconds), " (the default)"
		if failover.TolerationSeconds != nil {
			secs, note = int64(*failover.TolerationSeconds), ""
			if secs < 0 {
				secs, note = 0, fmt.Sprintf(" (negative tolerationSeconds %d counts as 0)", secs)
			}
		}
		for i := range taints {
			t := &taints[i]
			if t.Effect != TaintEffectPreferNoExecute {
				continue
			}
			what := fmt.Sprintf("spec.failover.cluster.tolerationSeconds is %ds%s", secs, note)
			if secs == 0 {
				return EvictionDecision{Evict: true, Reason: fmt.Sprintf("taint %s: %s", taintString(t), what)}
			}
			d.add(t, time.Duration(secs)*time.Second, what)
		}
	}
	return d.decision(taints, failover == nil)
}

// firstTolerating returns the index of the first toleration that tolerates
// t, or -1.
func firstTolerating(tolerations []corev1.Toleration, t *corev1.Taint) int {
	for j := range tolerations {
		// Karmada disables the comparison operators (Lt, Gt); so do we. The
		// logger is read only for them.
		if tolerations[j].ToleratesTaint(klog.Logger{}, t, false) {
			return j
		}
	}
	return -1
}

// badTolerations names the tolerations that tolerate nothing because their
// operator or effect is unknown, for the Reason of an untolerated taint.
func badTolerations(tolerations []corev1.Toleration) string {
	var bad []string
	for j := range tolerations {
		tol := &tolerations[j]
		switch tol.Operator {
		case "", corev1.TolerationOpEqual, corev1.TolerationOpExists:
		default:
			bad = append(bad, fmt.Sprintf("clusterTolerations[%d] has operator %q, which tolerates nothing (want Equal or Exists)", j, tol.Operator))
			continue
		}
		switch tol.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute, TaintEffectPreferNoExecute:
		default:
			bad = append(bad, fmt.Sprintf("clusterTolerations[%d] has unknown effect %q, which tolerates nothing", j, tol.Effect))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return "; " + strings.Join(bad, "; ")
}

// deadlines tracks the earliest deadline and the taints whose time is
// missing.
type deadlines struct {
	now     time.Time
	found   bool
	at      time.Time
	reason  string
	missing []string // taints without TimeAdded that would have a deadline
}

func (d *deadlines) add(t *corev1.Taint, wait time.Duration, why string) {
	if t.TimeAdded == nil {
		if s := taintString(t); !slices.Contains(d.missing, s) {
			d.missing = append(d.missing, s)
		}
		return
	}
	at := t.TimeAdded.Add(wait)
	if !d.found || at.Before(d.at) {
		d.found, d.at = true, at
		d.reason = fmt.Sprintf("taint %s added at %s: %s", taintString(t), t.TimeAdded.UTC().Format(time.RFC3339), why)
	}
}

// decision applies rule 6. optedOut is true when the workload has no
// ClusterFailoverBehavior.
func (d *deadlines) decision(taints []corev1.Taint, optedOut bool) EvictionDecision {
	var notes string
	if len(d.missing) > 0 {
		notes = "; no deadline for " + strings.Join(d.missing, ", ") + ": timeAdded is missing"
	}
	switch {
	case d.found && !d.at.After(d.now):
		return EvictionDecision{Evict: true, Reason: d.reason + ", which has run out" + notes}
	case d.found:
		left := d.at.Sub(d.now)
		return EvictionDecision{After: left, Reason: fmt.Sprintf("%s, which runs out in %s%s", d.reason, left, notes)}
	}
	var parts []string
	if len(d.missing) > 0 {
		parts = append(parts, "no deadline for "+strings.Join(d.missing, ", ")+": timeAdded is missing")
	}
	noExecute, prefer := false, false
	for i := range taints {
		noExecute = noExecute || taints[i].Effect == corev1.TaintEffectNoExecute
		prefer = prefer || taints[i].Effect == TaintEffectPreferNoExecute
	}
	if noExecute && len(d.missing) == 0 {
		parts = append(parts, "every NoExecute taint is tolerated without a time limit")
	}
	if prefer && optedOut {
		parts = append(parts, "PreferNoExecute taints move only workloads with spec.failover.cluster set")
	}
	return EvictionDecision{Reason: "stays: " + strings.Join(parts, "; ")}
}

// taintString writes t as kubectl does: key=value:Effect.
func taintString(t *corev1.Taint) string {
	if t.Value != "" {
		return t.Key + "=" + t.Value + ":" + string(t.Effect)
	}
	return t.Key + ":" + string(t.Effect)
}

package failback

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

// MaxOrigins is the most origins a [Record] keeps: a workload that failed
// over from more clusters than that remembers the latest.
const MaxOrigins = 8

// ReadyCondition is the condition a cluster must have True to be healthy:
// Karmada's cluster Ready condition.
const ReadyCondition = "Ready"

// Origin is one cluster a workload failed over from, and when.
type Origin struct {
	Cluster string      `json:"cluster"`
	At      metav1.Time `json:"at"`
	// Placement, when set, fingerprints the placement the workload had when
	// it failed over (for Karmada, karmada.PlacementFingerprint): once the
	// placement has changed, whoever changed it, the origin is moot.
	Placement string `json:"placement,omitempty"`
}

// Record is where a workload failed over from: an origin per cluster, the
// oldest first, at most [MaxOrigins]. Its zero value is empty and ready.
type Record []Origin

// Add returns r with o added last, in place of an origin of the same
// cluster, and without the oldest beyond MaxOrigins. r is not modified.
func (r Record) Add(o Origin) Record {
	out := slices.DeleteFunc(slices.Clone(r), func(x Origin) bool { return x.Cluster == o.Cluster })
	out = append(out, o)
	if len(out) > MaxOrigins {
		out = out[len(out)-MaxOrigins:]
	}
	return out
}

// Remove returns r without the origin of cluster (the workload is back
// there, or its placement changed). r is not modified.
func (r Record) Remove(cluster string) Record {
	out := slices.DeleteFunc(slices.Clone(r), func(x Origin) bool { return x.Cluster == cluster })
	if len(out) == 0 {
		return nil
	}
	return out
}

// Find returns the origin of cluster, if r has one.
func (r Record) Find(cluster string) (Origin, bool) {
	i := slices.IndexFunc(r, func(x Origin) bool { return x.Cluster == cluster })
	if i < 0 {
		return Origin{}, false
	}
	return r[i], true
}

// String is r as JSON, as [ParseRecord] reads it; "" when r is empty.
func (r Record) String() string {
	if len(r) == 0 {
		return ""
	}
	b, err := json.Marshal([]Origin(r))
	if err != nil {
		return "" // an Origin always marshals
	}
	return string(b)
}

// ParseRecord reads a Record written by [Record.String]; "" is an empty
// one. A record that is not that JSON, names no cluster or a cluster twice,
// lacks a time, or holds more than MaxOrigins is an error naming the entry
// and its value.
func ParseRecord(s string) (Record, error) {
	if s == "" {
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("failback: record %q: %w", s, err)
	}
	var errs []error
	if len(r) > MaxOrigins {
		errs = append(errs, fmt.Errorf("failback: record: %d origins, more than %d", len(r), MaxOrigins))
	}
	for i, o := range r {
		switch {
		case o.Cluster == "":
			errs = append(errs, fmt.Errorf("failback: record[%d].cluster is empty", i))
		case slices.IndexFunc(r[:i], func(x Origin) bool { return x.Cluster == o.Cluster }) >= 0:
			errs = append(errs, fmt.Errorf("failback: record[%d].cluster: %q is listed twice", i, o.Cluster))
		}
		if o.At.IsZero() {
			errs = append(errs, fmt.Errorf("failback: record[%d].at is missing", i))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// Decision is [Decide]'s answer.
type Decision struct {
	// Return is true when the origin has been healthy for the window: the
	// workload is a candidate to go back to it.
	Return bool
	// After, when Return is false and After > 0, is how long until the
	// window ends if the cluster stays as it is: decide again then. Zero:
	// only a change of the cluster can make it a candidate.
	After time.Duration
	// Since is when the origin's health began, as the decision read it;
	// zero when it is not healthy.
	Since time.Time
	// Reason says why, in words an operator can act on.
	Reason string
}

// Decide answers, at now, whether a workload that failed over from origin
// may go back to it: cluster is the origin as it is now (nil: it is gone),
// window how long it must have been healthy without a break (0 or less:
// failback is off, and the answer is always no).
//
// Healthy is Ready True and no NoExecute or PreferNoExecute taint
// ([failover.IsFaulty]). Its health is taken to have begun at the latest of
// the failover (origin.At) and every condition's lastTransitionTime: a
// condition that changed, whichever, may be what tainted the cluster or
// what cleared the taint, and the taint itself keeps no time once removed.
// So the answer depends only on what the cluster shows, and a flap starts
// the window again.
func Decide(origin Origin, cluster *failover.Cluster, window time.Duration, now time.Time) Decision {
	switch {
	case window <= 0:
		return Decision{Reason: fmt.Sprintf("failback is off (stabilization window %v)", window)}
	case cluster == nil:
		return Decision{Reason: fmt.Sprintf("cluster %s, which it failed over from, is gone", origin.Cluster)}
	}
	if t := faultyTaint(cluster.Taints); t != nil {
		return Decision{Reason: fmt.Sprintf("cluster %s has the taint %s", cluster.Name, taintString(t))}
	}
	ready := false
	since, why := origin.At.Time, "it failed over"
	for _, c := range cluster.Conditions {
		if c.Type == ReadyCondition {
			ready = c.Status == metav1.ConditionTrue
			if !ready {
				return Decision{Reason: fmt.Sprintf("cluster %s is not Ready (%s since %s)", cluster.Name, c.Status, stamp(c.LastTransitionTime.Time))}
			}
		}
		if c.LastTransitionTime.After(since) {
			since, why = c.LastTransitionTime.Time, fmt.Sprintf("its condition %s turned %s", c.Type, c.Status)
		}
	}
	if !ready {
		return Decision{Reason: fmt.Sprintf("cluster %s has no Ready condition", cluster.Name)}
	}
	end := since.Add(window)
	if now.Before(end) {
		return Decision{After: end.Sub(now), Since: since, Reason: fmt.Sprintf(
			"cluster %s has been healthy since %s, when %s: %v of the %v window left", cluster.Name, stamp(since), why, end.Sub(now), window)}
	}
	return Decision{Return: true, Since: since, Reason: fmt.Sprintf(
		"cluster %s has been healthy since %s, when %s: %v, past the %v window", cluster.Name, stamp(since), why, now.Sub(since), window)}
}

// faultyTaint is the first NoExecute or PreferNoExecute taint of taints.
func faultyTaint(taints []corev1.Taint) *corev1.Taint {
	for i := range taints {
		if e := taints[i].Effect; e == corev1.TaintEffectNoExecute || e == failover.TaintEffectPreferNoExecute {
			return &taints[i]
		}
	}
	return nil
}

func taintString(t *corev1.Taint) string {
	if t.Value != "" {
		return t.Key + "=" + t.Value + ":" + string(t.Effect)
	}
	return t.Key + ":" + string(t.Effect)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

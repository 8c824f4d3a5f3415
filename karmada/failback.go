package karmada

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover/failback"
)

// FailedOverFromAnnotation on a ResourceBinding or ClusterResourceBinding is
// where it failed over from, and when: a failback.Record, as JSON, that the
// fork's eviction controller writes with each eviction and failback reads.
// It is bounded (failback.MaxOrigins), survives restarts, leader changes and
// the end of the eviction's task, and drops an origin once the binding runs
// there again or its placement has changed.
const FailedOverFromAnnotation = "failover.karmada.io/failed-over-from"

// PlacementFingerprint is a short digest of a binding's placement, which a
// failback.Origin keeps: a placement that changed since the failover, by
// whatever hand, makes the origin moot. Nil has a digest too.
func PlacementFingerprint(p *policyv1alpha1.Placement) string {
	b, err := json.Marshal(p)
	if err != nil {
		return "" // a Placement always marshals
	}
	h := fnv.New64a()
	h.Write(b)
	return fmt.Sprintf("%016x", h.Sum64())
}

// RecordFailover returns annotations, copied, with a failover of the
// binding whose spec is spec from cluster at now added to its
// FailedOverFromAnnotation (spec as it is before the eviction), and without
// the origins made moot since: those the binding runs on again, and those
// recorded under another placement. A record that does not parse starts
// afresh, and err says what was wrong with it.
func RecordFailover(annotations map[string]string, spec *workv1alpha2.ResourceBindingSpec, cluster string, now time.Time) (map[string]string, error) {
	rec, err := failback.ParseRecord(annotations[FailedOverFromAnnotation])
	if err != nil {
		rec = nil
		err = fmt.Errorf("karmada: annotation %s: %w", FailedOverFromAnnotation, err)
	}
	fp := PlacementFingerprint(spec.Placement)
	rec = MootOrigins(rec, spec, fp)
	rec = rec.Add(failback.Origin{Cluster: cluster, At: metav1.NewTime(now), Placement: fp})
	return WithRecord(annotations, rec), err
}

// WithRecord returns annotations, copied, with rec as their
// FailedOverFromAnnotation, or without it when rec is empty.
func WithRecord(annotations map[string]string, rec failback.Record) map[string]string {
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	if len(rec) == 0 {
		delete(out, FailedOverFromAnnotation)
	} else {
		out[FailedOverFromAnnotation] = rec.String()
	}
	return out
}

// MootOrigins returns rec without the origins a binding whose spec is spec
// has no more need to go back to: those it runs on (it is back), and those
// recorded under a placement other than fp, its placement's
// PlacementFingerprint.
func MootOrigins(rec failback.Record, spec *workv1alpha2.ResourceBindingSpec, fp string) failback.Record {
	out := rec
	for _, o := range rec {
		if spec.TargetContains(o.Cluster) || o.Placement != fp {
			out = out.Remove(o.Cluster)
		}
	}
	return out
}

// FailbackWindowAnnotation on a ResourceBinding or ClusterResourceBinding
// is its own failback stabilisation window, a Go duration ("15m"), which
// overrides the controllers' --failback-stabilization-window: "0" turns
// failback off for it.
const FailbackWindowAnnotation = "failover.karmada.io/failback-stabilization-window"

// FailbackWindow is the stabilisation window of a binding with
// annotations: its FailbackWindowAnnotation, else def. A value that is not
// a non-negative duration is an error naming the annotation and the value.
func FailbackWindow(annotations map[string]string, def time.Duration) (time.Duration, error) {
	v, ok := annotations[FailbackWindowAnnotation]
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return def, fmt.Errorf("karmada: annotation %s: %q is not a non-negative duration", FailbackWindowAnnotation, v)
	}
	return d, nil
}

package appfailover

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover/gracefulevict"
)

// MaxClusters is the most timers a [Record] keeps. At some 150 bytes a
// timer, a full record is about 10 KiB, well inside the 256 KiB that all of
// an object's annotations share; a workload scheduled to more clusters than
// this keeps the timers that matter most ([Policy.DecideAll]).
const MaxClusters = 64

// Timer is what [Policy.Decide] remembers of the copy of a workload on one
// cluster, and all it needs to decide again after a restart: the health it
// last saw and since when, the Unhealthy time counted before, and, with a
// start-up grace, the generation it last saw and since when. Every time in
// it is a whole second, as an annotation keeps it, so a Timer read back
// from [Record.String] is the Timer that was written.
//
// Decide alone writes Timers; a controller stores them ([Record]) and hands
// them back.
type Timer struct {
	// Cluster is the cluster the copy runs on.
	Cluster string `json:"cluster"`
	// Health is the copy's health when last seen: Healthy, Unhealthy or
	// Unknown.
	Health gracefulevict.ResourceHealth `json:"health"`
	// Since is when the copy was first seen with Health, after having had
	// another (or none).
	Since metav1.Time `json:"since"`
	// CountedSeconds is the Unhealthy time counted toward the window before
	// the current stretch began (the later of Since and GenerationSince),
	// since the timer was last reset. Healthy resets it to 0.
	CountedSeconds int64 `json:"countedSeconds,omitempty"`
	// Generation is the generation of the copy when last seen, as the member
	// reports it; 0 when it reports none. Kept only with a start-up grace.
	Generation int64 `json:"generation,omitempty"`
	// GenerationSince is when the copy was first seen at Generation (or
	// first seen at all): its start-up grace counts from it. Nil when the
	// policy has no start-up grace, or had none when the timer began: the
	// copy's start-up is then taken to be over.
	GenerationSince *metav1.Time `json:"generationSince,omitempty"`
	// Started is true once the copy has been seen Healthy at Generation:
	// its start-up is over, whatever the grace.
	Started bool `json:"started,omitempty"`
}

// Record is the timers of one workload, one per cluster, sorted by cluster,
// at most [MaxClusters]: what a controller keeps on the workload (for
// Karmada, an annotation on the binding) so that a controller restarted or
// newly elected decides at the same moment as one that ran all along. Its
// zero value is empty and ready. [Policy.DecideAll] returns the record to
// write back.
type Record []Timer

// Find returns the timer of cluster, if r has one.
func (r Record) Find(cluster string) (Timer, bool) {
	i := slices.IndexFunc(r, func(t Timer) bool { return t.Cluster == cluster })
	if i < 0 {
		return Timer{}, false
	}
	return r[i], true
}

// String is r as JSON, as [ParseRecord] reads it; "" when r is empty.
func (r Record) String() string {
	if len(r) == 0 {
		return ""
	}
	b, err := json.Marshal([]Timer(r))
	if err != nil {
		return "" // a Timer always marshals
	}
	return string(b)
}

// ParseRecord reads a Record written by [Record.String]; "" is an empty
// one, and the timers come back sorted by cluster. A record that is not
// that JSON, or holds more than MaxClusters timers, or a timer that names
// no cluster or a cluster twice, has a health other than Healthy,
// Unhealthy or Unknown, lacks its since, counts negative seconds, or counts
// seconds while Healthy (Healthy resets the timer) is an error naming the
// entry and its value; errors of several entries are joined.
//
// A controller that cannot read its record should start from an empty one
// and say so: a timer lost can only make a failover later, never earlier
// (see [Policy.DecideAll]).
func ParseRecord(s string) (Record, error) {
	if s == "" {
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("appfailover: record %q: %w", s, err)
	}
	var errs []error
	if len(r) > MaxClusters {
		errs = append(errs, fmt.Errorf("appfailover: record: %d clusters, more than %d", len(r), MaxClusters))
	}
	for i, t := range r {
		switch {
		case t.Cluster == "":
			errs = append(errs, fmt.Errorf("appfailover: record[%d].cluster is empty", i))
		case slices.IndexFunc(r[:i], func(x Timer) bool { return x.Cluster == t.Cluster }) >= 0:
			errs = append(errs, fmt.Errorf("appfailover: record[%d].cluster: %q is listed twice", i, t.Cluster))
		}
		switch t.Health {
		case gracefulevict.Healthy, gracefulevict.Unhealthy, gracefulevict.Unknown:
		default:
			errs = append(errs, fmt.Errorf("appfailover: record[%d] (cluster %q).health: unknown value %q: want Healthy, Unhealthy or Unknown", i, t.Cluster, string(t.Health)))
		}
		if t.Since.IsZero() {
			errs = append(errs, fmt.Errorf("appfailover: record[%d] (cluster %q).since is missing", i, t.Cluster))
		}
		switch {
		case t.CountedSeconds < 0:
			errs = append(errs, fmt.Errorf("appfailover: record[%d] (cluster %q).countedSeconds: %d: must not be negative", i, t.Cluster, t.CountedSeconds))
		case t.CountedSeconds > 0 && t.Health == gracefulevict.Healthy:
			errs = append(errs, fmt.Errorf("appfailover: record[%d] (cluster %q).countedSeconds: %d with health Healthy, which resets the timer", i, t.Cluster, t.CountedSeconds))
		}
		if t.GenerationSince != nil && t.GenerationSince.IsZero() {
			errs = append(errs, fmt.Errorf("appfailover: record[%d] (cluster %q).generationSince is empty", i, t.Cluster))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(r, func(a, b Timer) int { return strings.Compare(a.Cluster, b.Cluster) })
	return r, nil
}

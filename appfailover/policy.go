package appfailover

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/client-go/util/jsonpath"

	"github.com/failoverkit/failover"
)

// Behavior is a workload's opt-in to application failover: after how long
// of ill health its copy leaves a cluster, and how the copy left behind is
// removed. Its JSON is that of Karmada's policy/v1alpha1
// ApplicationFailoverBehavior (a PropagationPolicy's
// spec.failover.application, copied into the binding's
// spec.failover.application), so Karmada YAML decodes into it directly.
// The zero Behavior is Karmada's defaults: 300 seconds, Gracefully.
type Behavior struct {
	// DecisionConditions says when the workload fails over.
	DecisionConditions DecisionConditions `json:"decisionConditions"`
	// PurgeMode says how the copy on the cluster left behind is removed:
	// Directly, Gracefully (the default, also when empty) or Never, and the
	// legacy names Immediately and Graciously. The decision does not read
	// it; the graceful eviction task carries it.
	PurgeMode failover.PurgeMode `json:"purgeMode,omitempty"`
	// GracePeriodSeconds is the longest the old copy is kept, with purge
	// mode Gracefully, while its replacement is not yet healthy. Nil leaves
	// it to the graceful-eviction controller's default timeout (Karmada's
	// webhook requires it with Gracefully; this library does not). It must
	// be at least 1, and is an error with any other purge mode, as in
	// Karmada.
	GracePeriodSeconds *int32 `json:"gracePeriodSeconds,omitempty"`
	// StatePreservation names the state carried from the old copy's status
	// to the new copy, as labels. The decision does not read it; the
	// graceful eviction task carries the values.
	StatePreservation *StatePreservation `json:"statePreservation,omitempty"`
}

// DecisionConditions is when a workload fails over from a cluster.
type DecisionConditions struct {
	// TolerationSeconds is how much Unhealthy time the copy on a cluster is
	// allowed before the workload fails over from it: nil means 300 (the
	// default Karmada's CRD gives), 0 means at the first Unhealthy sight
	// after start-up. It must not be negative.
	TolerationSeconds *int32 `json:"tolerationSeconds,omitempty"`
}

// StatePreservation is the state of a stateful workload carried from the
// cluster it leaves to the one it goes to. JSON as Karmada's
// StatePreservation.
type StatePreservation struct {
	// Rules each name one piece of state.
	Rules []StatePreservationRule `json:"rules"`
}

// StatePreservationRule is one piece of state: JSONPath, read from the old
// copy's status, becomes the label AliasLabelName on the new copy. JSON as
// Karmada's StatePreservationRule.
type StatePreservationRule struct {
	// AliasLabelName is the label key the value is carried under; it must be
	// a valid label key, and unique among the rules.
	AliasLabelName string `json:"aliasLabelName"`
	// JSONPath is read from the copy's status (so "{.availableReplicas}", not
	// "{.status.availableReplicas}"), in kubectl's JSONPath syntax.
	JSONPath string `json:"jsonPath"`
}

// DefaultTolerationSeconds is the Unhealthy time a workload tolerates when
// DecisionConditions.TolerationSeconds is nil.
const DefaultTolerationSeconds = 300

// UnknownPolicy says what a copy whose health is Unknown does to its timer.
// An Unknown health means the member's status could not be collected or
// interpreted (an agent restarting, a status lagging): it says nothing of
// the workload itself.
type UnknownPolicy string

const (
	// UnknownHolds, the default (also when empty): Unknown neither starts nor
	// resets the timer. Unhealthy time counted before it is kept, and
	// counting goes on when the copy is Unhealthy again, so a copy that
	// flaps between Unhealthy and Unknown fails over once its Unhealthy
	// time reaches the window. Karmada v1.18 resets instead (karmada#7431).
	UnknownHolds UnknownPolicy = "Hold"
	// UnknownCounts: as UnknownHolds until the copy has been Unknown for
	// Options.UnknownTolerationSeconds without a break; from then on, until
	// its health changes, Unknown time counts as Unhealthy time.
	UnknownCounts UnknownPolicy = "Count"
	// UnknownResets: Unknown resets the timer as Healthy does, as Karmada
	// v1.18 behaves (karmada#7431: a copy that flaps between Unhealthy and
	// Unknown never fails over). For a fork that must keep that behaviour.
	UnknownResets UnknownPolicy = "Reset"
)

// DefaultUnknownTolerationSeconds is how long a copy may be Unknown, with
// UnknownCounts, before that time counts as Unhealthy, when
// Options.UnknownTolerationSeconds is nil.
const DefaultUnknownTolerationSeconds = 300

// Options are the library's additions to Karmada's ApplicationFailoverBehavior,
// which its API has no place for; a controller takes them from its flags or
// from an annotation. The zero Options: Unknown holds the timer, and there
// is no start-up grace.
//
// The start-up signal is the copy's generation as its member reports it
// (Observation.Generation), and its first sight on the cluster: those are
// what a controller can see that say "this copy now runs a spec it did not
// run before" (a new rollout, or a new copy placed by a failover). The
// aggregated status carries no start time, so the grace counts from the
// controller's first sight, kept in the Timer across restarts. It ends early
// at the first Healthy, as karmada#6233 asks: once the application has
// started, only the window applies. A workload whose generation changes more
// often than its grace (a template scaled every few minutes) keeps starting
// and counts nothing: choose a grace shorter than the time between updates.
type Options struct {
	// Unknown is what an Unknown health does to the timer; empty means
	// UnknownHolds.
	Unknown UnknownPolicy `json:"unknown,omitempty"`
	// UnknownTolerationSeconds, with Unknown set to UnknownCounts, is how
	// long a copy may be Unknown without a break before that time counts as
	// Unhealthy: nil means 300, 0 at once. It is an error with any other
	// Unknown policy, and must not be negative.
	UnknownTolerationSeconds *int32 `json:"unknownTolerationSeconds,omitempty"`
	// StartupGraceSeconds is the start-up grace: after a copy is first seen
	// on a cluster, or first seen at a new generation, its Unhealthy time
	// does not count until it has been Healthy once or this long has passed,
	// whichever comes first. 0 means none, as in Karmada v1.18 (karmada#6233).
	// It must not be negative.
	StartupGraceSeconds int32 `json:"startupGraceSeconds,omitempty"`
}

// Policy is a validated [Behavior] and [Options]: the whole rule by which
// [Policy.Decide] judges a workload's copies. Build one with [New]. The zero
// Policy is Karmada's defaults with the zero Options: a 300-second window,
// Unknown holds the timer, no start-up grace. A Policy is a value: safe to
// copy and to use from several goroutines.
type Policy struct {
	behavior Behavior
	options  Options
}

// New validates b and o and returns the Policy they make. Every problem is
// reported, joined, each naming the field and the value; nothing panics.
func New(b Behavior, o Options) (Policy, error) {
	if err := errors.Join(b.Validate(), o.Validate()); err != nil {
		return Policy{}, err
	}
	return Policy{behavior: b, options: o}, nil
}

// Behavior returns the Behavior p was built from.
func (p Policy) Behavior() Behavior { return p.behavior }

// Options returns the Options p was built from.
func (p Policy) Options() Options { return p.options }

// Window is the Unhealthy time a copy tolerates before the workload fails
// over from its cluster (decisionConditions.tolerationSeconds).
func (p Policy) Window() time.Duration {
	if s := p.behavior.DecisionConditions.TolerationSeconds; s != nil {
		return seconds(*s)
	}
	return DefaultTolerationSeconds * time.Second
}

// UnknownPolicy is what an Unknown health does to the timer, never empty.
func (p Policy) UnknownPolicy() UnknownPolicy {
	if p.options.Unknown == "" {
		return UnknownHolds
	}
	return p.options.Unknown
}

// UnknownWindow is how long a copy may be Unknown before, with
// UnknownCounts, that time counts as Unhealthy.
func (p Policy) UnknownWindow() time.Duration {
	if s := p.options.UnknownTolerationSeconds; s != nil {
		return seconds(*s)
	}
	return DefaultUnknownTolerationSeconds * time.Second
}

// StartupGrace is the start-up grace; 0 when there is none.
func (p Policy) StartupGrace() time.Duration { return seconds(p.options.StartupGraceSeconds) }

// PurgeMode is the canonical purge mode of the graceful eviction task a
// failover writes: Directly, Gracefully or Never.
func (p Policy) PurgeMode() failover.PurgeMode { return p.behavior.PurgeMode.Canonical() }

// seconds is s seconds; a negative s, which validation rejects, is 0.
func seconds(s int32) time.Duration { return time.Duration(max(s, 0)) * time.Second }

// Validate returns an error naming the field and the value for each
// problem of b: a negative decisionConditions.tolerationSeconds, an unknown
// purgeMode, a gracePeriodSeconds below 1 or set with a purge mode other
// than Gracefully (Karmada's webhook rejects both), and a state
// preservation rule whose aliasLabelName is not a label key or is repeated,
// or whose jsonPath is empty or does not parse.
func (b Behavior) Validate() error {
	var errs []error
	if s := b.DecisionConditions.TolerationSeconds; s != nil && *s < 0 {
		errs = append(errs, fmt.Errorf("appfailover: decisionConditions.tolerationSeconds: %d: must not be negative", *s))
	}
	if err := b.PurgeMode.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("appfailover: purgeMode: unknown value %q: want Directly, Gracefully or Never (legacy Immediately, Graciously)", string(b.PurgeMode)))
	} else if b.GracePeriodSeconds != nil && b.PurgeMode.Canonical() != failover.PurgeModeGracefully {
		errs = append(errs, fmt.Errorf("appfailover: gracePeriodSeconds: %d: only takes effect with purgeMode Gracefully, not %s", *b.GracePeriodSeconds, b.PurgeMode))
	}
	if g := b.GracePeriodSeconds; g != nil && *g < 1 {
		errs = append(errs, fmt.Errorf("appfailover: gracePeriodSeconds: %d: must be at least 1", *g))
	}
	if sp := b.StatePreservation; sp != nil {
		seen := make(map[string]int, len(sp.Rules))
		for i, r := range sp.Rules {
			if msgs := content.IsLabelKey(r.AliasLabelName); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("appfailover: statePreservation.rules[%d].aliasLabelName: %q: %s", i, r.AliasLabelName, strings.Join(msgs, "; ")))
			} else if j, dup := seen[r.AliasLabelName]; dup {
				errs = append(errs, fmt.Errorf("appfailover: statePreservation.rules[%d].aliasLabelName: %q is also rules[%d]'s", i, r.AliasLabelName, j))
			} else {
				seen[r.AliasLabelName] = i
			}
			if r.JSONPath == "" {
				errs = append(errs, fmt.Errorf("appfailover: statePreservation.rules[%d].jsonPath is empty", i))
			} else if err := jsonpath.New(r.AliasLabelName).Parse(r.JSONPath); err != nil {
				errs = append(errs, fmt.Errorf("appfailover: statePreservation.rules[%d].jsonPath: %q: %v", i, r.JSONPath, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Validate returns an error naming the field and the value for each
// problem of o: an unknown Unknown policy, an unknownTolerationSeconds that
// is negative or set with a policy other than Count, a negative
// startupGraceSeconds.
func (o Options) Validate() error {
	var errs []error
	switch o.Unknown {
	case "", UnknownHolds, UnknownCounts, UnknownResets:
	default:
		errs = append(errs, fmt.Errorf("appfailover: unknown: unknown value %q: want Hold, Count or Reset", string(o.Unknown)))
	}
	if s := o.UnknownTolerationSeconds; s != nil {
		if *s < 0 {
			errs = append(errs, fmt.Errorf("appfailover: unknownTolerationSeconds: %d: must not be negative", *s))
		}
		if o.Unknown != UnknownCounts {
			u := string(o.Unknown)
			if u == "" {
				u = "Hold (the default)"
			}
			errs = append(errs, fmt.Errorf("appfailover: unknownTolerationSeconds: %d: only takes effect with unknown Count, not %s", *s, u))
		}
	}
	if o.StartupGraceSeconds < 0 {
		errs = append(errs, fmt.Errorf("appfailover: startupGraceSeconds: %d: must not be negative", o.StartupGraceSeconds))
	}
	return errors.Join(errs...)
}

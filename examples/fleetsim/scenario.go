package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/internal/strictyaml"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/prescheduling"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

// The apiVersion and kinds a scenario file is made of. Everything but the
// Scenario document is Karmada's own format.
const (
	scenarioAPIVersion = "fleetsim.failoverkit.dev/v1alpha1"
	kindScenario       = "Scenario"

	clusterAPIVersion = "cluster.karmada.io/v1alpha1"
	kindCluster       = "Cluster"

	workAPIVersion             = "work.karmada.io/v1alpha2"
	kindResourceBinding        = "ResourceBinding"
	kindClusterResourceBinding = "ClusterResourceBinding"

	kindClusterTaintPolicy = "ClusterTaintPolicy"

	// annotationCount stamps out that many copies of a binding document,
	// named <name>-00, <name>-01, ...
	annotationCount = "fleetsim.failoverkit.dev/count"
	// annotationCapacity on a Cluster document is how many replicas the
	// cluster can run (spec.fleet[].capacity for generated clusters).
	annotationCapacity = "fleetsim.failoverkit.dev/capacity"
	// annotationReadyAfter overrides spec.replacementReadyAfter for the
	// binding's new copies; "never" means they never turn Healthy.
	annotationReadyAfter = "fleetsim.failoverkit.dev/replacement-ready-after"
	// annotationMaxInTransit is the binding's budget of clusters in
	// transit, the annotation the fork's controllers read
	// (controllers.MaxClustersInTransitAnnotation); 0: unlimited.
	annotationMaxInTransit = "failover.karmada.io/max-clusters-in-transit"
	// annotationGracePeriod is the grace period, in seconds, of the
	// graceful eviction tasks of the binding's evictions: Karmada v1.18's
	// spec.failover.cluster has no gracePeriodSeconds (the configurable
	// cluster failover proposal adds one), so fleetsim writes it into the
	// task the engine wrote, as a fork that adds the field would. Without
	// it a task lasts spec.gracefulEvictionTimeout.
	annotationGracePeriod = "fleetsim.failoverkit.dev/grace-period-seconds"
	// annotationShards spreads a stamped binding's count copies over
	// shards of the fleet: copy i is placed only on the clusters labelled
	// labelShard: ⌊i·shards/count⌋ (copies stamped one after another share
	// a shard, as a team's workloads do), which its
	// clusterAffinity.clusterNames lists (inShard), as real workloads'
	// affinities make their placements differ.
	annotationShards = "fleetsim.failoverkit.dev/shards"
	// labelShard is the label spec.fleet[].shards gives generated
	// clusters: the cluster's number in its group, from 0, mod shards.
	labelShard = "fleetsim.failoverkit.dev/shard"
)

// scenario is a loaded, validated scenario: what the simulation runs.
type scenario struct {
	Source      string // the file name, or "built-in"
	Name        string
	Description string
	Start       time.Time
	Duration    time.Duration
	Interval    time.Duration
	// ReadyAfter is how long a new copy takes to turn Healthy once scheduled
	// (negative: never).
	ReadyAfter time.Duration
	// GracefulEvictionTimeout is the grace period of tasks that carry none.
	GracefulEvictionTimeout time.Duration
	Workers                 int
	// PlacementBatch is how many bindings the scheduler places at the start
	// between two reports of the clusters' resource summaries.
	PlacementBatch int
	// CompletesAfter, when positive, makes evictions finish in the
	// background: the handler returns ErrInProgress and the scheduler's
	// answer, then Complete, come this long after.
	CompletesAfter time.Duration
	MaxInFlight    int
	// FailbackWindow, when positive, turns failback on with that
	// stabilisation window, at most MaxFailbacksInFlight at once.
	FailbackWindow       time.Duration
	MaxFailbacksInFlight int
	// AppFailover, when set, turns the application failover controller
	// on.
	AppFailover *appFailoverConfig
	Rates       rateSpec
	Clusters    []failover.Cluster
	// Capacity is how many replicas each cluster can run; a cluster it does
	// not list has no known limit.
	Capacity map[string]int32
	Bindings []*bindingSpecResolved
	Policies []taintpolicy.ClusterTaintPolicy
	Timeline []timelineEvent
}

// scenarioDoc is the Scenario document: how long to run, how to report, the
// fleet to generate and the timeline of condition changes.
type scenarioDoc struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       scenarioSpec      `json:"spec"`
}

type scenarioSpec struct {
	Description             string           `json:"description,omitempty"`
	Start                   *metav1.Time     `json:"start,omitempty"`
	Duration                metav1.Duration  `json:"duration"`
	Interval                *metav1.Duration `json:"interval,omitempty"`
	ReplacementReadyAfter   *metav1.Duration `json:"replacementReadyAfter,omitempty"`
	GracefulEvictionTimeout *metav1.Duration `json:"gracefulEvictionTimeout,omitempty"`
	Workers                 *int             `json:"workers,omitempty"`
	PlacementBatch          *int             `json:"placementBatch,omitempty"`
	BackgroundEviction      *backgroundSpec  `json:"backgroundEviction,omitempty"`
	Failback                *failbackSpec    `json:"failback,omitempty"`
	ApplicationFailover     *appFailoverSpec `json:"applicationFailover,omitempty"`
	Rates                   rateSpec         `json:"rates,omitempty"`
	Fleet                   []fleetGroup     `json:"fleet,omitempty"`
	Timeline                []timelineEvent  `json:"timeline,omitempty"`
}

// backgroundSpec makes evictions finish in the background: the handler
// returns ErrInProgress, the scheduler places the replacement CompletesAfter
// later and the queue is told Complete; at most MaxInFlight run at once.
type backgroundSpec struct {
	CompletesAfter metav1.Duration `json:"completesAfter"`
	MaxInFlight    int             `json:"maxInFlight,omitempty"`
}

// failbackSpec turns the fork's failback controller on, as
// --failback-stabilization-window and --max-failbacks-in-flight do: a
// binding goes back to a cluster it failed over from once that cluster has
// been healthy for StabilizationWindow, at most MaxInFlight at once
// (default 10).
type failbackSpec struct {
	StabilizationWindow metav1.Duration `json:"stabilizationWindow"`
	MaxInFlight         *int            `json:"maxInFlight,omitempty"`
}

// appFailoverSpec turns the fork's application failover controller on
// (karmada/controllers.ApplicationFailoverController), with its flags, for
// the bindings that opt in (spec.failover.application), and plays the
// applications' own health on their clusters (Timeline).
type appFailoverSpec struct {
	// Unknown, UnknownTolerationSeconds and StartupGraceSeconds are
	// appfailover.Options: --application-failover-unknown (Hold, Count or
	// Reset; default Hold), --application-failover-unknown-toleration and
	// --application-failover-startup-grace.
	Unknown                  appfailover.UnknownPolicy `json:"unknown,omitempty"`
	UnknownTolerationSeconds *int32                    `json:"unknownTolerationSeconds,omitempty"`
	StartupGraceSeconds      int32                     `json:"startupGraceSeconds,omitempty"`
	// BadRolloutThreshold is --application-failover-bad-rollout-threshold:
	// in (0, 1], default appfailover.DefaultBadRolloutThreshold; 1: no hold.
	BadRolloutThreshold *float64         `json:"badRolloutThreshold,omitempty"`
	Timeline            []appHealthEvent `json:"timeline,omitempty"`
}

// appHealthEvent sets the health of a workload's copies at At after the
// start, as their members report it (status.aggregatedStatus[].health), or
// is an operator confirming that its bad rollout's failures are real.
// Phase, when set, starts a new phase of the summary.
type appHealthEvent struct {
	At    metav1.Duration `json:"at"`
	Phase string          `json:"phase,omitempty"`
	// Workload is a binding's key (namespace/name, or name) or the
	// document a count stamped bindings out of: all of them.
	Workload string `json:"workload"`
	// Clusters selects the clusters whose copies (now and later) take the
	// health; nil: the clusters the workload runs on now.
	Clusters *failover.ClusterAffinity `json:"clusters,omitempty"`
	// Health is Unhealthy or Unknown, or Healthy: the copies report the
	// sim's own health again (Healthy once started, Unknown on a cluster
	// that is not Ready).
	Health gracefulevict.ResourceHealth `json:"health,omitempty"`
	// Confirm is an operator confirming the workload's failures
	// (failover.karmada.io/confirm-application-failover): its bad-rollout
	// hold lets its failovers go, until it no longer applies.
	Confirm bool `json:"confirm,omitempty"`
}

// appFailoverConfig is spec.applicationFailover, validated.
type appFailoverConfig struct {
	Options   appfailover.Options
	Threshold float64
	Timeline  []appHealthEvent
}

// rateSpec overrides the rate flags' defaults; a flag given on the command
// line wins over the scenario.
type rateSpec struct {
	ResourceEvictionRate          *float64 `json:"resourceEvictionRate,omitempty"`
	SecondaryResourceEvictionRate *float64 `json:"secondaryResourceEvictionRate,omitempty"`
	UnhealthyClusterThreshold     *float64 `json:"unhealthyClusterThreshold,omitempty"`
	LargeClusterNumThreshold      *int     `json:"largeClusterNumThreshold,omitempty"`
	// DisruptionDomain is fleet, region, zone or provider, as
	// --disruption-domain; the flag, when given, wins.
	DisruptionDomain *ratelimit.Domain `json:"disruptionDomain,omitempty"`
}

// fleetGroup generates Clusters clusters of one provider and region, spread
// round-robin over Zones.
type fleetGroup struct {
	Provider   string            `json:"provider,omitempty"`
	Region     string            `json:"region"`
	Zones      []string          `json:"zones,omitempty"`
	Clusters   int               `json:"clusters"`
	NamePrefix string            `json:"namePrefix,omitempty"` // default: region + "-"
	Labels     map[string]string `json:"labels,omitempty"`
	// Capacity is how many replicas each cluster can run; 0: unknown, which
	// the pre-scheduling check assumes is enough.
	Capacity int32 `json:"capacity,omitempty"`
	// Shards, when positive, labels the group's i-th cluster (from 0)
	// labelShard: i mod Shards.
	Shards int `json:"shards,omitempty"`
}

// timelineEvent sets conditions on the clusters it selects at time At after
// the start, or freezes or thaws evictions. Phase, when set, starts a new
// phase of the summary.
type timelineEvent struct {
	At         metav1.Duration           `json:"at"`
	Phase      string                    `json:"phase,omitempty"`
	Clusters   *failover.ClusterAffinity `json:"clusters"`
	Conditions []conditionChange         `json:"conditions"`
	// CutOff says the change is the control plane losing sight of the
	// clusters, which keep serving (a partition): until their Ready
	// condition is True again, the verdict allows no eviction from them
	// within --storm-confirm of the cut, unless an operator confirmed the
	// storm since (ConfirmStorm).
	CutOff bool `json:"cutOff,omitempty"`
	// Freeze, when set, is an operator freezing (true) or thawing (false)
	// every automatic eviction, as the fork's freeze ConfigMap does: the
	// handler defers every item (evictionqueue.RetryAfter) while frozen.
	Freeze *bool `json:"freeze,omitempty"`
	// ConfirmStorm is an operator confirming that a failure storm's
	// failures are real, as the fork's freeze ConfigMap with confirm: storm
	// does: the hold in force ends (ratelimit.Limiter.ConfirmStorm).
	ConfirmStorm bool `json:"confirmStorm,omitempty"`
}

type conditionChange struct {
	Type    string                 `json:"type"`
	Status  metav1.ConditionStatus `json:"status"`
	Reason  string                 `json:"reason,omitempty"`
	Message string                 `json:"message,omitempty"`
}

// A binding document is a Karmada ResourceBinding or ClusterResourceBinding
// (work.karmada.io/v1alpha2), decoded strictly into Karmada's own type: both
// kinds share ResourceBinding's fields. spec.placement and spec.failover are
// Karmada's policy.karmada.io/v1alpha1 types; spec.clusters, when given, is
// the schedule result to start from.

// bindingSpecResolved is one binding of the fleet as the scenario describes
// it, after count stamping and defaulting.
type bindingSpecResolved struct {
	Kind      string // ResourceBinding or ClusterResourceBinding
	Namespace string
	Name      string
	// Group names the document the binding was stamped from, e.g.
	// "shop/web" for shop/web-00 ... shop/web-59.
	Group    string
	Resource workv1alpha2.ObjectReference
	Replicas int32
	// Placement is spec.placement as the library's check reads it
	// (karmada.FromPlacement); Karmada is spec.placement itself.
	Placement prescheduling.Placement
	Karmada   *policyv1alpha1.Placement
	// Failover is spec.failover; nil: no cluster failover.
	Failover   *policyv1alpha1.FailoverBehavior
	Clusters   []failover.TargetCluster
	Priority   int32
	ReadyAfter *time.Duration // nil: the scenario's
	// Budget is its budget of clusters in transit (annotationMaxInTransit);
	// 0: unlimited.
	Budget gracefulevict.TransitBudget
	// GracePeriodSeconds is its tasks' grace period (annotationGracePeriod);
	// nil: spec.gracefulEvictionTimeout.
	GracePeriodSeconds *int32
	// Shard is the shard of the fleet it may go to (annotationShards),
	// when Sharded.
	Shard   int
	Sharded bool
}

// key is the binding's queue key: "namespace/name", or "name" when cluster-scoped.
func (b *bindingSpecResolved) key() string {
	if b.Namespace == "" {
		return b.Name
	}
	return b.Namespace + "/" + b.Name
}

// resourceKind is the workload's APIVersion and Kind, e.g. "apps/v1/Deployment".
func (b *bindingSpecResolved) resourceKind() string {
	return b.Resource.APIVersion + "/" + b.Resource.Kind
}

// divided reports a Divided workload. An empty replicaSchedulingType is
// Divided, as Karmada's API server defaults it; no replicaScheduling at all
// is Duplicated.
func (b *bindingSpecResolved) divided() bool {
	rs := b.Placement.ReplicaScheduling
	return rs != nil && rs.ReplicaSchedulingType != prescheduling.ReplicaSchedulingTypeDuplicated
}

// docError names the file, the document and, through err, the field.
type docError struct {
	file string
	doc  strictyaml.Document
	what string // e.g. "ResourceBinding shop/web"
	err  error
}

func (e *docError) Error() string {
	what := ""
	if e.what != "" {
		what = ", " + e.what
	}
	return fmt.Sprintf("fleetsim: %s: document %d (line %d%s): %v", e.file, e.doc.Index, e.doc.Line, what, e.err)
}

func (e *docError) Unwrap() error { return e.err }

// decode decodes d strictly into v. docError names the document, so the
// error is only the cause, which names the field.
func decode(d strictyaml.Document, v any) error {
	err := strictyaml.Decode(d, v)
	if se := (*strictyaml.Error)(nil); errors.As(err, &se) {
		return se.Err
	}
	return err
}

// LoadScenario reads and validates a scenario file.
func loadScenario(name string, r io.Reader) (*scenario, error) {
	data, err := strictyaml.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("fleetsim: %s: %w", name, err)
	}
	sc := &scenario{Source: name, Capacity: map[string]int32{}}
	var specDoc *strictyaml.Document
	var spec scenarioSpec
	names := map[string]bool{}
	bindingKeys := map[string]bool{}
	for _, d := range strictyaml.Split(data) {
		fail := func(what string, err error) error {
			return &docError{file: name, doc: d, what: what, err: err}
		}
		// The kind says which type to decode the document into.
		var head map[string]any
		if err := decode(d, &head); err != nil {
			return nil, fail("", err)
		}
		kind, _ := head["kind"].(string)
		if v := head["kind"]; v != nil && kind == "" {
			kind = fmt.Sprint(v) // kind: 5 is a wrong kind, not a missing one
		}
		switch kind {
		case kindScenario:
			if specDoc != nil {
				return nil, fail(kindScenario, fmt.Errorf("a second Scenario document (the first is document %d)", specDoc.Index))
			}
			var doc scenarioDoc
			if err := decode(d, &doc); err != nil {
				return nil, fail(kindScenario, err)
			}
			if doc.APIVersion != scenarioAPIVersion {
				return nil, fail(kindScenario, fmt.Errorf("apiVersion: %q: want %q", doc.APIVersion, scenarioAPIVersion))
			}
			dd := d
			specDoc = &dd
			sc.Name = doc.Metadata.Name
			spec = doc.Spec
			if err := validateSpec(&spec); err != nil {
				return nil, fail(kindScenario+" "+sc.Name, err)
			}
			for _, g := range spec.Fleet {
				for _, c := range generateFleet([]fleetGroup{g}) {
					if names[c.Name] {
						return nil, fail(kindScenario+" "+sc.Name, fmt.Errorf("spec.fleet: cluster name %q generated twice: set namePrefix", c.Name))
					}
					names[c.Name] = true
					sc.Clusters = append(sc.Clusters, c)
					if g.Capacity > 0 {
						sc.Capacity[c.Name] = g.Capacity
					}
				}
			}
		case kindCluster:
			c, capacity, err := decodeCluster(d)
			if err != nil {
				return nil, fail(kindCluster+" "+c.Name, err)
			}
			if capacity > 0 {
				sc.Capacity[c.Name] = capacity
			}
			if names[c.Name] {
				return nil, fail(kindCluster+" "+c.Name, fmt.Errorf("metadata.name: duplicate cluster %q", c.Name))
			}
			names[c.Name] = true
			if sc.Clusters = append(sc.Clusters, c); len(sc.Clusters) > maxClusters {
				return nil, fail(kindCluster+" "+c.Name, fmt.Errorf("the fleet has more than %d clusters", maxClusters))
			}
		case kindResourceBinding, kindClusterResourceBinding:
			bs, what, err := decodeBinding(d)
			if err != nil {
				return nil, fail(what, err)
			}
			for _, b := range bs {
				k := b.Kind + " " + b.key()
				if bindingKeys[k] {
					return nil, fail(what, fmt.Errorf("metadata.name: duplicate %s %q", b.Kind, b.key()))
				}
				bindingKeys[k] = true
			}
			if sc.Bindings = append(sc.Bindings, bs...); len(sc.Bindings) > maxBindings {
				return nil, fail(what, fmt.Errorf("the scenario has more than %d bindings", maxBindings))
			}
		case kindClusterTaintPolicy:
			ps, err := taintpolicy.LoadPolicies(bytes.NewReader(d.Data))
			if err != nil {
				// The package numbers documents within what it was given,
				// which here is this one document: keep only the cause.
				var de *taintpolicy.DecodeError
				var ie *taintpolicy.InvalidPolicyError
				switch {
				case errors.As(err, &ie):
					return nil, fail(kindClusterTaintPolicy+" "+ie.Name, ie.Errs.ToAggregate())
				case errors.As(err, &de):
					err = de.Err
				}
				return nil, fail(kindClusterTaintPolicy, err)
			}
			sc.Policies = append(sc.Policies, ps...)
		case "":
			return nil, fail("", errors.New("kind: missing: want Scenario, Cluster, ResourceBinding, ClusterResourceBinding or ClusterTaintPolicy"))
		default:
			return nil, fail("", fmt.Errorf("kind: %q: want Scenario, Cluster, ResourceBinding, ClusterResourceBinding or ClusterTaintPolicy", kind))
		}
	}
	if specDoc == nil {
		return nil, fmt.Errorf("fleetsim: %s: no Scenario document (kind: Scenario, apiVersion: %s)", name, scenarioAPIVersion)
	}
	if len(sc.Clusters) == 0 {
		return nil, fmt.Errorf("fleetsim: %s: the fleet is empty: add spec.fleet to the Scenario or Cluster documents", name)
	}
	sc.Description = strings.TrimSpace(spec.Description)
	sc.Start = time.Date(2025, 1, 17, 2, 0, 0, 0, time.UTC)
	if spec.Start != nil {
		sc.Start = spec.Start.UTC()
	}
	sc.Duration = spec.Duration.Duration
	sc.Interval = spec.Interval.Duration
	sc.ReadyAfter = spec.ReplacementReadyAfter.Duration
	sc.GracefulEvictionTimeout = spec.GracefulEvictionTimeout.Duration
	sc.Workers = *spec.Workers
	sc.PlacementBatch = *spec.PlacementBatch
	if b := spec.BackgroundEviction; b != nil {
		sc.CompletesAfter, sc.MaxInFlight = b.CompletesAfter.Duration, b.MaxInFlight
	}
	if f := spec.Failback; f != nil {
		sc.FailbackWindow, sc.MaxFailbacksInFlight = f.StabilizationWindow.Duration, *f.MaxInFlight
	}
	if a := spec.ApplicationFailover; a != nil {
		sc.AppFailover = &appFailoverConfig{
			Options:   appfailover.Options{Unknown: a.Unknown, UnknownTolerationSeconds: a.UnknownTolerationSeconds, StartupGraceSeconds: a.StartupGraceSeconds},
			Threshold: *a.BadRolloutThreshold,
			Timeline:  a.Timeline,
		}
		sort.SliceStable(sc.AppFailover.Timeline, func(i, j int) bool {
			return sc.AppFailover.Timeline[i].At.Duration < sc.AppFailover.Timeline[j].At.Duration
		})
	}
	sc.Rates = spec.Rates
	sc.Timeline = spec.Timeline
	sort.SliceStable(sc.Timeline, func(i, j int) bool { return sc.Timeline[i].At.Duration < sc.Timeline[j].At.Duration })
	// Cluster documents may carry conditions dated before the start; every
	// other cluster starts Ready since the start.
	for i := range sc.Clusters {
		c := &sc.Clusters[i]
		if c.Condition("Ready") == nil {
			c.Conditions = append(c.Conditions, metav1.Condition{
				Type: "Ready", Status: metav1.ConditionTrue, Reason: "ClusterReady",
				LastTransitionTime: metav1.NewTime(sc.Start),
			})
		}
	}
	if err := checkTimelineSelectors(name, *specDoc, sc); err != nil {
		return nil, err
	}
	if err := checkAppTimeline(name, *specDoc, sc); err != nil {
		return nil, err
	}
	if err := shardBindings(sc); err != nil {
		return nil, fmt.Errorf("fleetsim: %s: %w", name, err)
	}
	return sc, nil
}

// The most clusters and bindings a scenario may have, in all its
// documents: a simulation of more would take minutes and gigabytes.
const (
	maxClusters = 10000
	maxBindings = 100000
)

// validateSpec checks the Scenario document and fills in its defaults.
func validateSpec(s *scenarioSpec) error {
	if s.Duration.Duration <= 0 {
		return fmt.Errorf("spec.duration: %v: must be positive, e.g. 30m", s.Duration.Duration)
	}
	if s.Interval == nil {
		s.Interval = &metav1.Duration{Duration: 30 * time.Second}
	}
	if s.Interval.Duration <= 0 || s.Interval.Duration > s.Duration.Duration {
		return fmt.Errorf("spec.interval: %v: must be positive and at most spec.duration (%v)", s.Interval.Duration, s.Duration.Duration)
	}
	if s.Duration.Duration/s.Interval.Duration > 10000 {
		return fmt.Errorf("spec.interval: %v: more than 10000 lines in %v", s.Interval.Duration, s.Duration.Duration)
	}
	if s.ReplacementReadyAfter == nil {
		s.ReplacementReadyAfter = &metav1.Duration{Duration: 30 * time.Second}
	}
	if s.ReplacementReadyAfter.Duration < 0 {
		return fmt.Errorf("spec.replacementReadyAfter: %v: must not be negative", s.ReplacementReadyAfter.Duration)
	}
	if s.GracefulEvictionTimeout == nil {
		s.GracefulEvictionTimeout = &metav1.Duration{Duration: 10 * time.Minute}
	}
	if s.GracefulEvictionTimeout.Duration < 0 {
		return fmt.Errorf("spec.gracefulEvictionTimeout: %v: must not be negative (0: none)", s.GracefulEvictionTimeout.Duration)
	}
	if s.Workers == nil {
		w := 2
		s.Workers = &w
	}
	if *s.Workers < 1 || *s.Workers > 64 {
		return fmt.Errorf("spec.workers: %d: want 1 to 64 workers per queue", *s.Workers)
	}
	if s.PlacementBatch == nil {
		n := 1
		s.PlacementBatch = &n
	}
	if *s.PlacementBatch < 1 || *s.PlacementBatch > maxBindings {
		return fmt.Errorf("spec.placementBatch: %d: want 1 to %d bindings placed between two reports of the summaries", *s.PlacementBatch, maxBindings)
	}
	if b := s.BackgroundEviction; b != nil {
		if b.CompletesAfter.Duration <= 0 || b.CompletesAfter.Duration >= 10*time.Minute {
			return fmt.Errorf("spec.backgroundEviction.completesAfter: %v: want more than 0 and less than the queue's InFlightTTL (10m)", b.CompletesAfter.Duration)
		}
		if b.MaxInFlight < 0 {
			return fmt.Errorf("spec.backgroundEviction.maxInFlight: %d: must not be negative (0: unlimited)", b.MaxInFlight)
		}
	}
	if f := s.Failback; f != nil {
		if f.StabilizationWindow.Duration <= 0 {
			return fmt.Errorf("spec.failback.stabilizationWindow: %v: must be positive (leave spec.failback out to turn failback off)", f.StabilizationWindow.Duration)
		}
		if f.MaxInFlight == nil {
			n := 10
			f.MaxInFlight = &n
		}
		if *f.MaxInFlight <= 0 {
			return fmt.Errorf("spec.failback.maxInFlight: %d: must be positive", *f.MaxInFlight)
		}
	}
	if a := s.ApplicationFailover; a != nil {
		if err := validateAppFailover(a, s.Duration.Duration); err != nil {
			return err
		}
	}
	for name, v := range map[string]*float64{
		"resourceEvictionRate":          s.Rates.ResourceEvictionRate,
		"secondaryResourceEvictionRate": s.Rates.SecondaryResourceEvictionRate,
		"unhealthyClusterThreshold":     s.Rates.UnhealthyClusterThreshold,
	} {
		if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0) {
			return fmt.Errorf("spec.rates.%s: %v: must be a finite number ≥ 0", name, *v)
		}
	}
	if v := s.Rates.LargeClusterNumThreshold; v != nil && *v < 0 {
		return fmt.Errorf("spec.rates.largeClusterNumThreshold: %d: must not be negative", *v)
	}
	total := 0
	for i, g := range s.Fleet {
		p := fmt.Sprintf("spec.fleet[%d]", i)
		if g.Region == "" {
			return fmt.Errorf("%s.region: missing", p)
		}
		if g.Clusters < 1 || g.Clusters > maxClusters {
			return fmt.Errorf("%s.clusters: %d: want 1 to %d", p, g.Clusters, maxClusters)
		}
		if total += g.Clusters; total > maxClusters {
			return fmt.Errorf("%s.clusters: %d: the fleet would have %d clusters, more than %d", p, g.Clusters, total, maxClusters)
		}
		if g.Capacity < 0 {
			return fmt.Errorf("%s.capacity: %d: must not be negative (0: unknown)", p, g.Capacity)
		}
		if g.Shards < 0 || g.Shards > g.Clusters {
			return fmt.Errorf("%s.shards: %d: want 0 (none) to the group's %d clusters", p, g.Shards, g.Clusters)
		}
	}
	for i, e := range s.Timeline {
		p := fmt.Sprintf("spec.timeline[%d]", i)
		if e.At.Duration < 0 || e.At.Duration > s.Duration.Duration {
			return fmt.Errorf("%s.at: %v: must be within spec.duration (0 to %v)", p, e.At.Duration, s.Duration.Duration)
		}
		if e.Freeze != nil {
			if e.Clusters != nil || len(e.Conditions) > 0 || e.CutOff || e.ConfirmStorm {
				return fmt.Errorf("%s.freeze: %v: an event freezes or thaws, confirms a storm, or changes conditions: give each an event of its own", p, *e.Freeze)
			}
			continue
		}
		if e.ConfirmStorm {
			if e.Clusters != nil || len(e.Conditions) > 0 || e.CutOff {
				return fmt.Errorf("%s.confirmStorm: true: an event freezes or thaws, confirms a storm, or changes conditions: give each an event of its own", p)
			}
			continue
		}
		if e.Clusters == nil {
			return fmt.Errorf("%s.clusters: missing: select clusters by clusterNames, fieldSelector (provider, region, zone) or labelSelector", p)
		}
		if err := e.Clusters.Validate(); err != nil {
			return fmt.Errorf("%s.clusters: %w", p, err)
		}
		if len(e.Conditions) == 0 {
			return fmt.Errorf("%s.conditions: missing: at least one condition to set", p)
		}
		for j, c := range e.Conditions {
			cp := fmt.Sprintf("%s.conditions[%d]", p, j)
			if c.Type == "" {
				return fmt.Errorf("%s.type: missing, e.g. Ready", cp)
			}
			switch c.Status {
			case metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown:
			default:
				return fmt.Errorf("%s.status: %q: want True, False or Unknown", cp, c.Status)
			}
			if e.CutOff && c.Type == "Ready" && c.Status == metav1.ConditionTrue {
				return fmt.Errorf("%s.status: %q: a cutOff event is the control plane losing sight of the clusters: Ready is False or Unknown", cp, c.Status)
			}
		}
	}
	return nil
}

// checkTimelineSelectors rejects timeline events that select no cluster:
// almost always a typo in a region or cluster name.
func checkTimelineSelectors(file string, d strictyaml.Document, sc *scenario) error {
	for i, e := range sc.Timeline {
		if e.Clusters == nil {
			continue // a freeze, a thaw or a confirmation
		}
		n := 0
		for _, c := range sc.Clusters {
			if ok, _ := e.Clusters.Matches(c); ok {
				n++
			}
		}
		if n == 0 {
			return &docError{file: file, doc: d, what: kindScenario + " " + sc.Name,
				err: fmt.Errorf("spec.timeline[%d].clusters: selects no cluster of the fleet", i)}
		}
	}
	return nil
}

// validateAppFailover checks spec.applicationFailover and fills in its
// defaults: the options as the library validates them, the threshold, and
// each timeline event.
func validateAppFailover(a *appFailoverSpec, duration time.Duration) error {
	o := appfailover.Options{Unknown: a.Unknown, UnknownTolerationSeconds: a.UnknownTolerationSeconds, StartupGraceSeconds: a.StartupGraceSeconds}
	if err := o.Validate(); err != nil {
		return fmt.Errorf("spec.applicationFailover: %w", err)
	}
	if a.BadRolloutThreshold == nil {
		t := appfailover.DefaultBadRolloutThreshold
		a.BadRolloutThreshold = &t
	}
	if t := *a.BadRolloutThreshold; math.IsNaN(t) || t <= 0 || t > 1 {
		return fmt.Errorf("spec.applicationFailover.badRolloutThreshold: %v: want a fraction in (0, 1] (1: no hold)", t)
	}
	for i, e := range a.Timeline {
		p := fmt.Sprintf("spec.applicationFailover.timeline[%d]", i)
		if e.At.Duration < 0 || e.At.Duration > duration {
			return fmt.Errorf("%s.at: %v: must be within spec.duration (0 to %v)", p, e.At.Duration, duration)
		}
		if e.Workload == "" {
			return fmt.Errorf("%s.workload: missing: a binding's namespace/name, or the document's a count stamped out", p)
		}
		if e.Confirm {
			if e.Health != "" || e.Clusters != nil {
				return fmt.Errorf("%s.confirm: true: an event confirms, or sets a health: give each an event of its own", p)
			}
			continue
		}
		switch e.Health {
		case gracefulevict.Healthy, gracefulevict.Unhealthy, gracefulevict.Unknown:
		case "":
			return fmt.Errorf("%s.health: missing: Healthy, Unhealthy or Unknown (or confirm: true)", p)
		default:
			return fmt.Errorf("%s.health: %q: want Healthy, Unhealthy or Unknown", p, e.Health)
		}
		if e.Clusters != nil {
			if err := e.Clusters.Validate(); err != nil {
				return fmt.Errorf("%s.clusters: %w", p, err)
			}
		}
	}
	return nil
}

// checkAppTimeline rejects application health events that name no
// binding opting in to application failover, or select no cluster.
func checkAppTimeline(file string, d strictyaml.Document, sc *scenario) error {
	if sc.AppFailover == nil {
		return nil
	}
	fail := func(err error) error {
		return &docError{file: file, doc: d, what: kindScenario + " " + sc.Name, err: err}
	}
	if !slices.ContainsFunc(sc.Bindings, optsIn) {
		return fail(errors.New("spec.applicationFailover: no binding opts in (spec.failover.application)"))
	}
	for i, e := range sc.AppFailover.Timeline {
		p := fmt.Sprintf("spec.applicationFailover.timeline[%d]", i)
		named := slices.ContainsFunc(sc.Bindings, func(b *bindingSpecResolved) bool { return b.key() == e.Workload || b.Group == e.Workload })
		if !named {
			return fail(fmt.Errorf("%s.workload: %q: no such binding", p, e.Workload))
		}
		if !slices.ContainsFunc(sc.Bindings, func(b *bindingSpecResolved) bool {
			return (b.key() == e.Workload || b.Group == e.Workload) && optsIn(b)
		}) {
			return fail(fmt.Errorf("%s.workload: %q does not opt in to application failover (spec.failover.application)", p, e.Workload))
		}
		if e.Clusters == nil {
			continue
		}
		if !slices.ContainsFunc(sc.Clusters, func(c failover.Cluster) bool { ok, _ := e.Clusters.Matches(c); return ok }) {
			return fail(fmt.Errorf("%s.clusters: selects no cluster of the fleet", p))
		}
	}
	return nil
}

// generateFleet names clusters <prefix>01, <prefix>02, ... in each group.
func generateFleet(groups []fleetGroup) []failover.Cluster {
	var out []failover.Cluster
	for _, g := range groups {
		prefix := g.NamePrefix
		if prefix == "" {
			prefix = g.Region + "-"
		}
		width := len(strconv.Itoa(g.Clusters))
		if width < 2 {
			width = 2
		}
		for i := range g.Clusters {
			c := failover.Cluster{
				Name:     fmt.Sprintf("%s%0*d", prefix, width, i+1),
				Provider: g.Provider,
				Region:   g.Region,
				Labels:   map[string]string{},
			}
			if len(g.Zones) > 0 {
				c.Zone = g.Zones[i%len(g.Zones)]
			}
			for k, v := range g.Labels {
				c.Labels[k] = v
			}
			if g.Shards > 0 {
				c.Labels[labelShard] = strconv.Itoa(i % g.Shards)
			}
			out = append(out, c)
		}
	}
	return out
}

// decodeCluster decodes a Cluster document strictly into Karmada's own
// Cluster type, and converts it as the library reads it
// (karmada.FromCluster).
func decodeCluster(d strictyaml.Document) (failover.Cluster, int32, error) {
	var doc clusterv1alpha1.Cluster
	if err := decode(d, &doc); err != nil {
		return failover.Cluster{Name: doc.Name}, 0, err
	}
	named := failover.Cluster{Name: doc.Name}
	if doc.APIVersion != clusterAPIVersion {
		return named, 0, fmt.Errorf("apiVersion: %q: want %q", doc.APIVersion, clusterAPIVersion)
	}
	if doc.Name == "" {
		return named, 0, errors.New("metadata.name: missing")
	}
	for i, cond := range doc.Status.Conditions {
		switch cond.Status {
		case metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown:
		default:
			return named, 0, fmt.Errorf("status.conditions[%d].status: %q: want True, False or Unknown", i, cond.Status)
		}
	}
	c, err := karmada.FromCluster(&doc)
	if err != nil {
		return named, 0, err
	}
	// One zone of a multi-zone cluster paces its items (ratelimit.DomainsOf
	// reads Zones).
	if c.Zone == "" && len(c.Zones) > 0 {
		c.Zone = c.Zones[0]
	}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	var capacity int32
	if v, ok := doc.Annotations[annotationCapacity]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			return c, 0, fmt.Errorf("metadata.annotations[%s]: %q: want a number of replicas ≥ 1", annotationCapacity, v)
		}
		capacity = int32(n)
	}
	return c, capacity, nil
}

func decodeBinding(d strictyaml.Document) ([]*bindingSpecResolved, string, error) {
	var doc workv1alpha2.ResourceBinding // a ClusterResourceBinding's fields are the same
	err := decode(d, &doc)
	what := doc.Kind
	if doc.Name != "" {
		what += " " + strings.TrimPrefix(doc.Namespace+"/"+doc.Name, "/")
	}
	if err != nil {
		return nil, what, err
	}
	if doc.APIVersion != workAPIVersion {
		return nil, what, fmt.Errorf("apiVersion: %q: want %q", doc.APIVersion, workAPIVersion)
	}
	m, s := doc.ObjectMeta, doc.Spec
	if m.Name == "" {
		return nil, what, errors.New("metadata.name: missing")
	}
	switch {
	case doc.Kind == kindResourceBinding && m.Namespace == "":
		return nil, what, errors.New("metadata.namespace: missing: a ResourceBinding is namespaced (use ClusterResourceBinding for cluster-scoped kinds)")
	case doc.Kind == kindClusterResourceBinding && m.Namespace != "":
		return nil, what, fmt.Errorf("metadata.namespace: %q: a ClusterResourceBinding is cluster-scoped", m.Namespace)
	}
	if s.Resource.APIVersion == "" || s.Resource.Kind == "" {
		return nil, what, errors.New("spec.resource: apiVersion and kind are required, e.g. apps/v1 Deployment")
	}
	if s.Replicas < 0 {
		return nil, what, fmt.Errorf("spec.replicas: %d: must not be negative", s.Replicas)
	}
	if len(s.GracefulEvictionTasks) > 0 || !apiequality.Semantic.DeepEqual(doc.Status, workv1alpha2.ResourceBindingStatus{}) {
		return nil, what, errors.New("spec.gracefulEvictionTasks and status: not read: a binding starts with neither")
	}
	b := bindingSpecResolved{
		Kind:      doc.Kind,
		Namespace: m.Namespace,
		Resource:  s.Resource,
		Replicas:  s.Replicas,
		Karmada:   s.Placement,
		Failover:  s.Failover,
	}
	for _, t := range s.Clusters {
		b.Clusters = append(b.Clusters, failover.TargetCluster{Name: t.Name, Replicas: t.Replicas})
	}
	if b.Placement, err = karmada.FromPlacement(s.Placement); err != nil {
		return nil, what, fmt.Errorf("spec.placement: %w", err)
	}
	if b.divided() && s.Replicas < 1 {
		return nil, what, fmt.Errorf("spec.replicas: %d: a Divided workload needs at least one replica", s.Replicas)
	}
	if f := s.Failover; f != nil && f.Cluster != nil {
		if _, err := karmada.FromClusterFailoverBehavior(f.Cluster); err != nil {
			return nil, what, fmt.Errorf("spec.failover.cluster.purgeMode: %w", err)
		}
	}
	if f := s.Failover; f != nil && f.Application != nil {
		if _, err := karmada.FromApplicationFailoverBehavior(f.Application); err != nil {
			return nil, what, err
		}
	}
	if s.SchedulePriority != nil {
		b.Priority = s.SchedulePriority.Priority
	}
	if v, ok := m.Annotations[annotationReadyAfter]; ok {
		d := time.Duration(-1)
		if v != "never" {
			if d, err = time.ParseDuration(v); err != nil || d < 0 {
				return nil, what, fmt.Errorf("metadata.annotations[%s]: %q: want a duration such as 90s, or never", annotationReadyAfter, v)
			}
		}
		b.ReadyAfter = &d
	}
	if v, ok := m.Annotations[annotationGracePeriod]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			return nil, what, fmt.Errorf("metadata.annotations[%s]: %q: want a number of seconds ≥ 1", annotationGracePeriod, v)
		}
		secs := int32(n)
		b.GracePeriodSeconds = &secs
	}
	if v, ok := m.Annotations[annotationMaxInTransit]; ok {
		if b.Budget, err = gracefulevict.ParseTransitBudget(v); err != nil {
			return nil, what, fmt.Errorf("metadata.annotations[%s]: %w", annotationMaxInTransit, err)
		}
	}
	count := 1
	if v, ok := m.Annotations[annotationCount]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxBindings {
			return nil, what, fmt.Errorf("metadata.annotations[%s]: %q: want a number from 1 to %d", annotationCount, v, maxBindings)
		}
		count = n
	}
	shards := 0
	if v, ok := m.Annotations[annotationShards]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > count {
			return nil, what, fmt.Errorf("metadata.annotations[%s]: %q: want a number of shards from 1 to the %d copies (%s)", annotationShards, v, count, annotationCount)
		}
		if p := s.Placement; p != nil && (len(p.ClusterAffinities) > 0 || p.ClusterAffinity != nil && len(p.ClusterAffinity.ClusterNames) > 0) {
			return nil, what, fmt.Errorf("metadata.annotations[%s]: a shard is a list of clusterNames: spec.placement may have neither clusterAffinities nor clusterAffinity.clusterNames", annotationShards)
		}
		shards = n
	}
	b.Group = strings.TrimPrefix(m.Namespace+"/"+m.Name, "/")
	if count == 1 && shards == 0 {
		b.Name = m.Name
		return []*bindingSpecResolved{&b}, what, nil
	}
	width := len(strconv.Itoa(count - 1))
	if width < 2 {
		width = 2
	}
	out := make([]*bindingSpecResolved, count)
	for i := range count {
		c := b
		c.Name = fmt.Sprintf("%s-%0*d", m.Name, width, i)
		if count == 1 {
			c.Name = m.Name // a single copy keeps its name
		} else if c.Resource.Name != "" {
			c.Resource.Name = fmt.Sprintf("%s-%0*d", c.Resource.Name, width, i)
		}
		if shards > 0 {
			c.Shard, c.Sharded = i*shards/count, true
		}
		out[i] = &c
	}
	return out, what, nil
}

// shardBindings restricts each sharded binding (annotationShards) to the
// clusters of its shard (labelShard), by name. Copies of one document in
// one shard share their placement.
func shardBindings(sc *scenario) error {
	byShard := map[string][]string{}
	for _, c := range sc.Clusters {
		if v, ok := c.Labels[labelShard]; ok {
			byShard[v] = append(byShard[v], c.Name)
		}
	}
	type key struct {
		group string
		shard int
	}
	done := map[key]*bindingSpecResolved{}
	for _, b := range sc.Bindings {
		if !b.Sharded {
			continue
		}
		k := key{b.Kind + " " + b.Group, b.Shard}
		if d := done[k]; d != nil {
			b.Karmada, b.Placement = d.Karmada, d.Placement
			continue
		}
		names := byShard[strconv.Itoa(b.Shard)]
		if len(names) == 0 {
			return fmt.Errorf("%s %s: metadata.annotations[%s]: no cluster is labelled %s=%d: give spec.fleet[].shards",
				b.Kind, b.Group, annotationShards, labelShard, b.Shard)
		}
		var err error
		if b.Karmada, b.Placement, err = inShard(b.Karmada, names); err != nil {
			return fmt.Errorf("%s %s: spec.placement: %w", b.Kind, b.Group, err)
		}
		done[k] = b
	}
	return nil
}

// inShard is placement restricted to the clusters named names (a shard),
// for Karmada and for the library's check. A shard is listed by name, not
// by a labelSelector: Karmada's ClusterAffinity filter parses a
// labelSelector again for every cluster it looks at, which at 5,000
// clusters costs more than the rest of the scheduler.
func inShard(placement *policyv1alpha1.Placement, names []string) (*policyv1alpha1.Placement, prescheduling.Placement, error) {
	p := &policyv1alpha1.Placement{}
	if placement != nil {
		p = placement.DeepCopy()
	}
	if p.ClusterAffinity == nil {
		p.ClusterAffinity = &policyv1alpha1.ClusterAffinity{}
	}
	p.ClusterAffinity.ClusterNames = slices.Clone(names)
	checked, err := karmada.FromPlacement(p)
	return p, checked, err
}

package whatif

// SchemaVersion names the --what-if --json schema; it changes when a field
// is removed or changes meaning (REFERENCE.md documents it).
const SchemaVersion = "fleetsim.failoverkit.dev/whatif/v1"

// The outcomes of one eviction in a plan.
const (
	// OutcomeMoves: the eviction goes ahead and Karmada's scheduler places
	// what it removes (Report.Evictions[].To).
	OutcomeMoves = "moves"
	// OutcomeRefused: the pre-scheduling check says there is nowhere to go;
	// the binding stays where it is (Code, Reason).
	OutcomeRefused = "refused"
	// OutcomeWaits: the check approves it, but the room it needs is held for
	// evictions before it (Code AwaitingCapacity); it goes once the clusters'
	// resource summaries show those placed or their room is given back, on
	// a later try, and To says where it then lands, or it stays refused
	// (Code, Reason of that try).
	OutcomeWaits = "waits"
	// OutcomeWaitsForBudget: the binding's budget of clusters in transit
	// (karmada.MaxClustersInTransitAnnotation) is used up by its evictions
	// before it, whose graceful eviction tasks the plan does not see end:
	// it goes once one ends (Reason names them).
	OutcomeWaitsForBudget = "waits-for-budget"
	// OutcomeStays: the binding tolerates the failure's taints for good
	// (or a PreferNoExecute taint without spec.failover.cluster): nothing
	// moves.
	OutcomeStays = "stays"
	// OutcomeUnplaced: the check approved the eviction but Karmada's
	// scheduler, run on the same fleet, does not place all of it; the
	// library promises this never happens (Reason has the scheduler's error).
	OutcomeUnplaced = "unplaced"
	// OutcomePaused: the eviction would go ahead but the rate rule pauses
	// evictions from its cluster (Report.Rate): it waits for the fleet's
	// health to change or an operator.
	OutcomePaused = "paused"
	// OutcomeRescheduled: Karmada's scheduler itself moves the binding off
	// the failed cluster, without an eviction: it schedules a Duplicated
	// binding again whenever a cluster it may use changes (To).
	OutcomeRescheduled = "rescheduled"
)

// Report is a plan: what the failure would do if it happened now. Its JSON
// form is the --what-if --json output.
type Report struct {
	// SchemaVersion is SchemaVersion.
	SchemaVersion string `json:"schemaVersion"`
	// ReadAt is when the control plane was read, RFC 3339: the moment
	// the failure is played at.
	ReadAt string `json:"readAt"`
	// Failure is what fails.
	Failure Failed `json:"failure"`
	// Fleet counts what was read.
	Fleet Fleet `json:"fleet"`
	// Taints are, per failed cluster, the taints the failure gives it.
	Taints []Taint `json:"taints"`
	// Rate is the rate rule once the failure's taints are in.
	Rate Rate `json:"rate"`
	// Evictions are in the order the eviction queues take them.
	Evictions []Eviction `json:"evictions"`
	// Clusters are the surviving clusters, by name.
	Clusters []Room `json:"clusters"`
	// Drain is how long the evictions take at the rate.
	Drain Drain `json:"drain"`
	// Totals counts the evictions by outcome.
	Totals Totals `json:"totals"`
	// Notes are what else a reader should know.
	Notes []string `json:"notes"`
	// Hint is set when a default flag of the controller-manager decides the
	// plan: evictions that stay only because NoExecute eviction is off
	// (Karmada's default), and how to plan with it on.
	Hint string `json:"hint"`
}

// Failed is the failure played.
type Failed struct {
	// By is region, zone or clusters; Names the values of --fail.
	By    string   `json:"by"`
	Names []string `json:"names"`
	// Clusters are the clusters that fail, by name.
	Clusters []string `json:"clusters"`
}

// Fleet counts what was read.
type Fleet struct {
	// Clusters, ClusterTaintPolicies, ResourceBindings and
	// ClusterResourceBindings count the objects read.
	Clusters int `json:"clusters"`
	// FaultyBefore and FaultyAfter count the clusters with a NoExecute or
	// PreferNoExecute taint before the failure and once its taints are in.
	FaultyBefore            int `json:"faultyBefore"`
	FaultyAfter             int `json:"faultyAfter"`
	ClusterTaintPolicies    int `json:"clusterTaintPolicies"`
	ResourceBindings        int `json:"resourceBindings"`
	ClusterResourceBindings int `json:"clusterResourceBindings"`
	// BindingsOnFailed counts the bindings scheduled on a failed cluster.
	BindingsOnFailed int `json:"bindingsOnFailed"`
}

// Taint is what the failure does to one failed cluster's taints.
type Taint struct {
	// Cluster is the failed cluster.
	Cluster string `json:"cluster"`
	// Added are the taints the ClusterTaintPolicies add, each with the
	// seconds after the failure at which they are added.
	Added []AddedTaint `json:"added"`
	// Faulty is true when the cluster ends up with a NoExecute or
	// PreferNoExecute taint, so that evictions from it are decided.
	Faulty bool `json:"faulty"`
	// Note says what a reader should know, e.g. that no policy taints it.
	Note string `json:"note"`
}

// AddedTaint is one taint a policy adds.
type AddedTaint struct {
	// Key, Value and Effect are the taint's.
	Key    string `json:"key"`
	Value  string `json:"value"`
	Effect string `json:"effect"`
	// Policy is the first policy, by name, that lists it.
	Policy string `json:"policy"`
	// AfterSeconds is when it is added, after the failure.
	AfterSeconds float64 `json:"afterSeconds"`
}

// Rate is the rate rule as it stands once the failure's taints are in.
type Rate struct {
	// Rule is fleet, region, zone or provider (--disruption-domain).
	Rule string `json:"rule"`
	// PerSecond is the fleet's rate (the fleet rule) or the cap on all
	// domains together (a domain rule); 0 is paused.
	PerSecond float64 `json:"perSecond"`
	// Domains, under a domain rule, are each domain with a failed cluster.
	Domains []DomainRate `json:"domains"`
	// StormHoldSeconds is how long a failure storm holds every eviction
	// (ratelimit.Config.StormConfirm), 0 when the failure is no storm.
	StormHoldSeconds float64 `json:"stormHoldSeconds"`
	// Why is the rule's reasoning, in words.
	Why string `json:"why"`
}

// DomainRate is one domain's state and rate under a domain rule.
type DomainRate struct {
	// Name is the region, zone or provider.
	Name string `json:"name"`
	// State is Normal, PartialDisruption or FullDisruption.
	State string `json:"state"`
	// Clusters and Faulty count its clusters and the faulty ones.
	Clusters int `json:"clusters"`
	Faulty   int `json:"faulty"`
	// PerSecond is its rate; 0 is paused.
	PerSecond float64 `json:"perSecond"`
}

// Eviction is one binding on one failed cluster.
type Eviction struct {
	// Kind is ResourceBinding or ClusterResourceBinding; Binding its
	// namespace/name (name alone for a ClusterResourceBinding).
	Kind    string `json:"kind"`
	Binding string `json:"binding"`
	// Cluster is the failed cluster it runs on.
	Cluster string `json:"cluster"`
	// Replicas are those on the failed cluster.
	Replicas int32 `json:"replicas"`
	// Outcome is one of the Outcome constants.
	Outcome string `json:"outcome"`
	// Code is the pre-scheduling check's (prescheduling.Code), or the
	// rule's for stays and paused.
	Code string `json:"code"`
	// Reason is the check's or the rule's sentence.
	Reason string `json:"reason"`
	// To is where the replicas go, as Karmada's scheduler places them:
	// each cluster that gains replicas, with how many.
	To []Target `json:"to"`
	// Round is the try on which it goes: 1 at once, n after it was held
	// back for room n-1 times; 0 when it never goes.
	Round int `json:"round"`
	// AtSeconds is when it is evicted, in seconds after the failure, at the
	// rate; null when it is not.
	AtSeconds *float64 `json:"atSeconds"`
}

// Target is one cluster gaining replicas.
type Target struct {
	// Name is the cluster's.
	Name string `json:"name"`
	// Replicas are those it gains: all of a Duplicated binding's.
	Replicas int32 `json:"replicas"`
}

// Room is one surviving cluster's room, as karmada.MaxReplicas counts it
// from its resource summary: pods it can take, before and after the
// evictions placed on it.
type Room struct {
	// Name, Region and Zone are the cluster's; Zone joins a multi-zone
	// cluster's zones with commas.
	Name   string `json:"name"`
	Region string `json:"region"`
	Zone   string `json:"zone"`
	// Reported is true when the cluster has a resource summary: without
	// one, Karmada's estimator gives it no room.
	Reported bool `json:"reported"`
	// PodsBefore and PodsAfter are the pods it has room for.
	PodsBefore int64 `json:"podsBefore"`
	PodsAfter  int64 `json:"podsAfter"`
	// Arriving are the replicas the plan places on it.
	Arriving int64 `json:"arriving"`
	// Bindings counts the bindings placing replicas on it.
	Bindings int `json:"bindings"`
}

// Drain is how long the evictions take at the rate.
type Drain struct {
	// Evictions counts the evictions that go: moves, waits, unplaced and
	// paused.
	Evictions int `json:"evictions"`
	// Seconds until the last eviction, from the failure; null when some
	// never go (Paused).
	Seconds *float64 `json:"seconds"`
	// Paused is true when the rule pauses some.
	Paused bool `json:"paused"`
	// Why says it in words.
	Why string `json:"why"`
}

// Totals counts the evictions by outcome.
type Totals struct {
	// Moves, Refused, Waits, Stays, Unplaced and Paused count the
	// evictions with each outcome.
	Moves    int `json:"moves"`
	Refused  int `json:"refused"`
	Waits    int `json:"waits"`
	Stays    int `json:"stays"`
	Unplaced int `json:"unplaced"`
	Paused   int `json:"paused"`
	// Rescheduled counts those Karmada's scheduler moves on its own.
	Rescheduled int `json:"rescheduled"`
	// WaitsForBudget counts those waiting for their binding's budget of
	// clusters in transit.
	WaitsForBudget int `json:"waitsForBudget"`
}

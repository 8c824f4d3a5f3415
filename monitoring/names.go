// Package monitoring generates the Prometheus rules, their unit tests and the
// Grafana dashboards of the failover library's series, once for each naming
// of them: the library's own, and Karmada's (metrics.WithKarmadaNames). The
// generated files sit beside this package and are committed; TestGenerated
// fails when one is stale, and `go test -run TestGenerated -update .`
// rewrites them.
//
// It is a module of its own, outside the repository's go.work:
// github.com/prometheus/prometheus, whose PromQL parser the tests use,
// requires a newer Go and client_golang than the library's floor.
package monitoring

// Names spells the series whose names or labels differ between the two
// namings. Every other series (eviction_rate, cluster_fault_num,
// cluster_failure_rate, eviction_in_flight{queue_name},
// eviction_in_flight_expired_total{queue_name},
// eviction_cancelled_total{queue_name}, eviction_api_requests_total
// {queue_name, verb}, domain_disruption_state, domain_eviction_rate) is named
// alike in both.
type Names struct {
	// Set names the naming: "library" or "karmada".
	Set string
	// Suffix ends the generated files' names: "" or "-karmada".
	Suffix string
	// About says, in the generated files, which naming they read: "named
	// as <About>".
	About string

	// QueueDepth is the queue depth gauge, labelled by Queue.
	QueueDepth string
	// KindDepth is the queue depth gauge by cluster (labelled by Cluster)
	// and resource_kind.
	KindDepth string
	// Latency is the processing latency histogram, labelled by Queue.
	Latency string
	// Processed is the processing attempts counter, labelled by Queue and
	// result.
	Processed string
	// Queue and Cluster are the label names of a queue and of a member
	// cluster on the four series above.
	Queue, Cluster string
}

// RulesFile is the path of the naming's generated rules file, relative to
// this package's directory.
func (n Names) RulesFile() string { return "prometheus/failover-rules" + n.Suffix + ".yaml" }

// RulesTestFile is the path of the rules' generated promtool unit tests.
func (n Names) RulesTestFile() string { return "prometheus/failover-rules" + n.Suffix + ".test.yaml" }

// DashboardFile is the path of the naming's generated Grafana dashboard.
func (n Names) DashboardFile() string { return "grafana/failover" + n.Suffix + ".json" }

// Library is the library's naming (metrics.New without WithKarmadaNames).
var Library = Names{
	Set:        "library",
	Suffix:     "",
	About:      "the library names them (metrics.New without WithKarmadaNames)",
	QueueDepth: "eviction_total",
	KindDepth:  "evict_kind_total",
	Latency:    "eviction_processing_latency_seconds",
	Processed:  "eviction_processing_total",
	Queue:      "queue_name",
	Cluster:    "cluster_name",
}

// Karmada is Karmada v1.18's naming of its four eviction series, which
// metrics.WithKarmadaNames adopts inside a Karmada fork.
var Karmada = Names{
	Set:        "karmada",
	Suffix:     "-karmada",
	About:      "a Karmada fork serves them (metrics.New with WithKarmadaNames: Karmada v1.18's names for its four queue series)",
	QueueDepth: "eviction_queue_depth",
	KindDepth:  "eviction_kind_total",
	Latency:    "eviction_processing_latency_seconds",
	Processed:  "eviction_processing_total",
	Queue:      "name",
	Cluster:    "member_cluster",
}

// Namings are both namings, in the order the files are generated.
var Namings = []Names{Library, Karmada}

// Thresholds are the alerts' thresholds and durations; runbook.md states
// each. Durations are PromQL durations.
type Thresholds struct {
	// PausedFor: how long evictions may stay paused with items queued.
	PausedFor string
	// DrainRatio: the share of the rate in force below which a backlogged
	// queue counts as not draining; DrainFor: for how long.
	DrainRatio float64
	DrainFor   string
	// FailureRate: the fleet's failure rate above which the alert fires;
	// the default is ratelimit's default --unhealthy-cluster-threshold.
	FailureRate    float64
	FailureRateFor string
	// ExpiryWindow: how far back an expired background eviction keeps the
	// alert firing.
	ExpiryWindow string
	// ErrorRatio: the share of failed attempts above which the alert fires;
	// ErrorFor: for how long.
	ErrorRatio float64
	ErrorFor   string
	// FullDisruptionFor: how long a domain must stay in full disruption.
	FullDisruptionFor string
	// FrozenFor: how long an operator's freeze must hold before the alert
	// fires, so that a freeze taken back at once says nothing.
	FrozenFor string
	// StormHoldFor: how long a failure storm's hold must last before the
	// alert fires: long enough that a blip the clusters recover from at
	// once says nothing, short enough to leave the operator most of the
	// hold (--storm-confirm, default 5m) to decide.
	StormHoldFor string
	// TransitWaitFor: how long evictions may keep waiting for their
	// bindings' budgets of clusters in transit (--max-clusters-in-transit)
	// without a break before the alert fires. A graceful eviction task ends
	// at the latest after --graceful-eviction-timeout (10m by default) when
	// it sets no longer gracePeriodSeconds, and each task that ends lets
	// the next eviction of its binding go; three timeouts drain a budget of
	// 1 on four failing clusters of one binding even if every task runs to
	// its timeout. Longer, tasks do not end (a long gracePeriodSeconds, a
	// workload that never turns healthy elsewhere) or a long drain keeps
	// sending bindings into the wait.
	TransitWaitFor string
	// TransitWaitGap: the longest time the number waiting may read 0 and
	// still count as no break. Each waiting eviction is tried again every
	// 10s and, between that attempt's start and its end, does not count,
	// so a scrape may see 0 for a moment though it still waits.
	TransitWaitGap string
	// FailbackNotPlacedFor: how long bindings whose origin has been healthy
	// for the stabilization window may keep not going back (a fresh
	// placement would not put them there) before the alert fires. Each is
	// decided again every 30s and as the fleet changes; a placement that
	// waits for the summaries to show room, or for other failbacks' room,
	// goes within minutes. An hour of it is a placement that no longer
	// leads back, or an origin without room.
	FailbackNotPlacedFor string
	// AppFailoverHeldFor: how long the bad-rollout hold may hold a
	// binding's application failovers before the alert fires. The hold
	// only ever stops a failover whose window (tolerationSeconds) has
	// passed, so the application has already been unhealthy on most of its
	// clusters for that long; a rollback that mends it within minutes ends
	// the hold by itself. Longer, a person decides: roll back, or confirm.
	AppFailoverHeldFor string
	// AppFailoverRefusedWindow: how far back a refused application
	// failover keeps the alert's expression true; AppFailoverRefusedFor:
	// for how long refusals must go on. A refused failover is decided again
	// as the fleet or the binding changes, and a minute after the refusal
	// at the latest (the controller's RefusalRecheck), and each refusal
	// counts, so one that persists counts several times in every window; a
	// fleet full for a moment refuses for less than AppFailoverRefusedFor.
	AppFailoverRefusedWindow string
	AppFailoverRefusedFor    string
}

// DefaultThresholds are the thresholds of the committed rules.
var DefaultThresholds = Thresholds{
	PausedFor:         "15m",
	DrainRatio:        0.5,
	DrainFor:          "15m",
	FailureRate:       0.55,
	FailureRateFor:    "5m",
	ExpiryWindow:      "30m",
	ErrorRatio:        0.1,
	ErrorFor:          "15m",
	FullDisruptionFor: "5m",
	FrozenFor:         "1m",
	StormHoldFor:      "1m",
	TransitWaitFor:    "30m",
	TransitWaitGap:    "5m",

	FailbackNotPlacedFor: "1h",

	AppFailoverHeldFor:       "5m",
	AppFailoverRefusedWindow: "10m",
	AppFailoverRefusedFor:    "15m",
}

// RunbookURL is where the alerts' runbook_url annotations point; each alert
// adds the anchor of its section.
const RunbookURL = "https://github.com/failoverkit/failover/blob/main/monitoring/runbook.md"

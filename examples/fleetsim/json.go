package main

import (
	"encoding/json"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/failoverkit/failover/prescheduling"
)

// The --json output. These types are its schema, documented in REFERENCE.md
// ("The --json schema"); TestJSONSchema decodes every shipped scenario's
// output into them strictly. Every field is always present. Times are
// seconds since the simulated start (a JSON number), which is given once,
// in RFC 3339, as "start". Values per queue are objects keyed by the queue's
// name. Reasons carry a stable code next to their sentence: a program
// matches the code, a person reads the sentence.

// jsonSchemaVersion changes when a field is removed or changes meaning.
const jsonSchemaVersion = "fleetsim.failoverkit.dev/v1"

// jsonReport is the whole document.
type jsonReport struct {
	SchemaVersion   string          `json:"schemaVersion"`
	Scenario        jsonScenario    `json:"scenario"`
	Start           string          `json:"start"` // RFC 3339
	DurationSeconds float64         `json:"durationSeconds"`
	IntervalSeconds float64         `json:"intervalSeconds"`
	Clusters        int             `json:"clusters"`
	Bindings        jsonQueues      `json:"bindings"`
	Rates           jsonRates       `json:"rates"`
	WorkersPerQueue int             `json:"workersPerQueue"`
	Totals          jsonTotals      `json:"totals"`
	Tasks           jsonTasks       `json:"tasks"`
	Abandoned       jsonAbandonment `json:"abandoned"`
	Phases          []jsonPhase     `json:"phases"`
	Intervals       []jsonInterval  `json:"intervals"`
	Events          []jsonEvent     `json:"events"`
	Checks          []jsonCheck     `json:"checks"`
	Pass            bool            `json:"pass"`
	Safety          jsonSafety      `json:"safety"`
	// Failback is what the failback controller did; null unless the
	// scenario turns it on (spec.failback).
	Failback *jsonFailback `json:"failback"`
	// ApplicationFailover is what the application failover controller
	// did; null unless the scenario turns it on
	// (spec.applicationFailover).
	ApplicationFailover *jsonAppFailover `json:"applicationFailover"`
}

// jsonAppFailover is what the application failover controller did: the
// Unknown policy and the bad-rollout threshold it ran with, each failover
// in order, each bad-rollout hold, the decisions by result
// (application_failover_total's) and the refusals (nowhere to go) by
// workload and reason.
type jsonAppFailover struct {
	Unknown             string               `json:"unknown"`
	BadRolloutThreshold float64              `json:"badRolloutThreshold"`
	Failovers           []jsonAppFailoverOne `json:"failovers"`
	BadRolloutHolds     []jsonAppHold        `json:"badRolloutHolds"`
	Decisions           map[string]int       `json:"decisions"`
	Refused             map[string]int       `json:"refused"`
}

// jsonAppFailoverOne is one application failover: the binding, the
// cluster it left, when, the copy's Unhealthy and Unknown time since it
// was last Healthy as the sim played it, the time the library counted,
// and the window.
type jsonAppFailoverOne struct {
	Binding          string  `json:"binding"`
	Cluster          string  `json:"cluster"`
	AtSeconds        float64 `json:"atSeconds"`
	UnhealthySeconds float64 `json:"unhealthySeconds"`
	UnknownSeconds   float64 `json:"unknownSeconds"`
	CountedSeconds   float64 `json:"countedSeconds"`
	WindowSeconds    float64 `json:"windowSeconds"`
}

// jsonAppHold is one bad-rollout hold of a binding: from when to when (one
// still on at the end runs to durationSeconds, heldAtEnd true), whether an
// operator's confirmation ended it, the binding's failovers while it held
// and after, and why it held.
type jsonAppHold struct {
	Binding            string  `json:"binding"`
	FromSeconds        float64 `json:"fromSeconds"`
	ToSeconds          float64 `json:"toSeconds"`
	HeldAtEnd          bool    `json:"heldAtEnd"`
	Confirmed          bool    `json:"confirmed"`
	FailoversWhileHeld int     `json:"failoversWhileHeld"`
	FailoversAfter     int     `json:"failoversAfter"`
	Reason             string  `json:"reason"`
}

// jsonFailback is what the failback controller did: the bindings sent back
// (by the origin's region), when the first and last went, the longest any
// waited past its origin's window, the most in flight at once, the
// decisions by result (failback_total's), and at the end the bindings
// still waiting by reason and those a fresh placement would not put back.
type jsonFailback struct {
	WindowSeconds      float64        `json:"windowSeconds"`
	MaxInFlight        int            `json:"maxInFlight"`
	Back               int            `json:"back"`
	BackByRegion       map[string]int `json:"backByRegion"`
	FirstSeconds       float64        `json:"firstSeconds"`
	LastSeconds        float64        `json:"lastSeconds"`
	LatestAfterWindowS float64        `json:"latestAfterWindowSeconds"`
	PeakInFlight       int            `json:"peakInFlight"`
	Decisions          map[string]int `json:"decisions"`
	Waiting            map[string]int `json:"waiting"`
	NotPlaced          map[string]int `json:"notPlaced"`
}

// jsonSafety is what the safety features did: the failure storm's holds,
// the operator's freezes, the evictions from cut-off clusters and the most
// clusters in transit at once per workload.
type jsonSafety struct {
	StormHolds      []jsonSpan    `json:"stormHolds"`
	HeldSeconds     float64       `json:"heldSeconds"`
	Frozen          []jsonSpan    `json:"frozen"`
	FrozenSeconds   float64       `json:"frozenSeconds"`
	CutOffEvictions int           `json:"cutOffEvictions"`
	Transit         []jsonTransit `json:"transit"`
}

// jsonSpan is a stretch of the run; one still on at the end runs to
// durationSeconds.
type jsonSpan struct {
	FromSeconds float64 `json:"fromSeconds"`
	ToSeconds   float64 `json:"toSeconds"`
}

// jsonTransit is a workload's budget of clusters in transit (0: none) and
// the most clusters in transit one of its bindings had at once.
type jsonTransit struct {
	Workload string `json:"workload"`
	Budget   int    `json:"budget"`
	Peak     int    `json:"peak"`
}

type jsonScenario struct {
	Name        string `json:"name"`
	Source      string `json:"source"` // the file, or "built-in scenarios/…"
	Description string `json:"description"`
}

// jsonQueues is one number per eviction queue, keyed by the queue's name.
type jsonQueues struct {
	ResourceBinding        int `json:"resource-binding"`
	ClusterResourceBinding int `json:"cluster-resource-binding"`
}

func perQueue(v [2]int) jsonQueues {
	return jsonQueues{ResourceBinding: v[qRB], ClusterResourceBinding: v[qCRB]}
}

// jsonRates is the rate rule in force, under its flags' names.
type jsonRates struct {
	ResourceEvictionRate          float64 `json:"resource-eviction-rate"`
	SecondaryResourceEvictionRate float64 `json:"secondary-resource-eviction-rate"`
	UnhealthyClusterThreshold     float64 `json:"unhealthy-cluster-threshold"`
	LargeClusterNumThreshold      int     `json:"large-cluster-num-threshold"`
	DisruptionDomain              string  `json:"disruption-domain"`
}

// jsonTotals are the run's totals per queue.
type jsonTotals struct {
	Queued    jsonQueues `json:"queued"`
	Evicted   jsonQueues `json:"evicted"`
	Abandoned jsonQueues `json:"abandoned"`
	Cancelled jsonQueues `json:"cancelled"`
	Failed    jsonQueues `json:"failed"`
}

// jsonTasks are the graceful eviction tasks: done during the run, and still
// open at its end.
type jsonTasks struct {
	Done   int          `json:"done"`
	Open   int          `json:"open"`
	DoneBy []jsonReason `json:"doneBy"` // why the Assessor let the old copy go
	OpenBy []jsonReason `json:"openBy"` // by purge mode
}

// jsonReason is a count with its reason: a stable code and a sentence.
type jsonReason struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// jsonAbandonment is why the pre-scheduling check abandoned evictions.
type jsonAbandonment struct {
	// ByReason has one entry per distinct sentence (they name clusters).
	ByReason []jsonReason `json:"byReason"`
	// ByWorkload groups them by workload (the bindings a scenario stamps
	// out from one document), with the first one as an example.
	ByWorkload []jsonAbandonedWorkload `json:"byWorkload"`
}

type jsonAbandonedWorkload struct {
	Workload string `json:"workload"`
	Count    int    `json:"count"`
	Code     string `json:"code"`    // the example's
	Example  string `json:"example"` // "<binding> from <cluster>: <reason>"
}

// jsonPhase is a stretch of the run with one phase and one rate in force.
type jsonPhase struct {
	Name              string  `json:"name"`
	FromSeconds       float64 `json:"fromSeconds"`
	ToSeconds         float64 `json:"toSeconds"`
	Rate              float64 `json:"rate"` // in force, evictions per second; 0: paused
	MaxFaultyClusters int     `json:"maxFaultyClusters"`
	Evicted           int     `json:"evicted"`
	Abandoned         int     `json:"abandoned"`
	Cancelled         int     `json:"cancelled"`
	// AchievedRate is measured over BackloggedGaps gaps between handler
	// calls while items waited; null when there were too few to measure
	// (fewer than 5) or the rate was paused.
	AchievedRate   *float64 `json:"achievedRate"`
	BackloggedGaps int      `json:"backloggedGaps"`
}

// jsonInterval is one progress line.
type jsonInterval struct {
	AtSeconds      float64    `json:"atSeconds"`
	FaultyClusters int        `json:"faultyClusters"`
	Rate           float64    `json:"rate"` // in force; 0: paused
	QueueDepth     jsonQueues `json:"queueDepth"`
	// Changes happened since the previous line; RunningTotals since the
	// start.
	Changes       jsonOutcomes `json:"changes"`
	RunningTotals jsonOutcomes `json:"runningTotals"`
	TasksOpen     int          `json:"tasksOpen"`
	InFlight      int          `json:"inFlight"` // background evictions awaiting Complete
}

type jsonOutcomes struct {
	Evicted   int `json:"evicted"`
	Abandoned int `json:"abandoned"`
	Cancelled int `json:"cancelled"`
}

// jsonEvent is one » line.
type jsonEvent struct {
	AtSeconds float64 `json:"atSeconds"`
	// Type is phase, conditions, taints, health or queued.
	Type    string `json:"type"`
	Message string `json:"message"`
	// Clusters it is about: conditions: those whose conditions changed;
	// taints: those whose taints changed; health: those that became
	// faulty or recovered; queued: those that lost taints at that moment
	// when Retried > 0. Empty otherwise.
	Clusters []string `json:"clusters"`
	// Count is, for conditions, how many clusters changed; for health,
	// how many are faulty now; for queued, how many evictions were queued.
	Count int `json:"count"`
	// Retried (queued) is how many of them had been abandoned for want of
	// a target and are tried again.
	Retried int `json:"retried"`
	// Cancelled (health) is how many queued items of recovered clusters
	// were cancelled.
	Cancelled int `json:"cancelled"`
}

// jsonCheck is one check of the verdict.
type jsonCheck struct {
	Code    string   `json:"code"`
	Name    string   `json:"name"`
	Pass    bool     `json:"pass"`
	Details []string `json:"details"` // what failed, at most 5 and a count
}

// The codes of the checks, stable whatever the sentences say.
var checkCodes = map[string]string{
	checkRateBound:    "RateNeverAboveAllowed",
	checkAchieved:     "AchievedRateWithinTolerance",
	checkLastCopy:     "NoWorkloadLostItsLastCopy",
	checkTarget:       "NoEvictionWithoutTarget",
	checkCancelled:    "RecoveredClustersCancelled",
	checkTaskDeadline: "TasksClearedByGracePeriod",
	checkAccounted:    "EveryItemAccountedFor",
	checkStormHold:    "NoEvictionFromCutOffClustersWithinHold",
	checkRealFailure:  "RealFailuresHandledDespiteCutOff",
	checkFrozen:       "NoEvictionWhileFrozen",
	checkThawed:       "NoItemLostToAFreeze",
	checkTransit:      "ClustersInTransitWithinBudget",

	checkFailbackWindow:    "NoFailbackBeforeTheWindow",
	checkFailbackReady:     "NoFailbackDroppedReadyReplicas",
	checkFailbackCap:       "FailbacksInFlightWithinCap",
	checkFailbackPredicted: "FailbacksPlacedAsPredicted",
	checkFailbackBack:      "FailedOverBindingsBack",

	checkAppWindow:     "AppFailoverAtItsWindow",
	checkAppBadRollout: "BadRolloutHeldUntilConfirmed",
}

// The codes of why graceful eviction tasks ended (recorder.taskDone).
var taskDoneCodes = map[string]string{
	"replacement healthy":     "ReplacementHealthy",
	"origin back in schedule": "OriginBackInSchedule",
	"purgeMode Directly":      "PurgeModeDirectly",
	"grace period elapsed":    "GracePeriodElapsed",
}

// The codes of why the pre-scheduling check abandoned an eviction.
const (
	abandonNoEligibleCluster    = string(prescheduling.NoEligibleCluster)
	abandonSpreadConstraint     = string(prescheduling.SpreadConstraintUnsatisfiable)
	abandonInsufficientCapacity = string(prescheduling.InsufficientCapacity)
	abandonInvalidPlacement     = "InvalidPlacement"
	abandonOther                = "Other"
)

// abandonCode is the code of an infeasible check's answer: prescheduling's
// own Code, InvalidPlacement for a placement it refused.
func abandonCode(res prescheduling.Result) string {
	if res.Code == prescheduling.InvalidRequest {
		return abandonInvalidPlacement
	}
	if res.Code == "" || res.Feasible {
		return abandonOther
	}
	return string(res.Code)
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// reasons lists counts by sentence with their codes, the largest first.
func reasons(counts map[string]int, code func(string) string) []jsonReason {
	out := []jsonReason{}
	for _, k := range sortedKeysByCount(counts) {
		out = append(out, jsonReason{Code: code(k), Reason: k, Count: counts[k]})
	}
	return out
}

func (r *report) json() *jsonReport {
	j := &jsonReport{
		SchemaVersion:   jsonSchemaVersion,
		Scenario:        jsonScenario{Name: r.Scenario, Source: r.Source, Description: r.Description},
		Start:           r.Start.UTC().Format(time.RFC3339),
		DurationSeconds: seconds(r.Duration),
		IntervalSeconds: seconds(r.Interval),
		Clusters:        r.Clusters,
		Bindings:        perQueue(r.Bindings),
		Rates: jsonRates{
			ResourceEvictionRate:          r.Rates.ResourceEvictionRate,
			SecondaryResourceEvictionRate: r.Rates.SecondaryResourceEvictionRate,
			UnhealthyClusterThreshold:     r.Rates.UnhealthyClusterThreshold,
			LargeClusterNumThreshold:      r.Rates.LargeClusterNumThreshold,
			DisruptionDomain:              r.Rates.DisruptionDomain.String(),
		},
		WorkersPerQueue: r.Workers,
		Totals: jsonTotals{
			Queued: perQueue(r.Totals.Queued), Evicted: perQueue(r.Totals.Evicted), Abandoned: perQueue(r.Totals.Abandoned),
			Cancelled: perQueue(r.Totals.Cancelled), Failed: perQueue(r.Totals.Failed),
		},
		Tasks: jsonTasks{
			Done:   r.Totals.TasksDone,
			Open:   r.TasksOpen,
			DoneBy: reasons(r.TasksDoneBy, func(k string) string { return taskDoneCodes[k] }),
			// "purgeMode Never" → PurgeModeNever
			OpenBy: reasons(r.TasksOpenBy, func(k string) string { return "PurgeMode" + strings.TrimPrefix(k, "purgeMode ") }),
		},
		Abandoned: jsonAbandonment{
			ByReason:   reasons(r.Abandoned, func(k string) string { return r.AbandonCodes[k] }),
			ByWorkload: []jsonAbandonedWorkload{},
		},
		Phases:    []jsonPhase{},
		Intervals: []jsonInterval{},
		Events:    []jsonEvent{},
		Checks:    []jsonCheck{},
		Pass:      r.Pass,
	}
	groups := make([]string, 0, len(r.AbandonedBy))
	for g := range r.AbandonedBy {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(a, b int) bool {
		ga, gb := r.AbandonedBy[groups[a]], r.AbandonedBy[groups[b]]
		if ga.Count != gb.Count {
			return ga.Count > gb.Count
		}
		return groups[a] < groups[b]
	})
	for _, g := range groups {
		a := r.AbandonedBy[g]
		j.Abandoned.ByWorkload = append(j.Abandoned.ByWorkload, jsonAbandonedWorkload{Workload: g, Count: a.Count, Code: a.Code, Example: a.Example})
	}
	for _, p := range r.Phases {
		jp := jsonPhase{
			Name: p.Phase, FromSeconds: seconds(p.From.Sub(r.Start)), ToSeconds: seconds(p.To.Sub(r.Start)),
			Rate: p.Rate, MaxFaultyClusters: p.MaxFaulty, Evicted: p.Evicted, Abandoned: p.Abandoned, Cancelled: p.Cancelled,
			BackloggedGaps: p.Gaps,
		}
		if p.measured() {
			jp.AchievedRate = &p.Achieved
		}
		j.Phases = append(j.Phases, jp)
	}
	var prev progressLine
	for _, l := range r.Lines {
		j.Intervals = append(j.Intervals, jsonInterval{
			AtSeconds: seconds(l.T), FaultyClusters: l.Faulty, Rate: l.Rate, QueueDepth: perQueue(l.Queued),
			Changes:       jsonOutcomes{Evicted: l.Evicted - prev.Evicted, Abandoned: l.Abandoned - prev.Abandoned, Cancelled: l.Cancelled - prev.Cancelled},
			RunningTotals: jsonOutcomes{Evicted: l.Evicted, Abandoned: l.Abandoned, Cancelled: l.Cancelled},
			TasksOpen:     l.TasksOpen, InFlight: l.InFlight,
		})
		prev = l
	}
	for _, e := range r.Events {
		clusters := e.Clusters
		if clusters == nil {
			clusters = []string{}
		}
		j.Events = append(j.Events, jsonEvent{
			AtSeconds: seconds(e.T), Type: e.Kind, Message: e.Message, Clusters: clusters,
			Count: e.Count, Retried: e.Retried, Cancelled: e.Cancelled,
		})
	}
	spans := func(ss []span) []jsonSpan {
		out := []jsonSpan{}
		for _, sp := range ss {
			to := r.Duration
			if !sp.To.IsZero() {
				to = sp.To.Sub(r.Start)
			}
			out = append(out, jsonSpan{FromSeconds: seconds(sp.From.Sub(r.Start)), ToSeconds: seconds(to)})
		}
		return out
	}
	j.Safety = jsonSafety{
		StormHolds: spans(r.StormHolds), HeldSeconds: seconds(r.Held),
		Frozen: spans(r.Frozen), FrozenSeconds: seconds(r.FrozenFor),
		CutOffEvictions: r.CutOffEvicted, Transit: []jsonTransit{},
	}
	for _, g := range slices.Sorted(maps.Keys(r.Transit)) {
		p := r.Transit[g]
		j.Safety.Transit = append(j.Safety.Transit, jsonTransit{Workload: g, Budget: p.Budget, Peak: p.Peak})
	}
	if f := r.Failback; f != nil {
		j.Failback = &jsonFailback{
			WindowSeconds: seconds(f.Window), MaxInFlight: f.MaxInFlight, Back: f.Back, BackByRegion: f.ByOrigin,
			FirstSeconds: seconds(f.First), LastSeconds: seconds(f.Last), LatestAfterWindowS: seconds(f.Latest),
			PeakInFlight: f.Peak, Decisions: f.Decisions, Waiting: f.Waiting, NotPlaced: f.NotPlaced,
		}
	}
	if a := r.AppFailover; a != nil {
		j.ApplicationFailover = &jsonAppFailover{Unknown: string(a.Unknown), BadRolloutThreshold: a.Threshold,
			Failovers: []jsonAppFailoverOne{}, BadRolloutHolds: []jsonAppHold{}, Decisions: a.Decisions, Refused: a.Refused}
		for _, f := range a.Failovers {
			j.ApplicationFailover.Failovers = append(j.ApplicationFailover.Failovers, jsonAppFailoverOne{
				Binding: f.Binding, Cluster: f.Cluster, AtSeconds: seconds(f.At), UnhealthySeconds: seconds(f.Unhealthy),
				UnknownSeconds: seconds(f.Unknown), CountedSeconds: seconds(f.Counted), WindowSeconds: seconds(f.Window)})
		}
		for _, h := range a.Holds {
			to := h.To
			if to < 0 {
				to = r.Duration
			}
			j.ApplicationFailover.BadRolloutHolds = append(j.ApplicationFailover.BadRolloutHolds, jsonAppHold{
				Binding: h.Binding, FromSeconds: seconds(h.From), ToSeconds: seconds(to), HeldAtEnd: h.To < 0, Confirmed: h.Confirmed,
				FailoversWhileHeld: h.FailedOver, FailoversAfter: h.After, Reason: h.Why})
		}
	}
	for _, c := range r.Checks {
		details := c.Details
		if details == nil {
			details = []string{}
		}
		j.Checks = append(j.Checks, jsonCheck{Code: checkCodes[c.Name], Name: c.Name, Pass: c.Pass, Details: details})
	}
	return j
}

func printJSON(out io.Writer, r *report) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(r.json())
}

package whatif

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/failback"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/karmada/scheduling"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

// RecoveryConfig is how a recovery is played (--what-if --recover).
type RecoveryConfig struct {
	// Recovery is what recovers: region=, zone= or clusters=, as --fail.
	Recovery Failure
	// Rates is the rate rule; a failback takes a permit of it.
	Rates ratelimit.Config
	// Window is the controller-manager's --failback-stabilization-window:
	// a binding's annotation failover.karmada.io/failback-stabilization-window
	// overrides it; 0 is off for the bindings without one.
	Window time.Duration
	// MaxInFlight is --max-failbacks-in-flight; 0 means 10.
	MaxInFlight int
	// ReadyAfter is how long the plan assumes the returning copies take to
	// turn healthy, ending their failback (the graceful eviction tasks that
	// keep the leaving copies): it paces the failbacks when MaxInFlight are
	// under way. 0 means a minute.
	ReadyAfter time.Duration
	// CapacityHold and DisableLedger are as in Config.
	CapacityHold  time.Duration
	DisableLedger bool
	// Now is the moment of the recovery.
	Now time.Time
}

// The outcomes of a binding's failback in a recovery plan.
const (
	// FailbackBack: it goes back, at AtSeconds, placed as To.
	FailbackBack = "back"
	// FailbackNotPlaced: a fresh placement would not put it back (Reason).
	FailbackNotPlaced = "not-placed"
	// FailbackWaits: it does not go in the plan's time: its copies are
	// still moving, its origin is not healthy, the record cannot be read.
	FailbackWaits = "waits"
	// FailbackOff: no window applies to it.
	FailbackOff = "off"
)

// RecoveryReport is a recovery plan: which bindings that failed over from
// the recovered clusters would go back, where, and when. Its JSON form is
// the --what-if --recover --json output.
type RecoveryReport struct {
	// SchemaVersion is SchemaVersion.
	SchemaVersion string `json:"schemaVersion"`
	// ReadAt is when the control plane was read, RFC 3339: the moment
	// the clusters recover.
	ReadAt string `json:"readAt"`
	// Recovered are the clusters that recover, by the selector given.
	Recovered Failed `json:"recovered"`
	// WindowSeconds and MaxInFlight are the failback flags the plan used;
	// ReadyAfterSeconds what it assumed of the returning copies.
	WindowSeconds     float64 `json:"windowSeconds"`
	MaxInFlight       int     `json:"maxInFlight"`
	ReadyAfterSeconds float64 `json:"readyAfterSeconds"`
	// TaintsGoneSeconds is when the last taint the recovered clusters carry
	// goes, by the ClusterTaintPolicies' removeOnMismatchSeconds (the
	// cluster controller's not-ready taint at once).
	TaintsGoneSeconds float64 `json:"taintsGoneSeconds"`
	// PerSecond is the rate a failback's permit is taken at, once the
	// clusters have recovered.
	PerSecond float64 `json:"perSecond"`
	// Failbacks are the bindings whose record names a recovered cluster,
	// in the order they go (those that do not go after, by key).
	Failbacks []Failback `json:"failbacks"`
	// Totals counts them by outcome; DoneSeconds is when the last goes,
	// after ReadAt (0 when none does).
	Totals      RecoveryTotals `json:"totals"`
	DoneSeconds float64        `json:"doneSeconds"`
	// Notes are what else a reader should know.
	Notes []string `json:"notes"`
}

// Failback is one binding's failback in a recovery plan.
type Failback struct {
	Kind    string `json:"kind"`
	Binding string `json:"binding"`
	// Origin is the recovered cluster it goes back to (or waits for).
	Origin  string `json:"origin"`
	Outcome string `json:"outcome"`
	// AtSeconds is when it goes, after ReadAt.
	AtSeconds float64 `json:"atSeconds"`
	// To is the fresh placement predicted; Leaving the clusters whose
	// copies wait in graceful eviction tasks until the returning ones are
	// healthy.
	To      []Target `json:"to"`
	Leaving []string `json:"leaving"`
	// Reason says why, as the controller's Event would.
	Reason string `json:"reason"`
}

// RecoveryTotals counts failbacks by outcome.
type RecoveryTotals struct {
	Back      int `json:"back"`
	NotPlaced int `json:"notPlaced"`
	Waits     int `json:"waits"`
	Off       int `json:"off"`
}

// PlanRecovery plays cfg.Recovery on in at cfg.Now: the clusters turn
// Ready then and lose the taints their ClusterTaintPolicies remove on
// recovery (and the cluster controller's not-ready taint); every binding
// whose failover record (karmada.FailedOverFromAnnotation) names one of
// them is decided by the fork's failback planner (engine.PlanFailback:
// Karmada's algorithm in process, the Ledger) once the window has passed,
// paced by the rate and --max-failbacks-in-flight as the controller paces
// them. The error is an *ExitError for a recovery that names nothing the
// fleet has, or a policy the Evaluator refuses.
func PlanRecovery(in *Input, cfg RecoveryConfig) (*RecoveryReport, error) {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 10
	}
	if cfg.ReadyAfter <= 0 {
		cfg.ReadyAfter = time.Minute
	}
	if cfg.CapacityHold <= 0 {
		cfg.CapacityHold = engine.DefaultHold
	}
	if err := cfg.Rates.Validate(); err != nil {
		return nil, usageErr("rates: %v", err)
	}
	names, err := cfg.Recovery.resolve(in.Clusters)
	if err != nil {
		return nil, err
	}
	ev, err := taintpolicy.NewEvaluator(in.Policies)
	if err != nil {
		return nil, &ExitError{Code: ExitBadObject, Err: fmt.Errorf("whatif: the ClusterTaintPolicies: %w", err)}
	}
	now := cfg.Now
	r := &RecoveryReport{
		SchemaVersion: SchemaVersion, ReadAt: now.UTC().Format(time.RFC3339),
		Recovered:     Failed{By: cfg.Recovery.By, Names: cfg.Recovery.Names, Clusters: names},
		WindowSeconds: cfg.Window.Seconds(), MaxInFlight: cfg.MaxInFlight, ReadyAfterSeconds: cfg.ReadyAfter.Seconds(),
		Failbacks: []Failback{}, Notes: []string{},
	}
	isRecovered := map[string]bool{}
	for _, n := range names {
		isRecovered[n] = true
	}

	// The fleet once the recovered clusters' taints are gone.
	after := make(map[string]*clusterv1alpha1.Cluster, len(in.Clusters))
	var gone time.Time
	for i := range in.Clusters {
		c := &in.Clusters[i]
		if !isRecovered[c.Name] {
			after[c.Name] = c
			continue
		}
		rc, at, note := recoverCluster(c, now, ev)
		after[c.Name] = rc
		gone = maxTime(gone, at)
		if note != "" {
			r.Notes = append(r.Notes, note)
		}
	}
	if !gone.IsZero() {
		r.TaintsGoneSeconds = gone.Sub(now).Seconds()
	}
	fleet := &engine.Fleet{}
	var clusters []*clusterv1alpha1.Cluster
	for _, name := range sortedKeys(after) {
		if _, err := fleet.Set(after[name]); err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("cluster %s is left out of the fleet the planner sees: %v", name, err))
			continue
		}
		clusters = append(clusters, after[name])
	}
	sched := scheduling.NewScheduler(clusters)
	var ledger *engine.Ledger
	if !cfg.DisableLedger {
		if ledger, err = engine.NewLedger(engine.WithHold(cfg.CapacityHold)); err != nil {
			return nil, err
		}
	}
	rates, err := newRateModel(cfg.Rates, after, after, nil, now)
	if err != nil {
		return nil, err
	}
	r.PerSecond = rates.limiter.Rate()

	// The bindings that failed over from a recovered cluster, by kind and
	// key, as the controller's informers list them.
	type candidate struct {
		kind, key string
		obj       runtime.Object
		origin    string
	}
	var cands []*candidate
	consider := func(kind, key string, obj runtime.Object, annotations map[string]string) {
		rec, err := failback.ParseRecord(annotations[karmada.FailedOverFromAnnotation])
		origin := ""
		for _, o := range rec {
			if isRecovered[o.Cluster] {
				origin = o.Cluster
				break
			}
		}
		switch {
		case err != nil:
			r.Failbacks = append(r.Failbacks, Failback{Kind: kind, Binding: key, Outcome: FailbackWaits, To: []Target{}, Leaving: []string{},
				Reason: fmt.Sprintf("its record cannot be read: %v", err)})
		case origin != "":
			cands = append(cands, &candidate{kind: kind, key: key, obj: obj, origin: origin})
		}
	}
	for i := range in.ResourceBindings {
		rb := in.ResourceBindings[i].DeepCopy()
		consider(KindResourceBinding, rb.Namespace+"/"+rb.Name, rb, rb.Annotations)
	}
	for i := range in.ClusterResourceBindings {
		crb := in.ClusterResourceBindings[i].DeepCopy()
		consider(KindClusterResourceBinding, crb.Name, crb, crb.Annotations)
	}
	slices.SortFunc(cands, func(a, b *candidate) int {
		return cmp.Or(strings.Compare(a.kind, b.kind), strings.Compare(a.key, b.key))
	})

	// Played in time: each binding is decided when its window ends (the
	// earliest it may go), then as the rate and the failbacks in flight
	// let it; the controller decides again every 30s, which the plan
	// does not wait for (its times are the earliest).
	var ends []time.Time // when each failback in flight ends
	t := now
	var outcomes []Failback
	for _, c := range cands {
		window, _ := karmada.FailbackWindow(metaOf(c.obj).GetAnnotations(), cfg.Window)
		fb := Failback{Kind: c.kind, Binding: c.key, Origin: c.origin, To: []Target{}, Leaving: []string{}}
		if window <= 0 {
			fb.Outcome, fb.Reason = FailbackOff, "no failback stabilization window applies: give --failback-stabilization-window (in --controller-flags) or annotate the binding"
			outcomes = append(outcomes, fb)
			continue
		}
		// The window counts from the origin's Ready lastTransitionTime,
		// which a cluster already Ready keeps: a plan made after the
		// recovery counts what has passed.
		at := maxTime(t, readySince(after[c.origin], now).Add(window))
		// The taints must be gone too: a window shorter than the policies'
		// removal waits for it.
		at = maxTime(at, gone)
		// The failbacks in flight: one ends before another starts.
		slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
		for len(ends) > 0 && !ends[0].After(at) {
			ends = ends[1:]
		}
		if len(ends) >= cfg.MaxInFlight {
			at = maxTime(at, ends[0])
			ends = ends[1:]
		}
		step, err := engine.PlanFailback(engine.FailbackOptions{Fleet: fleet, Scheduler: sched, Window: cfg.Window, Ledger: ledger}, at, c.obj)
		paused := false
		if err == nil && step.Action == engine.FailbackGo {
			// The permit, as the controller takes it once the planner
			// says go; none while the rate is paused.
			for {
				_, _, ok, next := rates.TakeDomainAt(at, firstDomain(rates.domainsOf(after[c.origin])))
				if ok {
					break
				}
				if paused = next.IsZero(); paused {
					step.Hold.Release()
					break
				}
				at = maxTime(next, at.Add(time.Millisecond))
			}
		}
		switch {
		case err != nil:
			fb.Outcome, fb.Reason = FailbackWaits, err.Error()
		case paused:
			fb.Outcome, fb.Reason = FailbackWaits, "the eviction rate is paused once the clusters have recovered: a failback takes a permit of it"
		case step.Action == engine.FailbackGo:
			fb.Outcome, fb.Reason, fb.AtSeconds = FailbackBack, step.Why, at.Sub(now).Seconds()
			for _, p := range step.Placement {
				fb.To = append(fb.To, Target{Name: p.Name, Replicas: p.Replicas})
			}
			fb.Leaving = append(fb.Leaving, step.Leaving...)
			ends = append(ends, at.Add(cfg.ReadyAfter))
			t = at
			r.DoneSeconds = fb.AtSeconds
		case step.Action == engine.FailbackNotPlaced:
			fb.Outcome, fb.Reason = FailbackNotPlaced, step.Why
			for _, p := range step.Placement {
				fb.To = append(fb.To, Target{Name: p.Name, Replicas: p.Replicas})
			}
		case step.Action == engine.FailbackWait:
			fb.Outcome, fb.Reason = FailbackWaits, step.Why
		default:
			fb.Outcome, fb.Reason = FailbackOff, step.Why
		}
		outcomes = append(outcomes, fb)
	}
	slices.SortStableFunc(outcomes, func(a, b Failback) int {
		ab, bb := a.Outcome == FailbackBack, b.Outcome == FailbackBack
		switch {
		case ab && bb:
			return cmp.Compare(a.AtSeconds, b.AtSeconds)
		case ab:
			return -1
		case bb:
			return 1
		}
		return 0
	})
	r.Failbacks = append(outcomes, r.Failbacks...)
	for _, f := range r.Failbacks {
		switch f.Outcome {
		case FailbackBack:
			r.Totals.Back++
		case FailbackNotPlaced:
			r.Totals.NotPlaced++
		case FailbackWaits:
			r.Totals.Waits++
		case FailbackOff:
			r.Totals.Off++
		}
	}
	if len(cands) == 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("no binding records a failover from %s (annotation %s): nothing goes back",
			cfg.Recovery, karmada.FailedOverFromAnnotation))
	}
	r.Notes = append(r.Notes, fmt.Sprintf("times are the earliest: each failback is assumed to end %v after it starts (the returning copies healthy); the controller decides again every 30s", cfg.ReadyAfter),
		"bindings due at the same moment take the rate's permits in the order the controller's workqueue gives them, not necessarily the order listed: the set of times is the prediction",
		"the API server keeps lastTransitionTime in whole seconds: a window may end up to a second before the time counted from the recovery")
	return r, nil
}

// recoverCluster is c Ready since now, with the taints the policies remove
// on recovery gone and the cluster controller's not-ready taint too; at is
// when the last goes.
func recoverCluster(c *clusterv1alpha1.Cluster, now time.Time, ev *taintpolicy.Evaluator) (*clusterv1alpha1.Cluster, time.Time, string) {
	rc := c.DeepCopy()
	ready := metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: "WhatIf",
		Message: "played by fleetsim --what-if --recover", LastTransitionTime: metav1.NewTime(now)}
	if i := slices.IndexFunc(rc.Status.Conditions, func(x metav1.Condition) bool { return x.Type == ready.Type }); i >= 0 {
		if rc.Status.Conditions[i].Status == metav1.ConditionTrue {
			ready.LastTransitionTime = rc.Status.Conditions[i].LastTransitionTime
		}
		rc.Status.Conditions[i] = ready
	} else {
		rc.Status.Conditions = append(rc.Status.Conditions, ready)
	}
	rc.Spec.Taints = slices.DeleteFunc(rc.Spec.Taints, func(x corev1.Taint) bool { return x.Key == notReadyTaintKey })
	conv, err := karmada.FromCluster(rc)
	if err != nil {
		return rc, now, fmt.Sprintf("cluster %s's taints cannot be read (%v): no policy is evaluated on it", c.Name, err)
	}
	at := now
	for range 16 {
		res := ev.Evaluate(conv, at)
		conv.Taints = res.Taints
		if res.RequeueAfter <= 0 {
			break
		}
		at = at.Add(res.RequeueAfter)
	}
	rc.Spec.Taints = conv.Taints
	note := ""
	if failover.IsFaulty(conv) {
		note = fmt.Sprintf("cluster %s keeps a NoExecute or PreferNoExecute taint once Ready (no policy removes it): nothing goes back to it", c.Name)
	}
	return rc, at, note
}

// readySince is when c turned Ready, by its condition; now when it has
// none.
func readySince(c *clusterv1alpha1.Cluster, now time.Time) time.Time {
	if i := slices.IndexFunc(c.Status.Conditions, func(x metav1.Condition) bool { return x.Type == clusterv1alpha1.ClusterConditionReady }); i >= 0 {
		return c.Status.Conditions[i].LastTransitionTime.Time
	}
	return now
}

// firstDomain is the domain a failback to a cluster of domains is paced
// in, as the controller paces it: the first ("" under the fleet rule).
func firstDomain(domains []string) []string {
	if len(domains) == 0 {
		return []string{""}
	}
	return domains[:1]
}

// metaOf is a binding's metadata.
func metaOf(o runtime.Object) metav1.Object {
	switch b := o.(type) {
	case *workv1alpha2.ResourceBinding:
		return b
	case *workv1alpha2.ClusterResourceBinding:
		return b
	}
	return &metav1.ObjectMeta{}
}

// WriteRecoveryJSON writes r as one indented JSON object.
func WriteRecoveryJSON(w io.Writer, r *RecoveryReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteRecoveryTable writes r for a person: what recovers, the failbacks
// in the order they go, and when the last goes.
func WriteRecoveryTable(w io.Writer, r *RecoveryReport) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "what if %s recovers now (%s)\n", r.Recovered.By+"="+strings.Join(r.Recovered.Names, ","), r.ReadAt)
	fmt.Fprintf(b, "recovers: %d clusters (%s); taints gone after %s; failback window %s, at most %d in flight, %s/s\n\n",
		len(r.Recovered.Clusters), abbreviate(r.Recovered.Clusters, 8), fmtSeconds(r.TaintsGoneSeconds), fmtSeconds(r.WindowSeconds),
		r.MaxInFlight, trim(r.PerSecond))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BINDING\tORIGIN\tOUTCOME\tAT\tTO / WHY")
	for i, f := range r.Failbacks {
		if i == MaxRows {
			fmt.Fprintf(tw, "… %d more\t\t\t\t\n", len(r.Failbacks)-MaxRows)
			break
		}
		at, to := "-", f.Reason
		if f.Outcome == FailbackBack {
			at = fmtSeconds(f.AtSeconds)
			parts := make([]string, len(f.To))
			for j, t := range f.To {
				parts[j] = fmt.Sprintf("%s:%d", t.Name, t.Replicas)
			}
			to = strings.Join(parts, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Binding, orDash(f.Origin), f.Outcome, at, to)
	}
	tw.Flush()
	fmt.Fprintf(b, "\n%d back, %d not placed, %d waiting, %d off", r.Totals.Back, r.Totals.NotPlaced, r.Totals.Waits, r.Totals.Off)
	if r.Totals.Back > 0 {
		fmt.Fprintf(b, "; the last goes %s after the recovery", fmtSeconds(r.DoneSeconds))
	}
	fmt.Fprintln(b)
	for _, n := range r.Notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

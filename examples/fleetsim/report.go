package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/failoverkit/failover/ratelimit"
)

// report is the outcome of a run, which the summary and --json print.
type report struct {
	Scenario     string
	Source       string
	Description  string
	Start        time.Time
	Duration     time.Duration
	Interval     time.Duration
	Clusters     int
	Bindings     [2]int // per queue
	Rates        ratelimit.Config
	Workers      int
	Totals       counts
	TasksOpen    int
	TasksDoneBy  map[string]int
	TasksOpenBy  map[string]int
	Abandoned    map[string]int    // by sentence
	AbandonCodes map[string]string // the sentences' codes
	AbandonedBy  map[string]*abandonedGroup
	Phases       []segment
	Lines        []progressLine // counts are running totals
	Events       []event
	Checks       []checkResult
	Pass         bool

	// StormHolds are the failure storm's holds and Frozen the operator's
	// freezes (To zero: on at the end); Held and FrozenFor their total
	// lengths.
	StormHolds []span
	Frozen     []span
	Held       time.Duration
	FrozenFor  time.Duration
	// CutOffEvicted counts the evictions from clusters cut off at the time
	// (timeline events with cutOff).
	CutOffEvicted int
	// Transit is, per binding group, its budget of clusters in transit and
	// the most one of its bindings had at once.
	Transit map[string]transitPeak
	// Failback is what the failback controller did; nil when the scenario
	// does not turn it on.
	Failback *failbackReport
	// AppFailover is what the application failover controller did; nil
	// when the scenario does not turn it on.
	AppFailover *appFailoverReport
}

type checkResult struct {
	Name    string
	Pass    bool
	Details []string
}

func (s *sim) report() *report {
	s.accounted()
	s.w.rec.checkFreeze()
	s.checkRealFailures()
	segs := s.w.rec.analyse(s.phases, s.faulty, s.clk.Now())
	w := s.w
	r := &report{
		Scenario: s.sc.Name, Source: s.sc.Source, Description: s.sc.Description,
		Start: s.sc.Start, Duration: s.sc.Duration, Interval: s.sc.Interval,
		Clusters: len(w.clusters), Rates: s.cfg, Workers: s.sc.Workers,
		Phases: segs, Lines: s.lines, Events: s.events,
	}
	r.TasksOpenBy = map[string]int{}
	for _, b := range w.bindings {
		r.Bindings[b.queue]++
		r.TasksOpen += len(b.gb.Tasks)
		for _, t := range b.gb.Tasks {
			r.TasksOpenBy["purgeMode "+string(t.PurgeMode.Canonical())]++
		}
	}
	rec := w.rec
	r.Totals = rec.c
	r.TasksDoneBy = rec.tasksBy
	r.Abandoned = rec.reasons
	r.AbandonCodes = rec.reasonCodes
	r.AbandonedBy = rec.abandonedBy
	end := s.clk.Now()
	r.StormHolds, r.Frozen = rec.holds, rec.frozen
	r.Held, r.FrozenFor = held(rec.holds, end), held(rec.frozen, end)
	r.CutOffEvicted = rec.cutOffEvicted
	r.Transit = map[string]transitPeak{}
	for g, p := range rec.transit {
		r.Transit[g] = *p
	}
	r.Failback = s.failbackReport()
	s.checkFailbacks()
	s.appCheckEnd()
	r.AppFailover = s.appFailoverReport()
	order := checkOrder
	if r.Failback != nil {
		order = append(slices.Clip(order), failbackChecks...)
	}
	if r.AppFailover != nil {
		order = append(slices.Clip(order), appFailoverChecks...)
	}
	r.Pass = true
	for _, name := range order {
		v := rec.violations[name]
		c := checkResult{Name: name, Pass: len(v) == 0}
		if len(v) > 5 {
			c.Details = append(v[:5:5], fmt.Sprintf("… and %d more", len(v)-5))
		} else {
			c.Details = v
		}
		r.Pass = r.Pass && c.Pass
		r.Checks = append(r.Checks, c)
	}
	return r
}

func printHeader(out io.Writer, s *sim) {
	sc := s.sc
	fmt.Fprintf(out, "fleetsim: scenario %q (%s)\n", sc.Name, sc.Source)
	if sc.Description != "" {
		for _, l := range wrap(sc.Description, 100) {
			fmt.Fprintf(out, "  %s\n", l)
		}
		fmt.Fprintln(out)
	}
	groups := map[string]int{}
	var order []string
	for _, c := range sc.Clusters {
		g := strings.TrimPrefix(c.Provider+"/"+c.Region, "/")
		if g == "" {
			g = "(no region)"
		}
		if groups[g] == 0 {
			order = append(order, g)
		}
		groups[g]++
	}
	parts := make([]string, len(order))
	for i, g := range order {
		parts[i] = fmt.Sprintf("%s %d", g, groups[g])
	}
	var nb [2]int
	kinds := map[string]int{}
	for _, b := range s.w.bindings {
		nb[b.queue]++
		kinds[b.spec.Resource.Kind]++
	}
	kindList := sortedByCount(kinds)
	var policies []string
	for _, p := range sc.Policies {
		policies = append(policies, p.Name)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "  fleet:\t%s in %s: %s\n", plural(len(sc.Clusters), "cluster", "clusters"), plural(len(order), "region", "regions"), strings.Join(parts, ", "))
	fmt.Fprintf(tw, "  bindings:\t%s, %s (%s)\n", plural(nb[qRB], "ResourceBinding", "ResourceBindings"), plural(nb[qCRB], "ClusterResourceBinding", "ClusterResourceBindings"), strings.Join(kindList, ", "))
	fmt.Fprintf(tw, "  taint policies:\t%s\n", strings.Join(policies, ", "))
	fmt.Fprintf(tw, "  rates:\t--%s=%g --%s=%g --%s=%g --%s=%d --%s=%s\n",
		ratelimit.FlagResourceEvictionRate, s.cfg.ResourceEvictionRate,
		ratelimit.FlagSecondaryResourceEvictionRate, s.cfg.SecondaryResourceEvictionRate,
		ratelimit.FlagUnhealthyClusterThreshold, s.cfg.UnhealthyClusterThreshold,
		ratelimit.FlagLargeClusterNumThreshold, s.cfg.LargeClusterNumThreshold,
		ratelimit.FlagDisruptionDomain, s.cfg.DisruptionDomain)
	fmt.Fprintf(tw, "  queues:\t%s and %s, %s each, sharing one Limiter\n", queueNames[qRB], queueNames[qCRB], plural(sc.Workers, "worker", "workers"))
	if af := s.w.appf; af != nil {
		fmt.Fprintf(tw, "  application failover:\ton for %s (unknown %s, bad-rollout threshold %v, start-up grace %ds)\n",
			appWorkloads(af.bindings), af.unknownPolicy(), af.threshold, af.opts.StartupGraceSeconds)
	}
	if sc.CompletesAfter > 0 {
		limit := "unlimited"
		if sc.MaxInFlight > 0 {
			limit = fmt.Sprintf("at most %d per queue", sc.MaxInFlight)
		}
		fmt.Fprintf(tw, "  evictions:\tfinish in the background (ErrInProgress, Complete %v later), %s\n", sc.CompletesAfter, limit)
	}
	pace := "as fast as it goes"
	if s.speed > 0 {
		pace = fmt.Sprintf("%g simulated seconds per second", s.speed)
	}
	fmt.Fprintf(tw, "  clock:\tsimulated, %v from %s, a line every %v, %s\n", sc.Duration, sc.Start.Format(time.RFC3339), sc.Interval, pace)
	tw.Flush()
	fmt.Fprintln(out)
}

func printSummary(out io.Writer, r *report) {
	fmt.Fprintln(out)
	fmt.Fprintln(out, "phases (a new row where the story or the rate in force changes):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "from\tto\tphase\tmax faulty\trate in force\tachieved\tevicted\tabandoned\tcancelled\t")
	for _, s := range r.Phases {
		achieved := "—"
		if s.measured() {
			achieved = fmt.Sprintf("%.3f/s (%+.1f%%)", s.Achieved, 100*(s.Achieved-s.Rate)/s.Rate)
		}
		phase := s.Phase
		if phase == "" {
			phase = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%d\t%d\t%d\t\n",
			fmtClock(s.From.Sub(r.Start)), fmtClock(s.To.Sub(r.Start)), phase, s.MaxFaulty, r.Clusters,
			fmtRate(s.Rate), achieved, s.Evicted, s.Abandoned, s.Cancelled)
	}
	tw.Flush()
	t := r.Totals
	fmt.Fprintln(out)
	fmt.Fprintf(out, "totals: %d queued (%d rb, %d crb), %d evicted, %d abandoned, %d cancelled, %d failed\n",
		sum2(t.Queued), t.Queued[qRB], t.Queued[qCRB], sum2(t.Evicted), sum2(t.Abandoned), sum2(t.Cancelled), sum2(t.Failed))
	fmt.Fprintf(out, "graceful eviction tasks: %d done (%s); %d still open (%s)\n", t.TasksDone, fmtMap(r.TasksDoneBy), r.TasksOpen, fmtMap(r.TasksOpenBy))
	if t.OntoFaulty > 0 {
		fmt.Fprintf(out, "evictions whose replicas Karmada's scheduler added to a faulty cluster the workload still ran on (evicted again from there): %d\n", t.OntoFaulty)
	}
	if len(r.AbandonedBy) > 0 {
		fmt.Fprintln(out, "abandoned by the pre-scheduling check (nowhere to go), by workload, with the first reason:")
		counts := map[string]int{}
		for g, a := range r.AbandonedBy {
			counts[g] = a.Count
		}
		for _, g := range sortedKeysByCount(counts) {
			a := r.AbandonedBy[g]
			fmt.Fprintf(out, "  %3d %s (%s)\n", a.Count, g, a.Code)
			for i, l := range wrap("e.g. "+a.Example, 100) {
				if i > 0 {
					l = "     " + l
				}
				fmt.Fprintf(out, "      %s\n", l)
			}
		}
	}
	printSafety(out, r)
	printFailback(out, r.Failback)
	printAppFailover(out, r.AppFailover)
	fmt.Fprintln(out)
	fmt.Fprintln(out, "checks:")
	passed := 0
	for _, c := range r.Checks {
		mark := "FAIL"
		if c.Pass {
			mark = "ok  "
			passed++
		}
		fmt.Fprintf(out, "  %s %s\n", mark, c.Name)
		for _, d := range c.Details {
			fmt.Fprintf(out, "         %s\n", d)
		}
	}
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(out, "verdict: %s (%d of %d checks passed)\n", verdict, passed, len(r.Checks))
}

func fmtMap(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	return strings.Join(sortedByCount(m), ", ")
}

func sortedByCount(m map[string]int) []string {
	keys := sortedKeysByCount(m)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return out
}

// sortedKeysByCount returns m's keys, the largest count first.
func sortedKeysByCount(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// printSafety says what the safety features did: the failure storm's holds,
// the operator's freezes, the evictions from cut-off clusters and the most
// clusters in transit at once per workload.
func printSafety(out io.Writer, r *report) {
	spans := func(ss []span) string {
		parts := make([]string, len(ss))
		for i, s := range ss {
			to := "the end"
			if !s.To.IsZero() {
				to = fmtClock(s.To.Sub(r.Start))
			}
			parts[i] = fmtClock(s.From.Sub(r.Start)) + "–" + to
		}
		return strings.Join(parts, ", ")
	}
	if len(r.StormHolds) > 0 {
		fmt.Fprintf(out, "failure storm: evictions held %v in all (%s)\n", r.Held, spans(r.StormHolds))
	}
	if r.CutOffEvicted > 0 || len(r.StormHolds) > 0 {
		fmt.Fprintf(out, "evictions from clusters cut off at the time: %d\n", r.CutOffEvicted)
	}
	if len(r.Frozen) > 0 {
		fmt.Fprintf(out, "freeze: evictions frozen %v in all (%s)\n", r.FrozenFor, spans(r.Frozen))
	}
	if len(r.Transit) == 0 {
		return
	}
	groups := slices.Sorted(maps.Keys(r.Transit))
	parts := make([]string, 0, len(groups))
	for i, g := range groups {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("… and %d more", len(groups)-10))
			break
		}
		budget := "no budget"
		if b := r.Transit[g].Budget; b > 0 {
			budget = fmt.Sprintf("budget %d", b)
		}
		parts = append(parts, fmt.Sprintf("%s %d (%s)", g, r.Transit[g].Peak, budget))
	}
	fmt.Fprintf(out, "most clusters in transit at once, per workload: %s\n", strings.Join(parts, ", "))
}

// checkRealFailures holds a scenario with a cut-off (a cutOff event) to
// handling the failures that were real: at the end, no item of a cluster
// still faulty and not cut off waits in a queue. A storm's hold must delay
// them, not strand them.
func (s *sim) checkRealFailures() {
	if !slices.ContainsFunc(s.sc.Timeline, func(e timelineEvent) bool { return e.CutOff }) {
		return
	}
	w := s.w
	for i, q := range w.queues {
		n, example := 0, ""
		for _, it := range q.Pending() {
			if c := w.byName[it.Cluster]; c != nil && c.faulty && c.cutOffAt.IsZero() {
				if n++; example == "" {
					example = it.Key + " from " + it.Cluster
				}
			}
		}
		if n > 0 {
			w.rec.violation(checkRealFailure, fmt.Sprintf("%s: %s of clusters that really failed still queued at the end, e.g. %s",
				queueNames[i], plural(n, "item", "items"), example))
		}
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/failoverkit/failover/ratelimit"
)

// This file is --compare-domains: one timeline run under the fleet rule and
// under a domain rule, side by side.

// outcome is what --compare-domains shows of one run.
type outcome struct {
	Domain ratelimit.Domain
	// Left is how long after the first eviction was queued the last one
	// was served. It is the time until every evictable workload had left
	// the faulty clusters only when Drained: no queued eviction was
	// cancelled because its cluster recovered first, and none was still
	// queued at the end.
	Left    time.Duration
	Drained bool
	// Recovered is how long after the first eviction was queued the last
	// faulty cluster recovered; 0 when one is still faulty at the end.
	Recovered time.Duration
	// Served are the evictions handled (the workload left); Abandoned the
	// handler calls that found no target; Cancelled the queued evictions
	// dropped unserved when their cluster recovered; Queued those still
	// queued at the end.
	Served, Abandoned, Cancelled, Queued int
	// PeakRate is the highest total rate in force at an eviction;
	// PeakMinute the most evictions in any minute.
	PeakRate   float64
	PeakMinute int
	Checks     []checkResult
	Pass       bool
}

// outcome sums up the finished run s.
func (s *sim) outcome(r *report) outcome {
	o := outcome{
		Domain: s.cfg.DisruptionDomain, Checks: r.Checks, Pass: r.Pass,
		Served: sum2(r.Totals.Evicted), Abandoned: sum2(r.Totals.Abandoned), Cancelled: sum2(r.Totals.Cancelled),
		Queued: s.w.queues[qRB].Len() + s.w.queues[qCRB].Len(),
	}
	if o.Domain == "" {
		o.Domain = ratelimit.DomainFleet
	}
	var first, last time.Time
	for _, e := range s.events {
		if e.Kind == eventQueued {
			first = s.sc.Start.Add(e.T)
			break
		}
	}
	var permits []time.Time
	for _, e := range s.w.rec.log {
		switch e.kind {
		case entryPermit:
			if e.result == "evicted" { // an abandon gives its permit back
				o.PeakRate = max(o.PeakRate, e.rate)
				permits = append(permits, e.t)
				last = e.t
			}
		}
	}
	if !first.IsZero() && !last.IsZero() {
		o.Left = last.Sub(first)
	}
	if n := len(s.faulty); n > 0 && s.faulty[n-1].n == 0 && !first.IsZero() {
		o.Recovered = s.faulty[n-1].t.Sub(first)
	}
	o.Drained = o.Cancelled == 0 && o.Queued == 0
	for i, j := 0, 0; j < len(permits); j++ {
		for permits[j].Sub(permits[i]) >= time.Minute {
			i++
		}
		o.PeakMinute = max(o.PeakMinute, j-i+1)
	}
	return o
}

// compareDomains runs the scenario under the fleet rule and under domain
// and prints their outcomes side by side. It returns errChecksFailed when a
// check failed in either.
func compareDomains(ctx context.Context, o *options, domain ratelimit.Domain, out io.Writer) error {
	sc, runs, err := runDomains(ctx, o, ratelimit.DomainFleet, domain)
	if err != nil {
		return err
	}
	printComparison(out, sc.Name, sc.Source, runs)
	for _, r := range runs {
		if !r.Pass {
			return errChecksFailed
		}
	}
	return nil
}

// runDomains runs o's scenario under each of domains, each on a fresh
// scenario and simulated clock, and returns their outcomes.
func runDomains(ctx context.Context, o *options, domains ...ratelimit.Domain) (*scenario, []outcome, error) {
	var runs []outcome
	var sc *scenario
	for _, d := range domains {
		var err error
		if sc, err = readScenario(o.scenario); err != nil {
			return nil, nil, err
		}
		cfg, err := o.rateConfig(sc)
		if err != nil {
			return nil, nil, err
		}
		cfg.DisruptionDomain = d
		s, err := newSim(sc, cfg, prometheus.NewRegistry(), nil, 0)
		if err != nil {
			return nil, nil, err
		}
		if err := s.run(ctx); err != nil {
			return nil, nil, fmt.Errorf("fleetsim: --%s=%s: stopped at %s: %w", ratelimit.FlagDisruptionDomain, d, fmtClock(s.clk.Now().Sub(sc.Start)), err)
		}
		runs = append(runs, s.outcome(s.report()))
	}
	return sc, runs, nil
}

// printComparison prints the outcomes side by side.
func printComparison(out io.Writer, name, source string, runs []outcome) {
	fmt.Fprintf(out, "fleetsim: scenario %q (%s), the same timeline under each --%s\n\n", name, source, ratelimit.FlagDisruptionDomain)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(label string, cell func(o outcome) string) {
		fmt.Fprintf(tw, "  %s", label)
		for _, o := range runs {
			fmt.Fprintf(tw, "\t%s", cell(o))
		}
		fmt.Fprintln(tw)
	}
	row("", func(o outcome) string { return o.Domain.String() })
	row("every evictable workload off the faulty clusters", func(o outcome) string {
		switch {
		case o.Drained:
			return fmtDuration(o.Left) + " after the first eviction was queued"
		case o.Cancelled > 0:
			return "never: " + plural(o.Cancelled, "eviction", "evictions") + " cancelled when clusters recovered"
		default:
			return fmt.Sprintf("not by the end: %d still queued", o.Queued)
		}
	})
	row("the last faulty cluster recovered", func(o outcome) string {
		if o.Recovered == 0 {
			return "not by the end"
		}
		return fmtDuration(o.Recovered) + " after the first eviction was queued"
	})
	row("evictions served", func(o outcome) string { return fmt.Sprint(o.Served) })
	row("cancelled unserved", func(o outcome) string { return fmt.Sprint(o.Cancelled) })
	row("abandoned (no target)", func(o outcome) string { return fmt.Sprint(o.Abandoned) })
	row("peak total rate in force at an eviction", func(o outcome) string { return fmtRate(o.PeakRate) })
	row("peak evictions in one minute", func(o outcome) string { return fmt.Sprint(o.PeakMinute) })
	row("verdict", func(o outcome) string {
		if o.Pass {
			return "PASS"
		}
		return "FAIL"
	})
	tw.Flush()
	// The checks' names are sentences: they come last on their lines.
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, o := range runs {
		fmt.Fprintf(tw, "  %s\t", o.Domain)
	}
	fmt.Fprintln(tw, "check")
	for i, c := range runs[0].Checks {
		for _, o := range runs {
			mark := "FAIL"
			if o.Checks[i].Pass {
				mark = "ok"
			}
			fmt.Fprintf(tw, "  %s\t", mark)
		}
		fmt.Fprintln(tw, c.Name)
	}
	tw.Flush()
	if len(runs) == 2 && runs[0].Drained && runs[1].Drained && runs[1].Left > 0 {
		fmt.Fprintf(out, "\n%s: every evictable workload left %.1f× sooner than under fleet\n",
			runs[1].Domain, runs[0].Left.Seconds()/runs[1].Left.Seconds())
	}
}

// fmtDuration is d to the second, as "7m10s".
func fmtDuration(d time.Duration) string { return d.Round(time.Second).String() }

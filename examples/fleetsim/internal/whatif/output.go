package whatif

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes r as one indented JSON object.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// MaxRows bounds the rows of each table WriteTable prints; --json has
// them all.
const MaxRows = 40

// WriteTable writes r for a person: the failure and its taints, the rate,
// the evictions by outcome, the survivors' room and the time to drain.
func WriteTable(w io.Writer, r *Report) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "what if %s fails now (%s)\n", r.Failure.By+"="+strings.Join(r.Failure.Names, ","), r.ReadAt)
	fmt.Fprintf(b, "read: %d clusters, %d ClusterTaintPolicies, %d ResourceBindings, %d ClusterResourceBindings\n",
		r.Fleet.Clusters, r.Fleet.ClusterTaintPolicies, r.Fleet.ResourceBindings, r.Fleet.ClusterResourceBindings)
	fmt.Fprintf(b, "fails: %d clusters (%s); faulty before %d, after %d; %d bindings run on them\n\n",
		len(r.Failure.Clusters), abbreviate(r.Failure.Clusters, 8), r.Fleet.FaultyBefore, r.Fleet.FaultyAfter, r.Fleet.BindingsOnFailed)

	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tTAINTS ADDED\tNOTE")
	for i, t := range r.Taints {
		if i == MaxRows {
			fmt.Fprintf(tw, "… %d more\t\t\n", len(r.Taints)-MaxRows)
			break
		}
		var added []string
		for _, a := range t.Added {
			s := a.Key + ":" + a.Effect
			if a.AfterSeconds > 0 {
				s += " after " + fmtSeconds(a.AfterSeconds)
			}
			if a.Policy != "" {
				s += " (" + a.Policy + ")"
			}
			added = append(added, s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Cluster, orDash(strings.Join(added, ", ")), t.Note)
	}
	tw.Flush()

	fmt.Fprintf(b, "\nrate (%s rule): %s/s — %s\n", r.Rate.Rule, trim(r.Rate.PerSecond), r.Rate.Why)
	for _, d := range r.Rate.Domains {
		fmt.Fprintf(b, "  %s: %d of %d faulty, %s, %s/s\n", orDash(d.Name), d.Faulty, d.Clusters, d.State, trim(d.PerSecond))
	}

	fmt.Fprintf(b, "\nbindings on the failed clusters: %d move, %d wait for room then move, %d refused, %d stay, %d paused, %d unplaced; "+
		"%d rescheduled by Karmada's scheduler on its own\n",
		r.Totals.Moves, r.Totals.Waits, r.Totals.Refused, r.Totals.Stays, r.Totals.Paused, r.Totals.Unplaced, r.Totals.Rescheduled)
	if r.Hint != "" {
		fmt.Fprintf(b, "hint: %s\n", r.Hint)
	}
	if r.Totals.WaitsForBudget > 0 {
		fmt.Fprintf(b, "%d wait for their binding's budget of clusters in transit: each goes once a graceful eviction task of its binding ends\n", r.Totals.WaitsForBudget)
	}
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tBINDING\tFROM\tOUTCOME\tTO\tWHY")
	// By when they go; those that never go last, in queue order.
	order := make([]Eviction, len(r.Evictions))
	copy(order, r.Evictions)
	slices.SortStableFunc(order, func(a, b Eviction) int {
		switch {
		case a.AtSeconds == nil && b.AtSeconds == nil:
			return 0
		case a.AtSeconds == nil:
			return 1
		case b.AtSeconds == nil:
			return -1
		}
		return cmp.Compare(*a.AtSeconds, *b.AtSeconds)
	})
	for i, e := range order {
		if i == MaxRows {
			fmt.Fprintf(tw, "\t… %d more (--json lists them all)\t\t\t\t\n", len(r.Evictions)-MaxRows)
			break
		}
		at := "-"
		if e.AtSeconds != nil {
			at = fmtSeconds(*e.AtSeconds)
		}
		var to []string
		for _, t := range e.To {
			to = append(to, fmt.Sprintf("%s×%d", t.Name, t.Replicas))
		}
		why := e.Code
		if e.Outcome != OutcomeMoves && e.Reason != "" {
			why += ": " + e.Reason
		}
		name := e.Binding
		if e.Kind == KindClusterResourceBinding {
			name = "crb/" + name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s×%d\t%s\t%s\t%s\n", at, name, e.Cluster, e.Replicas, e.Outcome, orDash(strings.Join(to, ", ")), why)
	}
	tw.Flush()

	fmt.Fprintf(b, "\nsurviving clusters' room (pods, from their resource summaries):\n")
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CLUSTER\tREGION\tBEFORE\tARRIVING\tAFTER\tBINDINGS\t")
	rows, quiet := 0, 0
	for _, c := range r.Clusters {
		if c.Arriving == 0 && len(r.Clusters) > MaxRows {
			quiet++
			continue
		}
		if rows == MaxRows {
			fmt.Fprintf(tw, "…\t\t\t\t\t\t\n")
			break
		}
		rows++
		before, after := fmt.Sprint(c.PodsBefore), fmt.Sprint(c.PodsAfter)
		if !c.Reported {
			before, after = "no summary", "no summary"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t\n", c.Name, orDash(c.Region), before, c.Arriving, after, c.Bindings)
	}
	tw.Flush()
	if quiet > 0 {
		fmt.Fprintf(b, "(%d other surviving clusters receive nothing)\n", quiet)
	}

	fmt.Fprintf(b, "\ntime to drain: ")
	if r.Drain.Seconds != nil {
		fmt.Fprintf(b, "%s — %s\n", fmtSeconds(*r.Drain.Seconds), r.Drain.Why)
	} else {
		fmt.Fprintf(b, "never at this rate — %s\n", r.Drain.Why)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func trim(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

func abbreviate(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(", … %d more", len(names)-n)
}

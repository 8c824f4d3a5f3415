package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/failoverkit/failover/ratelimit"
)

// plural is "1 worker" or "n workers".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// fmtPercent shows a fraction as a percentage with at most one decimal and
// no trailing ".0": 0.625 is "62.5%", 0.6 is "60%". Whole percents would
// show 5 and 3 of 8 (62.5% and 37.5%) as 62% and 38% (halves round to
// even), which no reader expects side by side.
func fmtPercent(f float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(100*f, 'f', 1, 64), ".0") + "%"
}

// maxRuns is how many runs of clusters describeClusters shows before it
// says how many more clusters there are.
const maxRuns = 4

// describeClusters names clusters compactly: a run of at least three
// clusters that are neighbours in fleet (the fleet's names, sorted) reads
// "first … last"; anything else is listed. A range never covers a cluster
// that is not in names.
func describeClusters(names []string, fleet []string) string {
	if len(names) == 0 {
		return "none"
	}
	pos := make(map[string]int, len(fleet))
	for i, n := range fleet {
		pos[n] = i
	}
	names = slices.Clone(names)
	slices.SortFunc(names, func(a, b string) int { return pos[a] - pos[b] })
	type part struct {
		text string
		n    int
	}
	var parts []part
	for i := 0; i < len(names); {
		j := i + 1
		for j < len(names) && pos[names[j]] == pos[names[j-1]]+1 {
			j++
		}
		if j-i < 3 {
			j = i + 1
			parts = append(parts, part{names[i], 1})
		} else {
			parts = append(parts, part{names[i] + " … " + names[j-1], j - i})
		}
		i = j
	}
	var out []string
	shown := 0
	for k, p := range parts {
		if k == maxRuns && k < len(parts)-1 {
			return strings.Join(out, ", ") + fmt.Sprintf(" and %d more", len(names)-shown)
		}
		out = append(out, p.text)
		shown += p.n
	}
	return strings.Join(out, ", ")
}

// describeDomains says, under a domain rule, which domains are disrupted
// and at what rate they evict, e.g. "by region: southeastasia
// FullDisruption 0.50/s, us-east-1 PartialDisruption paused; 1 other
// Normal". A domain with no name is shown as (no region).
func describeDomains(kind ratelimit.Domain, rates map[string]ratelimit.DomainRate) string {
	var parts []string
	normal := 0
	for _, d := range slices.Sorted(maps.Keys(rates)) {
		dr := rates[d]
		if dr.State == ratelimit.Normal {
			normal++
			continue
		}
		name := d
		if name == "" {
			name = "(no " + kind.String() + ")"
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", name, dr.State, fmtRate(dr.Rate)))
	}
	switch {
	case len(parts) == 0:
		parts = append(parts, plural(normal, kind.String(), kind.String()+"s")+" Normal")
	case normal > 0:
		parts = append(parts, fmt.Sprintf("%d other Normal", normal))
	}
	return "by " + kind.String() + ": " + strings.Join(parts, ", ")
}

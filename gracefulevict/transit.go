package gracefulevict

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// TransitBudget is a binding's budget of clusters in transit: at most how
// many of its clusters may be in graceful eviction at once, each an old copy
// kept by a task while its replacement starts elsewhere. 0 is unlimited, as
// is a negative budget, which ParseTransitBudget never returns.
//
// The fleet's rate limits the whole fleet; a budget keeps one application
// from having all its copies in transit at the same time. An eviction the
// budget does not allow waits until a task of the same binding ends: its
// caller should wait without spending a permit and without counting a
// failure (evictionqueue.RetryAfter).
type TransitBudget int

// ParseTransitBudget reads a budget written as text, such as the annotation
// a Karmada fork sets on a binding: a non-negative integer, 0 for
// unlimited. Anything else is an error naming the value. A budget too
// large for an int allows as much as the largest int does, every eviction
// of any binding: it is a budget, not a mistake, and is not refused.
func ParseTransitBudget(s string) (TransitBudget, error) {
	n, err := strconv.Atoi(s)
	if errors.Is(err, strconv.ErrRange) && s[0] != '-' {
		n, err = math.MaxInt, nil
	}
	if err != nil || n < 0 {
		return 0, fmt.Errorf("gracefulevict: budget of clusters in transit %q: want a non-negative integer (0: unlimited)", s)
	}
	return TransitBudget(n), nil
}

// InTransit returns the clusters a binding with these open tasks is in
// transit from, one per task, in order. Every open task counts, whichever
// producer wrote it and whatever its purge mode: each is a copy of the
// workload leaving a cluster while another starts elsewhere.
func InTransit(tasks []Task) []string {
	if len(tasks) == 0 {
		return nil
	}
	from := make([]string, len(tasks))
	for i, t := range tasks {
		from[i] = t.FromCluster
	}
	return from
}

// Allows reports whether a binding whose clusters inTransit are in transit
// (InTransit) may start one more eviction: the budget is unlimited, or
// fewer clusters than it are in transit.
func (n TransitBudget) Allows(inTransit []string) bool {
	return n <= 0 || len(inTransit) < int(n)
}

package prescheduling

import (
	"fmt"
	"strings"
)

// tally counts the clusters ruled out for one reason and keeps a few of them
// to name in a Reason.
type tally struct {
	n       int
	samples []string
}

const maxSamples = 3

func (t *tally) add(name string, detail func() string) {
	t.n++
	if len(t.samples) < maxSamples {
		if detail != nil {
			name += " (" + detail() + ")"
		}
		t.samples = append(t.samples, name)
	}
}

// exclusions says why the fleet's other clusters are not candidates of term
// ti, e.g. "member1 already runs it; member3 (taint x:NoExecute) is faulty".
func (s *scan) exclusions(ti int) string {
	ts := &s.terms[ti]
	var parts []string
	add := func(t *tally, one, many string) {
		if t.n == 0 {
			return
		}
		verb := one
		if t.n > 1 {
			verb = many
		}
		parts = append(parts, samples(t)+" "+verb)
	}
	add(&s.beingEvicted, "is being evicted from", "are being evicted from")
	add(&s.alreadyRuns, "already runs it", "already run it")
	add(&ts.faulty, "is faulty", "are faulty")
	add(&ts.untolerated, "has a NoSchedule taint the placement does not tolerate", "have NoSchedule taints the placement does not tolerate")
	add(&ts.noGroup, "cannot be put in a spread group", "cannot be put in spread groups")
	add(&ts.noMatch, "does not match "+s.p.terms[ti].field, "do not match "+s.p.terms[ti].field)

	return strings.Join(parts, "; ")
}

func samples(t *tally) string {
	if t.n > len(t.samples) {
		return strings.Join(t.samples, ", ") + fmt.Sprintf(" and %d more", t.n-len(t.samples))
	}
	return joinAnd(t.samples)
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// list names up to max of xs: "member1, member2 and 3 more".
func list(xs []string, max int) string { return listOf(xs, len(xs), max) }

// listOf is list of total names, of which first are the first (at least
// max of them, or all).
func listOf(first []string, total, max int) string {
	if total == 0 {
		return "none"
	}
	if total > max {
		return strings.Join(first[:max], ", ") + fmt.Sprintf(" and %d more", total-max)
	}
	return joinAnd(first[:total])
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

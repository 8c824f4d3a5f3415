package gracefulevict

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

// Assessor decides which graceful eviction tasks of a binding are done. Each
// task goes through these rules in order; the first that applies decides:
//
//  1. Its FromCluster is back in the schedule result: done. The workload runs
//     there again, so there is no old copy left to remove; this also ends the
//     deadlock of a cluster that recovers while its workload could not be
//     scheduled anywhere else.
//  2. It has no CreationTimestamp: it is stamped with now and kept (the
//     stamped copy is in Keep; write Keep back to the binding).
//  3. SuppressDeletion is set: true keeps it, false makes it done.
//  4. PurgeMode Directly (or legacy Immediately): done.
//  5. PurgeMode Never: kept.
//  6. Any plugin passes: done.
//  7. Its GracePeriodSeconds, or else the default timeout if one is set, has
//     elapsed since CreationTimestamp (now is at or past the deadline): done.
//  8. Otherwise kept.
//
// Rules 6 to 8 apply to Gracefully, the legacy Graciously, the empty mode and
// any unknown mode: an unrecognised mode is treated as the mode that never
// removes a copy early (Task.Validate reports it).
//
// An Assessor is immutable once built and safe for concurrent use; its zero
// value has no plugins and no default timeout.
type Assessor struct {
	plugins        []Plugin
	defaultTimeout time.Duration
}

// Option configures an Assessor. It returns an error for a value it cannot
// take, which NewAssessor reports.
type Option func(*Assessor) error

// WithPlugins sets the plugins of rule 6, replacing the default
// (ResourceHealthPlugin). WithPlugins() with no plugin disables rule 6. A nil
// plugin is an error.
func WithPlugins(plugins ...Plugin) Option {
	return func(a *Assessor) error {
		a.plugins = make([]Plugin, 0, len(plugins))
		for i, p := range plugins {
			if p == nil {
				return fmt.Errorf("gracefulevict: WithPlugins: plugin %d is nil", i)
			}
			a.plugins = append(a.plugins, p)
		}
		return nil
	}
}

// WithDefaultTimeout sets the grace period of tasks that carry no
// GracePeriodSeconds (Karmada's --graceful-eviction-timeout). The default,
// and 0, is none: such tasks wait for a plugin, as the cluster failover
// proposal asks. A negative d is an error.
func WithDefaultTimeout(d time.Duration) Option {
	return func(a *Assessor) error {
		if d < 0 {
			return fmt.Errorf("gracefulevict: WithDefaultTimeout: timeout must not be negative, got %v", d)
		}
		a.defaultTimeout = d
		return nil
	}
}

// NewAssessor returns an Assessor with the ResourceHealth plugin and no
// default timeout, changed by opts. It fails, naming the option and the
// value, when an option is given a value it cannot take; nil options are
// skipped.
func NewAssessor(opts ...Option) (*Assessor, error) {
	a := &Assessor{plugins: []Plugin{ResourceHealthPlugin()}}
	var errs []error
	for _, o := range opts {
		if o != nil {
			errs = append(errs, o(a))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return a, nil
}

// Assessment is the outcome of one Assess call.
type Assessment struct {
	// Keep are the tasks that stay, in input order, with a CreationTimestamp
	// stamped where it was missing. Write them back as the binding's tasks.
	Keep []Task
	// Done are the tasks that are finished, in input order: remove the old
	// copy on each FromCluster (unless it is back in the schedule result).
	Done []Task
	// RequeueAfter is how long until the earliest deadline among the kept
	// tasks; assess again then. Zero when no kept task has a deadline: a
	// change to the binding (health, schedule result) is then what warrants
	// another look. A task stamped by this call with a grace period of zero
	// or less is already due and gives the smallest positive duration.
	RequeueAfter time.Duration
	// Stamped is the number of tasks in Keep whose CreationTimestamp was set
	// by this call. Keep differs from the input when Done is non-empty or
	// Stamped is positive.
	Stamped int
}

// Assess applies the rules to every task of b at time now. It does not modify
// b: the tasks in Keep and Done are copies (pointer fields still share the
// input's values, which Assess never writes through).
func (a *Assessor) Assess(b Binding, now time.Time) Assessment {
	var out Assessment
	var earliest time.Time
	haveDeadline := false
	pass := pass{b: &b}
	if len(b.Tasks) > 1 && len(b.Clusters) > 0 {
		// One set for every task's rule 1, so a call is linear in tasks
		// plus clusters rather than their product.
		pass.scheduled = make(map[string]struct{}, len(b.Clusters))
		for i := range b.Clusters {
			pass.scheduled[b.Clusters[i].Name] = struct{}{}
		}
	}
	if len(b.Tasks) > 0 {
		out.Keep = make([]Task, 0, len(b.Tasks)) // most tasks usually stay
	}
	for _, t := range b.Tasks {
		v := a.assess(t, &pass, now)
		if v.done {
			out.Done = append(out.Done, t)
			continue
		}
		if v.stamp {
			t.CreationTimestamp = &metav1.Time{Time: now}
			out.Stamped++
		}
		out.Keep = append(out.Keep, t)
		if v.hasDeadline && (!haveDeadline || v.deadline.Before(earliest)) {
			earliest, haveDeadline = v.deadline, true
		}
	}
	if haveDeadline {
		out.RequeueAfter = earliest.Sub(now)
		if out.RequeueAfter <= 0 {
			// Only a task stamped just now with a grace period of zero or
			// less gets here; zero would read as "no deadline".
			out.RequeueAfter = time.Nanosecond
		}
	}
	return out
}

type verdict struct {
	done, stamp bool
	// deadline is when rule 7 would end a kept task; hasDeadline is false
	// when no grace period applies to it.
	deadline    time.Time
	hasDeadline bool
}

// pass is what one Assess call learns about its binding along the way.
type pass struct {
	b *Binding
	// healthy caches the built-in ResourceHealth plugin, whose answer does
	// not depend on the task: 0 not yet asked, 1 passes, -1 fails. Without
	// it, a binding with many tasks would check every cluster's health once
	// per task (see BenchmarkAssess100Tasks).
	healthy int8
	// scheduled holds the schedule result's cluster names when the binding
	// has more than one task; nil: look them up in b.Clusters.
	scheduled map[string]struct{}
}

// inResult reports whether cluster is in the schedule result.
func (p *pass) inResult(cluster string) bool {
	if p.scheduled == nil {
		return p.b.inResult(cluster)
	}
	_, ok := p.scheduled[cluster]
	return ok
}

func (p *pass) canCleanup(pl Plugin, t Task) bool {
	if _, builtin := pl.(resourceHealth); !builtin {
		return pl.CanCleanup(t, *p.b)
	}
	if p.healthy == 0 {
		p.healthy = -1
		if pl.CanCleanup(t, *p.b) {
			p.healthy = 1
		}
	}
	return p.healthy > 0
}

func (a *Assessor) assess(t Task, ps *pass, now time.Time) verdict {
	if ps.inResult(t.FromCluster) {
		return verdict{done: true}
	}
	if t.CreationTimestamp == nil {
		// The grace period counts from now; report its deadline so the
		// caller need not wait for its own write to come back to requeue.
		d, ok := a.deadline(t, now)
		return verdict{stamp: true, deadline: d, hasDeadline: ok}
	}
	switch {
	case t.EndsAtOnce(): // rule 3's false, rule 4
		return verdict{done: true}
	case t.SuppressDeletion != nil, t.PurgeMode.Canonical() == failover.PurgeModeNever: // rule 3's true, rule 5
		return verdict{}
	}
	for _, p := range a.plugins {
		if ps.canCleanup(p, t) {
			return verdict{done: true}
		}
	}
	d, ok := a.deadline(t, t.CreationTimestamp.Time)
	if ok && !now.Before(d) {
		return verdict{done: true}
	}
	return verdict{deadline: d, hasDeadline: ok}
}

// EndsAtOnce reports whether rules 3 and 4 make t done as soon as it has a
// CreationTimestamp, whatever the workload does: SuppressDeletion false, or
// no SuppressDeletion and PurgeMode Directly (or legacy Immediately). A set
// SuppressDeletion decides before the purge mode, so a Directly task with
// SuppressDeletion true waits. Such a task ends before the scheduler need
// have placed the workload anywhere else: a caller that tracks where the
// evicted replicas went learns nothing from its end.
func (t Task) EndsAtOnce() bool {
	if t.SuppressDeletion != nil {
		return !*t.SuppressDeletion
	}
	return t.PurgeMode.Canonical() == failover.PurgeModeDirectly
}

// Deadline returns when t's grace period (or the default timeout) ends, after
// which rule 7 makes it done; false when t has no CreationTimestamp yet or
// never times out (SuppressDeletion set, Directly, Never, or no grace period
// and no default timeout). Callers that track tasks themselves, such as a
// simulator or a metric of overdue tasks, use it instead of restating the
// rules.
func (a *Assessor) Deadline(t Task) (time.Time, bool) {
	if t.CreationTimestamp == nil {
		return time.Time{}, false
	}
	return a.deadline(t, t.CreationTimestamp.Time)
}

// deadline is when rule 7 ends a task created at created; false when the task
// never times out. Only tasks that can reach rule 7 have one.
func (a *Assessor) deadline(t Task, created time.Time) (time.Time, bool) {
	if t.SuppressDeletion != nil {
		return time.Time{}, false
	}
	switch t.PurgeMode.Canonical() {
	case failover.PurgeModeDirectly, failover.PurgeModeNever:
		return time.Time{}, false
	}
	switch {
	case t.GracePeriodSeconds != nil:
		return created.Add(time.Duration(*t.GracePeriodSeconds) * time.Second), true
	case a.defaultTimeout > 0:
		return created.Add(a.defaultTimeout), true
	}
	return time.Time{}, false
}

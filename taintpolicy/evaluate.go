package taintpolicy

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

// condState is what one evaluation knows about a condition type.
type condState struct {
	resolved bool // some policy targeting the cluster reads it
	windowed bool // a windowed policy reads it, so when it changed matters
	present  bool
	timed    bool // since is the condition's lastTransitionTime
	status   metav1.ConditionStatus
	bit      uint8
	since    time.Time
}

type voteKind uint8

const (
	voteAbstain       voteKind = iota // released form, neither condition set holds
	voteAdd                           // add (or keep) now
	votePendingAdd                    // matched, add window still open
	voteRemove                        // remove now
	votePendingRemove                 // unmatched, remove window still open
)

type vote struct {
	kind     voteKind
	deadline time.Time // when a pending vote turns
}

type action uint8

const (
	actionKeep action = iota
	actionAdd
	actionRemove
)

// decision is the outcome for one key+effect.
type decision struct {
	listed   bool // a policy targeting the cluster lists it
	action   action
	value    string    // actionAdd: the value the taint must carry
	source   int       // actionAdd: the taint entry that gives the value
	deadline time.Time // zero: no window pending that matters
}

// scratch is one evaluation's working memory, indexed as the compiled
// policies are.
type scratch struct {
	targeting []bool      // per policy
	conds     []condState // per condition type
	votes     []vote      // per taint entry
	present   []int       // per slot: index of its first taint on the cluster, -1 if none
	decisions []decision  // per slot
}

func (c *compiled) newScratch() *scratch {
	s := &scratch{
		targeting: make([]bool, len(c.policies)),
		conds:     make([]condState, len(c.condTypes)),
		votes:     make([]vote, len(c.taints)),
		present:   make([]int, len(c.slots)),
		decisions: make([]decision, len(c.slots)),
	}
	for i := range s.present {
		s.present[i] = -1
	}
	return s
}

// Evaluate decides the taints of c at time now, by the rules on Evaluator. It
// never fails: policies were validated when they were set, and a cluster's
// conditions and taints are read as they are.
func (e *Evaluator) Evaluate(c failover.Cluster, now time.Time) Result {
	cp := e.policies.Load()
	s := cp.newScratch()

	// Which policies apply, and the state of every condition they read.
	anyTarget, needMemory := false, false
	for pi := range cp.policies {
		p := &cp.policies[pi]
		if !p.target.Matches(&c) {
			continue
		}
		s.targeting[pi] = true
		anyTarget = true
		for _, t := range p.types {
			st := &s.conds[t]
			if !st.resolved {
				st.resolved = true
				if cond := c.Condition(cp.condTypes[t]); cond != nil {
					st.present, st.status, st.bit = true, cond.Status, statusBit(cond.Status)
					if !cond.LastTransitionTime.IsZero() {
						st.timed, st.since = true, cond.LastTransitionTime.Time
					}
				}
			}
			if p.timed {
				st.windowed = true
				needMemory = needMemory || !st.timed
			}
		}
	}
	if needMemory || e.mem.nonEmpty() {
		e.mem.resolve(c.Name, cp, s.conds, now)
	}
	if !anyTarget {
		return Result{Taints: copyTaints(c.Taints)}
	}

	for pi := range cp.policies {
		if s.targeting[pi] {
			cp.policies[pi].vote(cp, s, now)
		}
	}

	for i := range c.Taints {
		if sl, ok := cp.slotIndex[taintID{c.Taints[i].Key, c.Taints[i].Effect}]; ok && s.present[sl] < 0 {
			s.present[sl] = i
		}
	}
	var next time.Time
	newTaints := 0
	for sl := range cp.slots {
		d := &s.decisions[sl]
		cp.decide(sl, s, c.Taints, d)
		if d.listed && d.action == actionAdd && s.present[sl] < 0 {
			newTaints++
		}
		if !d.deadline.IsZero() && (next.IsZero() || d.deadline.Before(next)) {
			next = d.deadline
		}
	}

	var r Result
	r.Taints = make([]corev1.Taint, 0, len(c.Taints)+newTaints)
	for i := range c.Taints {
		t := &c.Taints[i]
		sl, ok := cp.slotIndex[taintID{t.Key, t.Effect}]
		if !ok || !s.decisions[sl].listed {
			r.Taints = append(r.Taints, copyTaint(t))
			continue
		}
		d := &s.decisions[sl]
		switch {
		case d.action == actionRemove:
			r.Removed = append(r.Removed, copyTaint(t))
		case d.action == actionAdd && s.present[sl] == i && t.Value != d.value:
			r.Removed = append(r.Removed, copyTaint(t))
			nt := newTaint(t.Key, t.Effect, d.value, now)
			r.Taints = append(r.Taints, nt)
			r.Added = append(r.Added, copyTaint(&nt))
		default:
			r.Taints = append(r.Taints, copyTaint(t))
		}
	}
	if newTaints > 0 {
		// Taint entries are in policy-name order, so new taints follow it.
		for ti := range cp.taints {
			sl := cp.taints[ti].slot
			d := &s.decisions[sl]
			if d.listed && d.action == actionAdd && s.present[sl] < 0 && d.source == ti {
				id := cp.slots[sl]
				nt := newTaint(id.key, id.effect, d.value, now)
				r.Taints = append(r.Taints, nt)
				r.Added = append(r.Added, copyTaint(&nt))
			}
		}
	}
	if !next.IsZero() {
		r.RequeueAfter = next.Sub(now)
	}
	return r
}

// vote records the policy's vote on each of its taints.
func (p *cpolicy) vote(cp *compiled, s *scratch, now time.Time) {
	votes := s.votes[p.first:p.end]
	if p.released {
		switch {
		case holdsAll(p.remove, s.conds): // Karmada applies removeOnConditions after addOnConditions
			since := heldSince(p.remove, s.conds)
			for i := range votes {
				votes[i] = releasedVote(since, cp.taints[p.first+i].remove, now, voteRemove, votePendingRemove)
			}
		case holdsAll(p.add, s.conds):
			since := heldSince(p.add, s.conds)
			for i := range votes {
				votes[i] = releasedVote(since, cp.taints[p.first+i].add, now, voteAdd, votePendingAdd)
			}
		default:
			for i := range votes {
				votes[i] = vote{kind: voteAbstain}
			}
		}
		return
	}
	if len(p.match) == 0 {
		for i := range votes {
			votes[i] = vote{kind: voteAdd}
		}
		return
	}
	matched := true
	var latest, earliest time.Time
	for _, mc := range p.match {
		st := &s.conds[mc.typ]
		if mc.holds(st) {
			if st.since.After(latest) {
				latest = st.since
			}
			continue
		}
		if matched || st.since.Before(earliest) {
			earliest = st.since
		}
		matched = false
	}
	for i := range votes {
		t := &cp.taints[p.first+i]
		if matched {
			votes[i] = windowVote(latest.Add(t.add), now, voteAdd, votePendingAdd)
		} else {
			votes[i] = windowVote(earliest.Add(t.remove), now, voteRemove, votePendingRemove)
		}
	}
}

// releasedVote is a released-form vote: at once without a window, so that
// a policy with no windows decides as Karmada does whatever the
// conditions' times say.
func releasedVote(since time.Time, window time.Duration, now time.Time, done, pending voteKind) vote {
	if window == 0 {
		return vote{kind: done}
	}
	return windowVote(since.Add(window), now, done, pending)
}

// heldSince is when conditions, which all hold, last changed.
func heldSince(conds []ccond, states []condState) time.Time {
	var latest time.Time
	for _, mc := range conds {
		if since := states[mc.typ].since; since.After(latest) {
			latest = since
		}
	}
	return latest
}

func windowVote(deadline, now time.Time, done, pending voteKind) vote {
	if now.Before(deadline) {
		return vote{kind: pending, deadline: deadline}
	}
	return vote{kind: done}
}

// holdsAll reports whether every condition holds; an empty list never does
// (the released form's rule).
func holdsAll(conds []ccond, states []condState) bool {
	for _, mc := range conds {
		if !mc.holds(&states[mc.typ]) {
			return false
		}
	}
	return len(conds) > 0
}

func (mc *ccond) holds(st *condState) bool {
	if !st.present {
		return false
	}
	listed := st.bit&mc.statuses != 0
	return listed != mc.notIn
}

// decide combines the votes of the policies that list slot sl.
func (cp *compiled) decide(sl int, s *scratch, taints []corev1.Taint, d *decision) {
	var (
		add, abstain, pendingAdd, pendingRemove bool
		lastRemove                              time.Time
	)
	for _, ti := range cp.slotTaint[sl] {
		if !s.targeting[cp.taints[ti].policy] {
			continue
		}
		d.listed = true
		v := &s.votes[ti]
		switch v.kind {
		case voteAdd:
			if !add {
				add, d.value, d.source = true, cp.taints[ti].value, ti
			}
		case voteAbstain:
			abstain = true
		case votePendingAdd:
			pendingAdd = true
		case votePendingRemove:
			pendingRemove = true
			if v.deadline.After(lastRemove) {
				lastRemove = v.deadline
			}
		}
	}
	if !d.listed {
		return
	}
	present := s.present[sl] >= 0
	switch {
	case add:
		d.action = actionAdd
		// Only a policy ahead of the one giving the value, with another
		// value, changes the outcome when its window closes.
		for _, ti := range cp.slotTaint[sl] {
			if ti >= d.source {
				break
			}
			if v := &s.votes[ti]; s.targeting[cp.taints[ti].policy] && v.kind == votePendingAdd && cp.taints[ti].value != d.value {
				d.deadline = earlier(d.deadline, v.deadline)
			}
		}
	case abstain || pendingAdd:
		d.action = actionKeep
		for _, ti := range cp.slotTaint[sl] {
			if v := &s.votes[ti]; s.targeting[cp.taints[ti].policy] && v.kind == votePendingAdd &&
				(!present || taints[s.present[sl]].Value != cp.taints[ti].value) {
				d.deadline = earlier(d.deadline, v.deadline)
			}
		}
	case pendingRemove:
		// Every listing policy is unmatched; the taint goes when the last
		// window closes.
		d.action = actionKeep
		if present {
			d.deadline = lastRemove
		}
	default:
		d.action = actionRemove
	}
}

func earlier(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

func newTaint(key string, effect corev1.TaintEffect, value string, now time.Time) corev1.Taint {
	return corev1.Taint{Key: key, Effect: effect, Value: value, TimeAdded: &metav1.Time{Time: now}}
}

func copyTaint(t *corev1.Taint) corev1.Taint {
	var out corev1.Taint
	t.DeepCopyInto(&out)
	return out
}

func copyTaints(in []corev1.Taint) []corev1.Taint {
	out := make([]corev1.Taint, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

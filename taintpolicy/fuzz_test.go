package taintpolicy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

// gen turns fuzz bytes into choices; past the end every choice is 0.
type gen struct {
	b []byte
	i int
}

func (g *gen) n(k int) int {
	if g.i >= len(g.b) {
		return 0
	}
	g.i++
	return int(g.b[g.i-1]) % k
}

var (
	fuzzTypes    = []string{"Ready", "NetworkAvailable", "Disk"}
	fuzzStatuses = []metav1.ConditionStatus{condTrue, condFalse, condUnknown, "Odd"}
	fuzzKeys     = []string{"a", "b", "example.com/c"}
	fuzzEffects  = []corev1.TaintEffect{noSchedule, prefer, corev1.TaintEffectNoExecute}
	fuzzValues   = []string{"", "x", "y"}
)

func (g *gen) conditions(max int) []MatchCondition {
	var out []MatchCondition
	for range g.n(max + 1) {
		mc := MatchCondition{ConditionType: fuzzTypes[g.n(len(fuzzTypes))], Operator: MatchConditionOpIn}
		if g.n(2) == 1 {
			mc.Operator = MatchConditionOpNotIn
		}
		for range 1 + g.n(3) {
			mc.StatusValues = append(mc.StatusValues, fuzzStatuses[g.n(3)])
		}
		out = append(out, mc)
	}
	return out
}

func (g *gen) policies() []ClusterTaintPolicy {
	var out []ClusterTaintPolicy
	for i := range 1 + g.n(4) {
		p := ClusterTaintPolicy{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", g.n(10)*10+i)}}
		var target *failover.ClusterAffinity
		switch g.n(4) {
		case 1:
			target = &failover.ClusterAffinity{ClusterNames: []string{"c1"}}
		case 2:
			target = &failover.ClusterAffinity{ExcludeClusters: []string{"c1"}}
		}
		seen := map[taintID]bool{}
		if g.n(3) == 0 {
			p.Spec.TargetClusters = target
			p.Spec.AddOnConditions = g.conditions(2)
			p.Spec.RemoveOnConditions = g.conditions(2)
			for range 1 + g.n(3) {
				t := Taint{Key: fuzzKeys[g.n(len(fuzzKeys))], Effect: fuzzEffects[g.n(len(fuzzEffects))], Value: fuzzValues[g.n(3)]}
				if !seen[taintID{t.Key, t.Effect}] {
					seen[taintID{t.Key, t.Effect}] = true
					p.Spec.Taints = append(p.Spec.Taints, t)
				}
			}
		} else {
			p.Spec.TargetCluster = target
			p.Spec.MatchConditions = g.conditions(3)
			for range g.n(4) {
				t := toAdd(fuzzKeys[g.n(len(fuzzKeys))], fuzzEffects[g.n(len(fuzzEffects))], fuzzValues[g.n(3)],
					int32(1+g.n(4)*100), int32(1+g.n(4)*60))
				if !seen[taintID{t.Key, t.Effect}] {
					seen[taintID{t.Key, t.Effect}] = true
					p.Spec.TaintsToAdd = append(p.Spec.TaintsToAdd, t)
				}
			}
		}
		out = append(out, p)
	}
	return out
}

func (g *gen) cluster() failover.Cluster {
	c := failover.Cluster{Name: []string{"c1", "c2"}[g.n(2)]}
	for _, typ := range fuzzTypes {
		switch g.n(4) {
		case 0: // absent
		case 1:
			c.Conditions = append(c.Conditions, untimed(typ, fuzzStatuses[g.n(4)]))
		default:
			c.Conditions = append(c.Conditions, cond(typ, fuzzStatuses[g.n(4)], at(-time.Duration(g.n(256))*5*time.Second)))
		}
	}
	for range g.n(5) {
		key := append([]string{"unlisted"}, fuzzKeys...)[g.n(len(fuzzKeys)+1)]
		t := taint(key, fuzzEffects[g.n(len(fuzzEffects))], fuzzValues[g.n(3)], time.Time{})
		if g.n(2) == 1 {
			t.TimeAdded = &metav1.Time{Time: at(-time.Hour)}
		}
		c.Taints = append(c.Taints, t)
	}
	return c
}

// FuzzEvaluate checks, over random policies and clusters, that Evaluate
// never panics, never touches a taint no targeting policy lists, reports
// exactly the difference it made, is a fixed point once applied, changes
// nothing before RequeueAfter, decides as DESIGN's rules restated plainly
// (plainDecision, untimed and absent conditions counted from the Evaluator's
// first sight of them), and — when every condition a policy reads carries a
// time — decides the same as a fresh Evaluator.
func FuzzEvaluate(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte("detect-cluster-not-ready: Ready In [False, Unknown], 300s/180s"))
	f.Add([]byte{3, 1, 1, 0, 1, 2, 1, 0, 0, 2, 2, 1, 1, 3, 0, 2, 1, 2, 3, 3, 3, 2, 1, 0, 4, 2, 1, 2, 0, 1, 1, 1})
	f.Add([]byte{0, 0, 0, 1, 2, 2, 2, 1, 1, 1, 0, 1, 0, 2, 3, 3, 2, 2, 2, 2, 2, 2, 2, 4, 4, 4, 1, 0, 1, 1, 2, 2, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		policies := g.policies()
		c := g.cluster()
		now := at(time.Duration(g.n(256)) * 3 * time.Second)
		e, err := NewEvaluator(policies)
		if err != nil {
			return // duplicate generated names; validation has its own tests
		}

		// Build some memory first, from an earlier, untimed view.
		past := c
		past.Conditions = nil
		for _, cd := range c.Conditions {
			past.Conditions = append(past.Conditions, untimed(cd.Type, cd.Status))
		}
		e.Evaluate(past, now.Add(-10*time.Minute))

		before := failover.Cluster{Name: c.Name, Taints: copyTaints(c.Taints)}
		r := e.Evaluate(c, now)
		if !equality.Semantic.DeepEqual(c.Taints, before.Taints) {
			t.Fatal("Evaluate changed its input")
		}
		if r.RequeueAfter < 0 {
			t.Fatalf("negative RequeueAfter %s", r.RequeueAfter)
		}

		// Unlisted taints pass through untouched, in order.
		listed := map[taintID]bool{}
		referenced := map[string]bool{}
		for _, p := range policies {
			aff, taints := p.Spec.TargetCluster, []taintID{}
			conds := append(append(append([]MatchCondition{}, p.Spec.MatchConditions...), p.Spec.AddOnConditions...), p.Spec.RemoveOnConditions...)
			if p.Spec.Released() {
				aff = p.Spec.TargetClusters
				for _, tt := range p.Spec.Taints {
					taints = append(taints, taintID{tt.Key, tt.Effect})
				}
			} else {
				for _, tt := range p.Spec.TaintsToAdd {
					taints = append(taints, taintID{tt.Key, tt.Effect})
				}
			}
			if ok, _ := aff.Matches(c); ok {
				for _, id := range taints {
					listed[id] = true
				}
				for _, mc := range conds {
					referenced[mc.ConditionType] = true
				}
			}
		}
		unlisted := func(ts []corev1.Taint) []corev1.Taint {
			var out []corev1.Taint
			for _, tt := range ts {
				if !listed[taintID{tt.Key, tt.Effect}] {
					out = append(out, tt)
				}
			}
			return out
		}
		if a, b := unlisted(c.Taints), unlisted(r.Taints); !equality.Semantic.DeepEqual(a, b) {
			t.Fatalf("unlisted taints changed:\n in  %s\n out %s", show(a), show(b))
		}

		// Taints = input - Removed + Added, and Added carry TimeAdded now.
		count := map[string]int{}
		key := func(tt corev1.Taint) string { return fmt.Sprintf("%s=%s:%s", tt.Key, tt.Value, tt.Effect) }
		for _, tt := range c.Taints {
			count[key(tt)]++
		}
		for _, tt := range r.Removed {
			count[key(tt)]--
		}
		for _, tt := range r.Added {
			count[key(tt)]++
			if tt.TimeAdded == nil || !tt.TimeAdded.Time.Equal(now) {
				t.Fatalf("added %s without TimeAdded now", key(tt))
			}
		}
		for _, tt := range r.Taints {
			count[key(tt)]--
		}
		for k, n := range count {
			if n != 0 {
				t.Fatalf("Taints is not input - Removed + Added for %s (%+d):\n in %s\n %s", k, n, show(c.Taints), showResult(r))
			}
		}

		// Applying the result is a fixed point, and stays one until the
		// requeue time (for ever when none is given).
		applied := c
		applied.Taints = r.Taints
		later := []time.Time{now}
		if r.RequeueAfter > 0 {
			later = append(later, now.Add(r.RequeueAfter/2), now.Add(r.RequeueAfter-time.Nanosecond))
		} else {
			later = append(later, now.Add(1000*time.Hour))
		}
		for _, tm := range later {
			if again := e.Evaluate(applied, tm); again.Changed() {
				t.Fatalf("at now+%s the applied result changed again: %s\n first %s", tm.Sub(now), showResult(again), showResult(r))
			}
		}
		// RequeueAfter is exact: when it comes, the result does change.
		// Where policies give one taint different values, a window may
		// close without changing which value wins; the requeue then comes
		// early, which costs an evaluation and nothing else.
		if r.RequeueAfter > 0 && !conflictingValues(policies) {
			if again := e.Evaluate(applied, now.Add(r.RequeueAfter)); !again.Changed() {
				t.Fatalf("at the requeue time now+%s nothing changed: %s\n first %s", r.RequeueAfter, showResult(again), showResult(r))
			}
		}

		// The Evaluator first saw every untimed or absent condition in the
		// earlier view; DESIGN counts from there.
		if msg := plainDecision(policies, c, now, now.Add(-10*time.Minute), r); msg != "" {
			t.Fatalf("%s\n in %s\n %s", msg, show(c.Taints), showResult(r))
		}

		// With every read condition timed, history does not matter.
		for typ := range referenced {
			cd := c.Condition(typ)
			if cd == nil || cd.LastTransitionTime.IsZero() {
				return
			}
		}
		fresh, err := NewEvaluator(policies)
		if err != nil {
			t.Fatal(err)
		}
		if got := fresh.Evaluate(c, now); showResult(got) != showResult(r) {
			t.Fatalf("a fresh Evaluator decides otherwise:\n fresh %s\n long  %s", showResult(got), showResult(r))
		}
	})
}

// plainDecision restates DESIGN's evaluation rules, with firstSeen standing
// for the time of a condition that has none or is absent, and says how r
// departs from them ("" if not).
func plainDecision(policies []ClusterTaintPolicy, c failover.Cluster, now, firstSeen time.Time, r Result) string {
	sorted := slices.Clone(policies)
	slices.SortFunc(sorted, func(a, b ClusterTaintPolicy) int { return strings.Compare(a.Name, b.Name) })
	holds := func(mc MatchCondition) bool {
		cd := c.Condition(mc.ConditionType)
		return cd != nil && slices.Contains(mc.StatusValues, cd.Status) == (mc.Operator == MatchConditionOpIn)
	}
	type verdict struct {
		listed, add, keep bool
		value             string
	}
	verdicts := map[taintID]*verdict{}
	vote := func(id taintID, add, remove bool, value string) {
		v := verdicts[id]
		if v == nil {
			v = &verdict{listed: true}
			verdicts[id] = v
		}
		switch {
		case add && !v.add:
			v.add, v.value = true, value
		case !add && !remove:
			v.keep = true
		}
	}
	for _, p := range sorted {
		spec := &p.Spec
		if spec.Released() {
			if ok, _ := spec.TargetClusters.Matches(c); !ok {
				continue
			}
			all := func(mcs []MatchCondition) bool {
				return len(mcs) > 0 && !slices.ContainsFunc(mcs, func(mc MatchCondition) bool { return !holds(mc) })
			}
			remove := all(spec.RemoveOnConditions)
			add := !remove && all(spec.AddOnConditions)
			for _, t := range spec.Taints {
				vote(taintID{t.Key, t.Effect}, add, remove, t.Value)
			}
			continue
		}
		if ok, _ := spec.TargetCluster.Matches(c); !ok {
			continue
		}
		matched := true
		var latest, earliest time.Time
		for _, mc := range spec.MatchConditions {
			since := firstSeen
			if cd := c.Condition(mc.ConditionType); cd != nil && !cd.LastTransitionTime.IsZero() {
				since = cd.LastTransitionTime.Time
			}
			if holds(mc) {
				if since.After(latest) {
					latest = since
				}
				continue
			}
			if matched || since.Before(earliest) {
				earliest = since
			}
			matched = false
		}
		for _, t := range spec.TaintsToAdd {
			add := matched && (len(spec.MatchConditions) == 0 || !now.Before(latest.Add(time.Duration(*t.AddOnMatchSeconds)*time.Second)))
			remove := !matched && !now.Before(earliest.Add(time.Duration(*t.RemoveOnMismatchSeconds)*time.Second))
			vote(taintID{t.Key, t.Effect}, add, remove, t.Value)
		}
	}
	for id, v := range verdicts {
		var in, out []corev1.Taint
		for _, t := range c.Taints {
			if (taintID{t.Key, t.Effect}) == id {
				in = append(in, t)
			}
		}
		for _, t := range r.Taints {
			if (taintID{t.Key, t.Effect}) == id {
				out = append(out, t)
			}
		}
		switch {
		case v.add:
			if len(out) == 0 || out[0].Value != v.value {
				return fmt.Sprintf("%s:%s should carry value %q", id.key, id.effect, v.value)
			}
			if len(in) > 0 && in[0].Value == v.value && !equality.Semantic.DeepEqual(in[0], out[0]) {
				return fmt.Sprintf("%s:%s should be kept as it was", id.key, id.effect)
			}
		case v.keep:
			if !equality.Semantic.DeepEqual(in, out) {
				return fmt.Sprintf("%s:%s should be left as it is", id.key, id.effect)
			}
		default:
			if len(out) > 0 {
				return fmt.Sprintf("%s:%s should be removed: every listing policy is unmatched past its window", id.key, id.effect)
			}
		}
	}
	return ""
}

// conflictingValues reports whether two policies give one key+effect
// different values.
func conflictingValues(policies []ClusterTaintPolicy) bool {
	values := map[taintID]string{}
	check := func(id taintID, v string) bool {
		old, seen := values[id]
		values[id] = v
		return seen && old != v
	}
	for _, p := range policies {
		for _, t := range p.Spec.TaintsToAdd {
			if check(taintID{t.Key, t.Effect}, t.Value) {
				return true
			}
		}
		for _, t := range p.Spec.Taints {
			if check(taintID{t.Key, t.Effect}, t.Value) {
				return true
			}
		}
	}
	return false
}

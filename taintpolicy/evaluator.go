package taintpolicy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

// Evaluator decides a cluster's taints from its conditions and a set of
// ClusterTaintPolicies. A custom cluster-taint controller calls Evaluate for
// each cluster it reconciles, writes Result.Taints back when Added or Removed
// is non-empty, and reconciles the cluster again after Result.RequeueAfter.
//
// The rules, for each taint (key and effect) listed by a policy whose
// target selects the cluster:
//
//   - A windowed policy matches when all its matchConditions match (In: the
//     condition exists and its status is listed; NotIn: it exists and its
//     status is not listed; a missing condition never matches). With no
//     matchConditions it always matches, and its taints are added at once.
//   - The taint is added once some policy listing it has matched for that
//     taint's addOnMatchSeconds, and removed once every policy listing it
//     has not matched for its removeOnMismatchSeconds. In between it stays
//     as it is.
//   - A released-form policy votes to add when all its addOnConditions hold,
//     to remove when all its removeOnConditions hold (remove wins when both
//     do, as in Karmada), and otherwise to leave the taint as it is. Votes
//     combine as above: any add wins; removal needs every listing policy.
//     A taint with a window (Taint.AddOnMatchSeconds,
//     RemoveOnMismatchSeconds: a Karmada fork's CRD extension) gets the add
//     vote once the addOnConditions have held for its addOnMatchSeconds,
//     and the remove vote once the removeOnConditions have held for its
//     removeOnMismatchSeconds; until then the policy leaves it as it is.
//   - A policy has matched since the latest lastTransitionTime among its
//     conditions, and has not matched since the earliest lastTransitionTime
//     among the conditions that do not match. Only where a condition has no
//     lastTransitionTime, or is absent, does the Evaluator count from the
//     first evaluation that saw that state, remembered per cluster and
//     condition type (see Forget).
//   - An added taint gets TimeAdded = now and the value of the first policy,
//     by name, that adds it. A present taint whose value differs from that
//     value is replaced in place: the old taint is reported Removed and the
//     new one Added. A kept taint keeps its TimeAdded.
//   - Taints no policy targeting the cluster lists are returned untouched.
//
// Policies are ordered by name. The zero Evaluator is not usable; call
// NewEvaluator. All methods are safe for concurrent use.
type Evaluator struct {
	opts ValidateOptions // as the Options set them; NewEvaluator checked them

	// policies is swapped whole by SetPolicies so that Evaluate never locks
	// to read it and always sees one consistent set.
	policies atomic.Pointer[compiled]

	mem memory
}

// Option configures an Evaluator.
type Option func(*Evaluator)

// WithDenyNoExecute makes NewEvaluator and SetPolicies refuse policies with
// NoExecute taints, the hard eviction Karmada's webhook refuses by default.
func WithDenyNoExecute() Option {
	return func(e *Evaluator) { e.opts.DenyNoExecute = true }
}

// WithAPIVersion makes NewEvaluator and SetPolicies accept policies of the
// caller's own group/version instead of Karmada's (see
// ValidateOptions.APIVersion), as LoadPoliciesWith read them.
func WithAPIVersion(apiVersion string) Option {
	return func(e *Evaluator) { e.opts.APIVersion = apiVersion }
}

// NewEvaluator returns an Evaluator for policies, which it validates, copies
// and defaults; the caller may reuse the slice. Policy names must be unique.
func NewEvaluator(policies []ClusterTaintPolicy, opts ...Option) (*Evaluator, error) {
	e := &Evaluator{}
	for _, o := range opts {
		if o != nil { // nil options are ignored, as in every package here
			o(e)
		}
	}
	if err := e.opts.check(); err != nil {
		return nil, err
	}
	c, err := e.compile(policies)
	if err != nil {
		return nil, err
	}
	e.policies.Store(c)
	return e, nil
}

// SetPolicies replaces the Evaluator's policies (added, changed or deleted
// ones alike). On error the old policies stay in force. What the Evaluator
// remembers about clusters is kept: it concerns conditions, not policies.
func (e *Evaluator) SetPolicies(policies []ClusterTaintPolicy) error {
	c, err := e.compile(policies)
	if err != nil {
		return err
	}
	e.policies.Store(c)
	return nil
}

// Policies returns a copy of the policies in force, ordered by name and with
// defaults applied.
func (e *Evaluator) Policies() []ClusterTaintPolicy {
	src := e.policies.Load().source
	out := make([]ClusterTaintPolicy, len(src))
	for i := range src {
		src[i].DeepCopyInto(&out[i])
	}
	return out
}

// Forget drops what the Evaluator remembers about a cluster: call it when the
// cluster is deleted, or memory grows with every cluster ever seen.
func (e *Evaluator) Forget(cluster string) {
	e.mem.forget(cluster)
}

// Result is the decision for one cluster.
type Result struct {
	// Taints is the cluster's whole desired taint list: its taints with the
	// removals and additions applied. It shares no memory with the input.
	Taints []corev1.Taint
	// Added are the taints added (or whose value changed) by this
	// evaluation, in the order they appear in Taints.
	Added []corev1.Taint
	// Removed are the taints removed (or whose value changed), as they were.
	Removed []corev1.Taint
	// RequeueAfter is how long until a window closes whose close may change
	// the result if nothing else changes; evaluate the cluster again then.
	// 0 means no window is pending.
	RequeueAfter time.Duration
}

// Changed reports whether the desired taints differ from the cluster's.
func (r Result) Changed() bool { return len(r.Added) > 0 || len(r.Removed) > 0 }

// compiled is an immutable, pre-parsed set of policies.
type compiled struct {
	source    []ClusterTaintPolicy // validated, defaulted copies, by name
	policies  []cpolicy            // same order as source
	taints    []ctaint             // every policy's taints, in policy then list order
	condTypes []string             // distinct condition types referenced
	typeIndex map[string]int       // condTypes by name
	slots     []taintID            // distinct key+effect pairs
	slotIndex map[taintID]int
	slotTaint [][]int // per slot: indexes into taints, in policy order
}

type cpolicy struct {
	target   *failover.AffinityMatcher
	released bool
	timed    bool    // windowed form, or a released taint sets a window
	match    []ccond // windowed form
	add      []ccond // released form
	remove   []ccond // released form
	types    []int   // distinct condition types the policy reads
	first    int     // its taints are taints[first:end]
	end      int
}

// ccond is a MatchCondition with its statuses as a bit set.
type ccond struct {
	typ      int
	notIn    bool
	statuses uint8
}

type ctaint struct {
	policy int
	slot   int
	value  string
	add    time.Duration
	remove time.Duration
}

func statusBit(s metav1.ConditionStatus) uint8 {
	switch s {
	case metav1.ConditionTrue:
		return 1
	case metav1.ConditionFalse:
		return 2
	case metav1.ConditionUnknown:
		return 4
	}
	return 0 // matched by no In, by every NotIn
}

func (e *Evaluator) compile(in []ClusterTaintPolicy) (*compiled, error) {
	var errs []error
	byName := make(map[string]int, len(in))
	src := make([]ClusterTaintPolicy, len(in))
	for i := range in {
		in[i].DeepCopyInto(&src[i])
		src[i].SetDefaults()
		if fe := src[i].validate(e.opts, nil); len(fe) > 0 {
			errs = append(errs, &InvalidPolicyError{Index: i, Name: src[i].Name, Errs: fe})
		}
		if j, dup := byName[src[i].Name]; dup && src[i].Name != "" {
			errs = append(errs, fmt.Errorf("taintpolicy: policies[%d]: duplicate policy name %q (also policies[%d])", i, src[i].Name, j))
		}
		byName[src[i].Name] = i
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortStableFunc(src, func(a, b ClusterTaintPolicy) int { return strings.Compare(a.Name, b.Name) })

	c := &compiled{
		source:    src,
		policies:  make([]cpolicy, len(src)),
		typeIndex: map[string]int{},
		slotIndex: map[taintID]int{},
	}
	typeOf := func(t string) int {
		i, ok := c.typeIndex[t]
		if !ok {
			i = len(c.condTypes)
			c.condTypes = append(c.condTypes, t)
			c.typeIndex[t] = i
		}
		return i
	}
	conds := func(p *cpolicy, mcs []MatchCondition) []ccond {
		out := make([]ccond, len(mcs))
		for i, m := range mcs {
			out[i] = ccond{typ: typeOf(m.ConditionType), notIn: m.Operator == MatchConditionOpNotIn}
			for _, s := range m.StatusValues {
				out[i].statuses |= statusBit(s)
			}
			if !slices.Contains(p.types, out[i].typ) {
				p.types = append(p.types, out[i].typ)
			}
		}
		return out
	}
	addTaint := func(pi int, key string, effect corev1.TaintEffect, value string, add, remove time.Duration) {
		id := taintID{key, effect}
		s, ok := c.slotIndex[id]
		if !ok {
			s = len(c.slots)
			c.slots = append(c.slots, id)
			c.slotIndex[id] = s
			c.slotTaint = append(c.slotTaint, nil)
		}
		c.slotTaint[s] = append(c.slotTaint[s], len(c.taints))
		c.taints = append(c.taints, ctaint{policy: pi, slot: s, value: value, add: add, remove: remove})
	}
	for pi := range src {
		spec := &src[pi].Spec
		p := &c.policies[pi]
		p.first = len(c.taints)
		var err error
		if spec.Released() {
			p.released = true
			p.target, err = spec.TargetClusters.Compile()
			p.add = conds(p, spec.AddOnConditions)
			p.remove = conds(p, spec.RemoveOnConditions)
			for _, t := range spec.Taints {
				add, remove := seconds(t.AddOnMatchSeconds), seconds(t.RemoveOnMismatchSeconds)
				p.timed = p.timed || add > 0 || remove > 0
				addTaint(pi, t.Key, t.Effect, t.Value, add, remove)
			}
		} else {
			p.timed = true
			p.target, err = spec.TargetCluster.Compile()
			p.match = conds(p, spec.MatchConditions)
			for _, t := range spec.TaintsToAdd {
				addTaint(pi, t.Key, t.Effect, t.Value,
					time.Duration(*t.AddOnMatchSeconds)*time.Second,
					time.Duration(*t.RemoveOnMismatchSeconds)*time.Second)
			}
		}
		if err != nil { // validated above, so only a root-package change gets here
			return nil, fmt.Errorf("taintpolicy: policy %q: %w", src[pi].Name, err)
		}
		p.end = len(c.taints)
	}
	return c, nil
}

// seconds is a released taint's window: nil means none.
func seconds(s *int32) time.Duration {
	if s == nil {
		return 0
	}
	return time.Duration(*s) * time.Second
}

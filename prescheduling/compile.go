package prescheduling

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/failoverkit/failover"
)

// Validate returns an error naming every invalid field of p and its value,
// or nil. Check runs the same validation and reports it in Result.Err.
func (p *Placement) Validate() error {
	_, err := compile(p)
	return err
}

// compiled is a placement with its selectors parsed and Karmada's defaults
// applied, so that matching a cluster costs no parsing and no allocation.
type compiled struct {
	terms    []term
	division division
	// weights are the static weight list of a divideStaticWeight division;
	// nil when there is none (every cluster weighs the same).
	weights []staticWeight
	spread  []spreadKey
	sel     selection
	tols    []corev1.Toleration
}

// term is one group of clusters the scheduler may use: the placement's
// clusterAffinity, or one entry of its clusterAffinities.
type term struct {
	name  string // the affinityName; empty for clusterAffinity
	field string // how a Reason names it
	m     *failover.AffinityMatcher
}

// staticWeight is one entry of a static weight list.
type staticWeight struct {
	m      *failover.AffinityMatcher
	weight int64
}

// selection is how Karmada's scheduler picks among the clusters that pass
// its filters (SelectBestClusters in pkg/scheduler/core/spreadconstraint).
type selection struct {
	// all: every cluster that passes; there is no spread constraint, or
	// the division ignores them.
	all bool
	// region and cluster are the constraints it selects by; nil when the
	// placement has none. With neither (and not all), it selects nothing.
	region, cluster *spreadKey
	// other is a constraint it does not select by (zone, provider, label),
	// for a Reason; nil when there is none.
	other *spreadKey
}

func compile(p *Placement) (*compiled, error) {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("prescheduling: placement."+format, args...))
	}
	c := &compiled{division: p.division(), tols: p.ClusterTolerations}

	switch {
	case p.ClusterAffinity != nil && len(p.ClusterAffinities) > 0:
		add("clusterAffinity and clusterAffinities cannot both be set: keep one")
	case len(p.ClusterAffinities) > 0:
		seen := make(map[string]int, len(p.ClusterAffinities))
		for i := range p.ClusterAffinities {
			t := &p.ClusterAffinities[i]
			path := fmt.Sprintf("clusterAffinities[%d]", i)
			if t.AffinityName == "" {
				add("%s.affinityName is empty", path)
			} else if j, dup := seen[t.AffinityName]; dup {
				add("%s.affinityName: %q is also the name of clusterAffinities[%d]", path, t.AffinityName, j)
			}
			seen[t.AffinityName] = i
			m, err := compileAffinity(&t.ClusterAffinity, path)
			errs = append(errs, err)
			c.terms = append(c.terms, term{name: t.AffinityName, field: fmt.Sprintf("clusterAffinities term %q", t.AffinityName), m: m})
		}
	default:
		m, err := compileAffinity(p.ClusterAffinity, "clusterAffinity")
		errs = append(errs, err)
		c.terms = []term{{field: "clusterAffinity", m: m}}
	}

	for i := range p.ClusterTolerations {
		errs = append(errs, validateToleration(&p.ClusterTolerations[i], fmt.Sprintf("clusterTolerations[%d]", i)))
	}

	field := map[SpreadFieldValue]int{}
	for i, sc := range p.SpreadConstraints {
		path := fmt.Sprintf("spreadConstraints[%d]", i)
		k, err := newSpreadKey(sc, path)
		errs = append(errs, err)
		if sc.MinGroups < 0 {
			add("%s.minGroups: %d: must not be negative", path, sc.MinGroups)
		}
		if sc.MaxGroups < 0 {
			add("%s.maxGroups: %d: must not be negative", path, sc.MaxGroups)
		}
		if sc.MaxGroups > 0 && sc.MinGroups > sc.MaxGroups {
			add("%s: minGroups %d is greater than maxGroups %d", path, sc.MinGroups, sc.MaxGroups)
		}
		if err == nil && k.field != "" {
			if j, dup := field[k.field]; dup {
				add("%s: a second constraint by %s (the first is spreadConstraints[%d]): Karmada allows one per field", path, k.field, j)
			}
			field[k.field] = i
		}
		// Karmada's admission webhook makes a minGroups of 0 1.
		k.min, k.max, k.index = max(sc.MinGroups, 1), sc.MaxGroups, i
		c.spread = append(c.spread, k)
	}
	c.sel.all = len(c.spread) == 0 || p.spreadIgnored()
	for i := range c.spread {
		switch k := &c.spread[i]; k.field {
		case SpreadByFieldRegion:
			c.sel.region = k
		case SpreadByFieldCluster:
			c.sel.cluster = k
		default:
			if c.sel.other == nil {
				c.sel.other = k
			}
		}
	}

	if rs := p.ReplicaScheduling; rs != nil {
		switch rs.ReplicaSchedulingType {
		case "", ReplicaSchedulingTypeDuplicated, ReplicaSchedulingTypeDivided:
		default:
			add("replicaScheduling.replicaSchedulingType: unknown value %q: want Duplicated or Divided", rs.ReplicaSchedulingType)
		}
		switch rs.ReplicaDivisionPreference {
		case "", ReplicaDivisionPreferenceAggregated, ReplicaDivisionPreferenceWeighted:
		default:
			add("replicaScheduling.replicaDivisionPreference: unknown value %q: want Aggregated or Weighted", rs.ReplicaDivisionPreference)
		}
		if wp := rs.WeightPreference; wp != nil {
			switch wp.DynamicWeight {
			case "", DynamicWeightByAvailableReplicas:
			default:
				add("replicaScheduling.weightPreference.dynamicWeight: unknown value %q: want AvailableReplicas", wp.DynamicWeight)
			}
			for i := range wp.StaticWeightList {
				w := &wp.StaticWeightList[i]
				path := fmt.Sprintf("replicaScheduling.weightPreference.staticWeightList[%d]", i)
				if w.Weight < 1 {
					add("%s.weight: %d: must be at least 1", path, w.Weight)
				}
				m, err := compileAffinity(&w.TargetCluster, path+".targetCluster")
				errs = append(errs, err)
				c.weights = append(c.weights, staticWeight{m: m, weight: w.Weight})
			}
		}
	}
	if c.division != divideStaticWeight {
		// Validated above, but only a static weight division reads them.
		c.weights = nil
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

func validateToleration(t *corev1.Toleration, path string) error {
	switch t.Operator {
	case "", corev1.TolerationOpEqual:
		if t.Key == "" {
			return fmt.Errorf("prescheduling: placement.%s: an empty key needs operator Exists", path)
		}
	case corev1.TolerationOpExists:
		if t.Value != "" {
			return fmt.Errorf("prescheduling: placement.%s.value: %q: must be empty with operator Exists", path, t.Value)
		}
	default:
		return fmt.Errorf("prescheduling: placement.%s.operator: unsupported value %q: want Equal or Exists", path, t.Operator)
	}
	if t.Key != "" {
		if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
			return fmt.Errorf("prescheduling: placement.%s.key: %q: %s", path, t.Key, strings.Join(msgs, "; "))
		}
	}
	switch t.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute, failover.TaintEffectPreferNoExecute:
	default:
		return fmt.Errorf("prescheduling: placement.%s.effect: unknown value %q: want NoSchedule, NoExecute or PreferNoExecute", path, t.Effect)
	}
	return nil
}

// compileAffinity compiles a with the root package, the one definition of
// what an affinity selects; a nil affinity selects every cluster. A selector
// that does not parse is named by its path in the placement.
func compileAffinity(a *failover.ClusterAffinity, path string) (*failover.AffinityMatcher, error) {
	m, err := a.Compile()
	if err == nil {
		return m, nil
	}
	if ae := (*failover.AffinityError)(nil); errors.As(err, &ae) {
		return nil, fmt.Errorf("prescheduling: placement.%s.%s: %w", path, ae.Field, ae.Err)
	}
	return nil, fmt.Errorf("prescheduling: placement.%s: %w", path, err)
}

// discard is the logger ToleratesTaint gets; it logs only for the Lt and Gt
// operators, which validation rejects.
var discard = klog.Logger{}

// tolerates reports whether c has no NoSchedule or NoExecute taint that
// tols leave untolerated, as Karmada's TaintToleration filter decides; it
// returns the first such taint otherwise.
func tolerates(tols []corev1.Toleration, c *failover.Cluster) (*corev1.Taint, bool) {
	for i := range c.Taints {
		t := &c.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		ok := false
		for j := range tols {
			if tols[j].ToleratesTaint(discard, t, false) {
				ok = true
				break
			}
		}
		if !ok {
			return t, false
		}
	}
	return nil, true
}

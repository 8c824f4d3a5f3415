package failover

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// The cluster fields a FieldSelector can match on.
const (
	ProviderField = "provider"
	RegionField   = "region"
	ZoneField     = "zone"
)

// ClusterAffinity selects member clusters. A cluster matches when it is not
// excluded, its labels match LabelSelector, its provider, region and zone
// match FieldSelector, and its name is in ClusterNames; an empty part does not
// restrict. Its JSON is that of Karmada's policy/v1alpha1 ClusterAffinity.
type ClusterAffinity struct {
	// LabelSelector selects clusters by their labels.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// FieldSelector selects clusters by provider, region and zone.
	FieldSelector *FieldSelector `json:"fieldSelector,omitempty"`
	// ClusterNames lists the clusters that may match; empty means any.
	ClusterNames []string `json:"clusterNames,omitempty"`
	// ExcludeClusters lists clusters that never match.
	ExcludeClusters []string `json:"exclude,omitempty"`
}

// FieldSelector selects clusters by their provider, region and zone. Its JSON
// is that of Karmada's policy/v1alpha1 FieldSelector.
type FieldSelector struct {
	// MatchExpressions are ANDed. Keys are "provider", "region" and "zone";
	// operators In, NotIn, Exists and DoesNotExist. A cluster whose field is
	// empty does not have that field: In never matches it, NotIn and
	// DoesNotExist always do.
	MatchExpressions []corev1.NodeSelectorRequirement `json:"matchExpressions,omitempty"`
}

// Matches reports whether c is selected by a. A nil affinity matches every
// cluster. A malformed selector is an error, never a panic, and never a match.
//
// Matches parses the selectors on every call; to test many clusters against
// one affinity, [ClusterAffinity.Compile] it once.
func (a *ClusterAffinity) Matches(c Cluster) (bool, error) {
	m, err := a.Compile()
	if err != nil {
		return false, err
	}
	return m.Matches(&c), nil
}

// Validate returns an error naming the field and the value when a selector of
// a cannot be parsed. A nil affinity is valid.
func (a *ClusterAffinity) Validate() error {
	_, err := a.Compile()
	return err
}

// Compile parses a's selectors once and returns a matcher that answers
// exactly as [ClusterAffinity.Matches] does, without parsing or allocating
// per cluster. A nil affinity compiles to a matcher that matches every
// cluster. The matcher does not see later changes to a. A selector that does
// not parse is an [*AffinityError].
func (a *ClusterAffinity) Compile() (*AffinityMatcher, error) {
	if a == nil {
		return &AffinityMatcher{all: true}, nil
	}
	m := &AffinityMatcher{exclude: newNameSet(a.ExcludeClusters), names: newNameSet(a.ClusterNames)}
	if a.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(a.LabelSelector)
		if err != nil {
			return nil, &AffinityError{Field: "labelSelector", Err: err}
		}
		if !s.Empty() {
			m.labels = s
		}
	}
	if a.FieldSelector != nil {
		for i, e := range a.FieldSelector.MatchExpressions {
			r, err := compileField(i, e)
			if err != nil {
				return nil, err
			}
			m.fields = append(m.fields, r)
		}
	}
	return m, nil
}

// DeepCopy returns a copy of a that shares no memory with it.
func (a *ClusterAffinity) DeepCopy() *ClusterAffinity {
	if a == nil {
		return nil
	}
	out := &ClusterAffinity{
		LabelSelector:   a.LabelSelector.DeepCopy(),
		ClusterNames:    slices.Clone(a.ClusterNames),
		ExcludeClusters: slices.Clone(a.ExcludeClusters),
	}
	if a.FieldSelector != nil {
		out.FieldSelector = &FieldSelector{}
		if a.FieldSelector.MatchExpressions != nil {
			out.FieldSelector.MatchExpressions = make([]corev1.NodeSelectorRequirement, len(a.FieldSelector.MatchExpressions))
			for i := range a.FieldSelector.MatchExpressions {
				a.FieldSelector.MatchExpressions[i].DeepCopyInto(&out.FieldSelector.MatchExpressions[i])
			}
		}
	}
	return out
}

// AffinityMatcher is a compiled [ClusterAffinity]. It is immutable and safe
// for concurrent use.
type AffinityMatcher struct {
	all     bool // a nil affinity
	exclude nameSet
	names   nameSet         // empty: any name
	labels  labels.Selector // nil: no label restriction
	fields  []fieldRequirement
}

// Matches reports whether c is selected. A nil matcher, like a nil
// affinity, selects every cluster.
func (m *AffinityMatcher) Matches(c *Cluster) bool {
	if m == nil || m.all {
		return true
	}
	// Every part must hold, so the order is free: cheapest first, the label
	// selector (map lookups per requirement) last.
	if m.exclude.has(c.Name) {
		return false
	}
	if !m.names.empty() && !m.names.has(c.Name) {
		return false
	}
	for i := range m.fields {
		if !m.fields[i].matches(c) {
			return false
		}
	}
	return m.labels == nil || m.labels.Matches(labels.Set(c.Labels))
}

// AffinityError is the error of a selector that does not parse, from
// [ClusterAffinity.Compile], Matches and Validate. Field is the path of the
// offending part within the affinity, so that a type embedding a
// ClusterAffinity can report it under its own path.
type AffinityError struct {
	// Field is the path below the affinity, as in "labelSelector" or
	// "fieldSelector.matchExpressions[1].operator".
	Field string
	// Err says what is wrong and quotes the offending value.
	Err error
}

func (e *AffinityError) Error() string {
	return "failover: clusterAffinity." + e.Field + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *AffinityError) Unwrap() error { return e.Err }

// nameSet holds cluster names: a slice while short, where a scan beats
// hashing, and a map beyond, so that a placement listing thousands of
// clusters does not make matching a fleet quadratic.
type nameSet struct {
	list []string
	// mask has bit sig(n) set for every n in list, so that most names
	// outside a short list are rejected without comparing strings: a fleet
	// is matched against an exclude list of a few names cluster by cluster.
	mask uint64
	set  map[string]struct{}
}

const shortNameList = 8

func newNameSet(names []string) nameSet {
	if len(names) <= shortNameList {
		s := nameSet{list: slices.Clone(names)}
		for _, n := range names {
			s.mask |= 1 << sig(n)
		}
		return s
	}
	set := make(map[string]struct{}, len(names))
	for _, n := range names {
		set[n] = struct{}{}
	}
	return nameSet{set: set}
}

// sig folds a name's length and last two bytes, where the names of one fleet
// usually differ ("member-00042"), into 0..63.
func sig(name string) uint {
	n := len(name)
	if n < 2 {
		return uint(n)
	}
	return (uint(name[n-1])*31 + uint(name[n-2])*7 + uint(n)) & 63
}

func (s *nameSet) empty() bool { return len(s.list) == 0 && s.set == nil }

func (s *nameSet) has(name string) bool {
	if s.set != nil {
		_, ok := s.set[name]
		return ok
	}
	if s.mask&(1<<sig(name)) == 0 {
		return false
	}
	for _, n := range s.list {
		// Names of one fleet often share their length and differ at the
		// end, where == would reach them last.
		if len(n) == len(name) && (len(n) == 0 || n[len(n)-1] == name[len(n)-1]) && n == name {
			return true
		}
	}
	return false
}

// fieldRequirement is one field selector expression, matched directly rather
// than through labels.Selector so that matching a cluster allocates nothing.
type fieldRequirement struct {
	field  string
	op     selection.Operator
	values []string
}

func compileField(i int, e corev1.NodeSelectorRequirement) (fieldRequirement, error) {
	path := fmt.Sprintf("fieldSelector.matchExpressions[%d]", i)
	switch e.Key {
	case ProviderField, RegionField, ZoneField:
	default:
		return fieldRequirement{}, &AffinityError{Field: path + ".key", Err: fmt.Errorf("unknown field %q: want provider, region or zone", e.Key)}
	}
	var op selection.Operator
	switch e.Operator {
	case corev1.NodeSelectorOpIn:
		op = selection.In
	case corev1.NodeSelectorOpNotIn:
		op = selection.NotIn
	case corev1.NodeSelectorOpExists:
		op = selection.Exists
	case corev1.NodeSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	default:
		return fieldRequirement{}, &AffinityError{Field: path + ".operator", Err: fmt.Errorf("unsupported operator %q: want In, NotIn, Exists or DoesNotExist", e.Operator)}
	}
	// labels.NewRequirement holds the rules on values (In needs some,
	// Exists none, each a valid label value); it is built only for them.
	if _, err := labels.NewRequirement(e.Key, op, e.Values); err != nil {
		return fieldRequirement{}, &AffinityError{Field: path, Err: err}
	}
	return fieldRequirement{field: e.Key, op: op, values: slices.Clone(e.Values)}, nil
}

func (r *fieldRequirement) matches(c *Cluster) bool {
	var v string
	switch r.field {
	case ProviderField:
		v = c.Provider
	case RegionField:
		v = c.Region
	case ZoneField:
		v = c.Zone
	}
	switch r.op {
	case selection.In:
		return v != "" && slices.Contains(r.values, v)
	case selection.NotIn:
		return v == "" || !slices.Contains(r.values, v)
	case selection.Exists:
		return v != ""
	case selection.DoesNotExist:
		return v == ""
	}
	return false
}

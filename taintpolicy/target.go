package taintpolicy

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/failoverkit/failover"
)

// target is a ClusterAffinity with its selectors parsed once. The root
// package's ClusterAffinity.Matches parses them on every call, which costs
// more than the rest of an evaluation; target answers exactly as Matches does
// (a test holds the two to that) without the parsing.
type target struct {
	all      bool // nil affinity
	exclude  []string
	names    []string
	labelSel labels.Selector // nil: no label selector
	fieldSel labels.Selector // nil: no field selector
}

func compileTarget(a *failover.ClusterAffinity) (target, error) {
	if a == nil {
		return target{all: true}, nil
	}
	// Validate first so that every error names the field as the root
	// package does.
	if err := a.Validate(); err != nil {
		return target{}, err
	}
	t := target{exclude: a.ExcludeClusters, names: a.ClusterNames}
	if a.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(a.LabelSelector)
		if err != nil {
			return target{}, fmt.Errorf("taintpolicy: labelSelector: %w", err)
		}
		t.labelSel = s
	}
	if a.FieldSelector != nil {
		s := labels.NewSelector()
		for i, e := range a.FieldSelector.MatchExpressions {
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
				return target{}, fmt.Errorf("taintpolicy: fieldSelector.matchExpressions[%d].operator: unsupported operator %q", i, e.Operator)
			}
			r, err := labels.NewRequirement(e.Key, op, e.Values)
			if err != nil {
				return target{}, fmt.Errorf("taintpolicy: fieldSelector.matchExpressions[%d]: %w", i, err)
			}
			s = s.Add(*r)
		}
		t.fieldSel = s
	}
	return t, nil
}

func (t *target) matches(c *failover.Cluster) bool {
	if t.all {
		return true
	}
	if slices.Contains(t.exclude, c.Name) {
		return false
	}
	if t.labelSel != nil && !t.labelSel.Matches(labels.Set(c.Labels)) {
		return false
	}
	if t.fieldSel != nil && !t.fieldSel.Matches(clusterFields{c}) {
		return false
	}
	return len(t.names) == 0 || slices.Contains(t.names, c.Name)
}

// clusterFields shows a cluster's provider, region and zone to a selector
// without building a map; an empty field does not exist, as in the root
// package.
type clusterFields struct{ c *failover.Cluster }

func (f clusterFields) Lookup(label string) (string, bool) {
	var v string
	switch label {
	case failover.ProviderField:
		v = f.c.Provider
	case failover.RegionField:
		v = f.c.Region
	case failover.ZoneField:
		v = f.c.Zone
	}
	return v, v != ""
}

func (f clusterFields) Has(label string) bool {
	_, ok := f.Lookup(label)
	return ok
}

func (f clusterFields) Get(label string) string {
	v, _ := f.Lookup(label)
	return v
}

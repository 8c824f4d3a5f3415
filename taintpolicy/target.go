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
	fields   []fieldReq      // ANDed; empty: no field selector
}

// fieldReq is one field selector expression. It is matched directly rather
// than through labels.Selector, whose Labels interface would move every
// evaluated cluster to the heap.
type fieldReq struct {
	field  string
	op     selection.Operator
	values []string
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
			// Built only for the checks it makes, the same as the root
			// package's.
			if _, err := labels.NewRequirement(e.Key, op, e.Values); err != nil {
				return target{}, fmt.Errorf("taintpolicy: fieldSelector.matchExpressions[%d]: %w", i, err)
			}
			t.fields = append(t.fields, fieldReq{field: e.Key, op: op, values: e.Values})
		}
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
	for i := range t.fields {
		if !t.fields[i].matches(c) {
			return false
		}
	}
	return len(t.names) == 0 || slices.Contains(t.names, c.Name)
}

// matches follows labels.Requirement.Matches, with an empty cluster field
// counted as absent, as the root package does.
func (r *fieldReq) matches(c *failover.Cluster) bool {
	var v string
	switch r.field {
	case failover.ProviderField:
		v = c.Provider
	case failover.RegionField:
		v = c.Region
	case failover.ZoneField:
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

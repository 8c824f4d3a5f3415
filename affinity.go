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
	// operators In, NotIn, Exists and DoesNotExist.
	MatchExpressions []corev1.NodeSelectorRequirement `json:"matchExpressions,omitempty"`
}

// Matches reports whether c is selected by a. A nil affinity matches every
// cluster. A malformed selector is an error, never a panic, and never a match.
func (a *ClusterAffinity) Matches(c Cluster) (bool, error) {
	if a == nil {
		return true, nil
	}
	if slices.Contains(a.ExcludeClusters, c.Name) {
		// Still report a malformed selector, so that a typo is not hidden
		// by the clusters it happens to exclude.
		if err := a.Validate(); err != nil {
			return false, err
		}
		return false, nil
	}
	if a.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(a.LabelSelector)
		if err != nil {
			return false, fmt.Errorf("failover: clusterAffinity.labelSelector: %w", err)
		}
		if !s.Matches(labels.Set(c.Labels)) {
			return false, a.validateFields()
		}
	}
	if a.FieldSelector != nil {
		s, err := a.FieldSelector.selector()
		if err != nil {
			return false, err
		}
		fields := labels.Set{ProviderField: c.Provider, RegionField: c.Region, ZoneField: c.Zone}
		for k, v := range fields {
			if v == "" {
				delete(fields, k) // an unset field does not exist
			}
		}
		if !s.Matches(fields) {
			return false, nil
		}
	}
	if len(a.ClusterNames) > 0 && !slices.Contains(a.ClusterNames, c.Name) {
		return false, nil
	}
	return true, nil
}

// Validate returns an error naming the field and the value when a selector of
// a cannot be parsed. A nil affinity is valid.
func (a *ClusterAffinity) Validate() error {
	if a == nil {
		return nil
	}
	if a.LabelSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(a.LabelSelector); err != nil {
			return fmt.Errorf("failover: clusterAffinity.labelSelector: %w", err)
		}
	}
	return a.validateFields()
}

func (a *ClusterAffinity) validateFields() error {
	if a.FieldSelector == nil {
		return nil
	}
	_, err := a.FieldSelector.selector()
	return err
}

func (f *FieldSelector) selector() (labels.Selector, error) {
	s := labels.NewSelector()
	for i, e := range f.MatchExpressions {
		path := fmt.Sprintf("clusterAffinity.fieldSelector.matchExpressions[%d]", i)
		switch e.Key {
		case ProviderField, RegionField, ZoneField:
		default:
			return nil, fmt.Errorf("failover: %s.key: unknown field %q: want provider, region or zone", path, e.Key)
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
			return nil, fmt.Errorf("failover: %s.operator: unsupported operator %q: want In, NotIn, Exists or DoesNotExist", path, e.Operator)
		}
		r, err := labels.NewRequirement(e.Key, op, e.Values)
		if err != nil {
			return nil, fmt.Errorf("failover: %s: %w", path, err)
		}
		s = s.Add(*r)
	}
	return s, nil
}

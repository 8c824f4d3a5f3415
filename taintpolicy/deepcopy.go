package taintpolicy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The policy types are runtime.Objects so that they fit client-go caches and
// fake clients; the copies below share no memory with their source.
var (
	_ runtime.Object = (*ClusterTaintPolicy)(nil)
	_ runtime.Object = (*ClusterTaintPolicyList)(nil)
)

// DeepCopyInto copies p into out; out shares no memory with p.
func (p *ClusterTaintPolicy) DeepCopyInto(out *ClusterTaintPolicy) {
	*out = *p
	out.TypeMeta = p.TypeMeta
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	p.Spec.DeepCopyInto(&out.Spec)
}

// DeepCopy returns a copy of p that shares no memory with it; nil for nil.
func (p *ClusterTaintPolicy) DeepCopy() *ClusterTaintPolicy {
	if p == nil {
		return nil
	}
	out := new(ClusterTaintPolicy)
	p.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (p *ClusterTaintPolicy) DeepCopyObject() runtime.Object {
	if c := p.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies s into out; out shares no memory with s.
func (s *ClusterTaintPolicySpec) DeepCopyInto(out *ClusterTaintPolicySpec) {
	*out = *s
	out.TargetCluster = s.TargetCluster.DeepCopy()
	out.MatchConditions = copyConditions(s.MatchConditions)
	if s.TaintsToAdd != nil {
		out.TaintsToAdd = make([]TaintToAdd, len(s.TaintsToAdd))
		for i := range s.TaintsToAdd {
			s.TaintsToAdd[i].DeepCopyInto(&out.TaintsToAdd[i])
		}
	}
	out.TargetClusters = s.TargetClusters.DeepCopy()
	out.AddOnConditions = copyConditions(s.AddOnConditions)
	out.RemoveOnConditions = copyConditions(s.RemoveOnConditions)
	if s.Taints != nil {
		out.Taints = make([]Taint, len(s.Taints))
		copy(out.Taints, s.Taints) // Taint holds only strings
	}
}

// DeepCopy returns a copy of s that shares no memory with it; nil for nil.
func (s *ClusterTaintPolicySpec) DeepCopy() *ClusterTaintPolicySpec {
	if s == nil {
		return nil
	}
	out := new(ClusterTaintPolicySpec)
	s.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies c into out; out shares no memory with c.
func (c *MatchCondition) DeepCopyInto(out *MatchCondition) {
	*out = *c
	if c.StatusValues != nil {
		out.StatusValues = make([]metav1.ConditionStatus, len(c.StatusValues))
		copy(out.StatusValues, c.StatusValues)
	}
}

// DeepCopy returns a copy of c that shares no memory with it; nil for nil.
func (c *MatchCondition) DeepCopy() *MatchCondition {
	if c == nil {
		return nil
	}
	out := new(MatchCondition)
	c.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies t into out; out shares no memory with t.
func (t *TaintToAdd) DeepCopyInto(out *TaintToAdd) {
	*out = *t
	if t.AddOnMatchSeconds != nil {
		v := *t.AddOnMatchSeconds
		out.AddOnMatchSeconds = &v
	}
	if t.RemoveOnMismatchSeconds != nil {
		v := *t.RemoveOnMismatchSeconds
		out.RemoveOnMismatchSeconds = &v
	}
}

// DeepCopy returns a copy of t that shares no memory with it; nil for nil.
func (t *TaintToAdd) DeepCopy() *TaintToAdd {
	if t == nil {
		return nil
	}
	out := new(TaintToAdd)
	t.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies l into out; out shares no memory with l.
func (l *ClusterTaintPolicyList) DeepCopyInto(out *ClusterTaintPolicyList) {
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]ClusterTaintPolicy, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of l that shares no memory with it; nil for nil.
func (l *ClusterTaintPolicyList) DeepCopy() *ClusterTaintPolicyList {
	if l == nil {
		return nil
	}
	out := new(ClusterTaintPolicyList)
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *ClusterTaintPolicyList) DeepCopyObject() runtime.Object {
	if c := l.DeepCopy(); c != nil {
		return c
	}
	return nil
}

func copyConditions(in []MatchCondition) []MatchCondition {
	if in == nil {
		return nil
	}
	out := make([]MatchCondition, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

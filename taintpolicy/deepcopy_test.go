package taintpolicy

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/failoverkit/failover"
)

// fullPolicy sets every field of the spec, both forms, so that a forgotten
// field in DeepCopy shows up as shared memory.
func fullPolicy() *ClusterTaintPolicy {
	affinity := func() *failover.ClusterAffinity {
		return &failover.ClusterAffinity{
			LabelSelector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"env": "prod"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}}},
			},
			FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: failover.RegionField, Operator: corev1.NodeSelectorOpIn, Values: []string{"eu"}},
			}},
			ClusterNames:    []string{"member1"},
			ExcludeClusters: []string{"member9"},
		}
	}
	return &ClusterTaintPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
			CreationTimestamp: metav1.Time{Time: time.Unix(1, 0)}, Finalizers: []string{"f"},
		},
		Spec: ClusterTaintPolicySpec{
			TargetCluster:      affinity(),
			MatchConditions:    []MatchCondition{in("Ready", condFalse, condUnknown)},
			TaintsToAdd:        []TaintToAdd{toAdd(notReady, prefer, "v", 300, 180)},
			TargetClusters:     affinity(),
			AddOnConditions:    []MatchCondition{notIn("Ready", condTrue)},
			RemoveOnConditions: []MatchCondition{in("Ready", condTrue)},
			Taints:             []Taint{{Key: "k", Effect: noSchedule, Value: "v", AddOnMatchSeconds: ptr32(60), RemoveOnMismatchSeconds: ptr32(0)}},
		},
	}
}

func TestDeepCopyEqualsAndSharesNothing(t *testing.T) {
	orig := fullPolicy()
	cp := orig.DeepCopy()
	if !equality.Semantic.DeepEqual(orig, cp) {
		t.Fatal("the copy differs from the original")
	}
	assertNoSharedMemory(t, reflect.ValueOf(orig).Elem(), reflect.ValueOf(cp).Elem(), "ClusterTaintPolicy")

	list := &ClusterTaintPolicyList{Items: []ClusterTaintPolicy{*fullPolicy()}}
	lcp := list.DeepCopyObject().(*ClusterTaintPolicyList)
	if !equality.Semantic.DeepEqual(list, lcp) {
		t.Fatal("the list copy differs from the original")
	}
	assertNoSharedMemory(t, reflect.ValueOf(list).Elem(), reflect.ValueOf(lcp).Elem(), "ClusterTaintPolicyList")
}

func TestMutatingACopyLeavesTheOriginal(t *testing.T) {
	orig := fullPolicy()
	want := fullPolicy()
	cp := orig.DeepCopyObject().(*ClusterTaintPolicy)
	s := &cp.Spec
	s.TargetCluster.LabelSelector.MatchLabels["env"] = "dev"
	s.TargetCluster.LabelSelector.MatchExpressions[0].Values[0] = "z"
	s.TargetCluster.FieldSelector.MatchExpressions[0].Values[0] = "us"
	s.TargetCluster.ClusterNames[0] = "x"
	s.TargetCluster.ExcludeClusters[0] = "x"
	s.MatchConditions[0].StatusValues[0] = condTrue
	s.TaintsToAdd[0].Key = "x"
	*s.TaintsToAdd[0].AddOnMatchSeconds = 1
	*s.TaintsToAdd[0].RemoveOnMismatchSeconds = 1
	s.TargetClusters.ClusterNames[0] = "x"
	s.AddOnConditions[0].StatusValues[0] = condFalse
	s.RemoveOnConditions[0].StatusValues[0] = condFalse
	s.Taints[0].Value = "x"
	cp.Labels["a"] = "x"
	cp.Finalizers[0] = "x"
	if !equality.Semantic.DeepEqual(orig, want) {
		t.Errorf("mutating the copy changed the original:\n%+v", orig.Spec)
	}
}

func TestDeepCopyOfEachType(t *testing.T) {
	p := fullPolicy()
	spec := p.Spec.DeepCopy()
	assertNoSharedMemory(t, reflect.ValueOf(&p.Spec).Elem(), reflect.ValueOf(spec).Elem(), "Spec")
	mc := p.Spec.MatchConditions[0].DeepCopy()
	assertNoSharedMemory(t, reflect.ValueOf(&p.Spec.MatchConditions[0]).Elem(), reflect.ValueOf(mc).Elem(), "MatchCondition")
	ta := p.Spec.TaintsToAdd[0].DeepCopy()
	assertNoSharedMemory(t, reflect.ValueOf(&p.Spec.TaintsToAdd[0]).Elem(), reflect.ValueOf(ta).Elem(), "TaintToAdd")
	if !equality.Semantic.DeepEqual(*spec, p.Spec) || !equality.Semantic.DeepEqual(*mc, p.Spec.MatchConditions[0]) || !equality.Semantic.DeepEqual(*ta, p.Spec.TaintsToAdd[0]) {
		t.Error("a copy differs from its original")
	}
	if (*ClusterTaintPolicySpec)(nil).DeepCopy() != nil || (*MatchCondition)(nil).DeepCopy() != nil || (*TaintToAdd)(nil).DeepCopy() != nil {
		t.Error("copy of nil is not nil")
	}
}

func TestDeepCopyOfNil(t *testing.T) {
	var p *ClusterTaintPolicy
	if p.DeepCopy() != nil || p.DeepCopyObject() != nil {
		t.Error("copy of a nil policy is not nil")
	}
	var l *ClusterTaintPolicyList
	if l.DeepCopy() != nil || l.DeepCopyObject() != nil {
		t.Error("copy of a nil list is not nil")
	}
	var _ runtime.Object = p
}

// assertNoSharedMemory walks a and b together and fails where a pointer, map
// or non-empty slice of b points at the same memory as a's.
func assertNoSharedMemory(t *testing.T, a, b reflect.Value, path string) {
	t.Helper()
	if a.Type() == reflect.TypeFor[time.Time]() {
		return // its *Location is shared by design
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: pointer shared", path)
			return
		}
		assertNoSharedMemory(t, a.Elem(), b.Elem(), path)
	case reflect.Map:
		if a.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: map shared", path)
		}
		for _, k := range a.MapKeys() {
			assertNoSharedMemory(t, a.MapIndex(k), b.MapIndex(k), path+"["+k.String()+"]")
		}
	case reflect.Slice:
		if a.Len() == 0 {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: slice shared", path)
		}
		for i := range a.Len() {
			assertNoSharedMemory(t, a.Index(i), b.Index(i), path+"[]")
		}
	case reflect.Struct:
		for i := range a.NumField() {
			assertNoSharedMemory(t, a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)
		}
	case reflect.Interface:
		if !a.IsNil() {
			assertNoSharedMemory(t, a.Elem(), b.Elem(), path)
		}
	}
}

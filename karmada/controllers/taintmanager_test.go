package fork

import (
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	added := metav1.NewTime(now.Add(-10 * time.Minute))
	taint := func(e corev1.TaintEffect) *clusterv1alpha1.Cluster {
		return &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: "member1"},
			Spec:       clusterv1alpha1.ClusterSpec{Taints: []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: e, TimeAdded: &added}}},
		}
	}
	optedIn := &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{}}
	tolerating := func(seconds int64) *policyv1alpha1.Placement {
		return &policyv1alpha1.Placement{ClusterTolerations: []corev1.Toleration{{
			Key: "cluster.karmada.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
			TolerationSeconds: &seconds,
		}}}
	}
	for _, tc := range []struct {
		name      string
		enable    bool // Options.EnableNoExecuteTaintEviction
		cluster   *clusterv1alpha1.Cluster
		spec      workv1alpha2.ResourceBindingSpec
		wantEvict bool
		wantAfter time.Duration
	}{
		{"NoExecute, eviction enabled: now", true, taint(corev1.TaintEffectNoExecute), workv1alpha2.ResourceBindingSpec{}, true, 0},
		{"NoExecute, eviction disabled: never", false, taint(corev1.TaintEffectNoExecute), workv1alpha2.ResourceBindingSpec{}, false, 0},
		{"NoExecute tolerated 15m, 10m in: 5m later", true, taint(corev1.TaintEffectNoExecute), workv1alpha2.ResourceBindingSpec{Placement: tolerating(900)}, false, 5 * time.Minute},
		{"PreferNoExecute, opted in, disabled NoExecute eviction: now (300s passed)", false, taint(failover.TaintEffectPreferNoExecute), workv1alpha2.ResourceBindingSpec{Failover: optedIn}, true, 0},
		{"PreferNoExecute, not opted in: never", true, taint(failover.TaintEffectPreferNoExecute), workv1alpha2.ResourceBindingSpec{}, false, 0},
		{"NoSchedule: never", true, taint(corev1.TaintEffectNoSchedule), workv1alpha2.ResourceBindingSpec{}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &forker{opts: Options{EnableNoExecuteTaintEviction: tc.enable, Now: func() time.Time { return now }}}
			obj := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: tc.spec}
			d, err := f.decide(obj, &obj.Spec, tc.cluster)
			if err != nil {
				t.Fatal(err)
			}
			if d.Evict != tc.wantEvict || d.After != tc.wantAfter {
				t.Errorf("decide = evict %v after %v (%s), want evict %v after %v", d.Evict, d.After, d.Reason, tc.wantEvict, tc.wantAfter)
			}
			if len(tc.cluster.Spec.Taints) != 1 {
				t.Errorf("decide changed the cluster's taints: %v", tc.cluster.Spec.Taints)
			}
		})
	}

	// A binding whose applied placement cannot be read is not decided on.
	f := &forker{opts: Options{EnableNoExecuteTaintEviction: true, Now: func() time.Time { return now }}}
	obj := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{AppliedPlacementAnnotation: "{"}}}
	if d, err := f.decide(obj, &obj.Spec, taint(corev1.TaintEffectNoExecute)); err == nil || d.Evict {
		t.Errorf("decide with a malformed applied placement = %+v, %v; want no eviction and an error", d, err)
	}
}

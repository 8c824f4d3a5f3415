package fork

import (
	"strings"
	"testing"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/failoverkit/failover"
)

// A queued item's key must lead the handler back to the same binding, for
// both kinds.
func TestItemKeyRoundTrip(t *testing.T) {
	for _, o := range []client.Object{
		&workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment"}},
		&workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "crd-widgets"}},
	} {
		key := itemKey(o)
		got, err := objectKey(key)
		if err != nil {
			t.Fatalf("objectKey(%q): %v", key, err)
		}
		if want := client.ObjectKeyFromObject(o); got != want {
			t.Errorf("objectKey(itemKey(%v)) = %v via %q", want, got, key)
		}
	}
	if _, err := objectKey("a/b/c"); err == nil || !strings.Contains(err.Error(), `"a/b/c"`) {
		t.Errorf("objectKey(a/b/c) = %v, want an error naming the key", err)
	}
}

func TestTolerations(t *testing.T) {
	applied := `{"clusterTolerations":[{"key":"from-annotation","operator":"Exists","effect":"NoExecute"}]}`
	spec := &workv1alpha2.ResourceBindingSpec{Placement: &policyv1alpha1.Placement{
		ClusterTolerations: []corev1.Toleration{{Key: "from-spec", Operator: corev1.TolerationOpExists}},
	}}
	binding := func(annotations map[string]string) client.Object {
		return &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: annotations}}
	}
	for _, tc := range []struct {
		name    string
		obj     client.Object
		spec    *workv1alpha2.ResourceBindingSpec
		wantKey string // of the only toleration; "" for none
		wantErr bool
	}{
		{"applied placement wins over spec.placement", binding(map[string]string{AppliedPlacementAnnotation: applied}), spec, "from-annotation", false},
		{"no annotation: spec.placement", binding(nil), spec, "from-spec", false},
		{"empty annotation: spec.placement", binding(map[string]string{AppliedPlacementAnnotation: ""}), spec, "from-spec", false},
		{"neither: none", binding(nil), &workv1alpha2.ResourceBindingSpec{}, "", false},
		{"malformed annotation: an error, not spec.placement", binding(map[string]string{AppliedPlacementAnnotation: "{"}), spec, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tolerations(tc.obj, tc.spec)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), AppliedPlacementAnnotation) || !strings.Contains(err.Error(), "shop/web") {
					t.Errorf("err = %v, want one naming the annotation and the binding", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, tol := range got {
				keys = append(keys, tol.Key)
			}
			if strings.Join(keys, ",") != tc.wantKey {
				t.Errorf("tolerations = %q, want %q", keys, tc.wantKey)
			}
		})
	}
}

func TestFailoverBehavior(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failover *policyv1alpha1.FailoverBehavior
		want     *failover.ClusterFailoverBehavior
		wantErr  bool
	}{
		{"no spec.failover: not opted in", nil, nil, false},
		{"application only: not opted in", &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{}}, nil, false},
		{"cluster: opted in", &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}},
			&failover.ClusterFailoverBehavior{PurgeMode: failover.PurgeModeDirectly}, false},
		{"statePreservation is dropped, not an error", &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{
			StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{{AliasLabelName: "a", JSONPath: "{.x}"}}},
		}}, &failover.ClusterFailoverBehavior{}, false},
		{"unknown purge mode: an error", &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: "Sometimes"}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := failoverBehavior(&workv1alpha2.ResourceBindingSpec{Failover: tc.failover})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if (got == nil) != (tc.want == nil) || got != nil && got.PurgeMode != tc.want.PurgeMode {
				t.Errorf("failoverBehavior = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestScheduledOn(t *testing.T) {
	spec := &workv1alpha2.ResourceBindingSpec{Clusters: []workv1alpha2.TargetCluster{{Name: "member1"}, {Name: "member2"}}}
	if !scheduledOn(spec, "member2") {
		t.Error("scheduledOn(member2) = false for a binding on member1 and member2")
	}
	if scheduledOn(spec, "member3") {
		t.Error("scheduledOn(member3) = true for a binding on member1 and member2")
	}
}

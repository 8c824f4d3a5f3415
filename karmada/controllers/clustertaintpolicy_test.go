package controllers

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/failoverkit/failover/karmada"
)

var taintNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// taintWorld is a fake API server holding member1 with a Ready condition
// that turned to ready at taintNow, its taints, and the policies. Its
// scheme leaves Karmada's policy group out: the fake client converts an
// object of a kind its scheme knows into that Go type, which would drop the
// windows, where the real API server stores what the CRD's schema keeps.
func taintWorld(t *testing.T, ready metav1.ConditionStatus, taints []corev1.Taint, policies ...string) client.WithWatch {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, clusterv1alpha1.Install(s))
	objs := []client.Object{&clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "member1"},
		Spec:       clusterv1alpha1.ClusterSpec{Taints: taints},
		Status: clusterv1alpha1.ClusterStatus{Conditions: []metav1.Condition{
			{Type: clusterv1alpha1.ClusterConditionReady, Status: ready, LastTransitionTime: metav1.NewTime(taintNow), Reason: "Test"},
		}},
	}}
	for _, p := range policies {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(p), &obj))
		objs = append(objs, &unstructured.Unstructured{Object: obj})
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&clusterv1alpha1.Cluster{}).Build()
}

// notReadyPolicy taints a cluster whose Ready is not True, PreferNoExecute
// so that what runs there moves, and lifts the taint when it is True;
// windows is what the taint carries beyond key and effect.
func notReadyPolicy(windows string) string {
	return `
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata: {name: not-ready}
spec:
  addOnConditions: [{conditionType: Ready, operator: NotIn, statusValues: ["True"]}]
  removeOnConditions: [{conditionType: Ready, operator: In, statusValues: ["True"]}]
  taints:
  - {key: cluster.karmada.io/not-ready, effect: PreferNoExecute` + windows + `}
`
}

func newTaintController(t *testing.T, c client.Client) (*ClusterTaintPolicyController, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(taintNow)
	r, err := NewClusterTaintPolicyController(ClusterTaintPolicyOptions{Clock: clk})
	require.NoError(t, err)
	r.client, r.reader, r.policies = c, c, c
	return r, clk
}

// reconcileMember1 reconciles member1 and returns the result and its taints
// as the API server then holds them.
func reconcileMember1(t *testing.T, r *ClusterTaintPolicyController, c client.Client) (reconcile.Result, []string) {
	t.Helper()
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "member1"}})
	require.NoError(t, err)
	var got clusterv1alpha1.Cluster
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "member1"}, &got))
	taints := []string{}
	for _, tt := range got.Spec.Taints {
		taints = append(taints, tt.Key+":"+string(tt.Effect))
	}
	return res, taints
}

const notReadyTaint = "cluster.karmada.io/not-ready:PreferNoExecute"

func TestClusterTaintPolicyWindows(t *testing.T) {
	present := []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: "PreferNoExecute", TimeAdded: &metav1.Time{Time: taintNow.Add(-time.Hour)}}}

	t.Run("addOnMatchSeconds holds the taint back until the window passes", func(t *testing.T) {
		c := taintWorld(t, metav1.ConditionFalse, nil, notReadyPolicy(", addOnMatchSeconds: 60"))
		r, clk := newTaintController(t, c)
		res, taints := reconcileMember1(t, r, c)
		assert.Empty(t, taints)
		assert.Equal(t, 60*time.Second, res.RequeueAfter, "reconciled again when the window closes")

		clk.Step(59 * time.Second)
		res, taints = reconcileMember1(t, r, c)
		assert.Empty(t, taints)
		assert.Equal(t, time.Second, res.RequeueAfter)

		clk.Step(time.Second)
		res, taints = reconcileMember1(t, r, c)
		assert.Equal(t, []string{notReadyTaint}, taints)
		assert.Zero(t, res.RequeueAfter)
	})

	t.Run("removeOnMismatchSeconds holds the removal back until the window passes", func(t *testing.T) {
		c := taintWorld(t, metav1.ConditionTrue, present, notReadyPolicy(", removeOnMismatchSeconds: 30"))
		r, clk := newTaintController(t, c)
		res, taints := reconcileMember1(t, r, c)
		assert.Equal(t, []string{notReadyTaint}, taints)
		assert.Equal(t, 30*time.Second, res.RequeueAfter)

		clk.Step(30 * time.Second)
		res, taints = reconcileMember1(t, r, c)
		assert.Empty(t, taints)
		assert.Zero(t, res.RequeueAfter)
	})

	t.Run("without the fields the taint comes at once, as Karmada adds it", func(t *testing.T) {
		c := taintWorld(t, metav1.ConditionFalse, nil, notReadyPolicy(""))
		r, _ := newTaintController(t, c)
		res, taints := reconcileMember1(t, r, c)
		assert.Equal(t, []string{notReadyTaint}, taints)
		assert.Zero(t, res.RequeueAfter)
	})

	t.Run("without the fields the taint goes at once, as Karmada removes it", func(t *testing.T) {
		c := taintWorld(t, metav1.ConditionTrue, present, notReadyPolicy(""))
		r, _ := newTaintController(t, c)
		res, taints := reconcileMember1(t, r, c)
		assert.Empty(t, taints)
		assert.Zero(t, res.RequeueAfter)
	})

	t.Run("a policy that does not convert is left out; the others apply", func(t *testing.T) {
		bad := strings.Replace(notReadyPolicy(", addOnMatchSeconds: -1"), "name: not-ready", "name: a-bad-one", 1)
		c := taintWorld(t, metav1.ConditionFalse, nil, bad, notReadyPolicy(", addOnMatchSeconds: 60"))
		r, _ := newTaintController(t, c)
		res, taints := reconcileMember1(t, r, c)
		assert.Empty(t, taints)
		assert.Equal(t, 60*time.Second, res.RequeueAfter, "the valid policy's window")
	})

	t.Run("a changed policy is read again", func(t *testing.T) {
		c := taintWorld(t, metav1.ConditionFalse, nil, notReadyPolicy(", addOnMatchSeconds: 60"))
		r, _ := newTaintController(t, c)
		res, _ := reconcileMember1(t, r, c)
		require.Equal(t, 60*time.Second, res.RequeueAfter)

		p := &unstructured.Unstructured{}
		p.SetGroupVersionKind(karmada.ClusterTaintPolicyGVK)
		require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "not-ready"}, p))
		taints, _, err := unstructured.NestedSlice(p.Object, "spec", "taints")
		require.NoError(t, err)
		taints[0].(map[string]any)["addOnMatchSeconds"] = int64(0)
		require.NoError(t, unstructured.SetNestedSlice(p.Object, taints, "spec", "taints"))
		require.NoError(t, c.Update(context.Background(), p))

		res, got := reconcileMember1(t, r, c)
		assert.Equal(t, []string{notReadyTaint}, got)
		assert.Zero(t, res.RequeueAfter)
	})
}

// karmadaCRD reads Karmada v1.18's ClusterTaintPolicy CRD from the module
// cache, as an API server returns it: unstructured.
func karmadaCRD(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/karmada-io/karmada").Output()
	dir := strings.TrimSpace(string(out))
	require.NoError(t, err, "the github.com/karmada-io/karmada module is not in the module cache")
	data, err := os.ReadFile(filepath.Join(dir, "charts", "karmada", "_crds", "bases", "policy", "policy.karmada.io_clustertaintpolicies.yaml"))
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal(data, &obj))
	return &unstructured.Unstructured{Object: obj}
}

// withWindows adds the window fields to crd's spec.taints items, as the
// fork's patch does (crds/, tested in package karmada).
func withWindows(t *testing.T, crd *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	require.NoError(t, err)
	path := []string{"schema", "openAPIV3Schema", "properties", "spec", "properties", "taints", "items", "properties"}
	props, found, err := unstructured.NestedMap(versions[0].(map[string]any), path...)
	require.True(t, found)
	require.NoError(t, err)
	for _, f := range windowFields {
		props[f] = map[string]any{"type": "integer", "format": "int32", "minimum": int64(0)}
	}
	require.NoError(t, unstructured.SetNestedMap(versions[0].(map[string]any), props, path...))
	require.NoError(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
	return crd
}

// The controller says once at start-up whether the CRD keeps the windows,
// and names the patch when it does not, or when it cannot tell.
func TestClusterTaintPolicyCRDCheck(t *testing.T) {
	forbidden := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, ClusterTaintPolicyCRD, errors.New("RBAC"))
	}}
	preserving := karmadaCRD(t)
	versions, _, _ := unstructured.NestedSlice(preserving.Object, "spec", "versions")
	require.NoError(t, unstructured.SetNestedField(versions[0].(map[string]any), true,
		"schema", "openAPIV3Schema", "properties", "spec", "x-kubernetes-preserve-unknown-fields"))
	require.NoError(t, unstructured.SetNestedSlice(preserving.Object, versions, "spec", "versions"))

	for _, tc := range []struct {
		name        string
		crd         *unstructured.Unstructured // nil: not installed
		intercept   *interceptor.Funcs
		want        []string // in the one line logged
		mustNotHave string
	}{
		{name: "Karmada's own CRD: no window fields, and the patch to apply", crd: karmadaCRD(t),
			want: []string{"has no condition window fields", "clustertaintpolicy-windows-patch.yaml", `"missing"=["addOnMatchSeconds" "removeOnMismatchSeconds"]`}},
		{name: "the fork's CRD: windows", crd: withWindows(t, karmadaCRD(t)),
			want: []string{"carries the condition windows"}, mustNotHave: "patch"},
		{name: "a CRD that keeps unknown fields keeps the windows", crd: preserving,
			want: []string{"carries the condition windows"}, mustNotHave: "patch"},
		{name: "no RBAC to read it: said, with the grant and the patch", crd: karmadaCRD(t), intercept: &forbidden,
			want: []string{"cannot read the ClusterTaintPolicy CRD", "grant get on customresourcedefinitions.apiextensions.k8s.io clustertaintpolicies.policy.karmada.io", "clustertaintpolicy-windows-patch.yaml", "forbidden"}},
		{name: "not installed", want: []string{"CRD is not installed", "clustertaintpolicy-windows-patch.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder()
			if tc.crd != nil {
				b = b.WithObjects(tc.crd)
			}
			if tc.intercept != nil {
				b = b.WithInterceptorFuncs(*tc.intercept)
			}
			c := b.Build()
			r, err := NewClusterTaintPolicyController(ClusterTaintPolicyOptions{})
			require.NoError(t, err)
			r.reader = c
			var lines []string
			r.log = funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})

			require.NoError(t, crdCheck{r}.Start(context.Background()), "a check never stops the manager")
			require.Len(t, lines, 1, "one line at start-up")
			for _, w := range tc.want {
				assert.Contains(t, lines[0], w)
			}
			if tc.mustNotHave != "" {
				assert.NotContains(t, lines[0], tc.mustNotHave)
			}
		})
	}
	assert.False(t, crdCheck{}.NeedLeaderElection(), "every replica says it")
}

//go:build e2e

package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/examples/taintcontroller/controller"
)

// TestBinaryRunsAgainstAKubeconfig builds the example's main and runs it as
// an operator would: against a kubeconfig whose user holds only the rights
// of the shipped deploy/rbac.yaml, with leader election, serving /metrics
// and /healthz. It taints a cluster, then shuts down cleanly on SIGTERM and
// gives up its Lease.
func TestBinaryRunsAgainstAKubeconfig(t *testing.T) {
	noLeaks(t)
	const name, lease = "binary", "e2e-binary"
	addr := freeAddr(t)
	grantShippedRBAC(t)

	proc := startExample(t, filepath.Join("..", "examples", "taintcontroller"),
		// The user this kubeconfig names has only deploy/rbac.yaml's rights,
		// and the Lease goes to the default namespace those rights cover.
		"--kubeconfig="+filepath.Join(env.dir, "kubeconfig-controller"),
		"--metrics-addr="+addr,
		"--lease-name="+lease,
		"--identity=binary-1",
		"--workers=1",
		"--v=2",
	)

	createCluster(t, name, metav1.ConditionFalse, time.Now().Add(-time.Minute), userTaint)
	createPolicy(t, name+"-not-ready", name, 1, 1)
	var c failover.Cluster
	eventually(t, 20*time.Second, "the binary to taint the cluster", func() bool {
		c, _ = getCluster(t, name)
		return notReady(c) != nil
	})
	requireUserTaint(t, c)
	_, u := getCluster(t, name)
	assert.Contains(t, managers(u), "failover-taintcontroller", "written under the default field manager")

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := get("/healthz")
	assert.Equal(t, http.StatusOK, code, body)
	code, body = get("/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		"taintcontroller_is_leader 1",
		`taintcontroller_taint_changes_total{change="added"} 1`,
		`taintcontroller_policies{state="valid"}`,
		"go_goroutines",
	} {
		assert.Contains(t, body, want)
	}

	proc.stop(t)
	l, err := env.kube.CoordinationV1().Leases("kube-system").Get(ctxFor(t), lease, metav1.GetOptions{})
	require.NoError(t, err)
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	assert.Empty(t, holder, "the Lease is released on shutdown so a standby takes over at once")
}

// grantShippedRBAC applies examples/taintcontroller/deploy/rbac.yaml and
// binds its roles to controllerUser, then checks that the user can do no more
// than that (the server enforces RBAC, so the test is not passing on
// borrowed rights).
func grantShippedRBAC(t *testing.T) {
	t.Helper()
	ctx := ctxFor(t)
	for _, ns := range []string{"karmada-system", "kube-system"} {
		if ns == "karmada-system" {
			// The karmadafork test may have created it already.
			_, err := env.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}
		}
		// kube-system is created by the API server itself shortly after start.
		eventually(t, 30*time.Second, "namespace "+ns, func() bool {
			_, err := env.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return err == nil
		})
	}
	data, err := os.ReadFile(filepath.Join("..", "examples", "taintcontroller", "deploy", "rbac.yaml"))
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(env.kube.Discovery()))
	for _, doc := range strings.Split(string(data), "\n---\n") {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
		if len(u.Object) == 0 {
			continue
		}
		gvk := u.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err, "kind %s in rbac.yaml", gvk)
		var r dynamic.ResourceInterface = env.dynamic.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			r = env.dynamic.Resource(mapping.Resource).Namespace(u.GetNamespace())
		}
		_, err = r.Create(ctx, u, metav1.CreateOptions{})
		require.NoError(t, err, "creating %s %s", gvk.Kind, u.GetName())
	}

	user := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: controllerUser}}
	_, err = env.kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: controllerUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "failover-taintcontroller"},
		Subjects:   user,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.kube.RbacV1().RoleBindings("kube-system").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: controllerUser, Namespace: "kube-system"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "failover-taintcontroller-leader-election"},
		Subjects:   user,
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	restricted := rest.CopyConfig(env.config)
	restricted.BearerToken = controllerToken
	client, err := dynamic.NewForConfig(restricted)
	require.NoError(t, err)
	err = client.Resource(controller.ClusterGVR).Delete(ctx, "no-such-cluster", metav1.DeleteOptions{})
	require.True(t, apierrors.IsForbidden(err), "the controller's user may delete clusters: %v", err)
	_, err = client.Resource(controller.PolicyGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterTaintPolicy",
		"metadata": map[string]any{"name": "forbidden"}, "spec": map[string]any{},
	}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "the controller's user may create policies: %v", err)
}

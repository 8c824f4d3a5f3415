//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/failoverkit/failover/karmada/controllers"
)

// testForkBinary builds examples/karmadafork's main and runs it as an
// operator would, from a kubeconfig whose user is the ServiceAccount
// deploy/rbac.yaml binds (the admin impersonating it, on an API server that
// enforces RBAC), with leader election and its metrics and probe servers.
// Frozen by the default freeze ConfigMap, it holds a binding back; thawed,
// it evicts it, then shuts down on SIGTERM and gives up its Lease.
//
// The program sees every object in the API server, not one suite's, so this
// subtest runs alone (not in parallel) and its fleet is large enough that
// other tests' faulty clusters cannot pause it.
func testForkBinary(t *testing.T) {
	kubeconfigPath := filepath.Join(t.TempDir(), "kubeconfig")
	data, err := kubeconfig(env.config.Host, env.config.BearerToken,
		"system:serviceaccount:"+forkNamespace+":"+forkServiceAccount,
		"system:serviceaccounts", "system:serviceaccounts:"+forkNamespace, "system:authenticated")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(kubeconfigPath, data, 0o600))

	s := newSuite(t, "binary")
	tasks := s.watchTasks()
	s.cluster("binary-down", "True")
	for i := range 4 {
		s.cluster(fmt.Sprintf("binary-ok%d", i), "True")
	}
	rb := s.binding("b", bindingSpec{clusters: []string{"binary-down"}})

	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	const lease = "e2e-binary-karmadafork"
	proc := startExample(t, filepath.Join("..", "examples", "karmadafork"),
		"--kubeconfig="+kubeconfigPath,
		"--metrics-bind-address="+metricsAddr,
		"--health-probe-bind-address="+probeAddr,
		"--leader-elect-resource-name="+lease,
		"--enable-no-execute-taint-eviction=true",
		"--resource-eviction-rate=5",
		"--secondary-resource-eviction-rate=1",
		"--v=2",
	)

	var l coordinationv1.Lease
	eventually(t, 30*time.Second, "the binary to hold its Lease", func() bool {
		err := s.c.Get(ctxFor(t), client.ObjectKey{Namespace: forkNamespace, Name: lease}, &l)
		return err == nil && ptr.Deref(l.Spec.HolderIdentity, "") != ""
	})
	get := func(addr, path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	metric := func(line string) bool {
		code, body := get(metricsAddr, "/metrics")
		return code == http.StatusOK && strings.Contains(body, line)
	}

	// An operator's freeze (the default --eviction-freeze-configmap, read
	// with deploy/rbac.yaml's rights): the failed cluster's binding waits in
	// its queue, deferred, until the ConfigMap is deleted.
	freeze := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: forkNamespace, Name: controllers.DefaultFreezeName},
		Data: map[string]string{controllers.FreezeReasonKey: "e2e"}}
	require.NoError(t, s.c.Create(ctxFor(t), freeze))
	eventually(t, 20*time.Second, "eviction_frozen 1", func() bool { return metric("\neviction_frozen 1\n") })
	s.fail("binary-down")
	eventually(t, 20*time.Second, "the frozen eviction deferred", func() bool {
		return metric(`eviction_processing_total{name="binding-eviction",result="deferred"}`)
	})
	assert.Empty(t, s.getBinding("b").Spec.GracefulEvictionTasks, "evicted while frozen")
	require.NoError(t, s.c.Delete(ctxFor(t), freeze))
	eventually(t, 10*time.Second, "eviction_frozen 0", func() bool { return metric("\neviction_frozen 0\n") })
	// Decided again at most 10s after the thaw.
	tk := s.evicted(tasks, rb, "binary-down", 30*time.Second)
	assert.Equal(t, "TaintManager", tk.Producer)
	assert.Contains(t, tk.Message, "NoExecute", "the task says why")

	code, body := get(probeAddr, "/healthz")
	assert.Equal(t, http.StatusOK, code, body)
	code, body = get(metricsAddr, "/metrics")
	require.Equal(t, http.StatusOK, code)
	// Karmada's names, on controller-runtime's registry beside its own.
	for _, want := range []string{
		`eviction_processing_total{name="binding-eviction",result="success"} 1`,
		`eviction_queue_depth{name="binding-eviction"} 0`,
		"eviction_rate 5",
		"controller_runtime_reconcile_total",
	} {
		assert.Contains(t, body, want)
	}

	proc.stop(t)
	// Nothing it needs is missing from rbac.yaml: no request was refused.
	logged, err := os.ReadFile(proc.log)
	require.NoError(t, err)
	var refused []string
	for _, line := range strings.Split(string(logged), "\n") {
		if strings.Contains(strings.ToLower(line), "forbidden") {
			refused = append(refused, line)
		}
	}
	assert.Empty(t, refused, "requests rbac.yaml does not allow")
	require.NoError(t, s.c.Get(ctxFor(t), client.ObjectKey{Namespace: forkNamespace, Name: lease}, &l))
	assert.Empty(t, ptr.Deref(l.Spec.HolderIdentity, ""), "the Lease is released on shutdown so a standby takes over at once")
}

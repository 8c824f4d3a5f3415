package e2e

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

// TestBinaryRunsAgainstAKubeconfig builds the example's main and runs it as
// an operator would: against a kubeconfig, with leader election, serving
// /metrics and /healthz. It taints a cluster, then shuts down cleanly on
// SIGTERM and gives up its Lease.
func TestBinaryRunsAgainstAKubeconfig(t *testing.T) {
	noLeaks(t)
	const name, lease = "binary", "e2e-binary"
	bin := filepath.Join(t.TempDir(), "taintcontroller")
	build := exec.Command("go", "build", "-o", bin, "github.com/failoverkit/failover/examples/taintcontroller")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the example: %s", out)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	logPath := filepath.Join(t.TempDir(), "taintcontroller.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close()
	cmd := exec.Command(bin,
		"--kubeconfig="+filepath.Join(env.dir, "kubeconfig"),
		"--metrics-addr="+addr,
		"--lease-namespace="+leaseNamespace,
		"--lease-name="+lease,
		"--identity=binary-1",
		"--workers=1",
		"--v=2",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	killWithParent(cmd)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("taintcontroller log:\n%s", data)
		}
	})

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

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "exit status after SIGTERM")
		exited <- err // for the cleanup
	case <-time.After(20 * time.Second):
		t.Fatal("the binary did not exit within 20s of SIGTERM")
	}
	l, err := env.kube.CoordinationV1().Leases(leaseNamespace).Get(ctxFor(t), lease, metav1.GetOptions{})
	require.NoError(t, err)
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	assert.Empty(t, holder, "the Lease is released on shutdown so a standby takes over at once")
}

//go:build e2e

package e2e

import (
	"os/exec"
	"syscall"
)

// killWithParent makes the kernel kill cmd if the test binary dies first (a
// panic or `go test -timeout`), so no etcd or kube-apiserver outlives it.
func killWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

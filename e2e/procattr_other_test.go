//go:build e2e && !linux

package e2e

import "os/exec"

// killWithParent needs Pdeathsig, which only Linux has; elsewhere the
// processes are stopped by TestMain alone.
func killWithParent(*exec.Cmd) {}

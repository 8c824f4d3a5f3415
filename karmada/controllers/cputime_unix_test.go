//go:build unix

package controllers

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the test process has used, user and system, GC
// workers included. On a loaded machine the wall clock per operation grows
// with the other load; the CPU time per operation does not.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

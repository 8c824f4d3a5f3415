//go:build unix

// Package cputime reads the CPU time the process has used, for benchmarks
// that report it beside the wall clock: on a loaded machine the wall clock
// per operation grows with the other load, the CPU time per operation does
// not.
package cputime

import (
	"syscall"
	"time"
)

// Used is the CPU time the process has used, user and system, GC workers
// included; false where it cannot be read.
func Used() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

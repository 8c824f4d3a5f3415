//go:build !unix

// Package cputime reads the CPU time the process has used, for benchmarks
// that report it beside the wall clock: on a loaded machine the wall clock
// per operation grows with the other load, the CPU time per operation does
// not.
package cputime

import "time"

// Used is not measured off unix: false.
func Used() (time.Duration, bool) { return 0, false }

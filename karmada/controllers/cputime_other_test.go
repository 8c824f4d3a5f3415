//go:build !unix

package controllers

import "time"

// cpuTime is not measured off unix.
func cpuTime() (time.Duration, bool) { return 0, false }

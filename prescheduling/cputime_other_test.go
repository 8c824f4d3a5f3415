//go:build !unix

package prescheduling

import "time"

// cpuTime is not measured off unix.
func cpuTime() (time.Duration, bool) { return 0, false }

//go:build !unix

package failover_test

import "time"

// cpuTime is not measured off unix.
func cpuTime() (time.Duration, bool) { return 0, false }

package main

import (
	"testing"
	"time"
)

// TestLeaseFlags: a combination of the Lease flags that client-go's leader
// election would refuse only once the manager starts is refused when the
// flags are parsed, naming the flag. parseFlags registers klog's flags on
// the process's flag set, so it runs once here; checkLease has the rest.
func TestLeaseFlags(t *testing.T) {
	_, err := parseFlags([]string{"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=250ms"})
	want := "--leader-elect-lease-duration 4s: must be more than --leader-elect-renew-deadline (4s)"
	if err == nil || err.Error() != want {
		t.Errorf("parseFlags: error %v, want %q", err, want)
	}
	for _, tc := range []struct {
		lease, renew, retry time.Duration
		want                string // "" for none
	}{
		{15 * time.Second, 10 * time.Second, 2 * time.Second, ""}, // Karmada's defaults
		{4 * time.Second, 3 * time.Second, 250 * time.Millisecond, ""},
		{10 * time.Second, 10 * time.Second, 2 * time.Second,
			"--leader-elect-lease-duration 10s: must be more than --leader-elect-renew-deadline (10s)"},
		{15 * time.Second, 10 * time.Second, 0, "--leader-elect-retry-period 0s: must be positive"},
		{15 * time.Second, 2400 * time.Millisecond, 2 * time.Second,
			"--leader-elect-renew-deadline 2.4s: must be more than 1.2 times --leader-elect-retry-period (2s)"},
	} {
		err := checkLease(tc.lease, tc.renew, tc.retry)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("checkLease(%v, %v, %v): %v", tc.lease, tc.renew, tc.retry, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("checkLease(%v, %v, %v): error %v, want %q", tc.lease, tc.renew, tc.retry, err, tc.want)
		}
	}
}

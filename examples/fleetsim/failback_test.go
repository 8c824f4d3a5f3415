package main

import (
	"testing"
	"time"
)

// runFailback plays scenarios/failback.yaml, with the planner's window
// set to window when it is not 0.
func runFailback(t *testing.T, window time.Duration) (*sim, *report) {
	t.Helper()
	sc, err := readScenario("scenarios/failback.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if window > 0 {
		sc.FailbackWindow = window
	}
	return runLoaded(t, sc)
}

// Issue 38's done-when on the failback scenario: every binding that failed
// over from a region is back on its origin once the region has stayed up
// for the window, within the time the rate and the cap need; none goes
// back to a region that recovered for less than the window (westus, up 5
// minutes at 6m) or that flaps every 3 minutes (southeastasia, until 58m);
// never more than the cap in flight; the verdict passes (no ready replica
// dropped, every failback placed as predicted).
func TestFailbackScenario(t *testing.T) {
	s, r := runFailback(t, 0)
	if !r.Pass {
		t.Fatalf("checks failed: %+v", r.Checks)
	}
	fb := s.w.failback
	failedOver := 0
	for _, b := range s.w.bindings {
		for _, o := range fb.origins[b] {
			failedOver++
			if !s.w.backOn(b, o) {
				t.Errorf("%s failed over from %s and is not back on it", b.key(), o)
			}
		}
	}
	// A binding that failed over from two clusters of a region goes back
	// to both at once: one failback per binding.
	if failedOver == 0 || r.Failback.Back != len(fb.origins) {
		t.Errorf("%d failbacks for %d bindings failed over (from %d clusters)", r.Failback.Back, len(fb.origins), failedOver)
	}
	// Each region's failbacks start once it has stayed Ready for the
	// window (its taints go 30 s after it is back, which the window
	// covers), and end within what the rate and the cap need.
	stableFrom := map[string]time.Duration{"us-east-1": 11 * time.Minute, "westus": 25 * time.Minute, "southeastasia": 58 * time.Minute}
	for _, d := range fb.back {
		region := s.w.byName[d.origin].Region
		at := d.at.Sub(s.sc.Start)
		earliest := stableFrom[region] + fb.window
		if at < earliest || at > earliest+5*time.Minute {
			t.Errorf("%s back to %s (%s) at %s, want within 5m of %s", d.b.key(), d.origin, region, fmtClock(at), fmtClock(earliest))
		}
	}
	if r.Failback.Peak != fb.maxInFlight {
		t.Errorf("peak %d failbacks in flight, want the cap %d reached and not passed", r.Failback.Peak, fb.maxInFlight)
	}
}

// The flapping region and the short recovery get nothing back only because
// of the window: with a window of one minute, bindings go back to them
// while they flap.
func TestFailbackScenarioNeedsItsWindow(t *testing.T) {
	s, _ := runFailback(t, time.Minute)
	early := 0
	for _, d := range s.w.failback.back {
		switch at := d.at.Sub(s.sc.Start); s.w.byName[d.origin].Region {
		case "southeastasia":
			if at < 58*time.Minute {
				early++
			}
		case "westus":
			if at < 25*time.Minute {
				early++
			}
		}
	}
	if early == 0 {
		t.Error("with a one-minute window no binding went back to a flapping or briefly recovered region: the scenario does not test the window")
	}
}

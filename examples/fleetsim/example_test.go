package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// A small fleet that loses most of its clusters pauses evictions instead of
// slowing them; two clusters coming back resumes them.
func Example_smallFleetPause() {
	var out bytes.Buffer
	err := run(context.Background(), []string{"--scenario", "scenarios/small-fleet-pause.yaml", "--json"}, &out)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The --json schema (REFERENCE.md): times in seconds since the start.
	var r jsonReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range r.Phases {
		fmt.Printf("%4.0fs %-25s faulty %d/%d  %-6s  evicted %2d  abandoned %d  cancelled %2d\n",
			p.FromSeconds, p.Name, p.MaxFaultyClusters, r.Clusters, fmtRate(p.Rate), p.Evicted, p.Abandoned, p.Cancelled)
	}
	fmt.Println("all checks passed:", r.Pass)
	// Output:
	//    0s steady state              faulty 0/8  0.50/s  evicted  0  abandoned 0  cancelled  0
	//   60s five of eight unreachable faulty 5/8  paused  evicted  0  abandoned 0  cancelled  0
	//  360s two come back             faulty 3/8  0.50/s  evicted 41  abandoned 0  cancelled 20
	//  540s all back                  faulty 0/8  0.50/s  evicted  0  abandoned 0  cancelled  0
	// all checks passed: true
}

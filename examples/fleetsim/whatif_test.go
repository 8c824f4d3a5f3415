package main

import (
	"errors"
	"fmt"
	pngpkg "image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/failoverkit/failover/examples/fleetsim/internal/whatif"
)

// TestWhatIfFlags: bad what-if flags are errors that name the flag and the
// value, with the usage exit code; good ones parse the failure.
func TestWhatIfFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--what-if", "--fail", "region=a"}, "--what-if needs --kubeconfig FILE"},
		{[]string{"--what-if", "--kubeconfig", "k"}, "--what-if needs --fail region=NAME"},
		{[]string{"--what-if", "--kubeconfig", "k", "--fail", "us-east"}, `--fail "us-east": want region=NAME`},
		{[]string{"--what-if", "--kubeconfig", "k", "--fail", "continent=eu"}, `"continent" is not region, zone or clusters`},
		{[]string{"--what-if", "--kubeconfig", "k", "--fail", "region=a", "--scenario", "x.yaml"}, "cannot take --scenario"},
		{[]string{"--what-if", "--kubeconfig", "k", "--fail", "region=a", "--compare-domains"}, "cannot take --compare-domains"},
		{[]string{"--kubeconfig", "k"}, "--kubeconfig goes with --what-if"},
		{[]string{"--fail", "region=a"}, "--fail goes with --what-if"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		var ec exitCoder
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ec) || ec.ExitCode() != whatif.ExitUsage {
			t.Errorf("%q: %v, want exit %d and %q", tc.args, err, whatif.ExitUsage, tc.want)
		}
	}
	o, err := parseFlags([]string{"--what-if", "--kubeconfig", "k", "--fail", "clusters=a, b,a", "--json", "--resource-eviction-rate", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f := o.whatIf.failure; f.By != whatif.FailClusters || strings.Join(f.Names, ",") != "a,b" || !o.json || o.rates.ResourceEvictionRate != 2 {
		t.Errorf("parsed %+v, json %v, rate %v: want clusters a,b, JSON, 2/s", f, o.json, o.rates.ResourceEvictionRate)
	}
}

// whatIfReport is a small plan, as whatif.Plan makes one, for the figure.
func whatIfReport() *whatif.Report {
	at := func(s float64) *float64 { return &s }
	r := &whatif.Report{
		Failure: whatif.Failed{By: "region", Names: []string{"east"}, Clusters: []string{"e1", "e2"}},
		Fleet:   whatif.Fleet{Clusters: 5, FaultyAfter: 2, BindingsOnFailed: 4},
		Rate:    whatif.Rate{Rule: "fleet", PerSecond: 0.5, StormHoldSeconds: 300},
		Totals:  whatif.Totals{Moves: 3, Refused: 1},
		Clusters: []whatif.Room{
			{Name: "w1", Reported: true, PodsBefore: 20, PodsAfter: 14, Arriving: 6, Bindings: 2},
			{Name: "w2", Reported: true, PodsBefore: 10, PodsAfter: 10},
			{Name: "s1", Reported: true, PodsBefore: 8, PodsAfter: 5, Arriving: 3, Bindings: 1},
		},
	}
	for i, s := range []*float64{at(300), at(302), at(304), nil} {
		r.Evictions = append(r.Evictions, whatif.Eviction{Binding: fmt.Sprintf("default/b%d", i), AtSeconds: s})
	}
	return r
}

// TestWhatIfFigure: --plot draws the plan as a PNG of the timeline's size,
// or an SVG, by the file's extension.
func TestWhatIfFigure(t *testing.T) {
	dir := t.TempDir()
	png := filepath.Join(dir, "plan.png")
	if err := writeWhatIfFigure(whatIfReport(), png); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(png)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := pngpkg.DecodeConfig(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if cfg.Width != 1200 || cfg.Height != 900 {
		t.Errorf("%d×%d pixels, want 1200×900 as the timeline", cfg.Width, cfg.Height)
	}
	svg := filepath.Join(dir, "plan.svg")
	if err := writeWhatIfFigure(whatIfReport(), svg); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "what if region=east fails", "room before", "evicted (3)", "storm"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
}

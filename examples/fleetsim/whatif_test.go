package main

import (
	"errors"
	"fmt"
	pngpkg "image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/failoverkit/failover/examples/fleetsim/internal/whatif"
	kengine "github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/ratelimit"
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

// TestWhatIfControllerFlags: --controller-flags takes the fork's
// controller-manager command line as one argument, or a file of it (a
// Deployment's args list), keeps the flags a plan depends on and skips the
// rest; a flag given there and to fleetsim too, or a bad value, is refused.
func TestWhatIfControllerFlags(t *testing.T) {
	base := []string{"--what-if", "--kubeconfig", "k", "--fail", "region=a"}
	config := func(t *testing.T, args ...string) whatif.Config {
		t.Helper()
		o, err := parseFlags(append(slices.Clone(base), args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		cfg := whatif.Config{Rates: o.rates, EnableNoExecuteTaintEviction: o.whatIf.noExecute}
		o.whatIf.controller.apply(&cfg)
		return cfg
	}
	line := "--kubeconfig=/etc/karmada/karmada.config --controllers=*,failoverEviction --v=4 --bind-address 0.0.0.0 " +
		"--enable-no-execute-taint-eviction=true --resource-eviction-rate=2 --secondary-resource-eviction-rate 1 " +
		"--cluster-status-update-frequency=5s --eviction-capacity-hold=0 --max-clusters-in-transit=1"
	cfg := config(t, "--controller-flags", line)
	want := ratelimit.DefaultConfig()
	want.ResourceEvictionRate, want.SecondaryResourceEvictionRate = 2, 1
	if !cfg.EnableNoExecuteTaintEviction || cfg.Rates != want || cfg.StatusUpdateFrequency != 5*time.Second ||
		!cfg.DisableLedger || cfg.MaxClustersInTransit != 1 {
		t.Errorf("from %q: %+v, want NoExecute eviction on, rates 2 and 1, reports every 5s, no Ledger, 1 in transit", line, cfg)
	}
	// Without them: Karmada's defaults, and fleetsim's own flags.
	if cfg := config(t, "--resource-eviction-rate", "3"); cfg.EnableNoExecuteTaintEviction || cfg.Rates.ResourceEvictionRate != 3 ||
		cfg.StatusUpdateFrequency != 10*time.Second || cfg.DisableLedger || cfg.CapacityHold != kengine.DefaultHold {
		t.Errorf("defaults: %+v, want NoExecute eviction off, 3/s, reports every 10s, the Ledger holding for %v", cfg, kengine.DefaultHold)
	}
	file := filepath.Join(t.TempDir(), "args.yaml")
	args := "# the container's args\n- --controllers=*,failoverEviction\n- \"--enable-no-execute-taint-eviction\"\n" +
		"- --resource-eviction-rate=4 \\\n- --eviction-capacity-hold=2m\n"
	if err := os.WriteFile(file, []byte(args), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg := config(t, "--controller-flags", "@"+file); !cfg.EnableNoExecuteTaintEviction || cfg.Rates.ResourceEvictionRate != 4 ||
		cfg.CapacityHold != 2*time.Minute || cfg.DisableLedger {
		t.Errorf("from %s: %+v, want NoExecute eviction on, 4/s, the Ledger holding for 2m", file, cfg)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--resource-eviction-rate", "1", "--controller-flags", "--resource-eviction-rate=2"},
			"--resource-eviction-rate given both on the command line and in --controller-flags"},
		{[]string{"--controller-flags", "--cluster-status-update-frequency=0s"}, "--cluster-status-update-frequency 0s: must be positive"},
		{[]string{"--controller-flags", "--resource-eviction-rate=-1"}, "resource-eviction-rate"},
		{[]string{"--controller-flags", "--eviction-capacity-hold=soon"}, "eviction-capacity-hold"},
		{[]string{"--controller-flags", "@" + filepath.Join(t.TempDir(), "missing")}, "no such file"},
		{[]string{"--controller-flags", " "}, "no flags in"},
	} {
		_, err := parseFlags(append(slices.Clone(base), tc.args...), io.Discard)
		var ec exitCoder
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ec) || ec.ExitCode() != whatif.ExitUsage {
			t.Errorf("%q: %v, want exit %d and %q", tc.args, err, whatif.ExitUsage, tc.want)
		}
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

// TestWhatIfRecoverFlags: --recover plans a recovery instead of a
// failure, with the failback flags of --controller-flags; it takes no
// --fail and no --plot.
func TestWhatIfRecoverFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--what-if", "--kubeconfig", "k", "--fail", "region=a", "--recover", "region=a"}, "takes --fail or --recover, not both"},
		{[]string{"--what-if", "--kubeconfig", "k", "--recover", "region=a", "--plot", "x.png"}, "cannot take --plot"},
		{[]string{"--what-if", "--kubeconfig", "k", "--recover", "a"}, `want region=NAME`},
		{[]string{"--what-if", "--kubeconfig", "k", "--recover", "region=a", "--controller-flags", "--failback-stabilization-window=-1m"}, "must not be negative"},
		{[]string{"--recover", "region=a"}, "--recover goes with --what-if"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		var ec exitCoder
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ec) || ec.ExitCode() != whatif.ExitUsage {
			t.Errorf("%q: %v, want exit %d and %q", tc.args, err, whatif.ExitUsage, tc.want)
		}
	}
	o, err := parseFlags([]string{"--what-if", "--kubeconfig", "k", "--recover", "region=east",
		"--controller-flags", "--failback-stabilization-window=10m --max-failbacks-in-flight=3 --resource-eviction-rate=2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg := whatif.RecoveryConfig{Rates: o.rates}
	o.whatIf.controller.applyRecovery(&cfg)
	if o.whatIf.recovery.String() != "region=east" || cfg.Window != 10*time.Minute || cfg.MaxInFlight != 3 || cfg.Rates.ResourceEvictionRate != 2 {
		t.Errorf("parsed %v, %+v: want region=east, a 10m window, 3 in flight, 2/s", o.whatIf.recovery, cfg)
	}
}

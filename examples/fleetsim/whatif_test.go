package main

import (
	"errors"
	"io"
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

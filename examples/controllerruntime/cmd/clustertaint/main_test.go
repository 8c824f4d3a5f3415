package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
)

func TestParseFlagsLoadsTheShippedPolicies(t *testing.T) {
	o, err := parseFlags([]string{"--policies", "../../policies.yaml", "--resource-eviction-rate", "0.2", "--permit-wait", "3s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.rc.Policies) != 1 || o.rc.Policies[0].Name != "not-ready" || o.rc.Policies[0].APIVersion != "fleet.example.com/v1alpha1" {
		t.Fatalf("policies %+v", o.rc.Policies)
	}
	if got := o.rc.Policies[0].Spec.TaintsToAdd; len(got) != 2 || got[1].Effect != corev1.TaintEffectNoExecute || *got[1].AddOnMatchSeconds != 300 {
		t.Errorf("taints %+v", got)
	}
	if o.rc.Rates.ResourceEvictionRate != 0.2 || o.rc.PermitWait.Seconds() != 3 {
		t.Errorf("rate %v, permit wait %v", o.rc.Rates.ResourceEvictionRate, o.rc.PermitWait)
	}
}

func TestParseFlagsErrors(t *testing.T) {
	karmada := filepath.Join(t.TempDir(), "karmada.yaml")
	data, err := os.ReadFile("../../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(karmada, []byte(strings.Replace(string(data), "apiVersion: fleet.example.com/v1alpha1", "apiVersion: policy.karmada.io/v1alpha1", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--policies is required"},
		{[]string{"--policies", "nope.yaml"}, "clustertaint: --policies: open nope.yaml"},
		{[]string{"--policies", karmada}, `want apiVersion "fleet.example.com/v1alpha1"`},
		{[]string{"--policies", "../../policies.yaml", "--unhealthy-cluster-threshold", "2"}, "unhealthy-cluster-threshold"},
		{[]string{"--policies", "../../policies.yaml", "extra"}, `unexpected argument "extra"`},
	} {
		if _, err := parseFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	if _, err := parseFlags([]string{"--help"}, io.Discard); !errors.Is(err, pflag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
}

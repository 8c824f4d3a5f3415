package app

// hack/forkcheck.sh copies this file into the patched Karmada's
// cmd/controller-manager/app and runs it there: it parses command lines
// through Karmada's own NewControllerManagerCommand and asks Karmada's own
// table (controllers, controllersDisabledByDefault) and
// controllerscontext.Context.IsControllerEnabled, as setupControllers
// does, what would start. Karmada's other controllers need an API server;
// the library's three, off or in conflict, return before they touch the
// manager, so the test calls their entries in the real table.

import (
	"strings"
	"testing"

	controllerscontext "github.com/karmada-io/karmada/pkg/controllers/context"
	"github.com/karmada-io/karmada/pkg/features"

	failovercm "github.com/failoverkit/failover/karmada/controllermanager"
)

// parsedContext is the controller context setupControllers would build
// from args: the flags go through Karmada's own command.
func parsedContext(t *testing.T, args ...string) controllerscontext.Context {
	t.Helper()
	cmd := NewControllerManagerCommand(t.Context())
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	list, err := cmd.Flags().GetStringSlice("controllers")
	if err != nil {
		t.Fatal(err)
	}
	taintManager, err := cmd.Flags().GetBool("enable-taint-manager")
	if err != nil {
		t.Fatal(err)
	}
	return controllerscontext.Context{Context: t.Context(), Opts: controllerscontext.Options{Controllers: list, EnableTaintManager: taintManager}}
}

const named = "failoverEviction,failoverGracefulEviction,failoverClusterTaintPolicy,failoverApplicationFailover"

// The cases run in one process, and --feature-gates sets Karmada's global
// gate, which no later parse unsets: the gates only grow, case by case.
func TestFailoverOptIn(t *testing.T) {
	for _, name := range failovercm.DisabledByDefault() {
		if controllers[name] == nil {
			t.Fatalf("the table has no %s", name)
		}
		if !controllersDisabledByDefault.Has(name) {
			t.Errorf("%s is not disabled by default", name)
		}
	}

	// Karmada's defaults, then its deployment's flags: none of the three
	// starts, and none fails the start.
	for _, args := range [][]string{nil, {"--controllers=*,hpaScaleTargetMarker,deploymentReplicasSyncer", "--feature-gates=AllAlpha=true,AllBeta=true"}} {
		ctx := parsedContext(t, args...)
		for _, name := range failovercm.DisabledByDefault() {
			if ctx.IsControllerEnabled(name, controllersDisabledByDefault) {
				t.Errorf("%v: Karmada's table enables %s", args, name)
			}
			if enabled, err := controllers[name](ctx); enabled || err != nil {
				t.Errorf("%v: %s: (%v, %v), want (false, nil)", args, name, enabled, err)
			}
		}
	}
	if !features.FeatureGate.Enabled(features.Failover) {
		t.Fatal("AllBeta=true did not turn the Failover gate on")
	}

	// Named beside Karmada's deployment flags: each fails with the flags
	// that start them.
	ctx := parsedContext(t, "--controllers=*,hpaScaleTargetMarker,deploymentReplicasSyncer,"+named)
	for _, name := range failovercm.DisabledByDefault() {
		enabled, err := controllers[name](ctx)
		if enabled || err == nil ||
			!strings.Contains(err.Error(), "start with --enable-taint-manager=false --controllers=*,-gracefulEviction,-clustertaintpolicy,") {
			t.Errorf("%s beside Karmada's: (%v, %v), want the corrected flags", name, enabled, err)
		}
	}

	// The documented change of flags, with application failover: the four
	// on, the four they replace off.
	ctx = parsedContext(t, "--feature-gates=Failover=true", "--enable-taint-manager=false",
		"--controllers=*,-gracefulEviction,-clustertaintpolicy,-applicationFailover,"+named)
	for _, name := range failovercm.DisabledByDefault() {
		if !ctx.IsControllerEnabled(name, controllersDisabledByDefault) {
			t.Errorf("the documented flags do not enable %s", name)
		}
	}
	for _, name := range []string{"gracefulEviction", "clustertaintpolicy", "applicationFailover"} {
		if ctx.IsControllerEnabled(name, controllersDisabledByDefault) {
			t.Errorf("the documented flags leave Karmada's %s on", name)
		}
	}
	if ctx.Opts.EnableTaintManager {
		t.Error("the documented flags leave Karmada's taint manager on")
	}
}

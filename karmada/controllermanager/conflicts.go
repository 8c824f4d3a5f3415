package controllermanager

import (
	"fmt"
	"slices"
	"strings"

	controllerscontext "github.com/karmada-io/karmada/pkg/controllers/context"
	"github.com/karmada-io/karmada/pkg/features"
	"k8s.io/apimachinery/pkg/util/sets"
)

// DisabledByDefault are the names of the library's controllers, which a
// fork adds to Karmada's controllersDisabledByDefault: like
// hpaScaleTargetMarker they run only when --controllers names them, so the
// patched binary with Karmada's flags runs what stock Karmada runs. The
// init functions follow the same rule themselves, so a table that misses
// the line starts nothing either.
func DisabledByDefault() []string {
	return []string{EvictionControllerName, GracefulEvictionControllerName, ClusterTaintPolicyControllerName, ApplicationFailoverControllerName}
}

// named reports whether --controllers enables name the way Karmada's table
// does with the library's controllers disabled by default: by its name, not
// by "*". FailbackControllerName, which has no entry of its own in the
// table, is disabled by default the same way.
func named(ctx controllerscontext.Context, name string) bool {
	return ctx.IsControllerEnabled(name, sets.New(append(DisabledByDefault(), FailbackControllerName)...))
}

// karmadaClusterController is the table entry that starts Karmada's taint
// manager, beside its cluster controller.
const karmadaClusterController = "cluster"

// ConflictError is what an init function returns when one of the
// library's controllers would run beside the Karmada controller it
// replaces: two controllers doing one job evict twice, or each undo what
// the other wrote. It covers the whole failover set, not only the caller:
// Karmada stops at the first init function that fails, so one start names
// every flag to change.
type ConflictError struct {
	// Reasons say, one each, which flag keeps a Karmada controller on
	// beside its replacement, or which gate a named controller lacks.
	Reasons []string
	// Flags are the flags to change, with their corrected values: the
	// one command line with which the named controllers start alone.
	Flags []string
}

// Error names every flag, its value and the corrected command line.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("failover: the failover controllers cannot start with these flags: %s; start with %s",
		strings.Join(e.Reasons, "; "), strings.Join(e.Flags, " "))
}

// checkConflicts returns a *ConflictError if any controller of the failover
// set that ctx enables would run beside the Karmada controller it replaces,
// and nil otherwise. Each init function calls it once --controllers names
// its controller, so whichever Karmada starts first reports for all three.
//
// The gated pairs (taint manager, clustertaintpolicy) run only with the
// Failover gate, so while it is off only gracefulEviction can conflict; a
// named controller lacking the gate alone is no error (it is skipped, as
// its Karmada counterpart is: the gate stays cluster failover's off
// switch), but for the ApplicationFailoverController, whose counterpart
// is not gated. Once there is an error, though, it lists every change the named
// set needs, the gate included, so that the next start is the last.
func checkConflicts(ctx controllerscontext.Context) error {
	gate := features.FeatureGate.Enabled(features.Failover)
	// Karmada starts its taint manager with its cluster controller.
	taintManager := named(ctx, EvictionControllerName) &&
		ctx.Opts.EnableTaintManager && ctx.IsControllerEnabled(karmadaClusterController, nil)
	gracefulEviction := named(ctx, GracefulEvictionControllerName) &&
		ctx.IsControllerEnabled(KarmadaGracefulEvictionController, nil)
	clusterTaintPolicy := named(ctx, ClusterTaintPolicyControllerName) &&
		ctx.IsControllerEnabled(KarmadaClusterTaintPolicyController, nil)
	// Karmada's applicationFailover is not gated: both would fail a
	// workload over, each by its own timers, gate or no gate.
	applicationFailover := named(ctx, ApplicationFailoverControllerName) &&
		ctx.IsControllerEnabled(KarmadaApplicationFailoverController, nil)
	// For the same reason the gate is no off switch of application
	// failover: skipped without it, the fork's would leave a fork that
	// switched Karmada's off with none, where Karmada's runs gate or no
	// gate. It needs the gate only for the EvictionController it shares.
	applicationFailoverGated := !gate && named(ctx, ApplicationFailoverControllerName)
	if !gracefulEviction && !applicationFailover && !applicationFailoverGated && !(gate && (taintManager || clusterTaintPolicy)) {
		return nil
	}

	e := &ConflictError{}
	var gated []string
	for _, name := range []string{EvictionControllerName, ClusterTaintPolicyControllerName, ApplicationFailoverControllerName} {
		if !gate && named(ctx, name) {
			gated = append(gated, name)
		}
	}
	if len(gated) > 0 {
		need := " needs"
		if len(gated) > 1 {
			need = " need"
		}
		e.Reasons = append(e.Reasons, "the Failover feature gate is off, which "+strings.Join(gated, " and ")+need)
		e.Flags = append(e.Flags, "--feature-gates="+gatesWithFailover())
	}
	if taintManager {
		e.Reasons = append(e.Reasons, fmt.Sprintf("--enable-taint-manager=true (its default) keeps Karmada's taint manager, which %s replaces",
			EvictionControllerName))
		e.Flags = append(e.Flags, "--enable-taint-manager=false")
	}
	controllersFlag := "--controllers=" + strings.Join(ctx.Opts.Controllers, ",")
	var disable []string
	for _, c := range []struct {
		on                   bool
		karmada, replacement string
	}{
		{gracefulEviction, KarmadaGracefulEvictionController, GracefulEvictionControllerName},
		{clusterTaintPolicy, KarmadaClusterTaintPolicyController, ClusterTaintPolicyControllerName},
		{applicationFailover, KarmadaApplicationFailoverController, ApplicationFailoverControllerName},
	} {
		if c.on {
			disable = append(disable, c.karmada)
			e.Reasons = append(e.Reasons, fmt.Sprintf("%s keeps Karmada's %s, which %s replaces", controllersFlag, c.karmada, c.replacement))
		}
	}
	if len(disable) > 0 {
		e.Flags = append(e.Flags, "--controllers="+strings.Join(withDisabled(ctx.Opts.Controllers, disable), ","))
	}
	return e
}

// withDisabled is the --controllers list with each of names switched off:
// any entry naming one goes (IsControllerEnabled takes the first match),
// and "-name" follows the first "*", or ends the list if there is none.
func withDisabled(list, names []string) []string {
	var out []string
	for _, c := range list {
		if !slices.Contains(names, strings.TrimPrefix(c, "-")) {
			out = append(out, c)
		}
	}
	at := len(out)
	if i := slices.Index(out, "*"); i >= 0 {
		at = i + 1
	}
	off := make([]string, len(names))
	for i, n := range names {
		off[i] = "-" + n
	}
	return slices.Insert(out, at, off...)
}

// gatesWithFailover is --feature-gates as set now, with Failover=true in
// place of any Failover pair: the gate's String lists the gates set
// explicitly (component-base's featureGate).
func gatesWithFailover() string {
	var pairs []string
	if s, ok := features.FeatureGate.(fmt.Stringer); ok && s.String() != "" {
		for _, p := range strings.Split(s.String(), ",") {
			if !strings.HasPrefix(p, string(features.Failover)+"=") {
				pairs = append(pairs, p)
			}
		}
	}
	return strings.Join(append(pairs, string(features.Failover)+"=true"), ",")
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/failoverkit/failover/examples/fleetsim/internal/whatif"
)

// whatIfOptions are the flags of the what-if planner:
//
//	fleetsim --what-if --kubeconfig FILE --fail region=NAME [--json] [--plot FILE]
//	fleetsim --what-if --kubeconfig FILE --recover region=NAME [--json]
type whatIfOptions struct {
	on         bool
	kubeconfig string
	fail       string
	// recover is --recover: what recovers, for a plan of the failbacks.
	recover   string
	recovery  whatif.Failure
	noExecute bool
	// controllerFlags is --controller-flags: the controller-manager's
	// flags as one argument, or @FILE.
	controllerFlags string
	failure         whatif.Failure
	// controller is what the controller-manager's flags set.
	controller *controllerFlags
}

func (w *whatIfOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&w.on, "what-if", false, "plan a failure on a live Karmada control plane instead of simulating: read it (read-only) from --kubeconfig, "+
		"fail --fail, print where each binding would go (see README.md, \"What if\")")
	fs.StringVar(&w.kubeconfig, "kubeconfig", "", "with --what-if: the kubeconfig of the Karmada control plane to read")
	fs.StringVar(&w.fail, "fail", "", "with --what-if: what fails: region=NAME, zone=NAME or clusters=NAME[,NAME…]")
	fs.StringVar(&w.recover, "recover", "", "with --what-if, instead of --fail: what recovers (region=NAME, zone=NAME or clusters=NAME[,NAME…]): "+
		"which bindings that failed over from it would go back, where and when, with the fork's failback controller "+
		"(--failback-stabilization-window and --max-failbacks-in-flight in --controller-flags)")
	fs.BoolVar(&w.noExecute, "enable-no-execute-taint-eviction", false, "with --what-if: as the controller-manager's flag of that name: "+
		"a NoExecute taint evicts (off, as in Karmada: only PreferNoExecute moves bindings that opted in)")
	fs.StringVar(&w.controllerFlags, "controller-flags", "", "with --what-if: the fork's karmada-controller-manager flags as one argument "+
		"(its command line, quoted), or @FILE to read them from a file (one or more per line; a YAML list's \"- \" and # comments are skipped): "+
		"the plan takes its failover flags (--enable-no-execute-taint-eviction, the rate flags, --cluster-status-update-frequency, "+
		"--eviction-capacity-hold, --max-clusters-in-transit; with --recover, --failback-stabilization-window and --max-failbacks-in-flight) and ignores the rest")
}

// check validates the what-if flags after parsing.
func (w *whatIfOptions) check(fs *pflag.FlagSet) error {
	if !w.on {
		for _, f := range []string{"kubeconfig", "fail", "recover", "enable-no-execute-taint-eviction", "controller-flags"} {
			if fs.Changed(f) {
				return &whatif.ExitError{Code: whatif.ExitUsage, Err: fmt.Errorf("fleetsim: --%s goes with --what-if", f)}
			}
		}
		return nil
	}
	for _, f := range []string{"scenario", "speed", "realtime", "metrics-addr", "hold", "karmada-metric-names", "compare-domains"} {
		if fs.Changed(f) {
			return &whatif.ExitError{Code: whatif.ExitUsage, Err: fmt.Errorf("fleetsim: --what-if reads a live control plane: it cannot take --%s", f)}
		}
	}
	if w.kubeconfig == "" {
		return &whatif.ExitError{Code: whatif.ExitUsage, Err: errors.New("fleetsim: --what-if needs --kubeconfig FILE: the Karmada control plane to read")}
	}
	switch {
	case w.fail != "" && w.recover != "":
		return &whatif.ExitError{Code: whatif.ExitUsage, Err: errors.New("fleetsim: --what-if takes --fail or --recover, not both")}
	case w.recover != "":
		if fs.Changed("plot") {
			return &whatif.ExitError{Code: whatif.ExitUsage, Err: errors.New("fleetsim: --what-if --recover draws no figure: it cannot take --plot")}
		}
		f, err := whatif.ParseFailure(w.recover)
		if err != nil {
			return err
		}
		w.recovery = f
	case w.fail == "":
		return &whatif.ExitError{Code: whatif.ExitUsage, Err: errors.New("fleetsim: --what-if needs --fail region=NAME, zone=NAME or clusters=NAME[,NAME…] (or --recover)")}
	default:
		f, err := whatif.ParseFailure(w.fail)
		if err != nil {
			return err
		}
		w.failure = f
	}
	w.controller = defaultControllerFlags()
	if w.controllerFlags != "" {
		args, err := controllerArgs(w.controllerFlags)
		if err != nil {
			return &whatif.ExitError{Code: whatif.ExitUsage, Err: err}
		}
		if err := w.controller.parse(args, fs); err != nil {
			return &whatif.ExitError{Code: whatif.ExitUsage, Err: err}
		}
	}
	return nil
}

// runWhatIf reads the control plane, plays the failure and prints the
// plan: a table, or JSON with --json; with --plot, a figure too. The
// progress line of a long read goes to progress.
func runWhatIf(ctx context.Context, o *options, stdout, progress io.Writer) error {
	c, server, err := whatif.Connect(o.whatIf.kubeconfig)
	if err != nil {
		return err
	}
	in, err := whatif.Read(ctx, c, server, progress)
	if err != nil {
		return err
	}
	return planAndPrint(in, o, time.Now(), stdout)
}

// planAndPrint plays the failure (or the recovery) on in at now and prints
// the plan.
func planAndPrint(in *whatif.Input, o *options, now time.Time, stdout io.Writer) error {
	if o.whatIf.recover != "" {
		cfg := whatif.RecoveryConfig{Recovery: o.whatIf.recovery, Rates: o.rates, Now: now}
		o.whatIf.controller.applyRecovery(&cfg)
		r, err := whatif.PlanRecovery(in, cfg)
		if err != nil {
			return err
		}
		if o.json {
			return whatif.WriteRecoveryJSON(stdout, r)
		}
		return whatif.WriteRecoveryTable(stdout, r)
	}
	cfg := whatif.Config{Failure: o.whatIf.failure, Rates: o.rates, EnableNoExecuteTaintEviction: o.whatIf.noExecute, Now: now}
	o.whatIf.controller.apply(&cfg)
	r, err := whatif.Plan(in, cfg)
	if err != nil {
		return err
	}
	if o.json {
		err = whatif.WriteJSON(stdout, r)
	} else {
		err = whatif.WriteTable(stdout, r)
	}
	if err != nil {
		return err
	}
	if o.plot != "" {
		return writeWhatIfFigure(r, o.plot)
	}
	return nil
}

// exitCoder is an error that names the exit code it ends the program with.
type exitCoder interface{ ExitCode() int }

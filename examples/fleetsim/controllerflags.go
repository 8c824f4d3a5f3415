package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/failoverkit/failover/examples/fleetsim/internal/whatif"
	kengine "github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/ratelimit"
)

// controllerFlags are the flags of the fork's karmada-controller-manager
// that a plan depends on, parsed from --controller-flags: the rate flags by
// ratelimit.Config.AddFlags, as the fork registers them, and the others
// with the names and defaults of Karmada v1.18 and of the fork's failover
// section (karmada/controllermanager.Options.AddFlags, which fleetsim does
// not import: it would bring Karmada's whole controller context into its
// module for two flags).
type controllerFlags struct {
	fs    *pflag.FlagSet
	rates ratelimit.Config
	// Karmada's own flags.
	noExecute             bool
	statusUpdateFrequency time.Duration
	// The failover section's.
	capacityHold         time.Duration
	maxClustersInTransit int
	failbackWindow       time.Duration
	maxFailbacksInFlight int
}

// The flags a plan reads beside the rate flags.
const (
	flagNoExecute             = "enable-no-execute-taint-eviction"
	flagStatusUpdateFrequency = "cluster-status-update-frequency"
	flagCapacityHold          = "eviction-capacity-hold"
	flagMaxClustersInTransit  = "max-clusters-in-transit"
	flagFailbackWindow        = "failback-stabilization-window"
	flagMaxFailbacksInFlight  = "max-failbacks-in-flight"
)

func defaultControllerFlags() *controllerFlags {
	c := &controllerFlags{rates: ratelimit.DefaultConfig(), statusUpdateFrequency: 10 * time.Second, capacityHold: kengine.DefaultHold}
	c.fs = pflag.NewFlagSet("controller-flags", pflag.ContinueOnError)
	c.fs.SetOutput(new(strings.Builder))
	// A controller-manager's command line has many flags the plan has no
	// use for (--kubeconfig, --controllers, …): they are skipped.
	c.fs.ParseErrorsAllowlist.UnknownFlags = true
	c.rates.AddFlags(c.fs)
	c.fs.BoolVar(&c.noExecute, flagNoExecute, false, "")
	c.fs.DurationVar(&c.statusUpdateFrequency, flagStatusUpdateFrequency, c.statusUpdateFrequency, "")
	c.fs.DurationVar(&c.capacityHold, flagCapacityHold, c.capacityHold, "")
	c.fs.IntVar(&c.maxClustersInTransit, flagMaxClustersInTransit, 0, "")
	c.fs.DurationVar(&c.failbackWindow, flagFailbackWindow, 0, "")
	c.fs.IntVar(&c.maxFailbacksInFlight, flagMaxFailbacksInFlight, 10, "")
	return c
}

// parse reads args, refusing a flag that fleetsim's own command line gives
// too (own), so that no plan rests on a value the reader cannot see.
func (c *controllerFlags) parse(args []string, own *pflag.FlagSet) error {
	if err := c.fs.Parse(args); err != nil {
		return fmt.Errorf("fleetsim: --controller-flags: %w", err)
	}
	var both []string
	c.fs.Visit(func(f *pflag.Flag) {
		if o := own.Lookup(f.Name); o != nil && o.Changed {
			both = append(both, "--"+f.Name)
		}
	})
	if len(both) > 0 {
		return fmt.Errorf("fleetsim: %s given both on the command line and in --controller-flags: give each once", strings.Join(both, ", "))
	}
	if c.statusUpdateFrequency <= 0 {
		return fmt.Errorf("fleetsim: --controller-flags: --%s %v: must be positive", flagStatusUpdateFrequency, c.statusUpdateFrequency)
	}
	if c.capacityHold < 0 {
		return fmt.Errorf("fleetsim: --controller-flags: --%s %v: must not be negative (0 turns it off)", flagCapacityHold, c.capacityHold)
	}
	if c.maxClustersInTransit < 0 {
		return fmt.Errorf("fleetsim: --controller-flags: --%s %d: must not be negative (0 is unlimited)", flagMaxClustersInTransit, c.maxClustersInTransit)
	}
	if c.failbackWindow < 0 {
		return fmt.Errorf("fleetsim: --controller-flags: --%s %v: must not be negative (0 turns failback off)", flagFailbackWindow, c.failbackWindow)
	}
	if c.maxFailbacksInFlight < 0 {
		return fmt.Errorf("fleetsim: --controller-flags: --%s %d: must not be negative", flagMaxFailbacksInFlight, c.maxFailbacksInFlight)
	}
	if err := c.rates.Validate(); err != nil {
		return fmt.Errorf("fleetsim: --controller-flags: %w", err)
	}
	return nil
}

// applyRecovery sets a recovery plan's failback flags and the flags it
// shares with a failure plan from the controller-manager's flags given.
func (c *controllerFlags) applyRecovery(cfg *whatif.RecoveryConfig) {
	if c == nil {
		return
	}
	var fc whatif.Config
	fc.Rates = cfg.Rates
	c.apply(&fc)
	cfg.Rates, cfg.CapacityHold, cfg.DisableLedger = fc.Rates, fc.CapacityHold, fc.DisableLedger
	cfg.Window, cfg.MaxInFlight = c.failbackWindow, c.maxFailbacksInFlight
}

// apply sets cfg from the controller-manager's flags given: each rate
// flag given there replaces fleetsim's own default (parse refused one given
// both ways).
func (c *controllerFlags) apply(cfg *whatif.Config) {
	if c == nil {
		return
	}
	given := func(name string) bool { f := c.fs.Lookup(name); return f != nil && f.Changed }
	if given(flagNoExecute) {
		cfg.EnableNoExecuteTaintEviction = c.noExecute
	}
	cfg.StatusUpdateFrequency = c.statusUpdateFrequency
	cfg.CapacityHold = c.capacityHold
	cfg.DisableLedger = c.capacityHold == 0
	cfg.MaxClustersInTransit = c.maxClustersInTransit
	from, to := &c.rates, &cfg.Rates
	for name, set := range map[string]func(){
		ratelimit.FlagResourceEvictionRate:          func() { to.ResourceEvictionRate = from.ResourceEvictionRate },
		ratelimit.FlagSecondaryResourceEvictionRate: func() { to.SecondaryResourceEvictionRate = from.SecondaryResourceEvictionRate },
		ratelimit.FlagUnhealthyClusterThreshold:     func() { to.UnhealthyClusterThreshold = from.UnhealthyClusterThreshold },
		ratelimit.FlagLargeClusterNumThreshold:      func() { to.LargeClusterNumThreshold = from.LargeClusterNumThreshold },
		ratelimit.FlagDisruptionDomain:              func() { to.DisruptionDomain = from.DisruptionDomain },
		ratelimit.FlagStormThreshold:                func() { to.StormThreshold = from.StormThreshold },
		ratelimit.FlagStormWindow:                   func() { to.StormWindow = from.StormWindow },
		ratelimit.FlagStormConfirm:                  func() { to.StormConfirm = from.StormConfirm },
	} {
		if given(name) {
			set()
		}
	}
}

// controllerArgs splits --controller-flags into arguments: the value
// itself, or with @FILE the file's lines, each split at white space, with
// a YAML list item's "- ", quotes around a whole argument, a shell's
// line-continuing backslash and # comments dropped.
func controllerArgs(v string) ([]string, error) {
	text := v
	if path, ok := strings.CutPrefix(v, "@"); ok {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("fleetsim: --controller-flags: %w", err)
		}
		text = string(data)
	}
	var args []string
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "- ")
		for _, f := range strings.Fields(line) {
			f = strings.Trim(f, `"'`)
			if f == "" || f == `\` {
				continue
			}
			args = append(args, f)
		}
	}
	if len(args) == 0 {
		return nil, errors.New("fleetsim: --controller-flags: no flags in " + v)
	}
	return args, nil
}

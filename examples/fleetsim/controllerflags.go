package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/failoverkit/failover/examples/fleetsim/internal/whatif"
	"github.com/failoverkit/failover/karmada/controllermanager"
	"github.com/failoverkit/failover/ratelimit"
)

// controllerFlags are the flags of the fork's karmada-controller-manager
// that a plan depends on, parsed from --controller-flags by the
// definitions the fork itself registers (controllermanager.Options, the
// failover section) and Karmada's own flags of the same names and
// defaults.
type controllerFlags struct {
	fs      *pflag.FlagSet
	options *controllermanager.Options
	// Karmada's own flags.
	noExecute             bool
	statusUpdateFrequency time.Duration
}

// The Karmada v1.18 flags a plan reads beside the failover section, with
// Karmada's defaults.
const (
	flagNoExecute             = "enable-no-execute-taint-eviction"
	flagStatusUpdateFrequency = "cluster-status-update-frequency"
)

func defaultControllerFlags() *controllerFlags {
	c := &controllerFlags{options: controllermanager.NewOptions(), statusUpdateFrequency: 10 * time.Second}
	c.fs = pflag.NewFlagSet("controller-flags", pflag.ContinueOnError)
	c.fs.SetOutput(new(strings.Builder))
	// A controller-manager's command line has many flags the plan has no
	// use for (--kubeconfig, --controllers, …): they are skipped.
	c.fs.ParseErrorsAllowlist.UnknownFlags = true
	c.options.AddFlags(c.fs, nil)
	c.fs.BoolVar(&c.noExecute, flagNoExecute, false, "")
	c.fs.DurationVar(&c.statusUpdateFrequency, flagStatusUpdateFrequency, c.statusUpdateFrequency, "")
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
	if c.options.CapacityHold < 0 {
		return fmt.Errorf("fleetsim: --controller-flags: --eviction-capacity-hold %v: must not be negative (0 turns it off)", c.options.CapacityHold)
	}
	if c.options.MaxClustersInTransit < 0 {
		return fmt.Errorf("fleetsim: --controller-flags: --max-clusters-in-transit %d: must not be negative (0 is unlimited)", c.options.MaxClustersInTransit)
	}
	if err := c.options.Rate.Validate(); err != nil {
		return fmt.Errorf("fleetsim: --controller-flags: %w", err)
	}
	return nil
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
	cfg.CapacityHold = c.options.CapacityHold
	cfg.DisableLedger = c.options.CapacityHold == 0
	cfg.MaxClustersInTransit = c.options.MaxClustersInTransit
	from, to := &c.options.Rate, &cfg.Rates
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

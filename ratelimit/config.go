package ratelimit

import (
	"errors"
	"fmt"
	"math"

	"github.com/spf13/pflag"
)

// Flag names of the four Config fields, as karmada-controller-manager spells them.
const (
	FlagResourceEvictionRate          = "resource-eviction-rate"
	FlagSecondaryResourceEvictionRate = "secondary-resource-eviction-rate"
	FlagUnhealthyClusterThreshold     = "unhealthy-cluster-threshold"
	FlagLargeClusterNumThreshold      = "large-cluster-num-threshold"
)

// Config is the rate rule: how fast resources are evicted, given how much of the
// fleet has failed. The zero value pauses every eviction; start from
// DefaultConfig.
type Config struct {
	// ResourceEvictionRate is the number of resources evicted per second while
	// the fleet is healthy. Default 0.5 (one every 2 s). 0 stops evictions.
	ResourceEvictionRate float64
	// SecondaryResourceEvictionRate replaces ResourceEvictionRate in a large
	// fleet whose failure rate is above UnhealthyClusterThreshold. Default 0.1.
	// It may not exceed ResourceEvictionRate: an unhealthy fleet never evicts
	// faster than a healthy one.
	SecondaryResourceEvictionRate float64
	// UnhealthyClusterThreshold is the failure rate (faulty / all clusters)
	// above which, strictly, the fleet is unhealthy. Default 0.55.
	UnhealthyClusterThreshold float64
	// LargeClusterNumThreshold is the number of clusters above which, strictly,
	// the fleet is large. An unhealthy large fleet evicts at the secondary
	// rate, an unhealthy small one stops evicting. Default 10.
	LargeClusterNumThreshold int
}

// DefaultConfig returns the defaults of the source document: 0.5/s, 0.1/s,
// 0.55 and 10 clusters.
func DefaultConfig() Config {
	return Config{
		ResourceEvictionRate:          0.5,
		SecondaryResourceEvictionRate: 0.1,
		UnhealthyClusterThreshold:     0.55,
		LargeClusterNumThreshold:      10,
	}
}

// AddFlags registers the four flags on fs, bound to c. The values c holds
// become the flags' defaults; a zero Config is first set to DefaultConfig, so
// that `var c Config; c.AddFlags(fs)` shows the documented defaults.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	if *c == (Config{}) {
		*c = DefaultConfig()
	}
	fs.Float64Var(&c.ResourceEvictionRate, FlagResourceEvictionRate, c.ResourceEvictionRate,
		"Number of resources to be evicted per second when the system is healthy.")
	fs.Float64Var(&c.SecondaryResourceEvictionRate, FlagSecondaryResourceEvictionRate, c.SecondaryResourceEvictionRate,
		"Number of resources to be evicted per second when the system has become unhealthy because too many "+
			"clusters failed (failure rate above --"+FlagUnhealthyClusterThreshold+") in a large-scale federation "+
			"(more than --"+FlagLargeClusterNumThreshold+" clusters).")
	fs.Float64Var(&c.UnhealthyClusterThreshold, FlagUnhealthyClusterThreshold, c.UnhealthyClusterThreshold,
		"Cluster failure rate (failed clusters / all clusters) above which the system is considered unhealthy.")
	fs.IntVar(&c.LargeClusterNumThreshold, FlagLargeClusterNumThreshold, c.LargeClusterNumThreshold,
		"Number of clusters above which the federation is considered large-scale. When the cluster failure rate "+
			"exceeds --"+FlagUnhealthyClusterThreshold+", a large-scale federation evicts at "+
			"--"+FlagSecondaryResourceEvictionRate+" and a small one stops evicting.")
}

// Validate reports every problem in c at once (joined with errors.Join), each
// naming the field, its flag and the offending value.
func (c Config) Validate() error {
	var errs []error
	rate := func(v float64, field, flag string) {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			errs = append(errs, fmt.Errorf("ratelimit: %s (--%s) must be a finite number, got %v", field, flag, v))
		case v < 0:
			errs = append(errs, fmt.Errorf("ratelimit: %s (--%s) must not be negative, got %v", field, flag, v))
		}
	}
	rate(c.ResourceEvictionRate, "ResourceEvictionRate", FlagResourceEvictionRate)
	rate(c.SecondaryResourceEvictionRate, "SecondaryResourceEvictionRate", FlagSecondaryResourceEvictionRate)
	if c.SecondaryResourceEvictionRate > c.ResourceEvictionRate &&
		!math.IsInf(c.SecondaryResourceEvictionRate, 0) && !math.IsInf(c.ResourceEvictionRate, 0) {
		errs = append(errs, fmt.Errorf("ratelimit: SecondaryResourceEvictionRate (--%s) %v must not exceed ResourceEvictionRate (--%s) %v",
			FlagSecondaryResourceEvictionRate, c.SecondaryResourceEvictionRate, FlagResourceEvictionRate, c.ResourceEvictionRate))
	}
	if t := c.UnhealthyClusterThreshold; math.IsNaN(t) || t < 0 || t > 1 {
		errs = append(errs, fmt.Errorf("ratelimit: UnhealthyClusterThreshold (--%s) must be within [0, 1], got %v",
			FlagUnhealthyClusterThreshold, t))
	}
	if c.LargeClusterNumThreshold < 0 {
		errs = append(errs, fmt.Errorf("ratelimit: LargeClusterNumThreshold (--%s) must not be negative, got %d",
			FlagLargeClusterNumThreshold, c.LargeClusterNumThreshold))
	}
	return errors.Join(errs...)
}

// RateFor is the rule of the source document, word for word. The failure rate
// is h.Unhealthy/h.Total (0 for an empty fleet). Above UnhealthyClusterThreshold
// (strictly) a fleet of more than LargeClusterNumThreshold clusters (strictly)
// gets SecondaryResourceEvictionRate and a smaller one 0, which pauses
// evictions; otherwise the rate is ResourceEvictionRate.
func (c Config) RateFor(h Health) float64 {
	if h.FailureRate() > c.UnhealthyClusterThreshold {
		if h.Total > c.LargeClusterNumThreshold {
			return c.SecondaryResourceEvictionRate
		}
		return 0
	}
	return c.ResourceEvictionRate
}

package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Flag names of the Config fields, as karmada-controller-manager spells them.
const (
	FlagResourceEvictionRate          = "resource-eviction-rate"
	FlagSecondaryResourceEvictionRate = "secondary-resource-eviction-rate"
	FlagUnhealthyClusterThreshold     = "unhealthy-cluster-threshold"
	FlagLargeClusterNumThreshold      = "large-cluster-num-threshold"
	FlagDisruptionDomain              = "disruption-domain"
	FlagStormThreshold                = "storm-threshold"
	FlagStormWindow                   = "storm-window"
	FlagStormConfirm                  = "storm-confirm"
)

// Domain is the kind of group of clusters whose health is judged apart
// (Config.DisruptionDomain): the whole fleet, or each region, zone or
// provider (failover.Cluster's Region, Zone or Zones, Provider).
type Domain string

// The values of Config.DisruptionDomain (--disruption-domain).
const (
	DomainFleet    Domain = "fleet" // the fleet rule (RateFor); the default
	DomainRegion   Domain = "region"
	DomainZone     Domain = "zone"
	DomainProvider Domain = "provider"
)

// Domains lists the valid Domain values, the default first.
var Domains = []Domain{DomainFleet, DomainRegion, DomainZone, DomainProvider}

// String returns the flag value; the empty Domain is "fleet".
func (d Domain) String() string {
	if d == "" {
		return string(DomainFleet)
	}
	return string(d)
}

// Set parses a flag value, making Domain a pflag.Value.
func (d *Domain) Set(s string) error {
	v := Domain(s)
	if !v.valid() {
		return fmt.Errorf("ratelimit: unknown disruption domain %q; want one of %s", s, domainList())
	}
	*d = v
	return nil
}

// Type names the flag's value type in help text.
func (d *Domain) Type() string { return "domain" }

func (d Domain) valid() bool {
	return d == "" || slices.Contains(Domains, d)
}

// PerDomain reports whether d keeps health per domain, rather than for the
// whole fleet.
func (d Domain) PerDomain() bool { return d != "" && d != DomainFleet }

func domainList() string {
	s := make([]string, len(Domains))
	for i, d := range Domains {
		s[i] = string(d)
	}
	return strings.Join(s, "|")
}

// Config is the rate rule: how fast resources are evicted, given how much of
// the fleet has failed. The zero value pauses everything; start from
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
	// DisruptionDomain is what health is judged by: the whole fleet ("" or
	// DomainFleet: RateFor's rule), or each region, zone or provider apart,
	// each with its own state and rate (DomainRates). Default "fleet".
	DisruptionDomain Domain

	// StormThreshold is the share of the fleet (of all clusters) whose
	// turning faulty within StormWindow is a failure storm: when the faulty
	// count rises by more than StormThreshold × the fleet's size (strictly)
	// within StormWindow, every rate is 0 for StormConfirm (the hold), then
	// the rule applies. Many clusters failing at once more often means the
	// control plane lost sight of them (its network path broke; they keep
	// serving) than that they failed; Kubernetes' node lifecycle controller
	// stops evicting only when every zone is down, Karmada never.
	//
	// The hold ends early when the faulty count falls back to at most
	// StormThreshold × the fleet's size when the storm began above its
	// count before the storm (the clusters recovered; healthy clusters
	// joining meanwhile recover none), or when the caller says the failures are
	// real (Limiter.ConfirmStorm). A new storm must rise from the count at
	// the hold's end. Under a domain rule, the clusters of a domain in
	// FullDisruption do not count when it is the only one: the domain rule
	// exists to evacuate a lost region, zone or provider at once.
	//
	// Default 0.55, the rule's UnhealthyClusterThreshold: a rise the rule
	// would already call an unhealthy fleet, had it come from a healthy
	// one. 0 turns the hold off.
	StormThreshold float64
	// StormWindow is how quickly the rise must come to be a storm. Default
	// 1m: the node lifecycle controller's node-monitor-grace-period is 40s
	// (50s since Kubernetes 1.32), so clusters cut off together turn
	// NotReady within about that of each other, while real failures of
	// half a fleet rarely come within a minute. 0 turns the hold off.
	StormWindow time.Duration
	// StormConfirm is how long a storm holds evictions. Default 5m, the
	// node lifecycle controller's former pod-eviction-timeout and still the
	// tolerationSeconds (300) Kubernetes gives pods on a NotReady or
	// unreachable node: the time it gives a node to come back, enough for
	// a control plane's network path to be repaired or an operator to
	// look. 0 turns the hold off.
	StormConfirm time.Duration
}

// DefaultConfig returns the defaults of the source document: 0.5/s, 0.1/s,
// 0.55 and 10 clusters, judged over the whole fleet; and a failure storm's
// hold of 5m when more than 0.55 of the fleet turns faulty within 1m.
func DefaultConfig() Config {
	return Config{
		ResourceEvictionRate:          0.5,
		SecondaryResourceEvictionRate: 0.1,
		UnhealthyClusterThreshold:     0.55,
		LargeClusterNumThreshold:      10,
		StormThreshold:                0.55,
		StormWindow:                   time.Minute,
		StormConfirm:                  5 * time.Minute,
	}
}

// AddFlags registers the flags on fs, bound to c, c's values (DefaultConfig
// for a zero Config) as their defaults.
//
// A flag fs already defines is shared, not redefined (pflag would panic):
// karmada-controller-manager v1.18 defines --resource-eviction-rate as a
// float32 of its own. The existing flag keeps its type, default, usage and
// variable, and c's field follows it with no further call: AddFlags copies
// its current value, and every later Set of the flag copies the value the
// flag then holds, read back from its String, so both agree (a float32 is
// rounded alike). A value the field cannot hold leaves it as it was, and
// setting one fails naming the flag and the value. Code that writes the
// other variable directly is not seen.
//
// Call AddFlags after the program's own flags are defined, on the flag set
// that holds them: a flag defined after would collide, and pflag's
// AddFlagSet silently skips a name the target has, leaving c unbound. In
// karmada-controller-manager v1.18 that is the "cluster failover" named set,
// after ClusterFailoverOptions.AddFlags, or the command's Flags() once the
// named sets are added to it.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	if *c == (Config{}) {
		*c = DefaultConfig()
	}
	parseFloat := func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
	addFlag(fs, &c.ResourceEvictionRate, FlagResourceEvictionRate,
		"Number of resources to be evicted per second when the system is healthy.",
		parseFloat, fs.Float64Var)
	addFlag(fs, &c.SecondaryResourceEvictionRate, FlagSecondaryResourceEvictionRate,
		"Number of resources to be evicted per second when the system has become unhealthy because too many "+
			"clusters failed (failure rate above --"+FlagUnhealthyClusterThreshold+") in a large-scale federation "+
			"(more than --"+FlagLargeClusterNumThreshold+" clusters).",
		parseFloat, fs.Float64Var)
	addFlag(fs, &c.UnhealthyClusterThreshold, FlagUnhealthyClusterThreshold,
		"Cluster failure rate (failed clusters / all clusters) above which the system is considered unhealthy.",
		parseFloat, fs.Float64Var)
	addFlag(fs, &c.LargeClusterNumThreshold, FlagLargeClusterNumThreshold,
		"Number of clusters above which the federation is considered large-scale. When the cluster failure rate "+
			"exceeds --"+FlagUnhealthyClusterThreshold+", a large-scale federation evicts at "+
			"--"+FlagSecondaryResourceEvictionRate+" and a small one stops evicting.",
		strconv.Atoi, fs.IntVar)
	if !shareFlag(fs, FlagDisruptionDomain, "a disruption domain ("+domainList()+")", c.DisruptionDomain.Set) {
		fs.Var(&c.DisruptionDomain, FlagDisruptionDomain,
			"What cluster health is judged by: "+domainList()+". With fleet, the failure rate of the whole fleet "+
				"sets one rate for every eviction. With region, zone or provider, each domain has its own state "+
				"and rate (normal: --"+FlagResourceEvictionRate+"; partially disrupted: --"+
				FlagSecondaryResourceEvictionRate+" if the domain has more than --"+FlagLargeClusterNumThreshold+
				" clusters, else 0; fully disrupted: --"+FlagResourceEvictionRate+"), every domain fully "+
				"disrupted pauses all evictions, and the total never exceeds --"+FlagResourceEvictionRate+
				". A cluster with no region, zone or provider forms its own domain \"\".")
	}
	addFlag(fs, &c.StormThreshold, FlagStormThreshold,
		"Share of all clusters whose turning faulty within --"+FlagStormWindow+" is a failure storm (the control "+
			"plane more likely lost sight of them than they failed): evictions then hold for --"+FlagStormConfirm+
			", or until the clusters recover or an operator confirms. The outage of exactly one disruption domain "+
			"does not count. 0 disables the hold.",
		parseFloat, fs.Float64Var)
	addFlag(fs, &c.StormWindow, FlagStormWindow,
		"How quickly clusters must turn faulty to be a failure storm (see --"+FlagStormThreshold+"). 0 disables the hold.",
		time.ParseDuration, fs.DurationVar)
	addFlag(fs, &c.StormConfirm, FlagStormConfirm,
		"How long a failure storm holds evictions before the rate rule applies (see --"+FlagStormThreshold+
			"). 0 disables the hold.",
		time.ParseDuration, fs.DurationVar)
}

// addFlag shares the flag name if fs defines it, else defines it bound to p.
func addFlag[T any](fs *pflag.FlagSet, p *T, name, usage string,
	parse func(string) (T, error), define func(p *T, name string, value T, usage string)) {
	if shareFlag(fs, name, "a number", func(s string) error {
		v, err := parse(s)
		if err == nil {
			*p = v
		}
		return err
	}) {
		return
	}
	define(p, name, *p, usage)
}

// shareFlag makes an existing flag name also write its value through set
// (which takes want), and reports whether there was one.
func shareFlag(fs *pflag.FlagSet, name, want string, set func(string) error) bool {
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	_ = set(f.Value.String()) // a value the field cannot hold leaves it as it was (documented)
	f.Value = sharedValue{Value: f.Value, name: name, want: want, set: set}
	return true
}

// sharedValue is an existing flag's Value that also hands its value to a
// Config field.
type sharedValue struct {
	pflag.Value
	name string
	want string // what set takes: "a number", …
	set  func(string) error
}

// Set follows the flag even when its Set fails: pflag's Values may change
// their variable before a parse error (a float32 becomes 0).
func (v sharedValue) Set(s string) error {
	err := v.Value.Set(s)
	if ferr := v.set(v.Value.String()); err == nil && ferr != nil {
		err = fmt.Errorf("ratelimit: --%s=%q is not %s the rate limiter can use: %w", v.name, s, v.want, ferr)
	}
	return err
}

// MaxRate is the fastest rate a Limiter can keep: one permit a nanosecond.
// Validate refuses a faster one rather than cap it silently.
const MaxRate = 1e9

// Validate reports every problem in c at once, each naming the field, its
// flag and the value.
func (c Config) Validate() error {
	var errs []error
	rate := func(v float64, field, flag string) {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			errs = append(errs, fmt.Errorf("ratelimit: %s (--%s) must be a finite number, got %v", field, flag, v))
		case v < 0:
			errs = append(errs, fmt.Errorf("ratelimit: %s (--%s) must not be negative, got %v", field, flag, v))
		case v > MaxRate:
			errs = append(errs, fmt.Errorf("ratelimit: %s (--%s) must be at most %g per second (one a nanosecond), got %v", field, flag, float64(MaxRate), v))
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
	if !c.DisruptionDomain.valid() {
		errs = append(errs, fmt.Errorf("ratelimit: DisruptionDomain (--%s) must be one of %s, got %q",
			FlagDisruptionDomain, domainList(), string(c.DisruptionDomain)))
	}
	if t := c.StormThreshold; math.IsNaN(t) || t < 0 || t > 1 {
		errs = append(errs, fmt.Errorf("ratelimit: StormThreshold (--%s) must be within [0, 1], got %v",
			FlagStormThreshold, t))
	}
	for _, d := range []struct {
		field, flag string
		v           time.Duration
	}{{"StormWindow", FlagStormWindow, c.StormWindow}, {"StormConfirm", FlagStormConfirm, c.StormConfirm}} {
		if d.v < 0 || d.v > maxInterval {
			errs = append(errs, fmt.Errorf("ratelimit: %s (--%s) must be within [0, %v], got %v",
				d.field, d.flag, maxInterval, d.v))
		}
	}
	return errors.Join(errs...)
}

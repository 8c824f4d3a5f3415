package ratelimit

import (
	"math"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRateFor(t *testing.T) {
	cfg := DefaultConfig()
	tests := []struct {
		name string
		h    Health
		want float64
	}{
		{"empty fleet evicts at the primary rate", Health{}, 0.5},
		{"healthy fleet evicts at the primary rate", Health{Total: 20, Unhealthy: 0}, 0.5},
		{"exactly 55% faulty is not above the threshold", Health{Total: 20, Unhealthy: 11}, 0.5},
		{"just above 55% in a large fleet slows to the secondary rate", Health{Total: 11, Unhealthy: 7}, 0.1},
		{"all faulty in a large fleet slows to the secondary rate", Health{Total: 100, Unhealthy: 100}, 0.1},
		{"exactly 10 clusters is small: above the threshold pauses", Health{Total: 10, Unhealthy: 6}, 0},
		{"11 clusters is large", Health{Total: 11, Unhealthy: 11}, 0.1},
		{"one faulty cluster of one pauses", Health{Total: 1, Unhealthy: 1}, 0},
		{"half of a small fleet is under the threshold", Health{Total: 10, Unhealthy: 5}, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, cfg.RateFor(tt.h))
		})
	}
}

func TestRateForCustomThresholds(t *testing.T) {
	cfg := Config{ResourceEvictionRate: 3, SecondaryResourceEvictionRate: 1, UnhealthyClusterThreshold: 0, LargeClusterNumThreshold: 0}
	assert.Equal(t, 3.0, cfg.RateFor(Health{Total: 5}), "no faulty cluster is not above a 0 threshold")
	assert.Equal(t, 1.0, cfg.RateFor(Health{Total: 5, Unhealthy: 1}), "any fault is above 0; every fleet is large")
	cfg.UnhealthyClusterThreshold = 1
	assert.Equal(t, 3.0, cfg.RateFor(Health{Total: 5, Unhealthy: 5}), "a failure rate can never be above 1")
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   []string // substrings, one per expected error
	}{
		{"defaults are valid", func(*Config) {}, nil},
		{"zero rates are valid: evictions stop", func(c *Config) { c.ResourceEvictionRate, c.SecondaryResourceEvictionRate = 0, 0 }, nil},
		{"NaN rate", func(c *Config) { c.ResourceEvictionRate = math.NaN() },
			[]string{"ResourceEvictionRate (--resource-eviction-rate) must be a finite number, got NaN"}},
		{"infinite rate", func(c *Config) { c.ResourceEvictionRate = math.Inf(1) },
			[]string{"ResourceEvictionRate (--resource-eviction-rate) must be a finite number, got +Inf"}},
		{"negative infinite secondary rate", func(c *Config) { c.SecondaryResourceEvictionRate = math.Inf(-1) },
			[]string{"SecondaryResourceEvictionRate (--secondary-resource-eviction-rate) must be a finite number, got -Inf"}},
		{"negative rate", func(c *Config) { c.ResourceEvictionRate = -1 },
			[]string{"ResourceEvictionRate (--resource-eviction-rate) must not be negative, got -1",
				"SecondaryResourceEvictionRate (--secondary-resource-eviction-rate) 0.1 must not exceed ResourceEvictionRate (--resource-eviction-rate) -1"}},
		{"secondary above primary", func(c *Config) { c.SecondaryResourceEvictionRate = 0.6 },
			[]string{"SecondaryResourceEvictionRate (--secondary-resource-eviction-rate) 0.6 must not exceed ResourceEvictionRate (--resource-eviction-rate) 0.5"}},
		{"threshold above 1", func(c *Config) { c.UnhealthyClusterThreshold = 1.5 },
			[]string{"UnhealthyClusterThreshold (--unhealthy-cluster-threshold) must be within [0, 1], got 1.5"}},
		{"negative threshold", func(c *Config) { c.UnhealthyClusterThreshold = -0.1 },
			[]string{"UnhealthyClusterThreshold (--unhealthy-cluster-threshold) must be within [0, 1], got -0.1"}},
		{"NaN threshold", func(c *Config) { c.UnhealthyClusterThreshold = math.NaN() },
			[]string{"UnhealthyClusterThreshold (--unhealthy-cluster-threshold) must be within [0, 1], got NaN"}},
		{"negative cluster count", func(c *Config) { c.LargeClusterNumThreshold = -3 },
			[]string{"LargeClusterNumThreshold (--large-cluster-num-threshold) must not be negative, got -3"}},
		{"every problem is reported at once", func(c *Config) {
			c.ResourceEvictionRate, c.UnhealthyClusterThreshold, c.LargeClusterNumThreshold = math.NaN(), 2, -1
		}, []string{"got NaN", "got 2", "got -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mutate(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tt.want), "one line per problem: %v", err)
			for i, line := range lines {
				assert.True(t, strings.HasPrefix(line, "ratelimit: "), "line %q starts with the package name", line)
				assert.Contains(t, line, tt.want[i])
			}
		})
	}
}

func TestAddFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want Config
	}{
		{"no flags keep the documented defaults", nil, DefaultConfig()},
		{"every flag is parsed", []string{
			"--resource-eviction-rate=2", "--secondary-resource-eviction-rate=0.25",
			"--unhealthy-cluster-threshold=0.7", "--large-cluster-num-threshold=50",
		}, Config{ResourceEvictionRate: 2, SecondaryResourceEvictionRate: 0.25, UnhealthyClusterThreshold: 0.7, LargeClusterNumThreshold: 50}},
		{"one flag leaves the others at their defaults", []string{"--resource-eviction-rate", "1"},
			Config{ResourceEvictionRate: 1, SecondaryResourceEvictionRate: 0.1, UnhealthyClusterThreshold: 0.55, LargeClusterNumThreshold: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Config // the zero Config registers the documented defaults
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			c.AddFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			assert.Equal(t, tt.want, c)
		})
	}
}

func TestAddFlagsDefaultsAndHelp(t *testing.T) {
	c := DefaultConfig()
	c.ResourceEvictionRate = 3 // a caller's own default wins
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	c.AddFlags(fs)
	for name, def := range map[string]string{
		FlagResourceEvictionRate:          "3",
		FlagSecondaryResourceEvictionRate: "0.1",
		FlagUnhealthyClusterThreshold:     "0.55",
		FlagLargeClusterNumThreshold:      "10",
	} {
		f := fs.Lookup(name)
		require.NotNil(t, f, name)
		assert.Equal(t, def, f.DefValue, name)
		assert.NotEmpty(t, f.Usage, name)
	}
	assert.Contains(t, fs.Lookup(FlagResourceEvictionRate).Usage, "evicted per second when the system is healthy")
	assert.Contains(t, fs.Lookup(FlagUnhealthyClusterThreshold).Usage, "considered unhealthy")

	bad := pflag.NewFlagSet("bad", pflag.ContinueOnError)
	bad.SetOutput(new(strings.Builder))
	c.AddFlags(bad)
	assert.Error(t, bad.Parse([]string{"--large-cluster-num-threshold=many"}), "a non-integer count is a parse error")
}

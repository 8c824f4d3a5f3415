package ratelimit

import (
	"math"
	"strings"
	"testing"
	"time"

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
		{"a rate faster than a Limiter can keep", func(c *Config) { c.ResourceEvictionRate = 1e12 },
			[]string{"ResourceEvictionRate (--resource-eviction-rate) must be at most 1e+09 per second (one a nanosecond), got 1e+12"}},
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
			"--storm-threshold=0.3", "--storm-window=2m", "--storm-confirm=10m",
		}, Config{ResourceEvictionRate: 2, SecondaryResourceEvictionRate: 0.25, UnhealthyClusterThreshold: 0.7, LargeClusterNumThreshold: 50,
			StormThreshold: 0.3, StormWindow: 2 * time.Minute, StormConfirm: 10 * time.Minute}},
		{"one flag leaves the others at their defaults", []string{"--resource-eviction-rate", "1"},
			Config{ResourceEvictionRate: 1, SecondaryResourceEvictionRate: 0.1, UnhealthyClusterThreshold: 0.55, LargeClusterNumThreshold: 10, StormThreshold: 0.55, StormWindow: time.Minute, StormConfirm: 5 * time.Minute}},
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

// karmadaFlags defines --resource-eviction-rate as karmada-controller-manager
// v1.18 does (ClusterFailoverOptions.AddFlags): a float32 of its own.
func karmadaFlags(rate *float32, def float32) *pflag.FlagSet {
	fs := pflag.NewFlagSet("karmada-controller-manager", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	fs.Float32Var(rate, FlagResourceEvictionRate, def, "This is the number of resources to be evicted per second in a cluster failover scenario.")
	return fs
}

func TestAddFlagsSharesAnExistingFlag(t *testing.T) {
	tests := []struct {
		name       string
		def        float32
		args       []string
		wantOwn    float32
		wantConfig Config
	}{
		{"not given: both read the existing flag's default", 0.25, nil,
			0.25, Config{ResourceEvictionRate: 0.25, SecondaryResourceEvictionRate: 0.1, UnhealthyClusterThreshold: 0.55, LargeClusterNumThreshold: 10, StormThreshold: 0.55, StormWindow: time.Minute, StormConfirm: 5 * time.Minute}},
		{"given: both hold it", 0.5, []string{"--resource-eviction-rate=0.3", "--secondary-resource-eviction-rate=0.05"},
			0.3, Config{ResourceEvictionRate: 0.3, SecondaryResourceEvictionRate: 0.05, UnhealthyClusterThreshold: 0.55, LargeClusterNumThreshold: 10, StormThreshold: 0.55, StormWindow: time.Minute, StormConfirm: 5 * time.Minute}},
		{"given twice: the last wins in both", 0.5, []string{"--resource-eviction-rate=2", "--resource-eviction-rate", "4"},
			4, Config{ResourceEvictionRate: 4, SecondaryResourceEvictionRate: 0.1, UnhealthyClusterThreshold: 0.55, LargeClusterNumThreshold: 10, StormThreshold: 0.55, StormWindow: time.Minute, StormConfirm: 5 * time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var own float32
			fs := karmadaFlags(&own, tt.def)
			var c Config
			require.NotPanics(t, func() { c.AddFlags(fs) })
			require.NoError(t, fs.Parse(tt.args))
			assert.Equal(t, tt.wantOwn, own, "the existing flag's variable")
			assert.Equal(t, tt.wantConfig, c)
		})
	}
}

func TestAddFlagsLeavesTheExistingFlagInPlace(t *testing.T) {
	var own float32
	fs := karmadaFlags(&own, 0.5)
	var c Config
	c.AddFlags(fs)

	f := fs.Lookup(FlagResourceEvictionRate)
	assert.Equal(t, "float32", f.Value.Type(), "help still shows Karmada's type")
	assert.Equal(t, "0.5", f.DefValue)
	assert.Contains(t, f.Usage, "cluster failover scenario", "Karmada's usage text is kept")
	assert.Regexp(t, `--resource-eviction-rate float32 +This is the number .*\(default 0\.5\)`, fs.FlagUsages(),
		"--help shows the flag as before")
	for _, name := range []string{FlagSecondaryResourceEvictionRate, FlagUnhealthyClusterThreshold, FlagLargeClusterNumThreshold} {
		assert.NotNil(t, fs.Lookup(name), "the missing flags are registered: %s", name)
	}

	// fs.Set goes through the flag as Parse does, and pflag's typed getter
	// still reads the flag as Karmada's float32.
	require.NoError(t, fs.Set(FlagResourceEvictionRate, "0.1234567891"))
	got, err := fs.GetFloat32(FlagResourceEvictionRate)
	require.NoError(t, err)
	assert.Equal(t, own, got)
	assert.Equal(t, float32(0.1234567891), own)
	assert.Equal(t, float64(own), float64(float32(c.ResourceEvictionRate)), "both hold the float32 value")
	assert.InDelta(t, 0.12345679, c.ResourceEvictionRate, 1e-12, "the Config holds the value the flag holds, not the digits typed")

	err = fs.Parse([]string{"--resource-eviction-rate=fast"})
	require.Error(t, err, "the existing flag's own parsing still applies")
	// pflag up to v1.0 zeroes a float32 on a refused value, v1.1 keeps it:
	// either way both hold the same float32.
	assert.Equal(t, float64(own), float64(float32(c.ResourceEvictionRate)), "after a refused value both still agree")
}

func TestAddFlagsExistingValueSetBeforeAddFlags(t *testing.T) {
	var own float32
	fs := karmadaFlags(&own, 0.5)
	require.NoError(t, fs.Set(FlagResourceEvictionRate, "3"))
	var c Config
	c.AddFlags(fs)
	require.NoError(t, fs.Parse(nil))
	assert.Equal(t, 3.0, c.ResourceEvictionRate)

	c2 := DefaultConfig()
	c2.LargeClusterNumThreshold = 20
	c2.AddFlags(fs) // every flag exists now: all four are shared
	require.NoError(t, fs.Parse([]string{"--resource-eviction-rate=1"}))
	assert.Equal(t, 1.0, c2.ResourceEvictionRate)
	assert.Equal(t, 1.0, c.ResourceEvictionRate, "two Configs on one flag set both follow it")
	assert.Equal(t, 10, c2.LargeClusterNumThreshold, "a shared int flag: the field takes the flag's value")

	other := pflag.NewFlagSet("int", pflag.ContinueOnError)
	var n int
	other.IntVar(&n, FlagLargeClusterNumThreshold, 20, "")
	var c3 Config
	c3.AddFlags(other)
	require.NoError(t, other.Parse(nil))
	assert.Equal(t, 20, c3.LargeClusterNumThreshold)
	require.NoError(t, other.Parse([]string{"--large-cluster-num-threshold=30"}))
	assert.Equal(t, 30, c3.LargeClusterNumThreshold)
	assert.Equal(t, 30, n)
}

func TestAddFlagsExistingFlagOfAnotherKind(t *testing.T) {
	fs := pflag.NewFlagSet("odd", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	mode := fs.String(FlagResourceEvictionRate, "fast", "not a number")
	var c Config
	c.AddFlags(fs)
	assert.Equal(t, 0.5, c.ResourceEvictionRate, "a current value the field cannot hold leaves it as it was")

	err := fs.Parse([]string{"--resource-eviction-rate=slow"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `ratelimit: --resource-eviction-rate="slow" is not a number`)
	assert.Equal(t, "slow", *mode)
	assert.Equal(t, 0.5, c.ResourceEvictionRate)

	require.NoError(t, fs.Parse([]string{"--resource-eviction-rate=2"}))
	assert.Equal(t, 2.0, c.ResourceEvictionRate)
}

// Without an existing flag the four are plain float64 and int flags.
func TestAddFlagsTypesWithoutExistingFlags(t *testing.T) {
	fs := pflag.NewFlagSet("own", pflag.ContinueOnError)
	var c Config
	c.AddFlags(fs)
	for name, typ := range map[string]string{
		FlagResourceEvictionRate: "float64", FlagSecondaryResourceEvictionRate: "float64",
		FlagUnhealthyClusterThreshold: "float64", FlagLargeClusterNumThreshold: "int",
	} {
		assert.Equal(t, typ, fs.Lookup(name).Value.Type(), name)
	}
}

// karmada-controller-manager adds its named flag sets to the command's
// flags; AddFlags on the merged set shares the very flag Karmada's set holds.
func TestAddFlagsOnAMergedFlagSet(t *testing.T) {
	var own float32
	clusterFailover := karmadaFlags(&own, 0.5)
	root := pflag.NewFlagSet("karmada-controller-manager", pflag.ContinueOnError)
	root.AddFlagSet(clusterFailover)
	var c Config
	c.AddFlags(root)
	require.NoError(t, root.Parse([]string{"--resource-eviction-rate=2", "--unhealthy-cluster-threshold=0.6"}))
	assert.Equal(t, float32(2), own)
	assert.Equal(t, 2.0, c.ResourceEvictionRate)
	assert.Equal(t, 0.6, c.UnhealthyClusterThreshold)
}

package karmada_test

import (
	"testing"

	"github.com/karmada-io/karmada/cmd/controller-manager/app/options"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/failoverkit/failover/ratelimit"
)

// The library's rate flags join karmada-controller-manager v1.18's real flag
// set: --resource-eviction-rate is Karmada's own float32 flag, shared, and
// after parsing both Karmada's options and the library's Config hold it.
func TestConfigAddFlagsBesideKarmadasClusterFailoverOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want float64
	}{
		{"Karmada's default", nil, 0.5},
		{"set on the command line", []string{"--resource-eviction-rate=0.25"}, 0.25},
	} {
		t.Run("one flag set/"+tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("karmada-controller-manager", pflag.ContinueOnError)
			var karmadaOpts options.ClusterFailoverOptions
			karmadaOpts.AddFlags(fs)
			var cfg ratelimit.Config
			cfg.AddFlags(fs) // would panic with "flag redefined" if it registered the flag again

			require.NoError(t, fs.Parse(append(tc.args, "--secondary-resource-eviction-rate=0.05")))
			assert.InDelta(t, tc.want, float64(karmadaOpts.ResourceEvictionRate), 0)
			assert.InDelta(t, tc.want, cfg.ResourceEvictionRate, 0)
			assert.InDelta(t, 0.05, cfg.SecondaryResourceEvictionRate, 0, "the flags Karmada lacks are the library's")
			require.NoError(t, cfg.Validate())
		})
		// As NewControllerManagerCommand builds it: named flag sets, the
		// library's flags joining "cluster failover" after Karmada's, all
		// merged into the command's flag set.
		t.Run("named flag sets/"+tc.name, func(t *testing.T) {
			opts := options.NewOptions()
			fss := cliflag.NamedFlagSets{}
			opts.AddFlags(fss.FlagSet("generic"), nil, nil)
			failoverFlags := fss.FlagSet("cluster failover")
			opts.ClusterFailoverOptions.AddFlags(failoverFlags)
			var cfg ratelimit.Config
			cfg.AddFlags(failoverFlags)
			cmd := pflag.NewFlagSet("karmada-controller-manager", pflag.ContinueOnError)
			for _, name := range fss.Order {
				cmd.AddFlagSet(fss.FlagSets[name])
			}

			require.NoError(t, cmd.Parse(tc.args))
			assert.InDelta(t, tc.want, float64(opts.ClusterFailoverOptions.ResourceEvictionRate), 0)
			assert.InDelta(t, tc.want, cfg.ResourceEvictionRate, 0)
			assert.Empty(t, opts.ClusterFailoverOptions.Validate())
		})
	}
}

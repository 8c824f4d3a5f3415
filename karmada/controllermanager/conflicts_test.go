package controllermanager

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/karmada-io/karmada/cmd/controller-manager/app/options"
	controllerscontext "github.com/karmada-io/karmada/pkg/controllers/context"
	"github.com/karmada-io/karmada/pkg/features"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/karmada/controllers"
)

// The fork's table as the diff leaves it: Karmada v1.18's
// controllersDisabledByDefault with the library's three added.
func forkDisabledByDefault() sets.Set[string] {
	return sets.New("hpaScaleTargetMarker", "deploymentReplicasSyncer").Insert(DisabledByDefault()...)
}

// The command lines a fork meets: Karmada's defaults, the flags of
// Karmada's own deployment (artifacts/deploy/karmada-controller-manager.yaml),
// and the one change of flags that turns the library on, from either.
var (
	karmadaDeployment = []string{"--controllers=*,hpaScaleTargetMarker,deploymentReplicasSyncer",
		"--feature-gates=AllAlpha=true,AllBeta=true"}
	turnOn = []string{"--feature-gates=Failover=true", "--enable-taint-manager=false",
		"--controllers=*,-gracefulEviction,-clustertaintpolicy,failoverEviction,failoverGracefulEviction,failoverClusterTaintPolicy"}
	turnOnDeployment = []string{"--feature-gates=AllAlpha=true,AllBeta=true", "--enable-taint-manager=false",
		"--controllers=*,hpaScaleTargetMarker,deploymentReplicasSyncer,-gracefulEviction,-clustertaintpolicy," +
			"failoverEviction,failoverGracefulEviction,failoverClusterTaintPolicy"}
)

// karmadaContext is the controller context Karmada v1.18's setupControllers
// builds from a command line: Karmada's own flags (options.Options, with
// its defaults), the failover section, and --feature-gates, which is set
// on Karmada's global gate for the test's duration only.
func karmadaContext(t *testing.T, args ...string) (controllerscontext.Context, *Options) {
	t.Helper()
	kopts := options.NewOptions()
	fs := pflag.NewFlagSet("karmada-controller-manager", pflag.ContinueOnError)
	kopts.AddFlags(fs, nil, sets.List(forkDisabledByDefault()))
	kopts.ClusterFailoverOptions.AddFlags(fs)
	o := NewOptions()
	failoverFlags := pflag.NewFlagSet(FlagSection, pflag.ContinueOnError)
	o.AddFlags(failoverFlags, fs)
	fs.AddFlagSet(failoverFlags)

	var rest []string
	for _, a := range args {
		gates, ok := strings.CutPrefix(a, "--feature-gates=")
		if !ok {
			rest = append(rest, a)
			continue
		}
		overrides := featuregatetesting.FeatureOverrides{}
		for _, kv := range strings.Split(gates, ",") {
			k, v, _ := strings.Cut(kv, "=")
			b, err := strconv.ParseBool(v)
			require.NoError(t, err, kv)
			overrides[featuregate.Feature(k)] = b
		}
		featuregatetesting.SetFeatureGatesDuringTest(t, features.FeatureGate, overrides)
	}
	require.NoError(t, fs.Parse(rest))
	require.Empty(t, kopts.Validate(), "Karmada's own validation")
	return controllerscontext.Context{Mgr: newManager(t), Context: t.Context(), Opts: controllerscontext.Options{
		Controllers:                  kopts.Controllers,
		ClusterStatusUpdateFrequency: kopts.ClusterStatusUpdateFrequency,
		EnableTaintManager:           kopts.EnableTaintManager,
		RateLimiterOptions:           kopts.RateLimiterOpts,
		GracefulEvictionTimeout:      kopts.GracefulEvictionTimeout,
		ClusterFailoverConfiguration: kopts.ClusterFailoverOptions,
	}}, o
}

// table is the library's part of the fork's controller table.
func (o *Options) table() controllerscontext.Initializers {
	return controllerscontext.Initializers{
		EvictionControllerName:            o.StartEvictionController,
		GracefulEvictionControllerName:    o.StartGracefulEvictionController,
		ClusterTaintPolicyControllerName:  o.StartClusterTaintPolicyController,
		ApplicationFailoverControllerName: o.StartApplicationFailoverController,
	}
}

// Karmada's table enables a disabled-by-default controller only by name:
// "*" does not, "-name" and an absent name do not.
func TestKarmadaDisabledByDefault(t *testing.T) {
	disabled := forkDisabledByDefault()
	for _, tc := range []struct {
		controllers []string
		want        bool
	}{
		{[]string{"*"}, false},
		{[]string{"*", "hpaScaleTargetMarker"}, false},
		{[]string{"*", "-" + EvictionControllerName}, false},
		{[]string{EvictionControllerName}, true},
		{[]string{"*", EvictionControllerName}, true},
		{[]string{"-" + EvictionControllerName, "*", EvictionControllerName}, false},
	} {
		ctx := controllerscontext.Context{Opts: controllerscontext.Options{Controllers: tc.controllers}}
		assert.Equal(t, tc.want, ctx.IsControllerEnabled(EvictionControllerName, disabled), "%v", tc.controllers)
		assert.Equal(t, tc.want, named(ctx, EvictionControllerName), "%v", tc.controllers)
	}
}

// With Karmada's flags, default or its deployment's, the patched binary
// runs what stock Karmada runs: Karmada's own StartControllers skips the
// three, and each init function, called anyway (a table without the
// disabled-by-default line), starts nothing and fails nothing.
func TestKarmadaFlagsStartNothing(t *testing.T) {
	for name, args := range map[string][]string{
		"defaults":                   nil,
		"Karmada's deployment":       karmadaDeployment,
		"only the Failover gate":     {"--feature-gates=Failover=true"},
		"Karmada's failover, tuned":  {"--feature-gates=Failover=true", "--enable-no-execute-taint-eviction", "--resource-eviction-rate=2"},
		"gracefulEviction named":     {"--controllers=*,gracefulEviction"},
		"a library controller, off":  {"--controllers=*,-" + GracefulEvictionControllerName},
		"Karmada's three off, alone": {"--enable-taint-manager=false", "--controllers=*,-gracefulEviction,-clustertaintpolicy"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, o := karmadaContext(t, args...)
			require.NoError(t, o.table().StartControllers(ctx, forkDisabledByDefault()))
			for name, init := range o.table() {
				enabled, err := init(ctx)
				assert.False(t, enabled, name)
				assert.NoError(t, err, name)
			}
		})
	}
}

// The documented change of flags starts all three, from Karmada's defaults
// or from its deployment's flags; application failover stays Karmada's
// until it is named in place of Karmada's own.
func TestTurnOn(t *testing.T) {
	for name, args := range map[string][]string{"from the defaults": turnOn, "from Karmada's deployment": turnOnDeployment} {
		t.Run(name, func(t *testing.T) {
			ctx, o := karmadaContext(t, args...)
			for _, karmada := range []string{KarmadaGracefulEvictionController, KarmadaClusterTaintPolicyController} {
				assert.False(t, ctx.IsControllerEnabled(karmada, forkDisabledByDefault()), karmada)
			}
			for name, init := range o.table() {
				enabled, err := init(ctx)
				require.NoError(t, err, name)
				assert.Equal(t, name != ApplicationFailoverControllerName, enabled, name)
			}
		})
	}
}

// Application failover: named beside Karmada's applicationFailover it
// fails with the flags that switch Karmada's off; named without the
// EvictionController it fails, naming it; named with both, it starts,
// whichever of the two Karmada calls first, with the failover section's
// --application-failover-* flags; a bad one stops the start and names
// itself.
func TestApplicationFailoverEntry(t *testing.T) {
	on := slices.Clone(turnOn)
	on[len(on)-1] += "," + ApplicationFailoverControllerName

	ctx, o := karmadaContext(t, on...)
	_, err := o.StartApplicationFailoverController(ctx)
	var ce *ConflictError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, []string{"--controllers=*,-applicationFailover,-gracefulEviction,-clustertaintpolicy,failoverEviction,failoverGracefulEviction,failoverClusterTaintPolicy," + ApplicationFailoverControllerName}, ce.Flags)
	_, err2 := o.StartEvictionController(ctx)
	assert.Equal(t, err.Error(), err2.Error(), "every init function names the same flags")

	fixed := applyFlags(on, ce.Flags)
	ctx, o = karmadaContext(t, append(fixed, "--application-failover-unknown=Count", "--application-failover-unknown-toleration=2m",
		"--application-failover-startup-grace=90s", "--application-failover-bad-rollout-threshold=0.75")...)
	opts, err := o.ApplicationFailoverOptions()
	require.NoError(t, err)
	assert.Equal(t, controllers.ApplicationFailoverOptions{BadRolloutThreshold: 0.75,
		Policy: appfailover.Options{Unknown: appfailover.UnknownCounts, UnknownTolerationSeconds: ptr.To[int32](120), StartupGraceSeconds: 90}}, opts)
	for _, init := range []controllerscontext.InitFunc{o.StartApplicationFailoverController, o.StartEvictionController} {
		enabled, err := init(ctx)
		require.NoError(t, err)
		assert.True(t, enabled)
	}

	// Without the Failover gate: an error naming it, not a silent skip
	// (Karmada's applicationFailover, switched off, runs without it).
	ctx, o = karmadaContext(t, append(slices.Clone(fixed), "--feature-gates=Failover=false")...)
	_, err = o.StartApplicationFailoverController(ctx)
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Contains(t, err.Error(), "the Failover feature gate is off, which")
	assert.Contains(t, ce.Flags, "--feature-gates="+gatesWithFailover())

	alone := applyFlags(fixed, []string{"--controllers=*,-applicationFailover," + ApplicationFailoverControllerName})
	ctx, o = karmadaContext(t, alone...)
	_, err = o.StartApplicationFailoverController(ctx)
	assert.EqualError(t, err, "failover: failoverApplicationFailover needs failoverEviction in --controllers too: it shares its fleet, rate and freeze")

	for flag, want := range map[string]string{
		"--application-failover-startup-grace=1500ms":       "--application-failover-startup-grace 1.5s: want whole non-negative seconds",
		"--application-failover-unknown=Never":              `unknown value "Never"`,
		"--application-failover-bad-rollout-threshold=1.01": "--application-failover-bad-rollout-threshold) 1.01",
	} {
		ctx, o = karmadaContext(t, append(slices.Clone(fixed), flag)...)
		_, err = o.StartApplicationFailoverController(ctx)
		assert.ErrorContains(t, err, want, flag)
	}
}

// A start that names the library's controllers beside the Karmada
// controllers they replace fails at whichever init function Karmada calls
// first, with one error that names every flag to change; the flags it
// gives start all three. Naming them without the Failover gate alone
// skips the gated two, as Karmada skips its own.
func TestConflicts(t *testing.T) {
	const all = "failoverEviction,failoverGracefulEviction,failoverClusterTaintPolicy"
	for _, tc := range []struct {
		name      string
		args      []string
		wantFlags []string // nil: no error
		reasons   int
	}{
		{"all three named beside Karmada's deployment",
			[]string{"--controllers=*,hpaScaleTargetMarker,deploymentReplicasSyncer," + all, "--feature-gates=AllAlpha=true,AllBeta=true"},
			[]string{"--enable-taint-manager=false",
				"--controllers=*,-gracefulEviction,-clustertaintpolicy,hpaScaleTargetMarker,deploymentReplicasSyncer," + all}, 3},
		{"all three named beside the defaults, gate off",
			[]string{"--controllers=*," + all},
			[]string{"--feature-gates=Failover=true", "--enable-taint-manager=false",
				"--controllers=*,-gracefulEviction,-clustertaintpolicy," + all}, 4},
		{"Karmada's gracefulEviction named too",
			[]string{"--controllers=gracefulEviction,*,-clustertaintpolicy," + all, "--feature-gates=Failover=true", "--enable-taint-manager=false"},
			[]string{"--controllers=*,-gracefulEviction,-clustertaintpolicy," + all}, 1},
		{"eviction beside the taint manager",
			[]string{"--controllers=*,failoverEviction", "--feature-gates=Failover=true"},
			[]string{"--enable-taint-manager=false"}, 1},
		{"cluster taint policy beside Karmada's",
			[]string{"--controllers=*,failoverClusterTaintPolicy", "--feature-gates=Failover=true"},
			[]string{"--controllers=*,-clustertaintpolicy,failoverClusterTaintPolicy"}, 1},
		{"graceful eviction beside Karmada's, without a star",
			[]string{"--controllers=gracefulEviction,failoverGracefulEviction"},
			[]string{"--controllers=failoverGracefulEviction,-gracefulEviction"}, 1},
		{"eviction without the gate: skipped, as the taint manager is", []string{"--controllers=*,failoverEviction"}, nil, 0},
		{"cluster taint policy without the gate: skipped", []string{"--controllers=*,failoverClusterTaintPolicy"}, nil, 0},
		{"eviction with Karmada's cluster controller off: no taint manager",
			[]string{"--controllers=*,-cluster,failoverEviction", "--feature-gates=Failover=true"}, nil, 0},
	} {
		var fixed []string
		t.Run(tc.name, func(t *testing.T) {
			ctx, o := karmadaContext(t, tc.args...)
			var errs []string
			for name, init := range o.table() {
				if !named(ctx, name) {
					continue
				}
				enabled, err := init(ctx)
				if tc.wantFlags == nil {
					require.NoError(t, err, name)
					assert.Equal(t, features.FeatureGate.Enabled(features.Failover) || name == GracefulEvictionControllerName, enabled, name)
					continue
				}
				assert.False(t, enabled, name)
				var ce *ConflictError
				require.True(t, errors.As(err, &ce), "%s: %v", name, err)
				assert.Equal(t, tc.wantFlags, ce.Flags, name)
				assert.Len(t, ce.Reasons, tc.reasons, name)
				errs = append(errs, err.Error())
			}
			if tc.wantFlags == nil {
				return
			}
			for _, e := range errs {
				assert.Equal(t, errs[0], e, "every init function names the same flags")
				assert.Contains(t, e, "start with "+strings.Join(tc.wantFlags, " "))
			}
			fixed = applyFlags(tc.args, tc.wantFlags)
		})
		if fixed == nil {
			continue
		}
		t.Run(tc.name+", corrected", func(t *testing.T) {
			ctx, o := karmadaContext(t, fixed...)
			for name, init := range o.table() {
				if !named(ctx, name) {
					continue
				}
				enabled, err := init(ctx)
				require.NoError(t, err, name)
				assert.True(t, enabled, name)
			}
		})
	}
}

// applyFlags is args with each flag of fix in place of the same flag.
func applyFlags(args, fix []string) []string {
	var out []string
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if !strings.Contains(strings.Join(fix, " "), name+"=") {
			out = append(out, a)
		}
	}
	return append(out, fix...)
}

// The error says, for each conflict, which flag and value keeps which
// controller on, and ends with the corrected flags: the message the guide
// shows (wrapped there at spaces) for the three named beside Karmada's
// defaults.
func TestConflictErrorMessage(t *testing.T) {
	guide, err := os.ReadFile("../controller-manager.md")
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(guide), "default flags gives:\n\n```\n")
	require.True(t, ok, "the guide's example error")
	block, _, _ = strings.Cut(block, "```")
	want := strings.Join(strings.Fields(block), " ")

	ctx, o := karmadaContext(t, "--controllers=*,failoverEviction,failoverGracefulEviction,failoverClusterTaintPolicy")
	_, err = o.StartGracefulEvictionController(ctx)
	require.Error(t, err)
	assert.Equal(t, want, err.Error())
}

// The fork's diff adds the three to Karmada's disabled-by-default set, the
// line the tests above reproduce.
func TestPatchDisablesByDefault(t *testing.T) {
	patch, err := os.ReadFile("../../examples/karmadafork/karmada-v1.18.patch")
	require.NoError(t, err)
	assert.Contains(t, string(patch), "\n+\tcontrollersDisabledByDefault.Insert(failovercm.DisabledByDefault()...)\n")
}

// Failback starts with the EvictionController when --controllers names it
// too, with the failover section's flags: a bad one stops the start and
// names itself. Named alone, without the EvictionController, it starts
// nothing, as the EvictionController does not run.
func TestFailbackStartsWithTheEvictionController(t *testing.T) {
	on := slices.Clone(turnOn)
	on[len(on)-1] += "," + FailbackControllerName
	ctx, o := karmadaContext(t, append(on, "--failback-stabilization-window=10m", "--max-failbacks-in-flight=3")...)
	assert.Equal(t, controllers.FailbackOptions{Window: 10 * time.Minute, MaxInFlight: 3}, o.FailbackOptions())
	enabled, err := o.StartEvictionController(ctx)
	require.NoError(t, err)
	assert.True(t, enabled)

	ctx, o = karmadaContext(t, append(on, "--failback-stabilization-window=-1m")...)
	_, err = o.StartEvictionController(ctx)
	assert.EqualError(t, err, "controllers: FailbackOptions.Window (--failback-stabilization-window) -1m0s: must not be negative")

	ctx, o = karmadaContext(t, append(slices.Clone(turnOn), "--failback-stabilization-window=-1m")...)
	_, err = o.StartEvictionController(ctx)
	assert.NoError(t, err, "failback not named: its flags are not read")
	assert.False(t, named(ctx, FailbackControllerName), `"*" does not name it`)
	assert.NotContains(t, DisabledByDefault(), FailbackControllerName, "it has no table entry for Karmada to disable")
}

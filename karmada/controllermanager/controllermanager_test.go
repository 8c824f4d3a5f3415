package controllermanager

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/karmada-io/karmada/cmd/controller-manager/app/options"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	controllerscontext "github.com/karmada-io/karmada/pkg/controllers/context"
	"github.com/karmada-io/karmada/pkg/features"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada/controllers"
	"github.com/failoverkit/failover/ratelimit"
)

// karmadaFlags builds the named flag sections as Karmada v1.18's
// NewControllerManagerCommand does ("cluster failover" from
// ClusterFailoverOptions.AddFlags), adds the failover section the way the
// fork's diff does, and merges them into the command's one flag set.
func karmadaFlags() (*cliflag.NamedFlagSets, *options.ClusterFailoverOptions, *Options, *pflag.FlagSet) {
	fss := &cliflag.NamedFlagSets{}
	karmadaOpts := &options.ClusterFailoverOptions{}
	clusterFailoverFlagSet := fss.FlagSet("cluster failover")
	karmadaOpts.AddFlags(clusterFailoverFlagSet)
	o := NewOptions()
	failoverFlagSet := fss.FlagSet(FlagSection)
	o.AddFlags(failoverFlagSet, clusterFailoverFlagSet)
	cmd := pflag.NewFlagSet("karmada-controller-manager", pflag.ContinueOnError)
	for _, name := range fss.Order {
		cmd.AddFlagSet(fss.FlagSets[name])
	}
	return fss, karmadaOpts, o, cmd
}

// The failover section is what karmada-controller-manager's --help shows
// under its name: the library's flags, not Karmada's --resource-eviction-rate
// again, which stays in Karmada's own section. One command line sets both
// Karmada's options and the library's.
func TestFlagSection(t *testing.T) {
	fss, karmadaOpts, o, cmd := karmadaFlags()
	var help bytes.Buffer
	cliflag.PrintSections(&help, *fss, 0)
	assert.Contains(t, help.String(), "\nFailover flags:\n")
	failoverSection := fss.FlagSets[FlagSection].FlagUsages()
	karmadaSection := fss.FlagSets["cluster failover"].FlagUsages()
	for _, f := range []string{"--secondary-resource-eviction-rate", "--unhealthy-cluster-threshold",
		"--large-cluster-num-threshold", "--disruption-domain", "--eviction-workers", "--eviction-capacity-hold", "--eviction-freeze-configmap",
		"--max-clusters-in-transit", "--storm-threshold", "--storm-window", "--storm-confirm"} {
		assert.Contains(t, failoverSection, f)
		assert.NotContains(t, karmadaSection, f)
	}
	assert.NotContains(t, failoverSection, "--resource-eviction-rate ", "Karmada's flag listed twice")
	assert.Contains(t, karmadaSection, "--resource-eviction-rate ")

	require.NoError(t, cmd.Parse([]string{"--resource-eviction-rate=0.1", "--secondary-resource-eviction-rate=0.02",
		"--unhealthy-cluster-threshold=0.4", "--large-cluster-num-threshold=20", "--disruption-domain=region",
		"--eviction-workers=4", "--enable-no-execute-taint-eviction", "--eviction-capacity-hold=2m",
		"--storm-threshold=0.3", "--storm-window=30s"}))
	assert.Equal(t, float32(0.1), karmadaOpts.ResourceEvictionRate)
	assert.True(t, karmadaOpts.EnableNoExecuteTaintEviction)
	want := ratelimit.Config{ResourceEvictionRate: 0.1, SecondaryResourceEvictionRate: 0.02, UnhealthyClusterThreshold: 0.4,
		LargeClusterNumThreshold: 20, DisruptionDomain: ratelimit.DomainRegion,
		StormThreshold: 0.3, StormWindow: 30 * time.Second, StormConfirm: 5 * time.Minute} // --storm-confirm's default
	assert.Equal(t, want, o.Rate)
	assert.Equal(t, 4, o.EvictionWorkers)
	assert.Equal(t, 2*time.Minute, o.CapacityHold)
}

// Outside Karmada (no "cluster failover" section) the section defines
// --resource-eviction-rate itself.
func TestFlagSectionAlone(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet(FlagSection, pflag.ContinueOnError)
	o.AddFlags(fs, nil)
	require.NoError(t, fs.Parse([]string{"--resource-eviction-rate=2"}))
	assert.Equal(t, 2.0, o.Rate.ResourceEvictionRate)
}

// The EvictionController takes Karmada's own flags from the controller
// context as Karmada's taint manager does, and the section's flags.
func TestEvictionOptions(t *testing.T) {
	_, karmadaOpts, o, cmd := karmadaFlags()
	require.NoError(t, cmd.Parse([]string{"--resource-eviction-rate=0.1", "--enable-no-execute-taint-eviction",
		"--no-execute-taint-eviction-purge-mode=Directly", "--eviction-workers=3", "--max-clusters-in-transit=2"}))
	featuregatetesting.SetFeatureGateDuringTest(t, features.FeatureGate, features.StatefulFailoverInjection, true)
	got, err := o.evictionOptions(controllerscontext.Options{ClusterFailoverConfiguration: *karmadaOpts,
		ClusterStatusUpdateFrequency: metav1.Duration{Duration: 3 * time.Second}})
	require.NoError(t, err)
	assert.Equal(t, 0.1, got.Rate.ResourceEvictionRate, "the float32 flag's value as typed")
	assert.Equal(t, ratelimit.DefaultConfig().SecondaryResourceEvictionRate, got.Rate.SecondaryResourceEvictionRate)
	assert.True(t, got.EnableNoExecuteTaintEviction)
	assert.Equal(t, failover.PurgeModeDirectly, got.NoExecuteTaintEvictionPurgeMode)
	assert.True(t, got.StatefulFailoverInjection)
	assert.Equal(t, 3, got.Workers)
	assert.Equal(t, 2, got.MaxClustersInTransit)
	// The ledger is on by default, the one the graceful eviction
	// controller gets too, and checked again as often as Karmada's cluster
	// status controller reports the summaries.
	ledger, err := o.Ledger()
	require.NoError(t, err)
	require.NotNil(t, ledger)
	assert.Same(t, ledger, got.Ledger)
	assert.False(t, got.DisableLedger)
	assert.Equal(t, 3*time.Second, got.ClusterStatusUpdateFrequency)

	// Karmada's defaults: no NoExecute eviction, Gracefully. A purge mode
	// Karmada's validation lets through while NoExecute eviction is off
	// reads as Gracefully there, and here.
	_, karmadaOpts, o, cmd = karmadaFlags()
	require.NoError(t, cmd.Parse([]string{"--no-execute-taint-eviction-purge-mode=Whenever"}))
	require.Empty(t, karmadaOpts.Validate())
	featuregatetesting.SetFeatureGateDuringTest(t, features.FeatureGate, features.StatefulFailoverInjection, false)
	got, err = o.evictionOptions(controllerscontext.Options{ClusterFailoverConfiguration: *karmadaOpts})
	require.NoError(t, err)
	assert.False(t, got.EnableNoExecuteTaintEviction)
	assert.Equal(t, failover.PurgeModeGracefully, got.NoExecuteTaintEvictionPurgeMode)
	assert.False(t, got.StatefulFailoverInjection)
	assert.Equal(t, 0.5, got.Rate.ResourceEvictionRate)
	_, err = controllers.NewEvictionController(got)
	assert.NoError(t, err)
}

// --eviction-capacity-hold=0 turns the ledger off for both controllers; a
// negative hold is an error naming the flag, from either init function.
func TestCapacityHold(t *testing.T) {
	_, karmadaOpts, o, cmd := karmadaFlags()
	require.NoError(t, cmd.Parse([]string{"--eviction-capacity-hold=0"}))
	got, err := o.evictionOptions(controllerscontext.Options{ClusterFailoverConfiguration: *karmadaOpts})
	require.NoError(t, err)
	assert.Nil(t, got.Ledger)
	assert.True(t, got.DisableLedger)
	c, err := controllers.NewEvictionController(got)
	require.NoError(t, err)
	assert.Nil(t, c.Ledger())

	_, karmadaOpts, o, cmd = karmadaFlags()
	require.NoError(t, cmd.Parse([]string{"--eviction-capacity-hold=-1s"}))
	_, err = o.Ledger()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--eviction-capacity-hold -1s")
	_, err = o.evictionOptions(controllerscontext.Options{ClusterFailoverConfiguration: *karmadaOpts})
	assert.ErrorContains(t, err, "--eviction-capacity-hold -1s", "the eviction controller, whose Ledger it is, does not start")
}

// --eviction-freeze-configmap names the freeze ConfigMap, by default
// karmada-system/failover-freeze; empty watches none; anything but
// namespace/name is an error that names the flag and the value.
func TestFreezeFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    types.NamespacedName
		wantErr string
	}{
		{nil, types.NamespacedName{Namespace: "karmada-system", Name: "failover-freeze"}, ""},
		{[]string{"--eviction-freeze-configmap=ops/brake"}, types.NamespacedName{Namespace: "ops", Name: "brake"}, ""},
		{[]string{"--eviction-freeze-configmap="}, types.NamespacedName{}, ""},
		{[]string{"--eviction-freeze-configmap=brake"}, types.NamespacedName{}, `--eviction-freeze-configmap "brake": want namespace/name`},
		{[]string{"--eviction-freeze-configmap=ops/"}, types.NamespacedName{}, `--eviction-freeze-configmap "ops/"`},
		{[]string{"--eviction-freeze-configmap=a/b/c"}, types.NamespacedName{}, `--eviction-freeze-configmap "a/b/c"`},
	} {
		_, karmadaOpts, o, cmd := karmadaFlags()
		require.NoError(t, cmd.Parse(tc.args))
		got, err := o.evictionOptions(controllerscontext.Options{ClusterFailoverConfiguration: *karmadaOpts})
		if tc.wantErr != "" {
			assert.ErrorContains(t, err, tc.wantErr, "%v", tc.args)
			continue
		}
		require.NoError(t, err, "%v", tc.args)
		assert.Equal(t, tc.want, got.Freeze, "%v", tc.args)
		_, err = controllers.NewEvictionController(got)
		assert.NoError(t, err, "%v", tc.args)
	}
}

// newManager is a manager that knows Karmada's kinds without an API
// server: nothing here starts it.
func newManager(t *testing.T) manager.Manager {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, controllers.AddToScheme(s))
	mapper := meta.NewDefaultRESTMapper(nil)
	for obj, scope := range map[client.Object]meta.RESTScope{
		&clusterv1alpha1.Cluster{}:             meta.RESTScopeRoot,
		&policyv1alpha1.ClusterTaintPolicy{}:   meta.RESTScopeRoot,
		&workv1alpha2.ResourceBinding{}:        meta.RESTScopeNamespace,
		&workv1alpha2.ClusterResourceBinding{}: meta.RESTScopeRoot,
	} {
		gvk, err := apiutil.GVKForObject(obj, s)
		require.NoError(t, err)
		mapper.Add(gvk, scope)
	}
	mgr, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{
		Scheme:                 s,
		MapperProvider:         func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	// The EvictionController registers its series on controller-runtime's
	// registry, as karmada-controller-manager serves it; a fresh one per
	// test, so the test can run again in one process.
	saved := crmetrics.Registry
	crmetrics.Registry = prometheus.NewRegistry()
	t.Cleanup(func() { crmetrics.Registry = saved })
	return mgr
}

package controllermanager_test

import (
	"fmt"

	"github.com/karmada-io/karmada/cmd/controller-manager/app/options"
	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/failoverkit/failover/karmada/controllermanager"
)

// The failover section beside Karmada's "cluster failover" one, as
// karmada-controller-manager's NewControllerManagerCommand builds its named
// flag sets: --help lists each section, and one command line sets both.
// --resource-eviction-rate is Karmada's flag; the section adds what the
// library's rate rule needs besides.
func ExampleOptions_AddFlags() {
	fss := cliflag.NamedFlagSets{}
	clusterFailover := &options.ClusterFailoverOptions{}
	clusterFailoverFlagSet := fss.FlagSet("cluster failover")
	clusterFailover.AddFlags(clusterFailoverFlagSet)

	failoverOptions := controllermanager.NewOptions()
	failoverFlagSet := fss.FlagSet(controllermanager.FlagSection)
	failoverOptions.AddFlags(failoverFlagSet, clusterFailoverFlagSet)

	for _, name := range fss.Order {
		fmt.Printf("%s:", name)
		fss.FlagSets[name].VisitAll(func(f *pflag.Flag) { fmt.Print(" --", f.Name) })
		fmt.Println()
	}

	cmd := pflag.NewFlagSet("karmada-controller-manager", pflag.ContinueOnError)
	cmd.AddFlagSet(clusterFailoverFlagSet)
	cmd.AddFlagSet(failoverFlagSet)
	if err := cmd.Parse([]string{"--resource-eviction-rate=2", "--disruption-domain=region"}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("Karmada's rate:", clusterFailover.ResourceEvictionRate, "the library's:", failoverOptions.Rate.ResourceEvictionRate, "by", failoverOptions.Rate.DisruptionDomain)
	// Output:
	// cluster failover: --enable-no-execute-taint-eviction --no-execute-taint-eviction-purge-mode --resource-eviction-rate
	// failover: --application-failover-bad-rollout-threshold --application-failover-startup-grace --application-failover-unknown --application-failover-unknown-toleration --disruption-domain --eviction-capacity-hold --eviction-freeze-configmap --eviction-workers --failback-stabilization-window --large-cluster-num-threshold --max-clusters-in-transit --max-evictions-in-flight --max-failbacks-in-flight --secondary-resource-eviction-rate --storm-confirm --storm-threshold --storm-window --unhealthy-cluster-threshold
	// Karmada's rate: 2 the library's: 2 by region
}

package fork_test

import (
	"context"
	"fmt"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/examples/karmadafork/fork"
	"github.com/failoverkit/failover/ratelimit"
)

// Setup checks its Options before it touches the manager, so a fork's
// main can report a bad flag without an API server. Each error names the
// field and the flag it comes from. (The manager is nil here only because
// none of these Options gets past the checks.)
func ExampleSetup_badOptions() {
	region := ratelimit.DefaultConfig()
	region.DisruptionDomain = "country"
	for _, opts := range []fork.Options{
		{Rate: region},
		{Rate: ratelimit.DefaultConfig(), NoExecuteTaintEvictionPurgeMode: failover.PurgeModeNever},
		{Rate: ratelimit.DefaultConfig(), GracefulEvictionTimeout: -time.Minute},
		{Rate: ratelimit.DefaultConfig(), Workers: -1},
	} {
		_, err := fork.Setup(context.Background(), nil, opts)
		fmt.Println(err)
	}
	// Output:
	// ratelimit: DisruptionDomain (--disruption-domain) must be one of fleet|region|zone|provider, got "country"
	// fork: Options.NoExecuteTaintEvictionPurgeMode (--no-execute-taint-eviction-purge-mode) "Never": want Gracefully or Directly
	// fork: Options.GracefulEvictionTimeout (--graceful-eviction-timeout) -1m0s: must not be negative
	// fork: Options.Workers -1: must not be negative
}

// AddToScheme gives the manager's scheme every kind the reconcilers read
// and write: Karmada's clusters, policies and bindings, and Kubernetes'
// own Events.
func ExampleAddToScheme() {
	s := runtime.NewScheme()
	if err := fork.AddToScheme(s); err != nil {
		fmt.Println(err)
		return
	}
	for _, obj := range []runtime.Object{
		&clusterv1alpha1.Cluster{},
		&policyv1alpha1.ClusterTaintPolicy{},
		&workv1alpha2.ResourceBinding{},
		&workv1alpha2.ClusterResourceBinding{},
		&corev1.Event{},
	} {
		gvks, _, err := s.ObjectKinds(obj)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(gvks[0])
	}
	// Output:
	// cluster.karmada.io/v1alpha1, Kind=Cluster
	// policy.karmada.io/v1alpha1, Kind=ClusterTaintPolicy
	// work.karmada.io/v1alpha2, Kind=ResourceBinding
	// work.karmada.io/v1alpha2, Kind=ClusterResourceBinding
	// /v1, Kind=Event
}

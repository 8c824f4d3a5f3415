package controllers_test

import (
	"fmt"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada/controllers"
	"github.com/failoverkit/failover/ratelimit"
)

// The New functions check their options before anything touches a
// manager, so a fork's main reports a bad flag without an API server. Each
// error names the field and the flag it comes from.
func ExampleNewEvictionController_badOptions() {
	region := ratelimit.DefaultConfig()
	region.DisruptionDomain = "country"
	for _, opts := range []controllers.EvictionOptions{
		{Rate: region},
		{NoExecuteTaintEvictionPurgeMode: failover.PurgeModeNever},
		{Workers: -1},
		{ClusterStatusUpdateFrequency: -time.Second},
	} {
		_, err := controllers.NewEvictionController(opts)
		fmt.Println(err)
	}
	_, err := controllers.NewGracefulEvictionController(controllers.GracefulEvictionOptions{Timeout: -time.Minute})
	fmt.Println(err)
	// Output:
	// ratelimit: DisruptionDomain (--disruption-domain) must be one of fleet|region|zone|provider, got "country"
	// controllers: EvictionOptions.NoExecuteTaintEvictionPurgeMode (--no-execute-taint-eviction-purge-mode) "Never": want Gracefully or Directly
	// controllers: EvictionOptions.Workers -1: want 0 (the default, 1) to 10000
	// controllers: EvictionOptions.ClusterStatusUpdateFrequency (--cluster-status-update-frequency) -1s: must not be negative
	// controllers: GracefulEvictionOptions.Timeout (--graceful-eviction-timeout) -1m0s: must not be negative
}

// AddToScheme gives a manager's scheme every kind the controllers read and
// write: Karmada's clusters, policies and bindings, and Kubernetes' own
// Events. karmada-controller-manager's scheme has them already.
func ExampleAddToScheme() {
	s := runtime.NewScheme()
	if err := controllers.AddToScheme(s); err != nil {
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

// ClusterFaulty and ClusterDomains are what fleet health reads from each
// Cluster the manager's informer delivers (ratelimit.NewInformerSource with
// ratelimit.WithDomains): a cluster is faulty when it has an evicting
// taint, and counts in its region under --disruption-domain=region.
func ExampleClusterDomains() {
	c := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "member1"},
		Spec: clusterv1alpha1.ClusterSpec{
			Region: "eu-west", Zones: []string{"eu-west-1a", "eu-west-1b"},
			Taints: []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}},
		},
	}
	fmt.Println("faulty:", controllers.ClusterFaulty(c))
	fmt.Println("region:", controllers.ClusterDomains(ratelimit.DomainRegion)(c))
	fmt.Println("zone:", controllers.ClusterDomains(ratelimit.DomainZone)(c))
	fmt.Printf("provider: %q\n", controllers.ClusterDomains(ratelimit.DomainProvider)(c))
	// Output:
	// faulty: true
	// region: [eu-west]
	// zone: [eu-west-1a eu-west-1b]
	// provider: [""]
}

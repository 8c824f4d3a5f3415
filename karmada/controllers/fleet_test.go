package controllers

import (
	"slices"
	"testing"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/ratelimit"
)

func taintedCluster(effects ...corev1.TaintEffect) *clusterv1alpha1.Cluster {
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}
	for _, e := range effects {
		c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: "cluster.karmada.io/not-ready", Effect: e})
	}
	return c
}

// ClusterFaulty is what fleet health counts: it sets the eviction rate.
func TestClusterFaulty(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  any
		want bool
	}{
		{"no taint: healthy", taintedCluster(), false},
		{"NoSchedule only: healthy, workloads stay", taintedCluster(corev1.TaintEffectNoSchedule), false},
		{"NoExecute: faulty", taintedCluster(corev1.TaintEffectNoExecute), true},
		{"PreferNoExecute: faulty", taintedCluster(failover.TaintEffectPreferNoExecute), true},
		{"NoSchedule then NoExecute: any evicting taint counts", taintedCluster(corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute), true},
		{"taints that do not convert: not trusted, faulty", taintedCluster("Bogus"), true},
		{"not a Cluster: not counted as faulty", &workv1alpha2.ResourceBinding{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClusterFaulty(tc.obj); got != tc.want {
				t.Errorf("ClusterFaulty = %v, want %v", got, tc.want)
			}
		})
	}
}

// ClusterDomains is the domain a queue paces a cluster's items by, and the
// domains the Tracker counts the cluster in; it must never be empty.
func TestClusterDomains(t *testing.T) {
	placed := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "member1"},
		Spec:       clusterv1alpha1.ClusterSpec{Region: "eu-west", Zone: "eu-west-1a", Provider: "aws"},
	}
	multiZone := placed.DeepCopy()
	multiZone.Spec.Zones = []string{"eu-west-1b", "eu-west-1c"}
	unreadable := placed.DeepCopy()
	unreadable.Spec.Taints = []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: "Bogus"}}
	for _, tc := range []struct {
		name string
		obj  any
		d    ratelimit.Domain
		want []string
	}{
		{"region", placed, ratelimit.DomainRegion, []string{"eu-west"}},
		{"zone", placed, ratelimit.DomainZone, []string{"eu-west-1a"}},
		{"zones win over zone", multiZone, ratelimit.DomainZone, []string{"eu-west-1b", "eu-west-1c"}},
		{"provider", placed, ratelimit.DomainProvider, []string{"aws"}},
		{"no region: the domain \"\"", taintedCluster(), ratelimit.DomainRegion, []string{""}},
		{"fleet rule: the domain \"\", never empty", placed, ratelimit.DomainFleet, []string{""}},
		{"does not convert: the domain \"\", whatever its region", unreadable, ratelimit.DomainRegion, []string{""}},
		{"not a Cluster: the domain \"\"", &workv1alpha2.ResourceBinding{}, ratelimit.DomainRegion, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClusterDomains(tc.d)(tc.obj); !slices.Equal(got, tc.want) {
				t.Errorf("ClusterDomains(%s) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
}

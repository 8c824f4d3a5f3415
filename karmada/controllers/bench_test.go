package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/internal/cputime"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/prescheduling"
)

// benchWorld is n clusters in three regions, a tenth of them NoExecute
// tainted, with room for 50 pods each, as a fake API server.
func benchWorld(b *testing.B, n int) client.WithWatch {
	b.Helper()
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	added := metav1.NewTime(evictNow)
	objs := make([]client.Object, 0, n)
	for i := range n {
		c := withRoom(&clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("member-%05d", i),
			Labels: map[string]string{"team": "shop"}}}, 50)
		c.Spec.Region = fmt.Sprintf("region-%d", i%3)
		c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue}}
		if i%10 == 0 {
			c.Spec.Taints = []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}}
		}
		objs = append(objs, c)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

// BenchmarkDecisionCheck is the part of one eviction decision that reads
// the fleet, at 100, 1,000 and 5,000 clusters: the pre-scheduling check of
// a Divided binding on a tainted cluster with its capacity, from the
// controller's Fleet (converted once per change) beside the way it was done
// before, listing and converting every cluster for each decision.
func BenchmarkDecisionCheck(b *testing.B) {
	spec := &workv1alpha2.ResourceBindingSpec{
		Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
		Placement: &policyv1alpha1.Placement{
			ClusterAffinity:   &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}}},
			ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated},
		},
		Replicas: 3,
		Clusters: []workv1alpha2.TargetCluster{{Name: "member-00000", Replicas: 3}},
	}
	ctx := context.Background()
	for _, n := range []int{100, 1000, 5000} {
		c := benchWorld(b, n)
		var evicting clusterv1alpha1.Cluster
		if err := c.Get(ctx, client.ObjectKey{Name: "member-00000"}, &evicting); err != nil {
			b.Fatal(err)
		}
		req, err := karmada.PreschedulingRequest(spec, evicting.Name)
		if err != nil {
			b.Fatal(err)
		}
		ctrl, err := NewEvictionController(EvictionOptions{})
		if err != nil {
			b.Fatal(err)
		}
		ctrl.client, ctrl.reader = c, c
		var list clusterv1alpha1.ClusterList
		if err := c.List(ctx, &list); err != nil {
			b.Fatal(err)
		}
		for i := range list.Items {
			if _, err := ctrl.fleet.Set(&list.Items[i]); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("fleet/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			start, ok := cputime.Used()
			defer reportCPU(b, start, ok)
			for b.Loop() {
				res, _, err := ctrl.check(ctx, spec, req, &evicting, logr.Discard())
				if err != nil || !res.Feasible {
					b.Fatal(err, res.Reason)
				}
			}
		})
		b.Run(fmt.Sprintf("listEveryCluster/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			start, ok := cputime.Used()
			defer reportCPU(b, start, ok)
			for b.Loop() {
				var list clusterv1alpha1.ClusterList
				if err := c.List(ctx, &list); err != nil {
					b.Fatal(err)
				}
				fleet := make([]failover.Cluster, 0, len(list.Items))
				for i := range list.Items {
					fc, err := karmada.FromCluster(&list.Items[i])
					if err != nil {
						b.Fatal(err)
					}
					fleet = append(fleet, fc)
				}
				checker, err := prescheduling.NewChecker(prescheduling.WithCapacity(karmada.Capacity(list.Items, spec.ReplicaRequirements)))
				if err != nil {
					b.Fatal(err)
				}
				if res := checker.Check(req, fleet); !res.Feasible {
					b.Fatal(res.Reason)
				}
			}
		})
	}
}

// reportCPU reports the CPU time per operation since start: on a loaded
// machine the wall clock per operation grows with the other load, the CPU
// time does not.
func reportCPU(b *testing.B, start time.Duration, ok bool) {
	if end, ok2 := cputime.Used(); ok && ok2 {
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}

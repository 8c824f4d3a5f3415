package controllers

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/prescheduling"
)

// requestLog records what the handlers report to
// eviction_api_requests_total, as metrics.Metrics counts it.
type requestLog map[string]int

func (l requestLog) APIRequests(queue, verb string, n int) {
	if n > 0 {
		l[queue+" "+verb] += n
	}
}

// An eviction reports what it sent the API server: the Cluster it leaves,
// the cluster confirming the check, and the write; after a conflict, the
// same again and the binding, read from the API server.
func TestEvictHandlerCountsItsRequests(t *testing.T) {
	for _, tc := range []struct {
		name        string
		conflicts   int
		gets, wants int
	}{
		{"one attempt", 0, 2, 1},
		{"a conflict", 1, 5, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			left := tc.conflicts
			c := worldBuilder(t, newBinding(nil)).WithInterceptorFuncs(interceptor.Funcs{
				Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
					if left > 0 {
						left--
						return apierrors.NewConflict(schema.GroupResource{Resource: "resourcebindings"}, o.GetName(), errors.New("changed"))
					}
					return c.Update(ctx, o, opts...)
				},
			}).Build()
			ctrl := newController(t, EvictionOptions{}, c, &recorded{})
			log := requestLog{}
			ctrl.requests = log
			k := resourceBindings()
			err := ctrl.evictHandler(k)(context.Background(), evictionqueue.Item{Cluster: "member1", Key: "shop/web"})
			require.ErrorIs(t, err, evictionqueue.ErrInProgress)
			assert.Equal(t, requestLog{k.queue + " get": tc.gets, k.queue + " update": tc.wants}, log)
		})
	}
}

// An eviction whose check the fresh reads do not confirm (here, one that
// needs more clusters read than engine.MaxConfirmReads) waits: deferred,
// not failed nor abandoned, with a Warning Event saying why, and nothing
// written.
func TestEvictHandlerWaitsWhenTheReadsDoNotConfirm(t *testing.T) {
	var survivors []client.Object
	for i := range 10 {
		cl := &clusterv1alpha1.Cluster{}
		cl.Name = fmt.Sprintf("survivor-%d", i)
		cl.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
			Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(4, resource.DecimalSI)}}
		survivors = append(survivors, cl)
	}
	rb := newBinding(nil)
	rb.Annotations[karmada.AppliedPlacementAnnotation] = `{}`
	rb.Spec.Replicas, rb.Spec.Clusters = 40, []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 40}}
	rb.Spec.Placement = &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated}}
	c := worldBuilder(t, append(survivors, rb)...).Build()
	events := &recorded{}
	ctrl := newController(t, EvictionOptions{}, c, events)
	log := requestLog{}
	ctrl.requests = log
	k := resourceBindings()

	err := ctrl.evictHandler(k)(context.Background(), evictionqueue.Item{Cluster: "member1", Key: "shop/web"})
	var deferred *evictionqueue.RetryAfterError
	require.ErrorAs(t, err, &deferred)
	assert.Equal(t, 10*time.Second, deferred.After, "decided again one status report later")
	assert.Contains(t, err.Error(), "do not confirm")
	assert.Equal(t, []string{string(prescheduling.Unconfirmed)}, []string(*events))
	assert.Equal(t, requestLog{k.queue + " get": 1 + engine.MaxConfirmReads}, log, "no write")
	var got workv1alpha2.ResourceBinding
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(rb), &got))
	assert.True(t, got.Spec.TargetContains("member1"), "not evicted")
}

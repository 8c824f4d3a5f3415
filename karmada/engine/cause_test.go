package engine_test

import (
	"context"
	"testing"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
)

// appWorld is a Fleet of the healthy clusters, and the one named sick
// among them on which the application is unhealthy (the cluster itself is
// fine).
func appWorld(t testing.TB, clusters ...*clusterv1alpha1.Cluster) (*engine.Fleet, *clusterv1alpha1.Cluster) {
	t.Helper()
	sick := survivor("sick", 10, 1)
	f := &engine.Fleet{}
	for _, c := range append(clusters, sick) {
		_, err := f.Set(c)
		require.NoError(t, err)
	}
	return f, sick
}

// appBinding is default/name, one replica scheduled on sick, opted in to
// application failover with a.
func appBinding(name string, a *policyv1alpha1.ApplicationFailoverBehavior) *workv1alpha2.ResourceBinding {
	rb := &workv1alpha2.ResourceBinding{Spec: *oneReplica(name)}
	rb.Namespace, rb.Name = "default", name
	rb.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "sick", Replicas: 1}}
	rb.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: a}
	rb.Status.AggregatedStatus = []workv1alpha2.AggregatedStatusItem{{ClusterName: "sick", Health: workv1alpha2.ResourceUnhealthy,
		Status: &runtime.RawExtension{Raw: []byte(`{"readyReplicas":0,"replicas":1}`)}}}
	return rb
}

// failNow is the decision that the window has passed on sick.
var failNow = appfailover.Decision{FailOver: true, Reason: "the copy on sick is Unhealthy: fail over"}

// The task an application failover writes is Karmada v1.18's
// (buildTaskOptions): producer, reason ApplicationFailure, the purge mode
// (its canonical name), the grace period with Gracefully only,
// suppressDeletion with Never only; and no failback origin.
func TestEvictApplicationTaskFollowsPurgeMode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     policyv1alpha1.PurgeMode
		grace    *int32
		want     policyv1alpha1.PurgeMode
		suppress *bool
	}{
		{name: "empty is the CRD's default, Gracefully", mode: "", want: policyv1alpha1.PurgeModeGracefully},
		{name: "Gracefully carries its grace period", mode: policyv1alpha1.PurgeModeGracefully, grace: ptr.To[int32](120), want: policyv1alpha1.PurgeModeGracefully},
		{name: "legacy Graciously is Gracefully", mode: policyv1alpha1.PurgeMode("Graciously"), grace: ptr.To[int32](60), want: policyv1alpha1.PurgeModeGracefully},
		{name: "Directly", mode: policyv1alpha1.PurgeModeDirectly, want: policyv1alpha1.PurgeModeDirectly},
		{name: "legacy Immediately is Directly", mode: policyv1alpha1.PurgeMode("Immediately"), want: policyv1alpha1.PurgeModeDirectly},
		{name: "Never suppresses the deletion", mode: policyv1alpha1.Never, want: policyv1alpha1.Never, suppress: ptr.To(true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fleet, sick := appWorld(t, survivor("a", 4, 0))
			e := newEvictor(t, engine.EvictorOptions{Fleet: fleet})
			rb := appBinding("web", &policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: tc.mode, GracePeriodSeconds: tc.grace})

			step, err := e.EvictApplication(context.Background(), evictNow, "default/web", rb, sick, nil, failNow)
			require.NoError(t, err)
			require.Equal(t, engine.EvictionEvict, step.Action, step.Result.Reason)
			assert.Empty(t, rb.Spec.Clusters)
			require.Len(t, rb.Spec.GracefulEvictionTasks, 1)
			task := rb.Spec.GracefulEvictionTasks[0]
			assert.Equal(t, "sick", task.FromCluster)
			assert.Equal(t, engine.ApplicationFailoverProducer, task.Producer)
			assert.Equal(t, workv1alpha2.EvictionReasonApplicationFailure, task.Reason)
			assert.Equal(t, failNow.Reason, task.Message)
			assert.Equal(t, tc.want, task.PurgeMode)
			assert.Equal(t, tc.grace, task.GracePeriodSeconds)
			assert.Equal(t, tc.suppress, task.SuppressDeletion)
			assert.Equal(t, ptr.To[int32](1), task.Replicas)
			assert.Equal(t, metav1.NewTime(evictNow), *task.CreationTimestamp)
			assert.Nil(t, task.PreservedLabelState, "no StatefulFailoverInjection")
			assert.NotContains(t, rb.Annotations, karmada.FailedOverFromAnnotation, "a healthy cluster is no origin to fail back to")
		})
	}
}

// With StatefulFailoverInjection, the task carries the state the rules
// read from the status collected on the cluster left, and the schedule
// result before the failover; a status not collected yet is an error to
// retry, with nothing changed and no room held.
func TestEvictApplicationPreservesState(t *testing.T) {
	behavior := &policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly,
		StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{{AliasLabelName: "app.example/replicas", JSONPath: "{.replicas}"}}}}
	for _, gate := range []bool{false, true} {
		fleet, sick := appWorld(t, survivor("a", 4, 0))
		ledger, err := engine.NewLedger()
		require.NoError(t, err)
		e := newEvictor(t, engine.EvictorOptions{Fleet: fleet, Ledger: ledger, StatefulFailoverInjection: gate})
		rb := appBinding("web", behavior)
		step, err := e.EvictApplication(context.Background(), evictNow, "default/web", rb, sick, nil, failNow)
		require.NoError(t, err)
		require.Equal(t, engine.EvictionEvict, step.Action)
		task := rb.Spec.GracefulEvictionTasks[0]
		if !gate {
			assert.Nil(t, task.PreservedLabelState)
			assert.Nil(t, task.ClustersBeforeFailover)
			continue
		}
		assert.Equal(t, map[string]string{"app.example/replicas": "1"}, task.PreservedLabelState)
		assert.Equal(t, []string{"sick"}, task.ClustersBeforeFailover)

		rb = appBinding("db", behavior)
		rb.Status.AggregatedStatus[0].Status = nil
		before := rb.DeepCopy()
		_, err = e.EvictApplication(context.Background(), evictNow, "default/db", rb, sick, nil, failNow)
		require.ErrorContains(t, err, "failover.application.statePreservation: no status collected from cluster sick")
		assert.Equal(t, before, rb, "nothing changed")
		assert.Equal(t, []string{"default/web@sick"}, ledger.Keys(evictNow), "no room held for db")
	}
}

// The steps after "is it time?" are Evict's: nowhere to go is refused
// with the check's reason, a budget used up waits, a binding being deleted
// is skipped; one that no longer opts in or is not due stays, and one
// whose spec.failover.application does not validate is invalid.
func TestEvictApplicationSharesThePath(t *testing.T) {
	ctx := context.Background()
	t.Run("nowhere to go", func(t *testing.T) {
		fleet, sick := appWorld(t)
		e := newEvictor(t, engine.EvictorOptions{Fleet: fleet})
		rb := appBinding("web", &policyv1alpha1.ApplicationFailoverBehavior{})
		before := rb.DeepCopy()
		step, err := e.EvictApplication(ctx, evictNow, "default/web", rb, sick, nil, failNow)
		require.NoError(t, err)
		assert.Equal(t, engine.EvictionRefused, step.Action)
		assert.False(t, step.Result.Feasible)
		assert.NotEmpty(t, step.Result.Reason)
		assert.Equal(t, before, rb)
	})
	t.Run("budget used up", func(t *testing.T) {
		fleet, sick := appWorld(t, survivor("a", 4, 0))
		e := newEvictor(t, engine.EvictorOptions{Fleet: fleet, MaxClustersInTransit: 1})
		rb := appBinding("web", &policyv1alpha1.ApplicationFailoverBehavior{})
		rb.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "b", Reason: "TaintUntolerated", Producer: "TaintManager"}}
		step, err := e.EvictApplication(ctx, evictNow, "default/web", rb, sick, nil, failNow)
		require.NoError(t, err)
		assert.Equal(t, engine.EvictionWaitForBudget, step.Action)
		assert.Equal(t, []string{"b"}, step.InTransit)
	})
	t.Run("being deleted", func(t *testing.T) {
		fleet, sick := appWorld(t, survivor("a", 4, 0))
		e := newEvictor(t, engine.EvictorOptions{Fleet: fleet})
		rb := appBinding("web", &policyv1alpha1.ApplicationFailoverBehavior{})
		rb.DeletionTimestamp = ptr.To(metav1.NewTime(evictNow))
		step, err := e.EvictApplication(ctx, evictNow, "default/web", rb, sick, nil, failNow)
		require.NoError(t, err)
		assert.Equal(t, engine.EvictionSkip, step.Action)
	})
	t.Run("no longer opts in", func(t *testing.T) {
		fleet, sick := appWorld(t, survivor("a", 4, 0))
		e := newEvictor(t, engine.EvictorOptions{Fleet: fleet})
		rb := appBinding("web", nil)
		step, err := e.EvictApplication(ctx, evictNow, "default/web", rb, sick, nil, failNow)
		require.NoError(t, err)
		assert.Equal(t, engine.EvictionStays, step.Action)
		assert.Contains(t, step.Decision.Reason, "no longer opts in")
	})
	t.Run("not due", func(t *testing.T) {
		fleet, sick := appWorld(t, survivor("a", 4, 0))
		e := newEvictor(t, engine.EvictorOptions{Fleet: fleet})
		rb := appBinding("web", &policyv1alpha1.ApplicationFailoverBehavior{})
		step, err := e.EvictApplication(ctx, evictNow, "default/web", rb, sick, nil, appfailover.Decision{After: 30, Reason: "not yet"})
		require.NoError(t, err)
		assert.Equal(t, engine.EvictionStays, step.Action)
		assert.Equal(t, "not yet", step.Decision.Reason)
	})
	t.Run("invalid behavior", func(t *testing.T) {
		fleet, sick := appWorld(t, survivor("a", 4, 0))
		e := newEvictor(t, engine.EvictorOptions{Fleet: fleet})
		rb := appBinding("web", &policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: policyv1alpha1.Never, GracePeriodSeconds: ptr.To[int32](10)})
		step, err := e.EvictApplication(ctx, evictNow, "default/web", rb, sick, nil, failNow)
		require.NoError(t, err)
		assert.Equal(t, engine.EvictionInvalid, step.Action)
		assert.ErrorContains(t, step.Err, "gracePeriodSeconds")
	})
}

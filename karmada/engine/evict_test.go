package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/failback"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/prescheduling"
)

var evictNow = time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)

// evictWorld is a Fleet of the clusters, with lost failed (NoExecute and
// NoSchedule taints) among them.
func evictWorld(t testing.TB, clusters ...*clusterv1alpha1.Cluster) (*engine.Fleet, *clusterv1alpha1.Cluster) {
	t.Helper()
	lost := survivor("lost", 10, 1)
	fail(lost)
	f := &engine.Fleet{}
	for _, c := range append(clusters, lost) {
		_, err := f.Set(c)
		require.NoError(t, err)
	}
	return f, lost
}

// newEvictor is NewEvictor(opts), which must take them.
func newEvictor(t testing.TB, opts engine.EvictorOptions) *engine.Evictor {
	t.Helper()
	e, err := engine.NewEvictor(opts)
	require.NoError(t, err)
	return e
}

// webBinding is default/name, one replica of one CPU scheduled on lost,
// whose applied placement tolerates nothing.
func webBinding(name string) *workv1alpha2.ResourceBinding {
	rb := &workv1alpha2.ResourceBinding{Spec: *oneReplica(name)}
	rb.Namespace, rb.Name = "default", name
	rb.Annotations = map[string]string{karmada.AppliedPlacementAnnotation: "{}"}
	return rb
}

// An eviction that goes: the spec holds the task Karmada's taint manager
// writes, the replicas leave lost, and the Ledger holds their room under
// Hold until the caller's write fails or the task ends.
func TestEvictorEvicts(t *testing.T) {
	fleet, lost := evictWorld(t, survivor("a", 4, 0))
	ledger, err := engine.NewLedger()
	require.NoError(t, err)
	e := newEvictor(t, engine.EvictorOptions{Fleet: fleet, Ledger: ledger, EnableNoExecuteTaintEviction: true})
	rb := webBinding("web")

	step, err := e.Evict(context.Background(), evictNow, "default/web", rb, lost, nil)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionEvict, step.Action)
	assert.True(t, step.Result.Feasible)
	assert.Equal(t, []failover.TargetCluster{{Name: "a", Replicas: 1}}, step.Result.Moves)
	assert.Equal(t, "default/web@lost", step.Hold.String())
	assert.Equal(t, []string{"default/web@lost"}, ledger.Keys(evictNow))
	assert.Empty(t, rb.Spec.Clusters, "the replicas left lost")
	require.Len(t, rb.Spec.GracefulEvictionTasks, 1)
	task := rb.Spec.GracefulEvictionTasks[0]
	assert.Equal(t, "lost", task.FromCluster)
	assert.Equal(t, karmada.TaintManagerProducer, task.Producer)
	assert.Equal(t, karmada.TaintUntoleratedReason, task.Reason)
	assert.Equal(t, step.Decision.Reason, task.Message)
	assert.NotEmpty(t, task.Message)
	assert.Equal(t, policyv1alpha1.PurgeModeGracefully, task.PurgeMode)
	require.NotNil(t, task.CreationTimestamp)
	assert.True(t, task.CreationTimestamp.Time.Equal(evictNow))
	require.NotNil(t, task.Replicas)
	assert.Equal(t, int32(1), *task.Replicas)
	rec, err := failback.ParseRecord(rb.Annotations[karmada.FailedOverFromAnnotation])
	require.NoError(t, err)
	require.Len(t, rec, 1, "the binding records where it failed over from")
	assert.Equal(t, "lost", rec[0].Cluster)
	assert.True(t, rec[0].At.Time.Equal(evictNow))
	assert.Equal(t, karmada.PlacementFingerprint(rb.Spec.Placement), rec[0].Placement)
	assert.NoError(t, step.RecordErr)

	// Without a Ledger nothing is held, and Hold is empty.
	rb = webBinding("other")
	e = newEvictor(t, engine.EvictorOptions{Fleet: fleet, EnableNoExecuteTaintEviction: true, NoExecuteTaintEvictionPurgeMode: failover.PurgeModeDirectly})
	step, err = e.Evict(context.Background(), evictNow, "default/other", rb, lost, nil)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionEvict, step.Action)
	assert.True(t, step.Hold.IsZero())
	assert.Equal(t, policyv1alpha1.PurgeModeDirectly, rb.Spec.GracefulEvictionTasks[0].PurgeMode)
}

// Nothing to evict: a binding being deleted, or no longer on the cluster,
// is skipped before anything is decided, and left as it is.
func TestEvictorSkips(t *testing.T) {
	fleet, lost := evictWorld(t, survivor("a", 4, 0))
	e := newEvictor(t, engine.EvictorOptions{Fleet: fleet, EnableNoExecuteTaintEviction: true})

	deleting := webBinding("web")
	deleting.DeletionTimestamp = &metav1.Time{Time: evictNow}
	step, err := e.Evict(context.Background(), evictNow, "default/web", deleting, lost, nil)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionSkip, step.Action)
	assert.Equal(t, "binding default/web is being deleted", step.Why)

	moved := webBinding("web")
	moved.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "a", Replicas: 1}}
	step, err = e.Evict(context.Background(), evictNow, "default/web", moved, lost, nil)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionSkip, step.Action)
	assert.Equal(t, "binding default/web is no longer scheduled on lost", step.Why)
	assert.Empty(t, moved.Spec.GracefulEvictionTasks)
}

// Decided again, a binding stays: without EnableNoExecuteTaintEviction a
// NoExecute taint evicts nothing, as in Karmada; a toleration keeps it too.
func TestEvictorStays(t *testing.T) {
	fleet, lost := evictWorld(t, survivor("a", 4, 0))
	rb := webBinding("web")
	step, err := newEvictor(t, engine.EvictorOptions{Fleet: fleet}).Evict(context.Background(), evictNow, "default/web", rb, lost, nil)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionStays, step.Action)
	assert.False(t, step.Decision.Evict)
	assert.NotEmpty(t, step.Decision.Reason)
	assert.Equal(t, []workv1alpha2.TargetCluster{{Name: "lost", Replicas: 1}}, rb.Spec.Clusters)

	rb.Annotations[karmada.AppliedPlacementAnnotation] = `{"clusterTolerations":[{"operator":"Exists"}]}`
	step, err = newEvictor(t, engine.EvictorOptions{Fleet: fleet, EnableNoExecuteTaintEviction: true}).Evict(context.Background(), evictNow, "default/web", rb, lost, nil)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionStays, step.Action)
	assert.Empty(t, rb.Spec.GracefulEvictionTasks)
}

// A binding that cannot be decided, or whose placement the check cannot
// read, is invalid: Err names what, and Result.Code tells the check's
// request apart.
func TestEvictorInvalid(t *testing.T) {
	fleet, lost := evictWorld(t, survivor("a", 4, 0))
	e := newEvictor(t, engine.EvictorOptions{Fleet: fleet, EnableNoExecuteTaintEviction: true})

	noPlacement := webBinding("web")
	delete(noPlacement.Annotations, karmada.AppliedPlacementAnnotation)
	step, err := e.Evict(context.Background(), evictNow, "default/web", noPlacement, lost, nil)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionInvalid, step.Action)
	assert.ErrorContains(t, step.Err, karmada.AppliedPlacementAnnotation)
	assert.Empty(t, step.Result.Code, "not the check's request")

	badAffinity := webBinding("web")
	badAffinity.Spec.Placement.ClusterAffinity = &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Bogus"}}}}
	step, err = e.Evict(context.Background(), evictNow, "default/web", badAffinity, lost, nil)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionInvalid, step.Action)
	assert.ErrorContains(t, step.Err, "Bogus")
	assert.Equal(t, prescheduling.InvalidRequest, step.Result.Code)
	assert.Empty(t, badAffinity.Spec.GracefulEvictionTasks)
}

// The binding's budget of clusters in transit, its annotation or the
// Evictor's default, holds an eviction back while its open tasks use it
// up; an annotation that cannot be read is said, and the default applies.
func TestEvictorWaitsForTheBudget(t *testing.T) {
	fleet, lost := evictWorld(t, survivor("a", 4, 0))
	open := func() *workv1alpha2.ResourceBinding {
		rb := webBinding("web")
		rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: "a", Replicas: 1})
		rb.Spec.Replicas = 2
		rb.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "b", Reason: "x", Producer: "y"}}
		return rb
	}

	rb := open()
	e := newEvictor(t, engine.EvictorOptions{Fleet: fleet, EnableNoExecuteTaintEviction: true, MaxClustersInTransit: 1})
	step, err := e.Evict(context.Background(), evictNow, "default/web", rb, lost, nil)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionWaitForBudget, step.Action)
	assert.Equal(t, 1, step.Budget)
	assert.Equal(t, []string{"b"}, step.InTransit)
	assert.NoError(t, step.BudgetErr)
	assert.Len(t, rb.Spec.GracefulEvictionTasks, 1, "nothing written")

	// Its own annotation overrides the default: 2 allows a second.
	rb = open()
	rb.Annotations[karmada.MaxClustersInTransitAnnotation] = "2"
	step, err = e.Evict(context.Background(), evictNow, "default/web", rb, lost, nil)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionEvict, step.Action)

	rb = open()
	rb.Annotations[karmada.MaxClustersInTransitAnnotation] = "two"
	step, err = e.Evict(context.Background(), evictNow, "default/web", rb, lost, nil)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionWaitForBudget, step.Action, "the default applies")
	var bad *engine.TransitBudgetError
	require.ErrorAs(t, step.BudgetErr, &bad)
	assert.Equal(t, "two", bad.Value)
	assert.Equal(t, 1, bad.Default)
	assert.ErrorContains(t, step.BudgetErr, karmada.MaxClustersInTransitAnnotation)
}

// Two evictions to one survivor with room for one: the first holds it, the
// second waits for the room (AwaitingCapacity) and holds nothing.
func TestEvictorWaitsForRoom(t *testing.T) {
	fleet, lost := evictWorld(t, survivor("a", 1, 0))
	ledger, err := engine.NewLedger()
	require.NoError(t, err)
	e := newEvictor(t, engine.EvictorOptions{Fleet: fleet, Ledger: ledger, EnableNoExecuteTaintEviction: true})

	step, err := e.Evict(context.Background(), evictNow, "default/one", webBinding("one"), lost, nil)
	require.NoError(t, err)
	require.Equal(t, engine.EvictionEvict, step.Action)

	two := webBinding("two")
	step, err = e.Evict(context.Background(), evictNow, "default/two", two, lost, nil)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionWaitForRoom, step.Action)
	assert.Equal(t, prescheduling.AwaitingCapacity, step.Result.Code)
	assert.Positive(t, step.Result.RetryAfter)
	assert.Equal(t, []string{"default/one@lost"}, ledger.Keys(evictNow))
	assert.Empty(t, two.Spec.GracefulEvictionTasks)
}

// Nowhere to go: the check's refusal, with nothing written and nothing
// held.
func TestEvictorRefused(t *testing.T) {
	fleet, lost := evictWorld(t, survivor("a", 4, 4))
	ledger, err := engine.NewLedger()
	require.NoError(t, err)
	rb := webBinding("web")
	step, err := newEvictor(t, engine.EvictorOptions{Fleet: fleet, Ledger: ledger, EnableNoExecuteTaintEviction: true}).
		Evict(context.Background(), evictNow, "default/web", rb, lost, nil)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionRefused, step.Action)
	assert.False(t, step.Result.Feasible)
	assert.NotEqual(t, prescheduling.AwaitingCapacity, step.Result.Code)
	assert.NotEmpty(t, step.Result.Reason)
	assert.Empty(t, ledger.Keys(evictNow))
	assert.Empty(t, rb.Spec.GracefulEvictionTasks)
}

// With confirm, the clusters an approval relies on are read fresh: a
// cluster the Fleet still holds healthy, already failed in the API server,
// is no target, and the check picks again and confirms its next choice.
// Without confirm, the Fleet is the truth.
func TestEvictorConfirmsOnFreshReads(t *testing.T) {
	fleet, lost := evictWorld(t, survivor("a", 8, 0), survivor("b", 4, 0))
	failedA := survivor("a", 8, 0)
	fail(failedA)
	var asked [][]string
	confirm := func(_ context.Context, names []string) ([]*clusterv1alpha1.Cluster, error) {
		asked = append(asked, names)
		out := make([]*clusterv1alpha1.Cluster, len(names))
		for i, n := range names {
			switch n {
			case "a":
				out[i] = failedA
			case "b":
				out[i] = survivor("b", 4, 0)
			}
		}
		return out, nil
	}
	e := newEvictor(t, engine.EvictorOptions{Fleet: fleet, EnableNoExecuteTaintEviction: true})

	step, err := e.Evict(context.Background(), evictNow, "default/web", webBinding("web"), lost, nil)
	require.NoError(t, err)
	assert.Equal(t, []failover.TargetCluster{{Name: "a", Replicas: 1}}, step.Result.Moves, "the Fleet's choice")

	step, err = e.Evict(context.Background(), evictNow, "default/web", webBinding("web"), lost, confirm)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionEvict, step.Action)
	assert.Equal(t, []failover.TargetCluster{{Name: "b", Replicas: 1}}, step.Result.Moves)
	assert.Equal(t, [][]string{{"a"}, {"b"}}, asked)

	// A failed read is the caller's to retry: no room is held.
	ledger, err := engine.NewLedger()
	require.NoError(t, err)
	e = newEvictor(t, engine.EvictorOptions{Fleet: fleet, Ledger: ledger, EnableNoExecuteTaintEviction: true})
	boom := errors.New("boom")
	_, err = e.Evict(context.Background(), evictNow, "default/web", webBinding("web"), lost,
		func(context.Context, []string) ([]*clusterv1alpha1.Cluster, error) { return nil, boom })
	assert.ErrorIs(t, err, boom)
	assert.Empty(t, ledger.Keys(evictNow))

	// A cluster the read does not find is gone: no target either.
	step, err = e.Evict(context.Background(), evictNow, "default/web", webBinding("web"), lost,
		func(_ context.Context, names []string) ([]*clusterv1alpha1.Cluster, error) {
			return make([]*clusterv1alpha1.Cluster, len(names)), nil
		})
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionRefused, step.Action)
}

// The fresh reads do not grow with the clusters a placement allows: a
// Duplicated copy whose placement allows 200 clusters reads one of them,
// and a read that is as the Fleet holds it (its resourceVersion) asks the
// check nothing more. A placement that needs more clusters read than
// MaxConfirmReads to be confirmed waits (EvictionUnconfirmed), holding
// nothing.
func TestEvictorReadsAFewClustersWhateverThePlacementAllows(t *testing.T) {
	var clusters []*clusterv1alpha1.Cluster
	byName := map[string]*clusterv1alpha1.Cluster{}
	for i := range 200 {
		c := survivor(fmt.Sprintf("m%03d", i), 4, 0)
		c.ResourceVersion = "7"
		clusters = append(clusters, c)
		byName[c.Name] = c
	}
	fleet, lost := evictWorld(t, clusters...)
	var asked []string
	confirm := func(_ context.Context, names []string) ([]*clusterv1alpha1.Cluster, error) {
		asked = append(asked, names...)
		out := make([]*clusterv1alpha1.Cluster, len(names))
		for i, n := range names {
			out[i] = byName[n]
		}
		return out, nil
	}
	ledger, err := engine.NewLedger()
	require.NoError(t, err)
	e := newEvictor(t, engine.EvictorOptions{Fleet: fleet, Ledger: ledger, EnableNoExecuteTaintEviction: true})

	dup := webBinding("dup")
	dup.Spec.Placement = &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}}
	step, err := e.Evict(context.Background(), evictNow, "default/dup", dup, lost, confirm)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionEvict, step.Action, step.Result.Reason)
	assert.Len(t, slices.Collect(step.Result.AllMoves()), 200, "Karmada's scheduler puts a copy on every cluster")
	assert.Equal(t, []string{"m000"}, asked, "one copy to replace: one cluster read")
	assert.Equal(t, 1, step.Reads)
	step.Hold.Release()

	// Ten replicas that each cluster has room for four of: the three
	// clusters that take them are read.
	asked = nil
	big := webBinding("big")
	big.Spec.Replicas, big.Spec.Clusters = 10, []workv1alpha2.TargetCluster{{Name: "lost", Replicas: 10}}
	step, err = e.Evict(context.Background(), evictNow, "default/big", big, lost, confirm)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionEvict, step.Action, step.Result.Reason)
	assert.Len(t, asked, 3)
	assert.Equal(t, 3, step.Reads)
	step.Hold.Release()

	// Forty replicas need ten clusters read: more than MaxConfirmReads.
	asked = nil
	huge := webBinding("huge")
	huge.Spec.Replicas, huge.Spec.Clusters = 40, []workv1alpha2.TargetCluster{{Name: "lost", Replicas: 40}}
	step, err = e.Evict(context.Background(), evictNow, "default/huge", huge, lost, confirm)
	require.NoError(t, err)
	assert.Equal(t, engine.EvictionUnconfirmed, step.Action)
	assert.Equal(t, prescheduling.Unconfirmed, step.Result.Code)
	assert.Contains(t, step.Result.Reason, "do not confirm")
	assert.Len(t, asked, engine.MaxConfirmReads)
	assert.Equal(t, engine.MaxConfirmReads, step.Reads)
	assert.NotContains(t, ledger.Keys(evictNow), "default/huge@lost", "nothing held")
	assert.Len(t, huge.Spec.Clusters, 1, "nothing changed")

	// Without confirm, the Fleet is the truth: nothing is read.
	asked = nil
	step, err = e.Evict(context.Background(), evictNow, "default/huge", webBinding("huge"), lost, nil)
	require.NoError(t, err)
	assert.Equal(t, 0, step.Reads)
	assert.Empty(t, asked)
}

// Bad options are an error of NewEvictor naming the field and its value,
// and bad input one of Evict, never a panic.
func TestEvictorRejectsBadInput(t *testing.T) {
	fleet, lost := evictWorld(t)
	for name, tc := range map[string]struct {
		opts engine.EvictorOptions
		want string
	}{
		"no fleet":   {opts: engine.EvictorOptions{}, want: "EvictorOptions.Fleet"},
		"purge mode": {opts: engine.EvictorOptions{Fleet: fleet, NoExecuteTaintEvictionPurgeMode: "Never"}, want: `NoExecuteTaintEvictionPurgeMode "Never"`},
		"budget":     {opts: engine.EvictorOptions{Fleet: fleet, MaxClustersInTransit: -1}, want: "MaxClustersInTransit -1"},
	} {
		t.Run(name, func(t *testing.T) {
			e, err := engine.NewEvictor(tc.opts)
			assert.ErrorContains(t, err, tc.want)
			assert.Nil(t, e)
		})
	}
	for name, tc := range map[string]struct {
		e       *engine.Evictor
		binding runtime.Object
		cluster *clusterv1alpha1.Cluster
		want    string
	}{
		"not made":      {e: &engine.Evictor{}, binding: webBinding("web"), cluster: lost, want: "not made by NewEvictor"},
		"no cluster":    {e: newEvictor(t, engine.EvictorOptions{Fleet: fleet}), binding: webBinding("web"), want: "cluster is nil"},
		"nil binding":   {e: newEvictor(t, engine.EvictorOptions{Fleet: fleet}), binding: (*workv1alpha2.ResourceBinding)(nil), cluster: lost, want: "*v1alpha2.ResourceBinding"},
		"other objects": {e: newEvictor(t, engine.EvictorOptions{Fleet: fleet}), binding: &corev1.Pod{}, cluster: lost, want: "*v1.Pod"},
	} {
		t.Run(name, func(t *testing.T) {
			step, err := tc.e.Evict(context.Background(), evictNow, "default/web", tc.binding, tc.cluster, nil)
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, engine.EvictionStep{}, step)
		})
	}
}

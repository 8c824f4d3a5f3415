package controllers

import (
	"context"
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
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/karmada"
)

// decide answers as Karmada v1.18's taint manager (needEvictionWithCurrentTime)
// for NoExecute taints: the cases of its test, at the same fixed time, with
// Karmada's (needEviction, tolerationTime) read as now (true, 0), later
// (false, d > 0: After d) or never (false, -1). Then what the library adds:
// PreferNoExecute taints, which follow spec.failover.cluster whatever
// --enable-no-execute-taint-eviction says.
func TestDecide(t *testing.T) {
	fixed := time.Date(2025, 9, 23, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: fixed.Add(-d)} }
	taint := func(key string, e corev1.TaintEffect, added *metav1.Time) corev1.Taint {
		return corev1.Taint{Key: key, Effect: e, TimeAdded: added}
	}
	applied := func(p string) map[string]string { return map[string]string{karmada.AppliedPlacementAnnotation: p} }
	const affinity = `{"clusterAffinity":{"clusterNames":["test-cluster"]}`
	noExecute := []corev1.Taint{taint("test-key", corev1.TaintEffectNoExecute, ago(time.Second))}
	optedIn := &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{}}
	const never, now = time.Duration(-1), time.Duration(0)
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		taints      []corev1.Taint
		failover    *policyv1alpha1.FailoverBehavior
		disable     bool          // --enable-no-execute-taint-eviction=false
		want        time.Duration // now, never, or the time left
		wantErr     bool
	}{
		// Karmada's cases.
		{"placement annotation not exist", map[string]string{}, noExecute, nil, false, 0, true},
		{"placement annotation is invalid JSON", applied("invalid-json"), noExecute, nil, false, 0, true},
		{"placement is nil", applied(""), noExecute, nil, false, 0, true},
		{"no execute taint eviction disabled", applied(affinity + `}`), []corev1.Taint{taint("test-key", corev1.TaintEffectNoExecute, nil)}, nil, true, never, false},
		{"cluster has no NoExecute taints", applied(affinity + `}`), []corev1.Taint{taint("test-key", corev1.TaintEffectNoSchedule, nil)}, nil, false, never, false},
		{"taint not tolerated - immediate eviction", applied(affinity + `,"clusterTolerations":[]}`), noExecute, nil, false, now, false},
		{"taint tolerated with zero toleration seconds - immediate eviction",
			applied(affinity + `,"clusterTolerations":[{"key":"test-key","operator":"Exists","effect":"NoExecute","tolerationSeconds":0}]}`), noExecute, nil, false, now, false},
		{"taint tolerated with positive toleration seconds - wait for toleration time",
			applied(affinity + `,"clusterTolerations":[{"key":"test-key","operator":"Exists","effect":"NoExecute","tolerationSeconds":60}]}`), noExecute, nil, false, 59 * time.Second, false},
		{"taint tolerated forever - no eviction",
			applied(affinity + `,"clusterTolerations":[{"key":"test-key","operator":"Exists","effect":"NoExecute"}]}`), noExecute, nil, false, never, false},
		{"multiple taints with mixed tolerations",
			applied(affinity + `,"clusterTolerations":[{"key":"tolerated-key","operator":"Exists","effect":"NoExecute","tolerationSeconds":30}]}`),
			[]corev1.Taint{taint("tolerated-key", corev1.TaintEffectNoExecute, ago(-time.Second)), taint("not-tolerated-key", corev1.TaintEffectNoExecute, ago(time.Second))},
			nil, false, now, false},
		{"toleration time expired - immediate eviction",
			applied(affinity + `,"clusterTolerations":[{"key":"test-key","operator":"Exists","effect":"NoExecute","tolerationSeconds":1}]}`),
			[]corev1.Taint{taint("test-key", corev1.TaintEffectNoExecute, ago(2*time.Second))}, nil, false, now, false},

		// Karmada asks for the applied placement only when a NoExecute
		// taint is to be judged (it queues nothing otherwise); so does
		// decide.
		{"no annotation, eviction disabled: never, no error", nil, noExecute, nil, true, never, false},
		{"no annotation, only NoSchedule: never, no error", nil, []corev1.Taint{taint("test-key", corev1.TaintEffectNoSchedule, nil)}, nil, false, never, false},

		// PreferNoExecute, which Karmada v1.18 does not act on.
		{"PreferNoExecute, opted in, 300s passed: now, even with NoExecute eviction disabled and no annotation", nil,
			[]corev1.Taint{taint("test-key", failover.TaintEffectPreferNoExecute, ago(301*time.Second))}, optedIn, true, now, false},
		{"PreferNoExecute, opted in, 100s passed: 200s later", nil,
			[]corev1.Taint{taint("test-key", failover.TaintEffectPreferNoExecute, ago(100*time.Second))}, optedIn, false, 200 * time.Second, false},
		{"PreferNoExecute, not opted in: never", applied(`{}`),
			[]corev1.Taint{taint("test-key", failover.TaintEffectPreferNoExecute, ago(time.Hour))}, nil, false, never, false},
		{"an unknown purge mode in spec.failover.cluster: an error", nil,
			[]corev1.Taint{taint("test-key", failover.TaintEffectPreferNoExecute, ago(time.Hour))},
			&policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: "Sometimes"}}, false, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &EvictionController{opts: EvictionOptions{EnableNoExecuteTaintEviction: !tc.disable, Clock: clocktesting.NewFakeClock(fixed)}}
			obj := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: tc.annotations},
				Spec: workv1alpha2.ResourceBindingSpec{Failover: tc.failover}}
			cl := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "test-cluster"}, Spec: clusterv1alpha1.ClusterSpec{Taints: tc.taints}}
			before := len(cl.Spec.Taints)
			d, err := c.decide(obj, &obj.Spec, cl)
			if tc.wantErr {
				if err == nil || d.Evict {
					t.Errorf("decide = %+v, %v; want no eviction and an error", d, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == now && !d.Evict, tc.want == never && (d.Evict || d.After != 0), tc.want > 0 && (d.Evict || d.After != tc.want):
				t.Errorf("decide = evict %v after %v (%s), want %v (0: now, -1: never)", d.Evict, d.After, d.Reason, tc.want)
			}
			if len(cl.Spec.Taints) != before {
				t.Errorf("decide changed the cluster's taints: %v", cl.Spec.Taints)
			}
		})
	}
}

// A Cluster's status report, every --cluster-status-update-frequency,
// reconciles none of its bindings; a change to its taints does, as do its
// creation and deletion.
func TestTaintsChanged(t *testing.T) {
	added := metav1.NewTime(time.Date(2025, 9, 23, 12, 0, 0, 0, time.UTC))
	old := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "member1", ResourceVersion: "1"},
		Spec: clusterv1alpha1.ClusterSpec{Region: "eu-west", Taints: []corev1.Taint{
			{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added},
		}},
	}
	update := func(change func(c *clusterv1alpha1.Cluster)) bool {
		cur := old.DeepCopy()
		cur.ResourceVersion = "2"
		change(cur)
		return taintsChanged.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur})
	}
	assert.False(t, update(func(c *clusterv1alpha1.Cluster) {
		c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionFalse}}
		c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{}
	}), "a status report")
	assert.False(t, update(func(c *clusterv1alpha1.Cluster) { c.Labels = map[string]string{"team": "shop"} }), "a label")
	assert.False(t, update(func(c *clusterv1alpha1.Cluster) {
		c.Spec.Taints[0].TimeAdded = &metav1.Time{Time: added.In(time.FixedZone("CEST", 2*60*60))}
	}), "the same taints, their times read in another zone")
	assert.True(t, update(func(c *clusterv1alpha1.Cluster) { c.Spec.Taints = nil }), "the taint removed")
	assert.True(t, update(func(c *clusterv1alpha1.Cluster) { c.Spec.Taints[0].Effect = failover.TaintEffectPreferNoExecute }), "the effect changed")
	assert.True(t, update(func(c *clusterv1alpha1.Cluster) {
		c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule})
	}), "a taint added")
	assert.True(t, taintsChanged.Create(event.CreateEvent{Object: old}), "a new cluster")
	assert.True(t, taintsChanged.Delete(event.DeleteEvent{Object: old}), "a cluster gone")
	assert.True(t, taintsChanged.Generic(event.GenericEvent{Object: old}))
}

// A Cluster whose taints changed has each of its bindings judged there
// and queued, as Karmada's taint manager queues them from its reconcile of
// the Cluster: the binding that does not tolerate the NoExecute taint is
// queued at once, the one tolerating it for five minutes brings the Cluster
// back when its toleration ends, a binding elsewhere is left alone, and one
// whose applied placement cannot be read is an error that does not hold
// the others back.
func TestManageClusterTaintsQueuesTheClustersBindings(t *testing.T) {
	named := func(name string, annotation string, clusters ...string) *workv1alpha2.ResourceBinding {
		b := newBinding(nil)
		b.Name, b.Spec.Resource.Name = name, name
		b.Annotations[karmada.AppliedPlacementAnnotation] = annotation
		b.Spec.Clusters = nil
		for _, c := range clusters {
			b.Spec.Clusters = append(b.Spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: 1})
		}
		return b
	}
	const plain = `{"clusterAffinity":{"clusterNames":["member1","member2"]}}`
	c := worldBuilder(t,
		named("evicted", plain, "member1", "member2"),
		named("tolerating", `{"clusterTolerations":[{"key":"cluster.karmada.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}]}`, "member1"),
		named("elsewhere", plain, "member2"),
		named("unreadable", "not json", "member1"),
	).WithIndex(&workv1alpha2.ResourceBinding{}, clusterIndex, func(o client.Object) []string {
		return clusterNames(&o.(*workv1alpha2.ResourceBinding).Spec)
	}).Build()
	ctrl := newController(t, EvictionOptions{}, c, &recorded{})
	withQueues(t, ctrl)
	k := ctrl.kinds[0]

	res, err := ctrl.manageClusterTaints(context.Background(), k, "member1")
	assert.ErrorContains(t, err, "shop/unreadable")
	assert.Equal(t, 4*time.Minute, res.RequeueAfter, "the toleration of shop/tolerating ends 5m after the taint, added 1m ago")
	assert.Equal(t, []evictionqueue.Item{{Cluster: "member1", Key: "shop/evicted", ResourceKind: "apps/v1/Deployment"}}, k.q.Pending())

	res, err = ctrl.manageClusterTaints(context.Background(), k, "member2")
	assert.NoError(t, err, "member2 has no taint: nothing to judge against")
	assert.Zero(t, res.RequeueAfter)
	assert.Len(t, k.q.Pending(), 1)

	res, err = ctrl.manageClusterTaints(context.Background(), k, "gone")
	assert.NoError(t, err)
	assert.Zero(t, res)
}

// TestManageClusterTaintsQueuesInKeyOrder: the bindings a taint queues
// together are queued in the order of their keys, not the cache's, so that
// which goes first (and so where the room sends it) is the same on every
// run, and what fleetsim's what-if planner predicts.
func TestManageClusterTaintsQueuesInKeyOrder(t *testing.T) {
	var objs []client.Object
	var want []string
	for i := range 24 {
		b := newBinding(nil)
		b.Name = fmt.Sprintf("web-%02d", (i*7)%24) // created out of order
		b.Spec.Resource.Name = b.Name
		b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 1}, {Name: "member2", Replicas: 1}}
		objs = append(objs, b)
		want = append(want, fmt.Sprintf("shop/web-%02d", i))
	}
	// The fake client lists in order of name; a cache lists in its map's
	// order, played here as the reverse.
	c := worldBuilder(t, objs...).WithIndex(&workv1alpha2.ResourceBinding{}, clusterIndex, func(o client.Object) []string {
		return clusterNames(&o.(*workv1alpha2.ResourceBinding).Spec)
	}).WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if err := c.List(ctx, list, opts...); err != nil {
			return err
		}
		if l, ok := list.(*workv1alpha2.ResourceBindingList); ok {
			slices.Reverse(l.Items)
		}
		return nil
	}}).Build()
	ctrl := newController(t, EvictionOptions{}, c, &recorded{})
	withQueues(t, ctrl)
	k := ctrl.kinds[0]
	_, err := ctrl.manageClusterTaints(context.Background(), k, "member1")
	require.NoError(t, err)
	var got []string
	for _, it := range k.q.Pending() {
		got = append(got, it.Key)
	}
	assert.Equal(t, want, got)
}

package fork

import (
	"context"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
)

// The task is what Karmada's own controllers read back: its purge mode
// follows getPurgeMode of Karmada's taint manager, its reason and producer
// are the taint manager's.
func TestTask(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cluster := func(mode policyv1alpha1.PurgeMode) *policyv1alpha1.FailoverBehavior {
		return &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: mode}}
	}
	for _, tc := range []struct {
		name     string
		flag     failover.PurgeMode // Options.NoExecuteTaintEvictionPurgeMode
		failover *policyv1alpha1.FailoverBehavior
		want     failover.PurgeMode
	}{
		{"no spec.failover: the flag", failover.PurgeModeDirectly, nil, failover.PurgeModeDirectly},
		{"application failover only: the flag", failover.PurgeModeDirectly, &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{}}, failover.PurgeModeDirectly},
		{"failover.cluster without a mode: Gracefully, not the flag", failover.PurgeModeDirectly, cluster(""), failover.PurgeModeGracefully},
		{"failover.cluster's mode wins over the flag", failover.PurgeModeGracefully, cluster(policyv1alpha1.PurgeModeDirectly), failover.PurgeModeDirectly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &forker{opts: Options{NoExecuteTaintEvictionPurgeMode: tc.flag, Now: func() time.Time { return now }}}
			got := f.task(&workv1alpha2.ResourceBindingSpec{Failover: tc.failover}, "taint x untolerated")
			if got.PurgeMode != tc.want {
				t.Errorf("PurgeMode = %q, want %q", got.PurgeMode, tc.want)
			}
			if got.Reason != workv1alpha2.EvictionReasonTaintUntolerated || got.Producer != workv1alpha2.EvictionProducerTaintManager {
				t.Errorf("Reason, Producer = %q, %q, want Karmada's taint manager's", got.Reason, got.Producer)
			}
			if got.Message != "taint x untolerated" {
				t.Errorf("Message = %q, want the decision's reason", got.Message)
			}
			if got.CreationTimestamp == nil || !got.CreationTimestamp.Time.Equal(now) {
				t.Errorf("CreationTimestamp = %v, want %v (Options.Now)", got.CreationTimestamp, now)
			}
		})
	}
}

// recorded keeps the reasons of the Events the handler records.
type recorded []string

func (r *recorded) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	*r = append(*r, reason)
}

// The handler moves the binding into a graceful eviction task and says so
// with an EvictedFromCluster Event. When another writer moves the binding
// off the cluster while the handler writes (a conflict), the handler has
// evicted nothing and must not say it did.
func TestEvictHandlerEvent(t *testing.T) {
	update := func(change func(*workv1alpha2.ResourceBinding)) otherWriter {
		return func(ctx context.Context, c client.Client, b *workv1alpha2.ResourceBinding) error {
			change(b)
			return c.Update(ctx, b)
		}
	}
	moved := update(func(b *workv1alpha2.ResourceBinding) {
		b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member2"}}
	})
	tolerated := update(func(b *workv1alpha2.ResourceBinding) {
		b.Spec.Placement = &policyv1alpha1.Placement{ClusterTolerations: []corev1.Toleration{{
			Key: "cluster.karmada.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
		}}}
	})
	deleting := func(ctx context.Context, c client.Client, b *workv1alpha2.ResourceBinding) error {
		b.Finalizers = []string{"example.com/keep"} // so that Delete only marks it
		if err := c.Update(ctx, b); err != nil {
			return err
		}
		return c.Delete(ctx, b)
	}
	for _, tc := range []struct {
		name       string
		concurrent otherWriter // made first, so the handler's write conflicts
		wantEvents int
		wantTasks  int
	}{
		{"evicted: one task, one Event", nil, 1, 1},
		{"moved by another writer meanwhile: no task, no Event", moved, 0, 0},
		{"made to tolerate the taint meanwhile: no task, no Event", tolerated, 0, 0},
		{"being deleted meanwhile: no task, no Event", deleting, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, events := runEvictHandler(t, tc.concurrent)
			if len(*events) != tc.wantEvents || tc.wantEvents > 0 && (*events)[0] != EventReasonEvicted {
				t.Errorf("events %q, want %d %s", *events, tc.wantEvents, EventReasonEvicted)
			}
			var got workv1alpha2.ResourceBinding
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "web"}, &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Spec.GracefulEvictionTasks) != tc.wantTasks {
				t.Errorf("tasks %+v, want %d", got.Spec.GracefulEvictionTasks, tc.wantTasks)
			}
		})
	}
}

// runEvictHandler runs the handler for binding shop/web on the NoExecute
// tainted member1, member2 being healthy.
// otherWriter is another controller's write to the binding b it read.
type otherWriter func(ctx context.Context, c client.Client, b *workv1alpha2.ResourceBinding) error

func runEvictHandler(t *testing.T, concurrent otherWriter) (client.Client, *recorded) {
	t.Helper()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	added := metav1.NewTime(now.Add(-time.Minute))
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	failed := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}, Spec: clusterv1alpha1.ClusterSpec{
		Taints: []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}},
	}}
	healthy := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member2"}}
	binding := &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
			Clusters: []workv1alpha2.TargetCluster{{Name: "member1"}},
		},
	}
	updates := 0
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(failed, healthy, binding).
		WithInterceptorFuncs(interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if updates++; concurrent != nil && updates == 1 {
				var other workv1alpha2.ResourceBinding
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &other); err != nil {
					return err
				}
				if err := concurrent(ctx, c, &other); err != nil {
					return err
				}
			}
			return c.Update(ctx, obj, opts...) // a conflict after the other write
		}}).Build()
	events := &recorded{}
	f := &forker{
		opts:     Options{EnableNoExecuteTaintEviction: true, NoExecuteTaintEvictionPurgeMode: failover.PurgeModeGracefully, Now: func() time.Time { return now }},
		client:   c,
		reader:   c,
		recorder: events,
	}
	if err := f.evictHandler(resourceBindings())(context.Background(), evictionqueue.Item{Cluster: "member1", Key: "shop/web"}); err != nil {
		t.Fatal(err)
	}
	if updates != 1 {
		t.Fatalf("%d updates, want 1: one eviction, or one conflict and no write of a binding that should no longer leave member1", updates)
	}
	return c, events
}

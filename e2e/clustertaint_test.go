//go:build e2e

package e2e

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/failoverkit/failover/examples/controllerruntime/api/v1alpha1"
	"github.com/failoverkit/failover/examples/controllerruntime/clustertaint"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

// memberClusterPolicy: NotReady for 1s gets NoSchedule, for 2s NoExecute;
// Ready for 2s removes both. In the example controller's own group.
const memberClusterPolicy = `
apiVersion: fleet.example.com/v1alpha1
kind: ClusterTaintPolicy
metadata: {name: not-ready}
spec:
  matchConditions:
  - {conditionType: Ready, operator: In, statusValues: ["False", "Unknown"]}
  taintsToAdd:
  - {key: fleet.example.com/not-ready, effect: NoSchedule, addOnMatchSeconds: 1, removeOnMismatchSeconds: 2}
  - {key: fleet.example.com/not-ready, effect: NoExecute, addOnMatchSeconds: 2, removeOnMismatchSeconds: 2}
`

const memberNotReady = "fleet.example.com/not-ready"

// mcClient reads and writes MemberClusters as the test's admin.
func mcClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1alpha1.AddToScheme(s))
	c, err := client.New(env.config, client.Options{Scheme: s})
	require.NoError(t, err)
	return c
}

// createMemberCluster creates a MemberCluster and writes its Ready
// condition through the status subresource, as a prober would.
func createMemberCluster(t *testing.T, c client.Client, name string, taints ...corev1.Taint) {
	t.Helper()
	mc := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.MemberClusterSpec{Region: "eu", Taints: taints}}
	require.NoError(t, c.Create(ctxFor(t), mc))
	setMemberReady(t, c, name, metav1.ConditionTrue, time.Now().Add(-time.Hour))
}

func setMemberReady(t *testing.T, c client.Client, name string, status metav1.ConditionStatus, since time.Time) {
	t.Helper()
	var mc v1alpha1.MemberCluster
	require.NoError(t, c.Get(ctxFor(t), types.NamespacedName{Name: name}, &mc))
	mc.Status.Conditions = []metav1.Condition{{
		Type: "Ready", Status: status, Reason: "Probe", Message: "set by the e2e test", LastTransitionTime: metav1.NewTime(since),
	}}
	require.NoError(t, c.Status().Update(ctxFor(t), &mc))
}

func memberTaint(t *testing.T, c client.Client, name string, effect corev1.TaintEffect) *corev1.Taint {
	t.Helper()
	var mc v1alpha1.MemberCluster
	require.NoError(t, c.Get(ctxFor(t), types.NamespacedName{Name: name}, &mc))
	return findTaint(mc.Spec.Taints, memberNotReady, effect)
}

// TestClusterTaintControllerOnItsOwnCRD runs the library's second user,
// examples/controllerruntime's cluster-taint controller, as its manager runs
// it (leader election, the sync gate as a Runnable, the generated CRD, the
// policies in its own group) on the real API server. Five MemberClusters;
// four go NotReady at once:
//   - each gets NoSchedule after its window, none waiting for a permit;
//   - the NoExecute taints go no faster than the rate (one per 3 s), and stop
//     once three of five (60%, above 55% in a small fleet) are faulty;
//   - one recovering is untainted at once, and the held one is tainted;
//   - a user's taint on a cluster survives every write.
func TestClusterTaintControllerOnItsOwnCRD(t *testing.T) {
	noLeaks(t)
	ctx := ctxFor(t)
	crd := filepath.Join("..", "examples", "controllerruntime", "crds", "fleet.example.com_memberclusters.yaml")
	require.NoError(t, env.createCRDs(ctx, []string{crd},
		schema.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: "memberclusters"}))
	c := mcClient(t)
	user := corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule}
	down := []string{"ct-a", "ct-b", "ct-c", "ct-d"}
	for _, n := range down {
		createMemberCluster(t, c, n)
	}
	createMemberCluster(t, c, "ct-e", user)

	policies, err := taintpolicy.LoadPoliciesWith(strings.NewReader(memberClusterPolicy),
		taintpolicy.ValidateOptions{APIVersion: v1alpha1.GroupVersion.String()})
	require.NoError(t, err)
	rates := ratelimit.DefaultConfig()
	rates.ResourceEvictionRate = 1.0 / 3
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1alpha1.AddToScheme(s))
	mgr, err := ctrl.NewManager(env.config, ctrl.Options{
		Scheme:                        s,
		Logger:                        klog.Background().WithName("clustertaint"),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		LeaderElection:                true,
		LeaderElectionID:              "clustertaint-e2e",
		LeaderElectionNamespace:       leaseNamespace,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	r, err := clustertaint.New(mgr.GetClient(), clustertaint.Config{
		Policies:   policies,
		Rates:      rates,
		PermitWait: 10 * time.Second, // longer than a permit interval: permits are taken in turn
		RetryAfter: time.Second,
	})
	require.NoError(t, err)
	require.NoError(t, r.SetupWithManager(mgr))
	stop := runUntilStopped(t, "clustertaint", mgr.Start)

	// Whole seconds, as the API stores lastTransitionTime and TimeAdded.
	start := time.Now().Truncate(time.Second)
	for _, n := range down {
		setMemberReady(t, c, n, metav1.ConditionFalse, start)
	}
	eventually(t, 1*time.Second+2*slack, "NoSchedule on the four", func() bool {
		for _, n := range down {
			if memberTaint(t, c, n, corev1.TaintEffectNoSchedule) == nil {
				return false
			}
		}
		return true
	})

	// Three NoExecute taints, a permit (3 s) apart; then 3 of 5 faulty pauses.
	var tainted []string
	eventually(t, 2*time.Second+2*3*time.Second+2*slack, "NoExecute on three", func() bool {
		tainted = nil
		for _, n := range down {
			if memberTaint(t, c, n, corev1.TaintEffectNoExecute) != nil {
				tainted = append(tainted, n)
			}
		}
		return len(tainted) == 3
	})
	var added []time.Time
	for _, n := range tainted {
		added = append(added, memberTaint(t, c, n, corev1.TaintEffectNoExecute).TimeAdded.Time)
	}
	slices.SortFunc(added, func(a, b time.Time) int { return a.Compare(b) })
	assert.False(t, added[0].Before(start.Add(2*time.Second)), "the first NoExecute at %v, before its window from %v closed", added[0], start)
	for i := 1; i < len(added); i++ {
		// TimeAdded has whole seconds: 3 s apart reads as 2 s at least.
		assert.GreaterOrEqual(t, added[i].Sub(added[i-1]), 2*time.Second, "NoExecute taints %d and %d: %v", i-1, i, added)
	}
	held := ""
	for _, n := range down {
		if !slices.Contains(tainted, n) {
			held = n
		}
	}
	never(t, 5*time.Second, "NoExecute on "+held+" while 3 of 5 are faulty", func() bool {
		return memberTaint(t, c, held, corev1.TaintEffectNoExecute) != nil
	})

	// One tainted cluster recovers: its taints go after the remove window,
	// paused or not; the fleet is back under the threshold, and the held
	// cluster gets its NoExecute taint.
	setMemberReady(t, c, tainted[0], metav1.ConditionTrue, time.Now().Truncate(time.Second))
	eventually(t, 2*time.Second+2*slack, tainted[0]+" untainted", func() bool {
		return memberTaint(t, c, tainted[0], corev1.TaintEffectNoExecute) == nil && memberTaint(t, c, tainted[0], corev1.TaintEffectNoSchedule) == nil
	})
	eventually(t, 3*time.Second+2*slack, "NoExecute on "+held, func() bool {
		return memberTaint(t, c, held, corev1.TaintEffectNoExecute) != nil
	})

	var e v1alpha1.MemberCluster
	require.NoError(t, c.Get(ctx, types.NamespacedName{Name: "ct-e"}, &e))
	assert.Equal(t, []corev1.Taint{user}, e.Spec.Taints, "the healthy cluster keeps its user's taint and gets nothing")
	require.NoError(t, stop())
}

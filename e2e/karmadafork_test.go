//go:build e2e

package e2e

import (
	"slices"
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/failoverkit/failover/ratelimit"
)

// rate is a fast eviction rate rule for the tests: rate per second while
// healthy, secondary in a large unhealthy fleet.
func rate(primary, secondary float64) ratelimit.Config {
	cfg := ratelimit.DefaultConfig()
	cfg.ResourceEvictionRate = primary
	cfg.SecondaryResourceEvictionRate = secondary
	return cfg
}

// TestKarmadaFork runs examples/karmadafork's reconcilers in-process on
// Karmada v1.18's own CRDs, each replica impersonating the ServiceAccount
// the example's deploy/rbac.yaml binds (the API server enforces RBAC). The
// subtests run in parallel, each on its own labelled objects, and the test
// plays Karmada's scheduler and member clusters: it writes spec.clusters and
// status.aggregatedStatus; in the closed-loop subtests Karmada's own
// karmada-scheduler places the bindings instead.
func TestKarmadaFork(t *testing.T) {
	noLeaks(t)
	applyForkManifests(t)
	startKarmadaScheduler(t)

	// Alone, before the parallel subtests: the program sees every object.
	t.Run("the binary from a kubeconfig with deploy/rbac.yaml's rights", testForkBinary)

	// A Cluster losing Ready gets the policy's taint; the bindings that do
	// not tolerate it leave at the configured rate, into tasks with their
	// placement's purge mode; one tolerating it for N seconds leaves after
	// N seconds; one tolerating it forever stays.
	t.Run("taint then evictions at the rate", func(t *testing.T) {
		t.Parallel()
		s := newSuite(t, "rate")
		tasks := s.watchTasks()
		const r = 1.0
		s.cluster("rate-down", metav1.ConditionTrue)
		s.cluster("rate-ok1", metav1.ConditionTrue)
		s.cluster("rate-ok2", metav1.ConditionTrue)
		s.releasedPolicy("rate-down")
		on := []string{"rate-down"}
		var untolerating []client.Object
		want := map[string]policyv1alpha1.PurgeMode{}
		for _, n := range []string{"g0", "g1", "g2"} {
			untolerating = append(untolerating, s.binding(n, bindingSpec{clusters: on}))
			want[n] = policyv1alpha1.PurgeModeGracefully // the --no-execute-taint-eviction-purge-mode default
		}
		for _, n := range []string{"d0", "d1"} {
			untolerating = append(untolerating, s.binding(n, bindingSpec{clusters: on,
				failover: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}}))
			want[n] = policyv1alpha1.PurgeModeDirectly
		}
		crb := s.clusterBinding("crb", bindingSpec{clusters: on})
		untolerating = append(untolerating, crb)
		want[crb.Name] = policyv1alpha1.PurgeModeGracefully
		// Longer than the six evictions ahead of it take at r.
		const n = 8
		notReady := func(secs *int64) []corev1.Toleration {
			return []corev1.Toleration{{Key: forkTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs}}
		}
		tolN := s.binding("tolerates-n", bindingSpec{clusters: on, tolerations: notReady(ptr.To[int64](n))})
		s.binding("tolerates-forever", bindingSpec{clusters: on, tolerations: notReady(nil)})
		s.start("rate", forkOptions{Rate: rate(r, r), EnableNoExecuteTaintEviction: true}, nil)

		down := time.Now().Truncate(time.Second)
		s.setReady("rate-down", metav1.ConditionFalse)
		s.waitTaint("rate-down")
		taint := findTaint(s.getCluster("rate-down").Spec.Taints, forkTaintKey, corev1.TaintEffectNoExecute)
		require.NotNil(t, taint, "the policy's taint went away")
		require.NotNil(t, taint.TimeAdded)
		// Karmada's released form has no windows: the taint comes as soon
		// as Ready is False.
		assert.False(t, taint.TimeAdded.Time.Before(down), "taint added at %v, before Ready went False at %v", taint.TimeAdded, down)

		var created []time.Time
		for _, o := range untolerating {
			tk := s.evicted(tasks, o, "rate-down", 20*time.Second)
			created = append(created, tk.CreationTimestamp.Time)
			assert.Equal(t, want[o.GetName()], tk.PurgeMode, "%s: purge mode", o.GetName())
			assert.Equal(t, "TaintManager", tk.Producer)
		}
		for _, o := range untolerating[:5] {
			assert.NotContains(t, targets(&s.getBinding(o.GetName()).Spec), "rate-down", "%s still scheduled on the faulty cluster", o.GetName())
		}
		// Timestamps are stored in whole seconds: k permits at rate r span
		// (k-1)/r seconds, give or take one for the truncation.
		slices.SortFunc(created, func(a, b time.Time) int { return a.Compare(b) })
		span := created[len(created)-1].Sub(created[0])
		minSpan := rateBound(len(created), r)
		assert.GreaterOrEqual(t, span, minSpan-time.Second, "%d evictions at %v/s took %v: faster than the rate", len(created), r, span)
		assert.LessOrEqual(t, span, minSpan+2*time.Second, "%d evictions at %v/s took %v", len(created), r, span)
		t.Logf("measured: %d evictions at %v/s in %v (%.2f/s)", len(created), r, span, perSecond(created))

		// N seconds of toleration, counted from the taint's TimeAdded.
		at := s.evicted(tasks, tolN, "rate-down", n*time.Second+10*time.Second).CreationTimestamp.Time
		deadline := taint.TimeAdded.Add(n * time.Second)
		assert.False(t, at.Before(deadline.Add(-time.Second)), "tolerating %ds: left at %v, before %v", n, at, deadline)
		assert.True(t, at.Before(deadline.Add(slack)), "tolerating %ds: left at %v, long after %v", n, at, deadline)
		forever := s.getBinding("tolerates-forever")
		assert.Equal(t, []string{"rate-down"}, targets(&forever.Spec), "tolerating forever: still there")
		assert.Empty(t, forever.Spec.GracefulEvictionTasks)
	})

	t.Run("PreferNoExecute moves only bindings with spec.failover.cluster", func(t *testing.T) {
		t.Parallel()
		testPreferNoExecute(t)
	})
	t.Run("large unhealthy fleet: the secondary rate, recovery resumes at once", func(t *testing.T) {
		t.Parallel()
		testLargeFleet(t)
	})
	t.Run("small unhealthy fleet: paused, recovery resumes at once", func(t *testing.T) {
		t.Parallel()
		testSmallFleet(t)
	})
	t.Run("nowhere to go: untouched, an Event says why", func(t *testing.T) {
		t.Parallel()
		testNowhereToGo(t)
	})
	t.Run("recovery cancels queued evictions", func(t *testing.T) {
		t.Parallel()
		testRecoveryWhileQueued(t)
	})
	t.Run("tasks end when healthy elsewhere or at the grace period", func(t *testing.T) {
		t.Parallel()
		testTasksEnd(t)
	})
	t.Run("in-flight budget: evictions wait for a task to end, eviction_in_flight counts them", func(t *testing.T) {
		t.Parallel()
		testInFlightBudget(t)
	})
	t.Run("budget of clusters in transit: no binding has more clusters in graceful eviction than its budget", func(t *testing.T) {
		t.Parallel()
		testTransitBudget(t)
	})
	t.Run("two replicas, one leader; a conflict is retried", func(t *testing.T) {
		t.Parallel()
		testTwoReplicas(t)
	})
	t.Run("region down: its bindings leave at the primary rate under --disruption-domain=region", func(t *testing.T) {
		t.Parallel()
		testRegionOutage(t)
	})
	t.Run("closed loop with karmada-scheduler: taint, evict, reschedule across regions, tasks cleared; nowhere to go: kept", func(t *testing.T) {
		t.Parallel()
		testClosedLoop(t)
	})
	t.Run("closed loop, regional outage: with the ledger no survivor gets more than its room", func(t *testing.T) {
		t.Parallel()
		testRegionalOutageLoop(t)
	})
	t.Run("failback with karmada-scheduler: back to the origin after the window, as predicted, ready replicas never drop", func(t *testing.T) {
		t.Parallel()
		testFailback(t)
	})
	t.Run("failback while frozen: nothing moves until the thaw, then back at once", func(t *testing.T) {
		t.Parallel()
		testFailbackFrozen(t)
	})
}

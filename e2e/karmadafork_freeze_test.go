//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/failoverkit/failover/karmada/controllers"
)

// The freeze test's fleet and pacing.
const (
	freezeLease   = "e2e-freeze-karmadafork"
	freezeDown    = "freeze-down"
	freezeDue     = 6   // bindings on freezeDown that do not tolerate its taint
	freezeRate    = 1.0 // --resource-eviction-rate
	freezeChanges = 3   // leader changes while frozen
	// freezeWindow is how long, after each new leader has deferred every
	// due binding, the test watches for an eviction before the next kill.
	freezeWindow = 2 * time.Second
)

// forkReplica is one replica of the fork's binary: a process of its own,
// with its own /metrics.
type forkReplica struct {
	name    string
	metrics string // host:port of /metrics
	proc    *exampleProcess
}

// TestKarmadaForkFreezeAcrossLeaderChanges runs three replicas of
// examples/karmadafork's binary, as deploy/deployment.yaml runs the fork
// (each its own process, with leader election, as the ServiceAccount of
// deploy/rbac.yaml), and the operator's freeze, the default
// --eviction-freeze-configmap, set before a cluster fails. The elected
// process is killed with SIGKILL three times (no Lease released, no
// shutdown run: a crash or a lost node) and started again, as its
// Deployment would. After each takeover, once the new leader has decided
// every due binding and deferred it, no binding has left the failed
// cluster, no graceful eviction task has been written, and eviction_frozen
// is 1 on every replica. Thawed (the ConfigMap deleted), the due bindings
// start to leave; after two, the freeze is set again mid-way and the
// leader killed a fourth time: the rest wait (but for the one attempt
// that may have passed the freeze's check already). Thawed again, every
// due binding leaves into a task within the rate's time (a thaw wakes the
// items it held back), never faster than the rate in force allows with its bucket
// of one permit.
//
// The binary sees every object in the API server, so the test runs alone
// (not in parallel), on a fleet large enough that other tests' faulty
// clusters cannot pause it or hold it in a failure storm.
func TestKarmadaForkFreezeAcrossLeaderChanges(t *testing.T) {
	noLeaks(t)
	applyForkManifests(t)
	kubeconfigPath := forkKubeconfig(t)
	bin := buildExample(t, filepath.Join("..", "examples", "karmadafork"))

	s := newSuite(t, "freeze")
	tasks := s.watchTasks()
	s.cluster(freezeDown, metav1.ConditionTrue)
	for i := range 11 {
		s.cluster(fmt.Sprintf("freeze-ok%d", i), metav1.ConditionTrue)
	}
	due := s.bindings("due", freezeDue, bindingSpec{clusters: []string{freezeDown}})

	scrape := newScraper(t)
	start := func(name string) *forkReplica {
		r := &forkReplica{name: name, metrics: freeAddr(t)}
		r.proc = runExample(t, bin,
			"--kubeconfig="+kubeconfigPath,
			"--metrics-bind-address="+r.metrics,
			"--health-probe-bind-address=0",
			"--leader-elect-resource-name="+freezeLease,
			// A killed leader's Lease is taken over 4 s after its last
			// renewal, not Karmada's 15 s.
			"--leader-elect-lease-duration=4s",
			"--leader-elect-renew-deadline=3s",
			"--leader-elect-retry-period=250ms",
			"--enable-no-execute-taint-eviction=true",
			"--resource-eviction-rate="+strconv.FormatFloat(freezeRate, 'f', -1, 64),
			"--secondary-resource-eviction-rate=0.1",
		)
		return r
	}
	replicas := []*forkReplica{start("replica-1"), start("replica-2"), start("replica-3")}

	// leader is the one live replica whose leader election reports it
	// leads; nil while none or more than one does.
	leader := func() *forkReplica {
		var out []*forkReplica
		for _, r := range replicas {
			if v, ok := scrape.value(r, `leader_election_master_status{name="`+freezeLease+`"}`); ok && v == 1 {
				out = append(out, r)
			}
		}
		if len(out) != 1 {
			return nil
		}
		return out[0]
	}
	holder := func() (string, int32) {
		var l coordinationv1.Lease
		if err := s.c.Get(ctxFor(t), client.ObjectKey{Namespace: forkNamespace, Name: freezeLease}, &l); err != nil {
			return "", 0
		}
		return ptr.Deref(l.Spec.HolderIdentity, ""), ptr.Deref(l.Spec.LeaseTransitions, 0)
	}
	// deferred is how many times the replica's ResourceBinding queue has
	// held an item back since the process started.
	deferred := func(r *forkReplica) float64 {
		v, _ := scrape.value(r, `eviction_processing_total{name="binding-eviction",result="deferred"}`)
		return v
	}
	// frozenEverywhere: every live replica, the standbys too, reports the
	// freeze. A replica whose informer has not read the ConfigMap yet
	// reports 1 as well (a freeze not read freezes), so for a standby this
	// says only that it reports no thaw; the leader's deferrals say more.
	frozenEverywhere := func() bool {
		for _, r := range replicas {
			if v, ok := scrape.value(r, "eviction_frozen"); !ok || v != 1 {
				return false
			}
		}
		return true
	}
	// heldBack requires that the watch has seen no more than evicted
	// tasks, and that every due binding it has seen none of is still on
	// the failed cluster, without a task, as the API server holds it.
	heldBack := func(when string, evicted int) {
		t.Helper()
		require.LessOrEqual(t, tasks.len(), evicted, "%s: graceful eviction tasks written while frozen: %v", when, tasks.keys())
		for _, o := range due {
			if _, ok := tasks.get(taskKey("rb", o, freezeDown)); ok {
				continue
			}
			rb := s.getBinding(o.GetName())
			require.Contains(t, targets(&rb.Spec), freezeDown, "%s: %s left the failed cluster while frozen", when, o.GetName())
			require.Empty(t, rb.Spec.GracefulEvictionTasks, "%s: %s has a task while frozen", when, o.GetName())
		}
	}

	var first *forkReplica
	eventually(t, 30*time.Second, "one replica elected", func() bool { first = leader(); return first != nil })
	firstHolder, _ := holder()
	require.NotEmpty(t, firstHolder, "the Lease names no holder while %s leads", first.name)

	// The operator freezes evictions before anything fails.
	freeze := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: forkNamespace, Name: controllers.DefaultFreezeName},
		Data: map[string]string{controllers.FreezeReasonKey: "e2e: freeze across leader changes"}}
	require.NoError(t, s.c.Create(ctxFor(t), freeze))
	t.Cleanup(func() {
		if err := s.c.Delete(ctxFor(t), freeze); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the freeze ConfigMap: %v", err)
		}
	})
	eventually(t, 20*time.Second, "eviction_frozen 1 on every replica", frozenEverywhere)
	s.fail(freezeDown)
	eventually(t, 20*time.Second, first.name+" to defer every due binding", func() bool {
		require.Zero(t, tasks.len(), "evicted while frozen, %s leading: %v", first.name, tasks.keys())
		return deferred(first) >= freezeDue
	})
	never(t, freezeWindow, "an eviction while frozen", func() bool { return tasks.len() > 0 })
	heldBack("before any leader change", 0)

	cur, curHolder := first, firstHolder
	type change struct {
		what, from, to   string
		elected, decided time.Duration // from the kill
	}
	var changes []change
	// failOver kills the leader with SIGKILL, waits for another replica to
	// hold the Lease and to have deferred every binding still due, checks
	// that every replica left reads the freeze and that the watch has seen
	// no more than evicted tasks meanwhile, and starts the killed one
	// again, as its Deployment would.
	failOver := func(what string, evicted int) {
		t.Helper()
		killed := time.Now()
		cur.proc.kill(t)
		replicas = slices.DeleteFunc(replicas, func(r *forkReplica) bool { return r == cur })
		// The Lease changes hands once it is 4 s past its last renewal.
		var newHolder string
		eventually(t, 30*time.Second, what+": a new Lease holder after "+cur.name+" was killed", func() bool {
			h, _ := holder()
			newHolder = h
			return h != "" && h != curHolder
		})
		elected := time.Since(killed)
		var next *forkReplica
		eventually(t, 20*time.Second, what+": one live replica leading", func() bool {
			next = leader()
			return next != nil
		})
		// Synced and deciding: the new leader has taken every due binding
		// from its queue and deferred it, the freeze read first.
		eventually(t, 20*time.Second, what+": "+next.name+" to defer every binding still due", func() bool {
			require.LessOrEqual(t, tasks.len(), evicted, "%s: evicted while frozen, %s leading: %v", what, next.name, tasks.keys())
			return deferred(next) >= float64(freezeDue-tasks.len())
		})
		decided := time.Since(killed)
		v, ok := scrape.value(next, "eviction_frozen")
		require.True(t, ok && v == 1, "%s: eviction_frozen on the new leader %s is %v (served: %v)", what, next.name, v, ok)
		// Held back, not dropped: every binding still due waits in the
		// queue, and none was abandoned.
		depth, _ := scrape.value(next, `eviction_queue_depth{name="binding-eviction"}`)
		require.GreaterOrEqual(t, depth, float64(freezeDue-tasks.len()), "%s: items queued on %s", what, next.name)
		abandoned, _ := scrape.value(next, `eviction_processing_total{name="binding-eviction",result="abandoned"}`)
		require.Zero(t, abandoned, "%s: items abandoned on %s", what, next.name)
		require.True(t, frozenEverywhere(), "%s: eviction_frozen is not 1 on both replicas left", what)
		changes = append(changes, change{what: what, from: cur.name, to: next.name, elected: elected, decided: decided})
		replicas = append(replicas, start(cur.name))
		cur, curHolder = next, newHolder
	}
	for i := range freezeChanges {
		what := fmt.Sprintf("change %d", i+1)
		failOver(what, 0)
		never(t, freezeWindow, what+": an eviction while frozen", func() bool { return tasks.len() > 0 })
		heldBack(what, 0)
	}
	eventually(t, 20*time.Second, "eviction_frozen 1 on every replica, the restarted one too", frozenEverywhere)
	t.Logf("measured: %d leader changes while frozen, evictions while frozen: %d", freezeChanges, tasks.len())

	// The thaw: evictions go on at the rate in force.
	r, ok := scrape.value(cur, "eviction_rate")
	require.True(t, ok, "the leader serves no eviction_rate")
	require.Equal(t, freezeRate, r, "the rate in force")
	thawed := time.Now()
	require.NoError(t, s.c.Delete(ctxFor(t), freeze))
	eventually(t, rateBound(2, r)+slack, "two due bindings evicted after the thaw", func() bool { return tasks.len() >= 2 })
	twoAfterThaw := time.Since(thawed)

	// Frozen again mid-way through the failover, and the leader killed
	// once more: the rest wait. An attempt past the freeze's check when
	// the leader read the new ConfigMap may still write its task.
	freeze = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: forkNamespace, Name: controllers.DefaultFreezeName},
		Data: map[string]string{controllers.FreezeReasonKey: "e2e: frozen again mid-way"}}
	require.NoError(t, s.c.Create(ctxFor(t), freeze))
	eventually(t, 10*time.Second, "eviction_frozen 1 on the leader", func() bool {
		v, ok := scrape.value(cur, "eviction_frozen")
		return ok && v == 1
	})
	held := tasks.len()
	require.Less(t, held, freezeDue-1, "the failover ran past the freeze set mid-way: nothing left to hold back")
	failOver("change 4, frozen mid-way", held+1)
	never(t, freezeWindow, "change 4: an eviction while frozen again", func() bool { return tasks.len() > held+1 })
	stopped := tasks.len()
	heldBack("change 4", stopped)

	// Thawed again, the failover completes within the rate's time for
	// what is left: the thaw wakes the items the freeze held back.
	rethawed := time.Now()
	require.NoError(t, s.c.Delete(ctxFor(t), freeze))
	bound := rateBound(freezeDue-stopped, r) + slack
	eventually(t, bound, "every due binding evicted after the second thaw", func() bool { return tasks.len() == freezeDue })
	completed := time.Since(rethawed)
	var created []time.Time
	for _, o := range due {
		tk := s.evicted(tasks, o, freezeDown, time.Second)
		assert.Equal(t, "TaintManager", tk.Producer)
		created = append(created, tk.CreationTimestamp.Time)
		assert.NotContains(t, targets(&s.getBinding(o.GetName()).Spec), freezeDown, "%s still on the failed cluster", o.GetName())
	}
	// Over both thaws: the bucket's one permit, then the rate, whatever
	// the freezes and the leader changes between.
	slices.SortFunc(created, func(a, b time.Time) int { return a.Compare(b) })
	assertNoBurst(t, created, r)

	_, transitions := holder()
	for _, c := range changes {
		t.Logf("measured: %s: %s killed (SIGKILL), %s holds the Lease after %v and has deferred every binding still due after %v",
			c.what, c.from, c.to, c.elected.Round(time.Millisecond), c.decided.Round(time.Millisecond))
	}
	offsets := make([]string, len(created))
	for i, c := range created {
		offsets[i] = "+" + c.Sub(created[0]).String()
	}
	t.Logf("measured: Lease transitions %d; first thaw: 2 evicted in %v; frozen again with %d evicted, %d after change 4; "+
		"second thaw: the other %d evicted in %v (bound %v: %v at %v/s + %v); tasks created at %s (whole seconds)",
		transitions, twoAfterThaw.Round(time.Millisecond), held, stopped, freezeDue-stopped, completed.Round(time.Millisecond),
		bound, rateBound(freezeDue-stopped, r), r, slack, strings.Join(offsets, ", "))
}

// assertNoBurst checks task creation times against a token bucket of one
// permit at rate r: any k+1 of them span at least k-1 intervals of 1/r
// (the first permit is in the bucket already), give or take the second the
// API server's timestamps are truncated to.
func assertNoBurst(t *testing.T, times []time.Time, r float64) {
	t.Helper()
	sorted := slices.SortedFunc(slices.Values(times), func(a, b time.Time) int { return a.Compare(b) })
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			span := sorted[j].Sub(sorted[i]) + time.Second
			if allowed := 1 + r*span.Seconds(); float64(j-i+1) > allowed {
				assert.Failf(t, "a burst past the rate", "%d evictions within %v (creation times %v and %v) at %v/s with a bucket of one permit",
					j-i+1, sorted[j].Sub(sorted[i]), sorted[i].Format(time.RFC3339), sorted[j].Format(time.RFC3339), r)
			}
		}
	}
}

// forkKubeconfig writes a kubeconfig whose user is the ServiceAccount
// deploy/rbac.yaml binds (the admin impersonating it, on an API server that
// enforces RBAC) and returns its path.
func forkKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	data, err := kubeconfig(env.config.Host, env.config.BearerToken,
		"system:serviceaccount:"+forkNamespace+":"+forkServiceAccount,
		"system:serviceaccounts", "system:serviceaccounts:"+forkNamespace, "system:authenticated")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// scraper reads the replicas' /metrics.
type scraper struct {
	client *http.Client
}

func newScraper(t *testing.T) *scraper {
	s := &scraper{client: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{}}}
	t.Cleanup(s.client.CloseIdleConnections)
	return s
}

// value is the sample of series (its name and labels as the text
// exposition writes them, labels sorted) that r serves; false when r does
// not answer or does not serve it.
func (s *scraper) value(r *forkReplica, series string) (float64, bool) {
	resp, err := s.client.Get("http://" + r.metrics + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, false
	}
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, series+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		return v, err == nil
	}
	return 0, false
}

// len is how many tasks the log has seen.
func (l *taskLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// keys names the tasks the log has seen.
func (l *taskLog) keys() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.seen))
	for k := range l.seen {
		out = append(out, k)
	}
	return out
}

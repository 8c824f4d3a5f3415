package engine_test

import (
	"fmt"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/karmada/scheduling"
	"github.com/failoverkit/failover/prescheduling"
)

// survivor is a cluster with cpus CPUs, used of them by running replicas of
// one CPU each (one pod each).
func survivor(name string, cpus, used int64) *clusterv1alpha1.Cluster {
	c := member(name, "R1", 110)
	c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(110, resource.DecimalSI), corev1.ResourceCPU: *resource.NewQuantity(cpus, resource.DecimalSI)},
		Allocated:   corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(used, resource.DecimalSI), corev1.ResourceCPU: *resource.NewQuantity(used, resource.DecimalSI)},
	}
	return c
}

// oneReplica is a one-replica Deployment requesting one CPU, Divided
// Aggregated, scheduled on lost.
func oneReplica(name string) *workv1alpha2.ResourceBindingSpec {
	return &workv1alpha2.ResourceBindingSpec{
		Resource:            workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Placement:           &policyv1alpha1.Placement{ReplicaScheduling: aggregated},
		Replicas:            1,
		ReplicaRequirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		Clusters:            []workv1alpha2.TargetCluster{{Name: "lost", Replicas: 1}},
	}
}

// check asks the pre-scheduling check about evicting spec from lost, with the
// room the clusters' summaries show.
func check(t testing.TB, spec *workv1alpha2.ResourceBindingSpec, clusters []*clusterv1alpha1.Cluster) prescheduling.Result {
	t.Helper()
	req, err := karmada.PreschedulingRequest(spec, "lost")
	require.NoError(t, err)
	var fleet []failover.Cluster
	var values []clusterv1alpha1.Cluster
	for _, c := range clusters {
		fc, err := karmada.FromCluster(c)
		require.NoError(t, err)
		fleet = append(fleet, fc)
		values = append(values, *c)
	}
	checker, err := prescheduling.NewChecker(prescheduling.WithCapacity(karmada.Capacity(values, spec.ReplicaRequirements)))
	require.NoError(t, err)
	return checker.Check(req, fleet)
}

func values(cs []*clusterv1alpha1.Cluster) []clusterv1alpha1.Cluster {
	out := make([]clusterv1alpha1.Cluster, len(cs))
	for i, c := range cs {
		out[i] = *c
	}
	return out
}

// TestLedgerIssue6518 replays Karmada issue 6518 with Karmada's own
// scheduler: 15 one-replica workloads fail over from one cluster to two
// survivors with room for 10 and 5. Within a round the resource summaries
// do not change (they lag behind the scheduler); between rounds they catch
// up with what was placed. Without the ledger every check, and the
// scheduler, sees room for 10 on the big survivor: all 15 go there. With
// it, 10 go there, the other 5 wait a round and then go to the small one,
// which is where the scheduler puts them once the summaries show the big one
// full. No survivor gets more than it has room for.
func TestLedgerIssue6518(t *testing.T) {
	run := func(ledger *engine.Ledger) (placed map[string]int64, waited int) {
		placed = map[string]int64{}
		var pending []string
		for i := range 15 {
			pending = append(pending, fmt.Sprintf("web-%02d", i))
		}
		now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
		for round := 0; len(pending) > 0; round++ {
			require.Less(t, round, 5, "the waiting evictions never went")
			fleet := []*clusterv1alpha1.Cluster{
				member("lost", "R1", 0, failed), survivor("big", 10, placed["big"]), survivor("small", 5, placed["small"])}
			var next []string
			for _, name := range pending {
				spec := oneReplica(name)
				res := check(t, spec, fleet)
				if ledger != nil {
					res = ledger.Admit(now, "default/"+name, "lost", res, karmada.SummariesOf(values(fleet)), spec.ReplicaRequirements)
				}
				if !res.Feasible {
					require.Equal(t, prescheduling.AwaitingCapacity, res.Code, res.Reason)
					next = append(next, name)
					continue
				}
				// The eviction: Karmada's scheduler reschedules the
				// binding, from the same summaries.
				got, _, err := scheduling.Schedule(fleet, evictedFrom(spec, "lost"), &workv1alpha2.ResourceBindingStatus{})
				require.NoError(t, err)
				require.Len(t, got, 1)
				assert.Equal(t, res.Moves, []failover.TargetCluster{{Name: got[0].Name, Replicas: 1}}, "the check predicts where the scheduler puts it")
				placed[got[0].Name] += int64(got[0].Replicas)
			}
			waited += len(next)
			pending = next
			now = now.Add(30 * time.Second)
		}
		return placed, waited
	}

	without, _ := run(nil)
	ledger, err := engine.NewLedger()
	require.NoError(t, err)
	with, waited := run(ledger)
	t.Logf("replicas per surviving cluster (room): without the ledger big %d (10), small %d (5); with it big %d (10), small %d (5), %d evictions waited a round",
		without["big"], without["small"], with["big"], with["small"], waited)
	assert.Equal(t, map[string]int64{"big": 15}, without, "issue 6518: all on the cluster the stale summaries show the most room on")
	assert.Equal(t, map[string]int64{"big": 10, "small": 5}, with)
	assert.Equal(t, 5, waited)
}

func TestLedgerHoldsRoomUntilReleasedOrExpired(t *testing.T) {
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	fleet := []*clusterv1alpha1.Cluster{member("lost", "R1", 0, failed), survivor("big", 2, 0)}
	ledger, err := engine.NewLedger(engine.WithHold(time.Minute))
	require.NoError(t, err)
	admit := func(name string, at time.Time) prescheduling.Result {
		spec := oneReplica(name)
		return ledger.Admit(at, "default/"+name, "lost", check(t, spec, fleet), karmada.SummariesOf(values(fleet)), spec.ReplicaRequirements)
	}

	require.True(t, admit("a", now).Feasible)
	require.True(t, admit("b", now).Feasible)
	assert.Equal(t, map[string]int64{"big": 2}, ledger.Held(now))
	c := admit("c", now.Add(10*time.Second))
	assert.False(t, c.Feasible)
	assert.Equal(t, prescheduling.AwaitingCapacity, c.Code)
	assert.Equal(t, "waiting for room: big has room for 0 of 1 after the 2 replicas of evictions in flight", c.Reason)
	assert.Equal(t, 50*time.Second, c.RetryAfter, "a's and b's hold ends a minute after they were admitted")
	assert.Nil(t, c.Moves)

	assert.True(t, admit("a", now.Add(20*time.Second)).Feasible, "admitting a again replaces what was held for it")
	assert.Equal(t, map[string]int64{"big": 2}, ledger.Held(now.Add(20*time.Second)))

	ledger.Release("default/b", "lost") // b's eviction failed
	ledger.Release("default/nothing", "lost")
	assert.True(t, admit("c", now.Add(30*time.Second)).Feasible)
	assert.False(t, admit("d", now.Add(30*time.Second)).Feasible)

	// a's hold (from 00:20) and c's (from 00:30) run out at 01:20 and 01:30.
	assert.Equal(t, map[string]int64{"big": 1}, ledger.Held(now.Add(80*time.Second)))
	assert.True(t, admit("d", now.Add(80*time.Second)).Feasible)
	assert.Empty(t, ledger.Held(now.Add(10*time.Minute)))
}

// The summaries show replicas placed when the cluster's pods grow by them:
// the room is held no longer, and the summary itself counts them.
// An eviction whose task ended is held until the summaries' next report,
// never longer than its hold.
func TestLedgerReleaseAt(t *testing.T) {
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	fleet := []*clusterv1alpha1.Cluster{member("lost", "R1", 0, failed), survivor("big", 2, 0)}
	ledger, err := engine.NewLedger(engine.WithHold(time.Minute))
	require.NoError(t, err)
	for _, name := range []string{"a", "b"} {
		spec := oneReplica(name)
		require.True(t, ledger.Admit(now, name, "lost", check(t, spec, fleet), karmada.SummariesOf(values(fleet)), spec.ReplicaRequirements).Feasible)
	}
	ledger.ReleaseAt("a", "lost", now.Add(10*time.Second))
	ledger.ReleaseAt("b", "lost", now.Add(time.Hour)) // later than its hold: no change
	ledger.ReleaseAt("nothing", "lost", now)
	assert.Equal(t, map[string]int64{"big": 2}, ledger.Held(now.Add(9*time.Second)))
	assert.Equal(t, map[string]int64{"big": 1}, ledger.Held(now.Add(10*time.Second)))
	assert.Empty(t, ledger.Held(now.Add(time.Minute)))
}

func TestLedgerReleasesWhatTheSummariesShow(t *testing.T) {
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	ledger, err := engine.NewLedger()
	require.NoError(t, err)
	before := []*clusterv1alpha1.Cluster{member("lost", "R1", 0, failed), survivor("big", 3, 0)}
	for _, name := range []string{"a", "b", "c"} {
		spec := oneReplica(name)
		require.True(t, ledger.Admit(now, name, "lost", check(t, spec, before), karmada.SummariesOf(values(before)), spec.ReplicaRequirements).Feasible)
	}
	assert.Equal(t, map[string]int64{"big": 3}, ledger.Held(now))

	// Two of them show up in big's summary: one is still held.
	after := []*clusterv1alpha1.Cluster{member("lost", "R1", 0, failed), survivor("big", 3, 2)}
	spec := oneReplica("d")
	res := ledger.Admit(now, "d", "lost", check(t, spec, after), karmada.SummariesOf(values(after)), spec.ReplicaRequirements)
	assert.False(t, res.Feasible, "big's last CPU is c's: %s", res.Reason)
	assert.Equal(t, map[string]int64{"big": 1}, ledger.Held(now))
}

// Pods that end on a cluster (other workloads leaving) lower what the
// Ledger counts from: a placement after that shows as growth and releases
// its room. Kept at the old count, the baseline hid every placement until
// the pods grew back, and the room stayed held for the whole hold.
func TestLedgerSeesPlacementsAfterPodsFall(t *testing.T) {
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	ledger, err := engine.NewLedger()
	require.NoError(t, err)
	at := func(used int64) []*clusterv1alpha1.Cluster {
		return []*clusterv1alpha1.Cluster{member("lost", "R1", 0, failed), survivor("big", 4, used)}
	}
	spec := oneReplica("a")
	require.True(t, ledger.Admit(now, "a", "lost", check(t, spec, at(2)), karmada.SummariesOf(values(at(2))), spec.ReplicaRequirements).Feasible)
	assert.Equal(t, map[string]int64{"big": 1}, ledger.Held(now))

	// Both pods running there end; then a's replica is placed: one pod.
	spec = oneReplica("b")
	ledger.Admit(now, "b", "lost", check(t, spec, at(0)), karmada.SummariesOf(values(at(0))), spec.ReplicaRequirements)
	ledger.Release("b", "lost")
	spec = oneReplica("c")
	got := ledger.Admit(now, "c", "lost", check(t, spec, at(1)), karmada.SummariesOf(values(at(1))), spec.ReplicaRequirements)
	require.True(t, got.Feasible, got.Reason)
	assert.Equal(t, map[string]int64{"big": 1}, ledger.Held(now), "a's replica showed as placed: only c's is held")
}

// Restore holds what a predecessor approved, from its open task, until the
// hold it had left; Keys lists it, and Release gives it back.
func TestLedgerRestore(t *testing.T) {
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	ledger, err := engine.NewLedger(engine.WithHold(time.Minute))
	require.NoError(t, err)
	fleet := []*clusterv1alpha1.Cluster{member("lost", "R1", 0, failed), survivor("big", 1, 0)}
	spec := oneReplica("a")
	r := check(t, spec, fleet)
	ledger.Restore(now, "a", "lost", r, karmada.SummariesOf(values(fleet)), spec.ReplicaRequirements, now.Add(-30*time.Second))
	ledger.Restore(now, "old", "lost", r, karmada.SummariesOf(values(fleet)), spec.ReplicaRequirements, now.Add(-time.Minute))
	assert.Equal(t, []string{"a@lost"}, ledger.Keys(now), "a hold that has ended restores nothing")
	spec = oneReplica("b")
	assert.Equal(t, prescheduling.AwaitingCapacity, ledger.Admit(now, "b", "lost", check(t, spec, fleet), karmada.SummariesOf(values(fleet)), spec.ReplicaRequirements).Code,
		"big's one CPU is held for the restored eviction")
	assert.Empty(t, ledger.Keys(now.Add(30*time.Second)), "held until the predecessor's hold ends")
}

// Where nothing is held, the ledger leaves the judgement to the check: an
// answer sending more replicas than the summary shows room for goes ahead
// (the check has its reasons: a capacity it does not know, say).
func TestLedgerDefersToTheCheckWhereNothingIsHeld(t *testing.T) {
	ledger, err := engine.NewLedger()
	require.NoError(t, err)
	r := prescheduling.Result{Feasible: true, Code: prescheduling.Feasible, Moves: []failover.TargetCluster{{Name: "big", Replicas: 9}}, PlacedByRoom: true}
	fleet := []clusterv1alpha1.Cluster{*survivor("big", 2, 0)}
	got := ledger.Admit(time.Now(), "x", "lost", r, karmada.SummariesOf(fleet), oneReplica("x").ReplicaRequirements)
	assert.Equal(t, r, got)

	infeasible := prescheduling.Result{Code: prescheduling.NoEligibleCluster, Reason: "no eligible cluster"}
	assert.Equal(t, infeasible, ledger.Admit(time.Now(), "y", "lost", infeasible, karmada.SummariesOf(fleet), nil), "an infeasible answer comes back as it is")
}

// An eviction the scheduler places whatever the room (Duplicated, static
// weights) is never held back, as waiting would not change where it goes,
// but its replicas are held: they take room from the evictions placed by it.
func TestLedgerHoldsBackOnlyWhatIsPlacedByRoom(t *testing.T) {
	now := time.Now()
	ledger, err := engine.NewLedger()
	require.NoError(t, err)
	fleet := []clusterv1alpha1.Cluster{*survivor("big", 2, 0)}
	req := oneReplica("x").ReplicaRequirements
	static := prescheduling.Result{Feasible: true, Code: prescheduling.Feasible, Moves: []failover.TargetCluster{{Name: "big", Replicas: 2}}}
	assert.True(t, ledger.Admit(now, "a", "lost", static, karmada.SummariesOf(fleet), req).Feasible)
	assert.True(t, ledger.Admit(now, "b", "lost", static, karmada.SummariesOf(fleet), req).Feasible, "held back although the scheduler puts it on big whatever the room")
	assert.Equal(t, map[string]int64{"big": 4}, ledger.Held(now))
	byRoom := prescheduling.Result{Feasible: true, Code: prescheduling.Feasible, Moves: []failover.TargetCluster{{Name: "big", Replicas: 1}}, PlacedByRoom: true}
	got := ledger.Admit(now, "c", "lost", byRoom, karmada.SummariesOf(fleet), req)
	assert.Equal(t, prescheduling.AwaitingCapacity, got.Code, "big's room is taken by the static evictions in flight")
}

func TestNewLedgerRejectsBadOptions(t *testing.T) {
	_, err := engine.NewLedger(engine.WithHold(0))
	assert.EqualError(t, err, "reservation: WithHold: 0s: must be positive")
	_, err = engine.NewLedger(nil)
	assert.NoError(t, err)
}

// Held shows a cluster as the last Admit that read it left it; Settle
// reads every cluster's summary.
func TestLedgerSettleReadsEverySummary(t *testing.T) {
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	fleet := []*clusterv1alpha1.Cluster{member("lost", "R1", 0, failed), survivor("big", 2, 0)}
	ledger, err := engine.NewLedger(engine.WithHold(time.Minute))
	require.NoError(t, err)
	spec := oneReplica("a")
	require.True(t, ledger.Admit(now, "default/a", "lost", check(t, spec, fleet), karmada.SummariesOf(values(fleet)), spec.ReplicaRequirements).Feasible)

	// big reports a's replica placed; no Admit reads big again.
	placed := []*clusterv1alpha1.Cluster{fleet[0], survivor("big", 2, 1)}
	assert.Equal(t, map[string]int64{"big": 1}, ledger.Held(now))
	ledger.Settle(now, nil)
	assert.Equal(t, map[string]int64{"big": 1}, ledger.Held(now), "no summaries: only the holds that ran out")
	ledger.Settle(now, karmada.SummariesOf(values(placed)))
	assert.Empty(t, ledger.Held(now))
}

// Admit reads the summaries it is given and changes none: the room held
// is deducted from a copy, as often as a held eviction goes to a cluster.
func TestLedgerLeavesTheSummariesAsTheyAre(t *testing.T) {
	fleet := []*clusterv1alpha1.Cluster{member("lost", "R1", 0, failed), survivor("big", 10, 2), survivor("small", 5, 0)}
	fleet[1].Status.ResourceSummary.Allocating = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
	before := make([]*clusterv1alpha1.Cluster, len(fleet))
	for i, c := range fleet {
		before[i] = c.DeepCopy()
	}
	ledger, err := engine.NewLedger()
	require.NoError(t, err)
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	for i := range 4 {
		spec := oneReplica(fmt.Sprintf("web-%02d", i))
		res := ledger.Admit(now, fmt.Sprintf("default/web-%02d", i), "lost", check(t, spec, fleet), karmada.SummariesOf(values(fleet)), spec.ReplicaRequirements)
		require.True(t, res.Feasible, res.Reason)
	}
	require.NotEmpty(t, ledger.Held(now), "room is held, so later Admits deduct it")
	assert.Equal(t, before, fleet)
}

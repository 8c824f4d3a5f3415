package reservation_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/prescheduling"
	"github.com/failoverkit/failover/reservation"
)

// node is a cluster as a controller that is not Karmada's records it: the
// pods it runs and may run, and its CPU and the CPU used, in millicores.
type node struct{ pods, maxPods, cpu, cpuUsed int64 }

// nodes reads a fleet of nodes for a workload whose replicas request cpu
// millicores each.
type nodes struct {
	fleet map[string]node
	cpu   int64
}

func (ns nodes) Pods(cluster string) (int64, bool) {
	n, ok := ns.fleet[cluster]
	return n.pods, ok
}

func (ns nodes) Fit(cluster string, replicas int64, requests corev1.ResourceList) int32 {
	n, ok := ns.fleet[cluster]
	if !ok {
		return 0
	}
	fit := n.maxPods - n.pods - replicas
	if ns.cpu > 0 {
		fit = min(fit, (n.cpu-n.cpuUsed-requests.Cpu().MilliValue())/ns.cpu)
	}
	return int32(max(fit, 0))
}

// podsOnly is a fleet where only pods count.
func podsOnly(kv ...any) nodes {
	ns := nodes{fleet: map[string]node{}}
	for i := 0; i < len(kv); i += 2 {
		ns.fleet[kv[i].(string)] = kv[i+1].(node)
	}
	return ns
}

// to is a feasible answer moving n replicas to cluster, placed by room.
func to(cluster string, n int32) prescheduling.Result {
	return prescheduling.Result{Feasible: true, Code: prescheduling.Feasible, PlacedByRoom: true,
		Candidates: []string{cluster}, Moves: []failover.TargetCluster{{Name: cluster, Replicas: n}}}
}

func newLedger(t testing.TB, opts ...reservation.LedgerOption) *reservation.Ledger {
	t.Helper()
	l, err := reservation.NewLedger(opts...)
	require.NoError(t, err)
	return l
}

var t0 = time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)

func TestLedgerHoldsRoomUntilReleasedOrExpired(t *testing.T) {
	l := newLedger(t, reservation.WithHold(time.Minute))
	rooms := podsOnly("big", node{maxPods: 2})
	admit := func(key string, at time.Time) prescheduling.Result { return l.Admit(at, key, to("big", 1), rooms, nil) }

	require.True(t, admit("a", t0).Feasible)
	require.True(t, admit("b", t0).Feasible)
	assert.Equal(t, map[string]int64{"big": 2}, l.Held(t0))
	c := admit("c", t0.Add(10*time.Second))
	assert.Equal(t, prescheduling.Result{Code: prescheduling.AwaitingCapacity, Candidates: []string{"big"}, PlacedByRoom: true,
		Reason:     "waiting for room: big has room for 0 of 1 after the 2 replicas of evictions in flight",
		RetryAfter: 50 * time.Second}, c, "a's and b's hold ends a minute after they were admitted")

	assert.True(t, admit("a", t0.Add(20*time.Second)).Feasible, "admitting a again replaces what was held for it")
	assert.Equal(t, map[string]int64{"big": 2}, l.Held(t0.Add(20*time.Second)))

	l.Release("b") // b's eviction failed
	l.Release("nothing")
	assert.True(t, admit("c", t0.Add(30*time.Second)).Feasible)
	assert.False(t, admit("d", t0.Add(30*time.Second)).Feasible)

	// a's hold (from 00:20) and c's (from 00:30) run out at 01:20 and 01:30.
	assert.Equal(t, map[string]int64{"big": 1}, l.Held(t0.Add(80*time.Second)))
	assert.Equal(t, []string{"c"}, l.Keys(t0.Add(80*time.Second)))
	assert.True(t, admit("d", t0.Add(80*time.Second)).Feasible)
	assert.Empty(t, l.Held(t0.Add(10*time.Minute)))
	assert.Empty(t, l.Keys(t0.Add(10*time.Minute)))
}

// The requests of the replicas held are summed and handed to Fit: a
// cluster with pods to spare but no CPU left holds the next back, and an
// eviction admitted again does not count its own room against itself.
func TestLedgerCountsTheRequestsHeld(t *testing.T) {
	l := newLedger(t)
	rooms := nodes{fleet: map[string]node{"big": {maxPods: 100, cpu: 2000}}, cpu: 1000}
	oneCPU := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	require.True(t, l.Admit(t0, "a", to("big", 1), rooms, oneCPU).Feasible)
	require.True(t, l.Admit(t0, "b", to("big", 1), rooms, oneCPU).Feasible)
	got := l.Admit(t0, "c", to("big", 1), rooms, oneCPU)
	assert.Equal(t, "waiting for room: big has room for 0 of 1 after the 2 replicas of evictions in flight", got.Reason)
	assert.True(t, l.Admit(t0, "a", to("big", 1), rooms, oneCPU).Feasible, "a's own CPU is not held against it")
	assert.Equal(t, map[string]int64{"big": 2}, l.Held(t0))

	oneCPU[corev1.ResourceCPU] = resource.MustParse("0") // the Ledger keeps its own copy
	assert.False(t, l.Admit(t0, "c", to("big", 1), rooms, oneCPU).Feasible)
}

// The clusters show replicas placed when their pods grow by them: the
// oldest holds go first. Pods that end there (other workloads leaving)
// lower what growth is counted from, so that a placement after that still
// shows.
func TestLedgerSettlesByPodGrowthOldestFirst(t *testing.T) {
	l := newLedger(t)
	at := func(pods int64) nodes { return podsOnly("big", node{pods: pods, maxPods: 10}) }
	for i, key := range []string{"a", "b", "c"} {
		require.True(t, l.Admit(t0.Add(time.Duration(i)*time.Second), key, to("big", 1), at(4), nil).Feasible)
	}
	assert.Equal(t, map[string]int64{"big": 3}, l.Held(t0))

	l.Admit(t0, "probe", prescheduling.Result{}, at(5), nil) // infeasible: settles nothing
	assert.Equal(t, map[string]int64{"big": 3}, l.Held(t0))

	require.True(t, l.Admit(t0, "d", to("big", 1), at(5), nil).Feasible)
	keys := l.Keys(t0)
	slices.Sort(keys)
	assert.Equal(t, []string{"b", "c", "d"}, keys, "one pod more: the oldest, a, is placed")

	// Two pods end, then one starts: b's.
	l.Release("d")
	require.True(t, l.Admit(t0, "d", to("big", 1), at(3), nil).Feasible)
	l.Release("d")
	require.True(t, l.Admit(t0, "d", to("big", 1), at(4), nil).Feasible)
	keys = l.Keys(t0)
	slices.Sort(keys)
	assert.Equal(t, []string{"c", "d"}, keys, "b's replica showed as placed after the pods fell")
}

// An eviction that sends replicas to two clusters is held on each until
// each shows them; a cluster not known at a call settles nothing.
func TestLedgerSettlesEachCluster(t *testing.T) {
	l := newLedger(t)
	r := prescheduling.Result{Feasible: true, Code: prescheduling.Feasible, PlacedByRoom: true,
		Moves: []failover.TargetCluster{{Name: "east", Replicas: 2}, {Name: "west", Replicas: 1}, {Name: "none", Replicas: 0}}}
	require.True(t, l.Admit(t0, "a", r, podsOnly("east", node{maxPods: 9}, "west", node{maxPods: 9}), nil).Feasible)
	assert.Equal(t, map[string]int64{"east": 2, "west": 1}, l.Held(t0))

	// An Admit settles the clusters it reads, no other.
	l.Admit(t0, "b", to("north", 1), podsOnly("east", node{pods: 1, maxPods: 9}, "north", node{maxPods: 9}), nil)
	assert.Equal(t, map[string]int64{"east": 2, "west": 1, "north": 1}, l.Held(t0), "an Admit for north reads neither east nor west")
	l.Admit(t0, "c", to("east", 0), podsOnly("east", node{pods: 1, maxPods: 9}, "north", node{maxPods: 9}), nil)
	assert.Equal(t, map[string]int64{"east": 1, "west": 1, "north": 1}, l.Held(t0), "an Admit that reads east settles it")

	// Settle settles every cluster rooms knows.
	l.Settle(t0, podsOnly("east", node{pods: 1, maxPods: 9}, "north", node{maxPods: 9}))
	assert.Equal(t, map[string]int64{"east": 1, "west": 1, "north": 1}, l.Held(t0), "west is not known: nothing settled there")
	l.Settle(t0, podsOnly("east", node{pods: 2, maxPods: 9}, "west", node{pods: 1, maxPods: 9}, "north", node{maxPods: 9}))
	assert.Equal(t, map[string]int64{"north": 1}, l.Held(t0))
	assert.Equal(t, []string{"b"}, l.Keys(t0))
	l.Settle(t0.Add(time.Hour), nil)
	assert.Empty(t, l.Held(t0.Add(time.Hour)), "nil rooms: the holds that ran out")
}

// Where several clusters are short, Reason names each, and RetryAfter is
// when the first hold in the way ends.
func TestLedgerNamesEveryClusterShort(t *testing.T) {
	l := newLedger(t, reservation.WithHold(time.Minute))
	rooms := podsOnly("east", node{maxPods: 1}, "west", node{maxPods: 2})
	require.True(t, l.Admit(t0, "a", to("east", 1), rooms, nil).Feasible)
	require.True(t, l.Admit(t0.Add(10*time.Second), "b", to("west", 1), rooms, nil).Feasible)
	require.True(t, l.Admit(t0.Add(20*time.Second), "c", to("west", 1), rooms, nil).Feasible)
	r := prescheduling.Result{Feasible: true, Code: prescheduling.Feasible, PlacedByRoom: true,
		Moves: []failover.TargetCluster{{Name: "west", Replicas: 1}, {Name: "east", Replicas: 1}}}
	got := l.Admit(t0.Add(30*time.Second), "d", r, rooms, nil)
	assert.Equal(t, prescheduling.AwaitingCapacity, got.Code)
	assert.Equal(t, "waiting for room: west has room for 0 of 1 after the 2 replicas of evictions in flight; "+
		"east has room for 0 of 1 after the 1 replicas of an eviction in flight", got.Reason)
	assert.Equal(t, 30*time.Second, got.RetryAfter, "a's hold ends at 01:00")
	assert.Nil(t, got.Moves)
}

// An eviction whose replicas run where they went is held until the
// clusters' next report, never longer than its hold.
func TestLedgerReleaseAt(t *testing.T) {
	l := newLedger(t, reservation.WithHold(time.Minute))
	rooms := podsOnly("big", node{maxPods: 2})
	for _, key := range []string{"a", "b"} {
		require.True(t, l.Admit(t0, key, to("big", 1), rooms, nil).Feasible)
	}
	l.ReleaseAt("a", t0.Add(10*time.Second))
	l.ReleaseAt("b", t0.Add(time.Hour)) // later than its hold: no change
	l.ReleaseAt("nothing", t0)
	assert.Equal(t, map[string]int64{"big": 2}, l.Held(t0.Add(9*time.Second)))
	assert.False(t, l.Admit(t0.Add(9*time.Second), "c", to("big", 1), rooms, nil).Feasible)
	assert.Equal(t, map[string]int64{"big": 1}, l.Held(t0.Add(10*time.Second)))
	assert.True(t, l.Admit(t0.Add(10*time.Second), "c", to("big", 1), rooms, nil).Feasible)
	assert.Equal(t, map[string]int64{"big": 1}, l.Held(t0.Add(time.Minute)), "only c, from 00:10")
}

// Restore holds what a predecessor approved until the hold it had left;
// Keys lists it, and it takes room from the evictions admitted after.
func TestLedgerRestore(t *testing.T) {
	l := newLedger(t, reservation.WithHold(time.Minute))
	rooms := podsOnly("big", node{maxPods: 1})
	require.NoError(t, l.Restore(t0, "a@lost", to("big", 1), rooms, nil, t0.Add(-30*time.Second)))
	require.NoError(t, l.Restore(t0, "old@lost", to("big", 1), rooms, nil, t0.Add(-time.Minute)))
	require.NoError(t, l.Restore(t0, "no@lost", prescheduling.Result{}, rooms, nil, t0))
	assert.Equal(t, []string{"a@lost"}, l.Keys(t0), "a hold that has ended, or an infeasible answer, restores nothing")
	got := l.Admit(t0, "b", to("big", 1), rooms, nil)
	assert.Equal(t, prescheduling.AwaitingCapacity, got.Code, "big's one pod is held for the restored eviction")
	assert.Equal(t, 30*time.Second, got.RetryAfter)
	assert.Empty(t, l.Keys(t0.Add(30*time.Second)), "held until the predecessor's hold ends")

	assert.EqualError(t, l.Restore(t0, "c", to("big", 1), nil, nil, t0), "reservation: Ledger: rooms: nil: the clusters' room is needed")
	assert.Empty(t, l.Keys(t0))
}

// Where nothing is held, the Ledger leaves the judgement to the check; an
// eviction placed whatever the room is never held back, but its replicas
// are held, and take room from the evictions placed by it.
func TestLedgerHoldsBackOnlyWhatIsPlacedByRoom(t *testing.T) {
	l := newLedger(t)
	rooms := podsOnly("big", node{maxPods: 2})
	r := to("big", 9)
	assert.Equal(t, r, l.Admit(t0, "x", r, rooms, nil), "more than the room shows, but nothing is held there")
	l.Release("x")

	infeasible := prescheduling.Result{Code: prescheduling.NoEligibleCluster, Reason: "no eligible cluster"}
	assert.Equal(t, infeasible, l.Admit(t0, "y", infeasible, rooms, nil))
	assert.Equal(t, infeasible, l.Admit(t0, "y", infeasible, nil, nil), "an infeasible answer comes back as it is")

	static := to("big", 2)
	static.PlacedByRoom = false
	assert.True(t, l.Admit(t0, "a", static, rooms, nil).Feasible)
	assert.True(t, l.Admit(t0, "b", static, rooms, nil).Feasible, "not held back: it goes to big whatever the room")
	assert.Equal(t, map[string]int64{"big": 4}, l.Held(t0))
	assert.Equal(t, prescheduling.AwaitingCapacity, l.Admit(t0, "c", to("big", 1), rooms, nil).Code,
		"big's room is taken by the static evictions in flight")
}

func TestLedgerAdmitWithoutRooms(t *testing.T) {
	l := newLedger(t)
	got := l.Admit(t0, "a", to("big", 1), nil, nil)
	assert.False(t, got.Feasible)
	assert.Equal(t, prescheduling.InvalidRequest, got.Code)
	assert.EqualError(t, got.Err, "reservation: Ledger: rooms: nil: the clusters' room is needed")
	assert.Equal(t, got.Err.Error(), got.Reason)
	assert.Empty(t, l.Keys(t0))
}

func TestNewLedgerRejectsBadOptions(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := reservation.NewLedger(reservation.WithHold(d))
		assert.EqualError(t, err, fmt.Sprintf("reservation: WithHold: %v: must be positive", d))
	}
	_, err := reservation.NewLedger(nil, reservation.WithHold(time.Second))
	assert.NoError(t, err)
}

// Admissions from many goroutines at once take no more room than there is
// (run with -race).
func TestLedgerConcurrently(t *testing.T) {
	defer goleak.VerifyNone(t)
	l := newLedger(t)
	rooms := podsOnly("big", node{maxPods: 4})
	admitted := make([]bool, 16)
	var wg sync.WaitGroup
	for i := range admitted {
		wg.Go(func() { admitted[i] = l.Admit(t0, fmt.Sprint(i), to("big", 1), rooms, nil).Feasible })
	}
	wg.Wait()
	n := 0
	for _, ok := range admitted {
		if ok {
			n++
		}
	}
	assert.Equal(t, 4, n)
	assert.Equal(t, map[string]int64{"big": 4}, l.Held(t0))
}

// BenchmarkLedgerAdmit is one Admit onto a cluster that already has held
// evictions in flight: 10, 1,000 and 10,000 of them. Each op admits one
// more eviction and releases it, so the number in flight stays put; what
// is held is summed per cluster as it changes, so the cost stays flat as
// evictions pile up.
func BenchmarkLedgerAdmit(b *testing.B) {
	for _, inFlight := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprint(inFlight), func(b *testing.B) {
			rooms := nodes{fleet: map[string]node{"big": {maxPods: 1000000, cpu: 1000000000}}, cpu: 1000}
			oneCPU := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			r := to("big", 1)
			l := newLedger(b)
			for i := range inFlight {
				if !l.Admit(t0, fmt.Sprintf("default/w%d", i), r, rooms, oneCPU).Feasible {
					b.Fatal("not admitted")
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if !l.Admit(t0, "default/web", r, rooms, oneCPU).Feasible {
					b.Fatal("not admitted")
				}
				l.Release("default/web")
			}
		})
	}
}

// BenchmarkLedgerAdmitHeldBack is one Admit held back by a cluster full
// of held evictions in flight: 10, 1,000 and 10,000 of them.
func BenchmarkLedgerAdmitHeldBack(b *testing.B) {
	for _, inFlight := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprint(inFlight), func(b *testing.B) {
			rooms := podsOnly("big", node{maxPods: int64(inFlight)})
			r := to("big", 1)
			l := newLedger(b)
			for i := range inFlight {
				if !l.Admit(t0, fmt.Sprintf("default/w%d", i), r, rooms, nil).Feasible {
					b.Fatal("not admitted")
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if l.Admit(t0, "default/web", r, rooms, nil).Code != prescheduling.AwaitingCapacity {
					b.Fatal("not held back")
				}
			}
		})
	}
}

// RetryAfter is when the first hold of another eviction in the way ends:
// not the eviction's own, which an Admit again replaces, and sooner once
// ReleaseAt brings one forward.
func TestLedgerRetryAfterIsTheFirstOtherHoldToEnd(t *testing.T) {
	l := newLedger(t, reservation.WithHold(time.Minute))
	rooms := podsOnly("big", node{maxPods: 3})
	require.True(t, l.Admit(t0, "a", to("big", 1), rooms, nil).Feasible)
	require.True(t, l.Admit(t0.Add(10*time.Second), "b", to("big", 1), rooms, nil).Feasible)
	require.True(t, l.Admit(t0.Add(20*time.Second), "c", to("big", 1), rooms, nil).Feasible)

	got := l.Admit(t0.Add(30*time.Second), "a", to("big", 2), rooms, nil)
	assert.Equal(t, "waiting for room: big has room for 1 of 2 after the 2 replicas of evictions in flight", got.Reason)
	assert.Equal(t, 40*time.Second, got.RetryAfter, "b's hold ends at 01:10; a's own, at 01:00, is not in the way")

	l.ReleaseAt("c", t0.Add(45*time.Second))
	got = l.Admit(t0.Add(30*time.Second), "a", to("big", 2), rooms, nil)
	assert.Equal(t, 15*time.Second, got.RetryAfter, "c's is released at 00:45")
	got = l.Admit(t0.Add(30*time.Second), "d", to("big", 1), rooms, nil)
	assert.Equal(t, "waiting for room: big has room for 0 of 1 after the 3 replicas of evictions in flight", got.Reason)
	assert.Equal(t, 15*time.Second, got.RetryAfter)

	assert.Equal(t, map[string]int64{"big": 2}, l.Held(t0.Add(45*time.Second)))
	assert.True(t, l.Admit(t0.Add(45*time.Second), "a", to("big", 2), rooms, nil).Feasible)
}

// BenchmarkLedgerAdmitClustersHeld is one Admit while evictions in flight
// hold room on 10, 1,000 and 5,000 clusters, one each: an Admit settles
// only the clusters its moves name, so its cost does not grow with them
// (it did when an Admit settled every cluster room is held on: 1.5 µs, 24
// µs and 169 µs).
func BenchmarkLedgerAdmitClustersHeld(b *testing.B) {
	for _, clusters := range []int{10, 1000, 5000} {
		b.Run(fmt.Sprint(clusters), func(b *testing.B) {
			rooms := nodes{fleet: map[string]node{}}
			for i := range clusters {
				rooms.fleet[fmt.Sprintf("member%d", i)] = node{maxPods: 100}
			}
			l := newLedger(b)
			for i := range clusters {
				if !l.Admit(t0, fmt.Sprintf("default/w%d", i), to(fmt.Sprintf("member%d", i), 1), rooms, nil).Feasible {
					b.Fatal("not admitted")
				}
			}
			r := to("member0", 1)
			b.ReportAllocs()
			for b.Loop() {
				if !l.Admit(t0, "default/web", r, rooms, nil).Feasible {
					b.Fatal("not admitted")
				}
				l.Release("default/web")
			}
		})
	}
}

package reservation_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/prescheduling"
	"github.com/failoverkit/failover/reservation"
)

// fanOut is a feasible Duplicated answer as an Index gives it: replicas on
// every cluster of list but except.
func fanOut(list []string, replicas int32, except ...string) prescheduling.Result {
	return prescheduling.Result{Feasible: true, Code: prescheduling.Feasible,
		Fanout: &prescheduling.Fanout{Clusters: list, Except: except, Replicas: replicas}}
}

// A fan-out holds its replicas on every cluster of its list but those it
// skips, as its moves listed one by one would: Held shows them, an eviction
// placed by room on one of those clusters counts them (and names them in
// its wait, with when the first of them ends), and a release or the end of
// the hold gives them back, one fan-out at a time.
func TestLedgerHoldsAFanoutOnEveryClusterOfIt(t *testing.T) {
	l := newLedger(t, reservation.WithHold(time.Minute))
	list := []string{"a", "b", "c", "d"}
	rooms := podsOnly("a", node{maxPods: 4}, "b", node{maxPods: 4}, "c", node{maxPods: 4}, "d", node{maxPods: 4})
	require.True(t, l.Admit(t0, "one", fanOut(list, 2), rooms, nil).Feasible)
	require.True(t, l.Admit(t0.Add(10*time.Second), "two", fanOut(list, 1, "b"), rooms, nil).Feasible)
	assert.Equal(t, map[string]int64{"a": 3, "b": 2, "c": 3, "d": 3}, l.Held(t0))

	got := l.Admit(t0.Add(20*time.Second), "div", to("a", 2), rooms, nil)
	assert.Equal(t, prescheduling.AwaitingCapacity, got.Code)
	assert.Equal(t, "waiting for room: a has room for 1 of 2 after the 3 replicas of evictions in flight", got.Reason)
	assert.Equal(t, 40*time.Second, got.RetryAfter, "one's hold ends first, at 01:00")
	got = l.Admit(t0.Add(20*time.Second), "div", to("b", 3), rooms, nil)
	assert.Equal(t, "waiting for room: b has room for 2 of 3 after the 2 replicas of an eviction in flight", got.Reason, "two skips b")
	assert.True(t, l.Admit(t0.Add(20*time.Second), "div", to("b", 2), rooms, nil).Feasible)

	l.Release("one")
	assert.Equal(t, map[string]int64{"a": 1, "b": 2, "c": 1, "d": 1}, l.Held(t0.Add(20*time.Second)))
	l.ReleaseAt("two", t0.Add(30*time.Second))
	assert.Equal(t, map[string]int64{"b": 2}, l.Held(t0.Add(30*time.Second)))
	assert.Empty(t, l.Held(t0.Add(80*time.Second)), "div's hold has ended")
}

// A fan-out's room is not given back as the clusters' pods grow: each of
// its clusters would need reading at every admission, a thousand for a
// region-wide Duplicated placement. It waits for the release the caller
// gives when the eviction's task ends, or for the hold to end.
func TestLedgerKeepsAFanoutUntilReleased(t *testing.T) {
	l := newLedger(t, reservation.WithHold(time.Minute))
	rooms := podsOnly("a", node{maxPods: 4}, "b", node{maxPods: 4})
	require.True(t, l.Admit(t0, "dup", fanOut([]string{"a", "b"}, 2), rooms, nil).Feasible)
	rooms.fleet["a"] = node{pods: 2, maxPods: 4}
	rooms.fleet["b"] = node{pods: 2, maxPods: 4}
	l.Settle(t0.Add(time.Second), rooms)
	assert.Equal(t, map[string]int64{"a": 2, "b": 2}, l.Held(t0.Add(time.Second)))
	assert.Empty(t, l.Held(t0.Add(time.Minute)))
}

// The requests of a fan-out's replicas are held on each of its clusters
// and handed to Fit, but an eviction's own: one admitted again does not
// count its own room against itself.
func TestLedgerCountsTheRequestsAFanoutHolds(t *testing.T) {
	l := newLedger(t)
	rooms := nodes{fleet: map[string]node{"a": {maxPods: 100, cpu: 3000}, "b": {maxPods: 100, cpu: 3000}}, cpu: 1000}
	oneCPU := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	list := []string{"a", "b"}
	require.True(t, l.Admit(t0, "dup", fanOut(list, 2, "b"), rooms, oneCPU).Feasible)
	got := l.Admit(t0, "div", to("a", 2), rooms, oneCPU)
	assert.Equal(t, "waiting for room: a has room for 1 of 2 after the 2 replicas of an eviction in flight", got.Reason)
	assert.True(t, l.Admit(t0, "div", to("b", 2), rooms, oneCPU).Feasible, "the fan-out skips b")
	assert.True(t, l.Admit(t0, "more", to("a", 1), rooms, oneCPU).Feasible, "one CPU is left on a")
	assert.True(t, l.Admit(t0, "dup", to("a", 2), rooms, oneCPU).Feasible, "dup's own fan-out is not in its way")
}

// Against random fan-outs over a few shared lists, released and replaced
// at random, a Ledger holds what the same moves listed one by one would.
func TestLedgerHoldsAFanoutAsItsMovesListed(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 1))
	names := []string{"a", "b", "c", "d", "e", "f"}
	lists := [][]string{names, names[1:4], slices.Clone(names)}
	rooms := podsOnly()
	for _, n := range names {
		rooms.fleet[n] = node{maxPods: 1000}
	}
	fans, listed := newLedger(t), newLedger(t)
	for step := range 400 {
		key := string(rune('p' + rng.IntN(8)))
		if rng.IntN(4) == 0 {
			fans.Release(key)
			listed.Release(key)
			continue
		}
		list := lists[rng.IntN(len(lists))]
		var except []string
		for _, n := range list {
			if rng.IntN(3) == 0 {
				except = append(except, n)
			}
		}
		r := fanOut(list, int32(1+rng.IntN(3)), except...)
		var moves []failover.TargetCluster
		for m := range r.AllMoves() {
			moves = append(moves, m)
		}
		l := prescheduling.Result{Feasible: true, Code: prescheduling.Feasible, Moves: moves}
		require.True(t, fans.Admit(t0, key, r, rooms, nil).Feasible)
		require.True(t, listed.Admit(t0, key, l, rooms, nil).Feasible)
		require.Equal(t, listed.Held(t0), fans.Held(t0), "step %d", step)
	}
}

package prescheduling

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"

	"github.com/failoverkit/failover"
)

// indexRoom is the room the tests give clusters: a capacity, or -1 for
// one that is not known.
type indexRoom int32

func indexCapacity(r indexRoom) (int32, bool) { return int32(r), r != -1 }

// byRoom is indexCapacity, remembered by the Index.
var byRoom = Capacity[indexRoom]{Of: indexCapacity, Key: "room"}

func (r *byteReader) room() indexRoom {
	return []indexRoom{-1, 0, 1, 2, 3, 5, math.MaxInt32, -5}[r.next()%8]
}

// member is a cluster of a test's fleet, with its room.
type member struct {
	c    failover.Cluster
	room indexRoom
}

// withOverrides is the fleet a check with overrides sees, as a Checker is
// given it: its clusters by name, each override in place of the cluster it
// names (or added; removed when its Cluster is nil), and their rooms.
func withOverrides(fleet map[string]member, overrides []Override[indexRoom]) ([]failover.Cluster, map[string]indexRoom) {
	var list []failover.Cluster
	rooms := map[string]indexRoom{}
	for _, n := range slices.Sorted(maps.Keys(fleet)) {
		if !slices.ContainsFunc(overrides, func(o Override[indexRoom]) bool { return o.Name == n }) {
			list = append(list, fleet[n].c)
			rooms[n] = fleet[n].room
		}
	}
	for _, o := range overrides {
		if o.Cluster != nil {
			list = append(list, *o.Cluster)
			rooms[o.Name] = o.Room
		}
	}
	slices.SortFunc(list, func(a, b failover.Cluster) int { return cmp.Compare(a.Name, b.Name) })
	return list, rooms
}

// indexCase plays fuzz bytes as a run of cluster changes and checks on an
// Index, beside the fleet they leave as a plain list: after every step,
// Index.Check answers as Checker.Check on that list sorted by name, with
// the overrides in place, and Index.CheckWithin as Checker.Check on the
// part of it the request and the overrides name.
func indexCase(t *testing.T, data []byte) (feasible int) {
	r := byteReader(data)
	var reqs []Request
	for range 2 {
		p := r.placement()
		switch r.next() % 4 {
		case 1: // the divisions by room, which the generator rarely makes
			p.ReplicaScheduling = &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: ReplicaDivisionPreferenceAggregated}
		case 2:
			p.ReplicaScheduling = &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: ReplicaDivisionPreferenceWeighted,
				WeightPreference:          &ClusterPreferences{DynamicWeight: DynamicWeightByAvailableReplicas}}
		}
		if p.Validate() != nil && r.next()%4 != 0 {
			p = Placement{ClusterAffinity: &failover.ClusterAffinity{ExcludeClusters: []string{r.pick("a1", "b2", "c3")}},
				ReplicaScheduling: p.ReplicaScheduling}
			if p.Validate() != nil {
				p.ReplicaScheduling = nil
			}
		}
		req := r.request(p)
		if r.next()%4 != 0 { // mostly a request that asks something
			req.Scheduled, req.Evicting = nil, nil
			for i := range 1 + int(r.next()%3) {
				req.Scheduled = append(req.Scheduled, failover.TargetCluster{
					Name: fmt.Sprintf("%s%d", r.pick("a", "b", "c"), r.next()%16), Replicas: int32(r.next() % 6)})
				if i == 0 || r.next()%3 == 0 {
					req.Evicting = append(req.Evicting, req.Scheduled[i].Name)
				}
			}
		}
		req.ObservedAffinityName = r.pick("", "y", "none")
		req.ResourceUID = r.pick("", "uid-1", "uid-2")
		reqs = append(reqs, req)
	}
	var x Index[indexRoom]
	fleet := map[string]member{}
	names := func() []string { return slices.Sorted(maps.Keys(fleet)) }
	pickName := func() string {
		ns := append(names(), "a1", "x")
		return ns[int(r.next())%len(ns)]
	}
	for step := range int(r.next()%24) + 4 {
		switch r.next() % 5 {
		case 0, 1:
			c := r.cluster(int(r.next() % 16))
			room := r.room()
			require.NoError(t, x.Set(c, room))
			fleet[c.Name] = member{c, room}
		case 2:
			n, room := pickName(), r.room()
			_, known := fleet[n]
			assert.Equal(t, known, x.SetRoom(n, room), "SetRoom(%q)", n)
			if known {
				fleet[n] = member{fleet[n].c, room}
			}
		case 3:
			n := pickName()
			x.Delete(n)
			delete(fleet, n)
		}
		assert.Equal(t, len(fleet), x.Len())

		req := reqs[r.next()%2]
		var overrides []Override[indexRoom]
		for range int(r.next() % 3) {
			o := Override[indexRoom]{Name: pickName(), Room: r.room()}
			if slices.ContainsFunc(overrides, func(p Override[indexRoom]) bool { return p.Name == o.Name }) {
				continue
			}
			if r.next()%3 != 0 {
				c := r.cluster(0)
				c.Name = o.Name
				o.Cluster = &c
			}
			overrides = append(overrides, o)
		}
		list, rooms := withOverrides(fleet, overrides)
		var capacity Capacity[indexRoom]
		checker := mustChecker()
		if r.next()%4 != 0 {
			capacity = byRoom
			if r.next()%3 == 0 {
				capacity.Key = "" // asked on every check
			}
			checker = mustChecker(WithCapacity(func(n string) (int32, bool) {
				room, ok := rooms[n]
				if !ok {
					return 0, false
				}
				return indexCapacity(room)
			}))
		}
		want := checker.Check(req, list)
		got := x.Check(req, capacity, overrides...)
		sameResult(t, want, got, fmt.Sprintf("step %d, fleet %v, overrides %v", step, names(), overrides))
		// CheckWithin answers as Check on the clusters the request names
		// and the overrides alone.
		within := slices.DeleteFunc(slices.Clone(list), func(c failover.Cluster) bool {
			named := slices.Contains(req.Evicting, c.Name) ||
				slices.ContainsFunc(req.Scheduled, func(t failover.TargetCluster) bool { return t.Name == c.Name }) ||
				slices.ContainsFunc(overrides, func(o Override[indexRoom]) bool { return o.Name == c.Name })
			return !named
		})
		sameResult(t, checker.Check(req, within), x.CheckWithin(req, capacity, overrides...),
			fmt.Sprintf("within, step %d, fleet %v, overrides %v", step, names(), overrides))
		if want.Feasible {
			feasible++
		}
	}
	return feasible
}

// sameResult asserts that got is want, field by field.
func sameResult(t *testing.T, want, got Result, at string) {
	t.Helper()
	assert.Equal(t, want.Feasible, got.Feasible, "Feasible at %s", at)
	assert.Equal(t, want.Code, got.Code, "Code at %s", at)
	assert.Equal(t, want.Reason, got.Reason, "Reason at %s", at)
	assert.Equal(t, want.Candidates, got.Candidates, "Candidates at %s", at)
	assert.Equal(t, slices.Collect(want.AllMoves()), slices.Collect(got.AllMoves()), "Moves at %s", at)
	assert.Equal(t, want.PlacedByRoom, got.PlacedByRoom, "PlacedByRoom at %s", at)
	assert.Equal(t, want.AffinityName, got.AffinityName, "AffinityName at %s", at)
	assert.Equal(t, fmt.Sprint(want.Err), fmt.Sprint(got.Err), "Err at %s", at)
	assert.Equal(t, want.RetryAfter, got.RetryAfter, "RetryAfter at %s", at)
}

// TestIndexAnswersAsCheck plays 3,000 generated runs of cluster changes,
// room reports, deletions and checks with overrides (indexCase).
func TestIndexAnswersAsCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	feasible, checks := 0, 0
	for i := range 3000 {
		data := make([]byte, 32+rng.IntN(400))
		for j := range data {
			data[j] = byte(rng.UintN(256))
		}
		if !t.Run(fmt.Sprint(i), func(t *testing.T) { feasible += indexCase(t, data) }) {
			t.Logf("failing input: %q", data)
			return
		}
		checks++
	}
	// Only a feasible answer takes the Index's own path; the rest are
	// answered by Check itself.
	t.Logf("%d runs, %d feasible answers", checks, feasible)
	assert.Greater(t, feasible, checks, "too few feasible answers to prove the Index's path")
}

// FuzzIndex is indexCase on the fuzzer's bytes; its corpus is under
// testdata/fuzz/FuzzIndex.
func FuzzIndex(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Fuzz(func(t *testing.T, data []byte) { indexCase(t, data) })
}

// TestIndexLargeFleet checks, at a fleet of hundreds, that a change to one
// cluster reaches the placements remembered before it: the answer follows
// a taint, a recovery, a deletion and a room report.
func TestIndexLargeFleet(t *testing.T) {
	fleet := benchFleet(300)
	var x Index[indexRoom]
	for _, c := range fleet {
		require.NoError(t, x.Set(c, 100))
	}
	gone := fleet[0]
	gone.Taints = []corev1.Taint{notReady} // as a cluster evicted from is
	require.NoError(t, x.Set(gone, 100))
	req := Request{
		Placement: Placement{ReplicaScheduling: &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: ReplicaDivisionPreferenceAggregated}},
		Scheduled: []failover.TargetCluster{{Name: fleet[0].Name, Replicas: 150}},
		Evicting:  []string{fleet[0].Name},
	}
	same := func(what string) {
		t.Helper()
		list := make([]failover.Cluster, 0, x.Len())
		x.mu.RLock()
		rooms := map[string]indexRoom{}
		for _, sl := range x.byName {
			list = append(list, sl.c)
			rooms[sl.c.Name] = sl.room
		}
		x.mu.RUnlock()
		want := mustChecker(WithCapacity(func(n string) (int32, bool) { return indexCapacity(rooms[n]) })).Check(req, list)
		sameResult(t, want, x.Check(req, byRoom), what)
	}
	same("at first")
	first := x.Check(req, byRoom)
	require.True(t, first.Feasible, first.Reason)
	require.NotEmpty(t, first.Moves)
	target := first.Moves[0].Name
	// The candidates of an answer stay as they were whatever changes after.
	firstCandidates := slices.Clone(first.Candidates)
	defer func() { assert.Equal(t, firstCandidates, first.Candidates, "an earlier answer's candidates changed") }()

	c := fleet[slices.IndexFunc(fleet, func(c failover.Cluster) bool { return c.Name == target })]
	tainted := c
	tainted.Taints = []corev1.Taint{notReady}
	require.NoError(t, x.Set(tainted, 100))
	same("after a taint")
	assert.NotContains(t, x.Check(req, byRoom).Candidates, target, "a tainted cluster is no candidate")
	require.NoError(t, x.Set(c, 100))
	same("after the recovery")
	assert.Contains(t, x.Check(req, byRoom).Candidates, target)
	assert.True(t, x.SetRoom(target, 1000))
	same("after a room report")
	x.Delete(target)
	same("after the deletion")
	assert.NotContains(t, x.Check(req, byRoom).Candidates, target)
	assert.False(t, x.SetRoom(target, 1), "a deleted cluster has no room to set")
}

// TestIndexRemembersFewPlacements checks that the memo stays bounded and a
// forgotten placement is still answered right.
func TestIndexRemembersFewPlacements(t *testing.T) {
	var x Index[indexRoom]
	for _, c := range benchFleet(20) {
		require.NoError(t, x.Set(c, 5))
	}
	for i := range MaxPlacements + 10 {
		req := Request{Placement: Placement{ClusterAffinity: &failover.ClusterAffinity{ExcludeClusters: []string{fmt.Sprint(i)}}},
			Scheduled: []failover.TargetCluster{{Name: "member-00000", Replicas: 1}}, Evicting: []string{"member-00000"}}
		require.True(t, x.Check(req, byRoom).Feasible)
	}
	assert.Len(t, x.memos, MaxPlacements)
}

// TestIndexBadInput checks that what a caller can get wrong is an error
// that names it, never a panic.
func TestIndexBadInput(t *testing.T) {
	var x Index[indexRoom]
	assert.ErrorContains(t, x.Set(failover.Cluster{}, 0), "cluster name is empty")
	req := Request{Scheduled: []failover.TargetCluster{{Name: "a", Replicas: 1}}, Evicting: []string{"a"}}
	for _, tc := range []struct {
		name      string
		overrides []Override[indexRoom]
		want      string
	}{
		{"empty name", []Override[indexRoom]{{}}, "overrides[0].name is empty"},
		{"name and cluster differ", []Override[indexRoom]{{Name: "a", Cluster: &failover.Cluster{Name: "b"}}},
			`overrides[0].cluster.name: "b" is not the override's name "a"`},
		{"twice", []Override[indexRoom]{{Name: "a"}, {Name: "a"}}, `overrides[1].name: "a" is also overrides[0]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := x.Check(req, Capacity[indexRoom]{}, tc.overrides...)
			assert.Equal(t, InvalidRequest, r.Code)
			assert.ErrorContains(t, r.Err, tc.want)
		})
	}
	bad := Request{Placement: Placement{SpreadConstraints: []SpreadConstraint{{MinGroups: -1}}}, Scheduled: req.Scheduled, Evicting: req.Evicting}
	assert.ErrorContains(t, x.Check(bad, Capacity[indexRoom]{}).Err, "spreadConstraints[0].minGroups: -1")
}

// TestIndexConcurrent runs checks beside changes; run with -race.
func TestIndexConcurrent(t *testing.T) {
	defer goleak.VerifyNone(t)
	var x Index[indexRoom]
	fleet := benchFleet(50)
	for _, c := range fleet {
		require.NoError(t, x.Set(c, 5))
	}
	aggregated := Request{Placement: Placement{ReplicaScheduling: &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: ReplicaDivisionPreferenceAggregated}},
		Scheduled: []failover.TargetCluster{{Name: "member-00003", Replicas: 2}}, Evicting: []string{"member-00003"}}
	reqs := []Request{benchRequest(), aggregated}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				if w == 0 {
					c := fleet[i%len(fleet)]
					assert.NoError(t, x.Set(c, indexRoom(i)))
					x.SetRoom(c.Name, 3)
					continue
				}
				assert.NoError(t, x.Check(reqs[(w+i)%2], byRoom).Err)
			}
		}()
	}
	wg.Wait()
}

// TestIndexFollowsTheSchedulersOrderByRoom holds the Index to Check where
// the scheduler's order by room is not the order of its scores: a cluster
// the workload keeps with no replicas and less room than others, which the
// scheduler's unstable sort by room moves behind them, alone and among
// more clusters than its sort handles by insertion.
func TestIndexFollowsTheSchedulersOrderByRoom(t *testing.T) {
	aggregated := Placement{ReplicaScheduling: &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: ReplicaDivisionPreferenceAggregated}}
	for _, tc := range []struct {
		name      string
		others    int
		scheduled []failover.TargetCluster
		rooms     map[string]indexRoom
	}{
		{"kept without replicas, less room", 1,
			[]failover.TargetCluster{{Name: "gone", Replicas: 3}, {Name: "kept", Replicas: 0}}, map[string]indexRoom{"kept": 1}},
		{"kept with replicas, less room than one kept without", 1,
			[]failover.TargetCluster{{Name: "gone", Replicas: 6}, {Name: "kept", Replicas: 5}, {Name: "kept2", Replicas: 0}},
			map[string]indexRoom{"kept": 1, "kept2": 4}},
		{"kept without replicas among many", 30,
			[]failover.TargetCluster{{Name: "gone", Replicas: 7}, {Name: "kept", Replicas: 0}}, map[string]indexRoom{"kept": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var x Index[indexRoom]
			var list []failover.Cluster
			rooms := map[string]indexRoom{}
			add := func(name string, room indexRoom) {
				c := failover.Cluster{Name: name}
				require.NoError(t, x.Set(c, room))
				list = append(list, c)
				rooms[name] = room
			}
			for i := range tc.others {
				add(fmt.Sprintf("other-%02d", i), 5)
			}
			for _, s := range tc.scheduled {
				room, ok := tc.rooms[s.Name]
				if !ok {
					room = 5
				}
				add(s.Name, room)
			}
			slices.SortFunc(list, func(a, b failover.Cluster) int { return cmp.Compare(a.Name, b.Name) })
			req := Request{Placement: aggregated, Scheduled: tc.scheduled, Evicting: []string{"gone"}}
			want := mustChecker(WithCapacity(func(n string) (int32, bool) { return indexCapacity(rooms[n]) })).Check(req, list)
			require.True(t, want.Feasible, want.Reason)
			sameResult(t, want, x.Check(req, byRoom), tc.name)
		})
	}
}

// TestIndexRemembersRoom holds the room an Index remembers for a Capacity's
// Key to Check's answers, on a fleet large enough that the clusters with
// the most room are a few of many, through room reports that change which
// they are, rooms whose int32 sum wraps around as Karmada's does, clusters
// added, tainted and deleted, and evictions that keep some clusters.
func TestIndexRemembersRoom(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 3))
	rooms := []indexRoom{-1, 0, 1, 2, 3, 7, 40, 1 << 29, 1<<30 + 7, math.MaxInt32}
	for run := range 40 {
		var x Index[indexRoom]
		fleet := map[string]member{}
		names := func() []string { return slices.Sorted(maps.Keys(fleet)) }
		set := func(c failover.Cluster, room indexRoom) {
			require.NoError(t, x.Set(c, room))
			fleet[c.Name] = member{c, room}
		}
		for i := range 60 {
			set(failover.Cluster{Name: fmt.Sprintf("m%02d", i)}, rooms[rng.IntN(len(rooms))])
		}
		change := func(name string) {
			switch rng.IntN(80) {
			case 0:
				c := failover.Cluster{Name: fmt.Sprintf("m%02d", rng.IntN(70))}
				if rng.IntN(3) == 0 {
					c.Taints = []corev1.Taint{notReady}
				}
				set(c, rooms[rng.IntN(len(rooms))])
			case 1:
				if len(fleet) > 1 {
					x.Delete(name)
					delete(fleet, name)
				}
			default:
				room := rooms[rng.IntN(len(rooms))]
				require.True(t, x.SetRoom(name, room))
				fleet[name] = member{fleet[name].c, room}
			}
		}
		for step := range 60 {
			for range 1 + rng.IntN(12) {
				all := names()
				name := all[rng.IntN(len(all))]
				change(name)
			}
			all := names()
			req := Request{Placement: Placement{ReplicaScheduling: &ReplicaSchedulingStrategy{
				ReplicaSchedulingType: ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: ReplicaDivisionPreferenceAggregated}}}
			for k := range 1 + rng.IntN(4) {
				req.Scheduled = append(req.Scheduled, failover.TargetCluster{Name: all[rng.IntN(len(all))], Replicas: int32(rng.IntN(60))})
				if k == 0 {
					req.Evicting = []string{req.Scheduled[0].Name}
				}
			}
			var list []failover.Cluster
			for _, n := range all {
				list = append(list, fleet[n].c)
			}
			capacity := byRoom
			if rng.IntN(4) == 0 {
				capacity.Key = ""
			}
			want := mustChecker(WithCapacity(func(n string) (int32, bool) { return indexCapacity(fleet[n].room) })).Check(req, list)
			sameResult(t, want, x.Check(req, capacity), fmt.Sprintf("run %d step %d, request %v", run, step, req.Scheduled))
			if t.Failed() {
				return
			}
		}
	}
}

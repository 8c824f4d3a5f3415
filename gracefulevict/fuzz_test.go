package gracefulevict

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover"
)

// FuzzAssess builds a binding and tasks from arbitrary bytes and checks that
// Assess never panics, never mutates its input, and returns every task
// exactly once (Keep + Done equals the input as a multiset by FromCluster,
// and each in input order), and that each task's fate and RequeueAfter are
// those DESIGN's eight rules give when applied one after the other.
func FuzzAssess(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, int64(0), uint8(3))
	f.Add([]byte{255, 254, 3, 3, 3, 0, 0, 7}, int64(-50), uint8(0))
	f.Add([]byte{}, int64(1<<40), uint8(9))
	modes := []failover.PurgeMode{"", failover.PurgeModeDirectly, failover.PurgeModeGracefully, failover.PurgeModeNever,
		failover.PurgeModeImmediately, failover.PurgeModeGraciously, "Bogus"}
	healths := []ResourceHealth{Healthy, Unhealthy, Unknown, ""}
	f.Fuzz(func(t *testing.T, data []byte, nowOffset int64, nClusters uint8) {
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		name := func(b byte) string { return fmt.Sprintf("m%d", b%12) }
		b := Binding{Generation: int64(next() % 3), ObservedGeneration: int64(next() % 3), Health: map[string]ResourceHealth{}}
		for range nClusters % 10 {
			c := name(next())
			b.Clusters = append(b.Clusters, failover.TargetCluster{Name: c, Replicas: int32(next()) - 8})
			b.Health[c] = healths[int(next())%len(healths)]
		}
		for len(data) > 0 {
			flags := next()
			task := Task{FromCluster: name(next()), PurgeMode: modes[int(next())%len(modes)]}
			if flags&1 != 0 {
				task.CreationTimestamp = &metav1.Time{Time: t0.Add(time.Duration(int8(next())) * time.Minute)}
			}
			if flags&2 != 0 {
				task.SuppressDeletion = ptr.To(flags&4 != 0)
			}
			if flags&8 != 0 {
				task.GracePeriodSeconds = ptr.To(int32(int8(next())) * 30)
			}
			b.Tasks = append(b.Tasks, task)
		}
		before := cloneBinding(b)
		var opts []Option
		if nClusters&16 != 0 {
			opts = append(opts, WithDefaultTimeout(time.Duration(nowOffset%3600)*time.Second))
		}
		if nClusters&32 != 0 {
			opts = append(opts, WithPlugins(always{}))
		}
		now := t0.Add(time.Duration(nowOffset%(1<<40)) * time.Second)

		got := mustAssessor(opts...).Assess(b, now)

		if !equalBindings(before, b) {
			t.Fatalf("Assess mutated its input")
		}
		all := append(fromCluster(got.Keep), fromCluster(got.Done)...)
		in := fromCluster(b.Tasks)
		slices.Sort(all)
		slices.Sort(in)
		if !slices.Equal(all, in) {
			t.Fatalf("Keep+Done %v != input %v", all, in)
		}
		if got.RequeueAfter < 0 {
			t.Fatalf("negative RequeueAfter %v", got.RequeueAfter)
		}
		stamped := 0
		for _, k := range got.Keep {
			if k.CreationTimestamp == nil {
				t.Fatalf("kept task %q has no timestamp", k.FromCluster)
			}
			if k.CreationTimestamp.Time.Equal(now) {
				stamped++
			}
			if slices.ContainsFunc(b.Clusters, func(c failover.TargetCluster) bool { return c.Name == k.FromCluster }) {
				t.Fatalf("kept task %q whose cluster is in the schedule result", k.FromCluster)
			}
		}
		if stamped < got.Stamped {
			t.Fatalf("Stamped=%d but only %d kept tasks carry now", got.Stamped, stamped)
		}

		// Each task's fate and the requeue time follow DESIGN's rules, read
		// here the plain way, one after the other.
		var timeout time.Duration
		if nClusters&16 != 0 {
			timeout = max(time.Duration(nowOffset%3600)*time.Second, 0)
		}
		healthy := len(b.Clusters) > 0 && b.Generation == b.ObservedGeneration
		for _, c := range b.Clusters {
			healthy = healthy && b.Health[c.Name] == Healthy
		}
		pluginPasses := nClusters&32 != 0 || healthy
		var wantKeep, wantDone []string
		var wantRequeue time.Duration
		for _, task := range b.Tasks {
			created, deadline, hasDeadline := now, time.Time{}, false
			if task.CreationTimestamp != nil {
				created = task.CreationTimestamp.Time
			}
			mode := task.PurgeMode.Canonical()
			if task.SuppressDeletion == nil && mode != failover.PurgeModeDirectly && mode != failover.PurgeModeNever {
				switch {
				case task.GracePeriodSeconds != nil:
					deadline, hasDeadline = created.Add(time.Duration(*task.GracePeriodSeconds)*time.Second), true
				case timeout > 0:
					deadline, hasDeadline = created.Add(timeout), true
				}
			}
			var done bool
			switch {
			case slices.ContainsFunc(b.Clusters, func(c failover.TargetCluster) bool { return c.Name == task.FromCluster }):
				done = true
			case task.CreationTimestamp == nil:
				done = false
			case task.SuppressDeletion != nil:
				done, hasDeadline = !*task.SuppressDeletion, false
			case mode == failover.PurgeModeDirectly:
				done = true
			case mode == failover.PurgeModeNever:
				done = false
			case pluginPasses:
				done = true
			default:
				done = hasDeadline && !now.Before(deadline)
			}
			if done {
				wantDone = append(wantDone, task.FromCluster)
				continue
			}
			wantKeep = append(wantKeep, task.FromCluster)
			if hasDeadline {
				d := max(deadline.Sub(now), time.Nanosecond)
				if wantRequeue == 0 || d < wantRequeue {
					wantRequeue = d
				}
			}
		}
		if k, d := fromCluster(got.Keep), fromCluster(got.Done); !slices.Equal(k, wantKeep) || !slices.Equal(d, wantDone) {
			t.Fatalf("keep %v done %v, the rules give keep %v done %v", k, d, wantKeep, wantDone)
		}
		if got.RequeueAfter != wantRequeue {
			t.Fatalf("RequeueAfter %v, the earliest deadline among kept tasks is in %v", got.RequeueAfter, wantRequeue)
		}
	})
}

func equalBindings(a, b Binding) bool {
	if a.Generation != b.Generation || a.ObservedGeneration != b.ObservedGeneration ||
		!slices.Equal(a.Clusters, b.Clusters) || len(a.Tasks) != len(b.Tasks) || len(a.Health) != len(b.Health) {
		return false
	}
	for k, v := range a.Health {
		if b.Health[k] != v {
			return false
		}
	}
	for i := range a.Tasks {
		x, y := a.Tasks[i], b.Tasks[i]
		if x.FromCluster != y.FromCluster || x.PurgeMode != y.PurgeMode ||
			(x.CreationTimestamp == nil) != (y.CreationTimestamp == nil) ||
			(x.CreationTimestamp != nil && !x.CreationTimestamp.Equal(y.CreationTimestamp)) {
			return false
		}
	}
	return true
}

package gracefulevict

import (
	"maps"
	"slices"

	"github.com/failoverkit/failover"
)

// Evict is the eviction step itself: it returns a copy of b in which cluster
// has left the schedule result and become a graceful eviction task, so that
// the scheduler looks for a replacement while the old copy keeps running.
//
// The task is t with FromCluster set to cluster; when t.Replicas is nil and
// the cluster held replicas, it carries them over. Evict is a no-op (b is
// returned as it is) when cluster is not in the schedule result. One cluster
// has at most one task: a task for cluster that is already there is replaced
// by the new one, in its place. That old task was finished anyway (its
// cluster was back in the schedule result, rule 1 of the Assessor), and
// keeping it would carry its old CreationTimestamp into the new eviction and
// cut the new grace period short.
//
// Whenever the schedule result changes, Generation is incremented, as the API
// server does on a spec change: the scheduler has not yet seen the new
// result, so the ResourceHealth plugin cannot pass on the clusters that are
// left until it has rescheduled.
//
// Evict never modifies b: the returned binding has its own Clusters, Tasks
// and Health.
func Evict(b Binding, cluster string, t Task) Binding {
	i := slices.IndexFunc(b.Clusters, func(c failover.TargetCluster) bool { return c.Name == cluster })
	if i < 0 {
		return b
	}
	evicted := b.Clusters[i]
	out := b
	out.Generation++
	out.Health = maps.Clone(b.Health)
	out.Clusters = slices.Delete(slices.Clone(b.Clusters), i, i+1)
	t.FromCluster = cluster
	if t.Replicas == nil && evicted.Replicas > 0 {
		r := evicted.Replicas
		t.Replicas = &r
	}
	out.Tasks = make([]Task, 0, len(b.Tasks)+1)
	replaced := false
	for _, x := range b.Tasks {
		if x.FromCluster == cluster {
			if replaced {
				continue // an earlier duplicate already took this place
			}
			x, replaced = t, true
		}
		out.Tasks = append(out.Tasks, x)
	}
	if !replaced {
		out.Tasks = append(out.Tasks, t)
	}
	return out
}

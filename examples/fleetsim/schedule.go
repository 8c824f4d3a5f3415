package main

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
)

// schedule is Karmada's scheduler placing b (karmada/scheduling: Karmada
// v1.18's own algorithm, in process, one Scheduler per run that publish
// tells of each cluster as published) on the fleet as it is now, with the
// schedule result and graceful eviction tasks gb gives: at the start, and
// after each eviction, where the scheduler keeps what runs and places what
// the eviction removed (never on a cluster a task comes from). It returns
// the schedule result, sorted by cluster name, and records the
// clusterAffinities term it used in b's status, as the scheduler does.
func (w *world) schedule(b *binding, gb gracefulevict.Binding) ([]failover.TargetCluster, error) {
	_, spec, status := b.parts()
	s := spec.DeepCopy()
	karmada.ApplyBinding(s, gb)
	result, term, err := w.scheduler.Schedule(s, status)
	if err != nil {
		return nil, fmt.Errorf("fleetsim: Karmada's scheduler cannot place %s %s: %w", b.spec.Kind, b.key(), err)
	}
	status.SchedulerObservedAffinityName = term
	out := make([]failover.TargetCluster, len(result))
	for i, t := range result {
		out[i] = failover.TargetCluster{Name: t.Name, Replicas: t.Replicas}
	}
	sortTargets(out)
	return out, nil
}

// tolerates reports whether tolerations tolerate every NoSchedule and
// NoExecute taint of c: the clusters a scheduler may place a copy on, which
// the verdict holds each eviction's new copies to.
func tolerates(tolerations []corev1.Toleration, c *failover.Cluster) bool {
	for i := range c.Taints {
		t := &c.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), t, false) }) {
			return false
		}
	}
	return true
}

func sortTargets(ts []failover.TargetCluster) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
}

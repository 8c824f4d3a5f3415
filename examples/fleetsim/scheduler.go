package main

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/prescheduling"
)

// The simulation's scheduler is deliberately simple: it is the part of
// Karmada a failover library does not replace. It places each binding once
// at the start and finds a replacement for each evicted copy, respecting the
// placement (affinity, taints, spread constraints, replica division) and
// balancing the number of copies per cluster.

// groupOf returns the spread group of c for a spread constraint's field.
func groupOf(c *failover.Cluster, field prescheduling.SpreadFieldValue) string {
	switch field {
	case prescheduling.SpreadByFieldRegion:
		return c.Region
	case prescheduling.SpreadByFieldZone:
		return c.Zone
	case prescheduling.SpreadByFieldProvider:
		return c.Provider
	}
	return c.Name
}

// spreadField returns the field the binding spreads over (cluster when it has
// no field constraint) and the constraint's minGroups and maxGroups (0: unset).
func spreadField(p *prescheduling.Placement) (field prescheduling.SpreadFieldValue, minGroups, maxGroups int) {
	field = prescheduling.SpreadByFieldCluster
	for _, s := range p.SpreadConstraints {
		if s.SpreadByLabel != "" {
			continue
		}
		f := s.SpreadByField
		if f == "" {
			f = prescheduling.SpreadByFieldCluster
		}
		// A field other than cluster decides the groups; a cluster constraint
		// alongside it only bounds the count.
		if f != prescheduling.SpreadByFieldCluster || field == prescheduling.SpreadByFieldCluster {
			field, minGroups, maxGroups = f, s.MinGroups, s.MaxGroups
		}
	}
	return field, minGroups, maxGroups
}

// tolerates reports whether tolerations tolerate every NoSchedule and
// NoExecute taint of c: the clusters a scheduler may place a copy on.
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

// byLoad sorts cluster names by the copies they run, then by name.
func byLoad(names []string, load map[string]int) {
	sort.SliceStable(names, func(i, j int) bool {
		if load[names[i]] != load[names[j]] {
			return load[names[i]] < load[names[j]]
		}
		return names[i] < names[j]
	})
}

// initialSchedule places a binding on a healthy fleet. Duplicated: one copy
// per group up to maxGroups (minGroups, else every eligible cluster, when no
// maximum is set, as Karmada does). Divided: the replicas split evenly over
// maxGroups groups (minGroups, else up to three clusters).
func (w *world) initialSchedule(b *binding) []failover.TargetCluster {
	p := &b.spec.Placement
	affinity := p.ClusterAffinity
	if len(p.ClusterAffinities) > 0 {
		// The scheduler starts with the first group of clusters.
		affinity = &p.ClusterAffinities[0].ClusterAffinity
	}
	var eligible []string
	for _, c := range w.clusters {
		ok, err := affinity.Matches(c.Cluster)
		if err == nil && ok && !failover.IsFaulty(c.Cluster) && tolerates(p.ClusterTolerations, &c.Cluster) {
			eligible = append(eligible, c.Name)
		}
	}
	byLoad(eligible, w.load)
	field, minG, maxG := spreadField(p)
	want := maxG
	if want == 0 {
		want = minG
	}
	if want == 0 {
		if b.spec.divided() {
			want = 3
		} else {
			want = len(eligible)
		}
	}
	var chosen []string
	seen := map[string]bool{}
	for _, name := range eligible {
		if len(chosen) == want {
			break
		}
		g := groupOf(&w.byName[name].Cluster, field)
		if seen[g] {
			continue
		}
		seen[g] = true
		chosen = append(chosen, name)
	}
	if b.spec.divided() && int32(len(chosen)) > b.spec.Replicas {
		chosen = chosen[:b.spec.Replicas]
	}
	sort.Strings(chosen)
	out := make([]failover.TargetCluster, len(chosen))
	for i, name := range chosen {
		out[i].Name = name
	}
	if b.spec.divided() {
		spreadReplicas(out, b.spec.Replicas, w.load)
	}
	return out
}

// spreadReplicas adds n replicas to targets, evenly, the remainder going to
// the least loaded first.
func spreadReplicas(targets []failover.TargetCluster, n int32, load map[string]int) {
	if len(targets) == 0 {
		return
	}
	idx := make([]int, len(targets))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		return load[targets[idx[a]].Name] < load[targets[idx[b]].Name]
	})
	each, rest := n/int32(len(targets)), n%int32(len(targets))
	for k, i := range idx {
		targets[i].Replicas += each
		if int32(k) < rest {
			targets[i].Replicas++
		}
	}
}

// reschedule finds where the copy evicted from `from` goes, among the
// candidates the pre-scheduling check found, and returns the new schedule
// result. It returns the result unchanged when it finds nowhere to go, which
// the run reports as an eviction without a target.
//
// Duplicated: one new cluster, preferring (1) a cluster where an open
// graceful eviction task says an old copy still runs, since going back there
// ends that task, (2) a spread group the remaining copies do not cover yet,
// (3) the least loaded; capacity is not consulted, as the check does not for
// duplicated workloads. Divided: the evicted replicas go to the clusters the
// binding still runs on when they meet the spread minimum (Karmada's
// member1/member2 example), else to the least loaded new clusters too, each
// within its spare capacity.
func (w *world) reschedule(b *binding, from string, evicted int32, candidates []string) []failover.TargetCluster {
	result := slices.Clone(b.gb.Clusters)
	scheduled := map[string]bool{}
	for _, t := range result {
		scheduled[t.Name] = true
	}
	var fresh, kept []string
	for _, name := range candidates {
		if name == from || w.byName[name] == nil {
			continue
		}
		if scheduled[name] {
			kept = append(kept, name)
		} else {
			fresh = append(fresh, name)
		}
	}
	byLoad(fresh, w.load)
	field, minG, _ := spreadField(&b.spec.Placement)
	if !b.spec.divided() {
		if len(fresh) == 0 {
			return result
		}
		covered := map[string]bool{}
		for _, t := range result {
			covered[groupOf(&w.byName[t.Name].Cluster, field)] = true
		}
		home := map[string]bool{}
		for _, t := range b.gb.Tasks {
			home[t.FromCluster] = true
		}
		rank := func(name string) int {
			r := 2
			if !covered[groupOf(&w.byName[name].Cluster, field)] {
				r = 1
			}
			if home[name] {
				r = 0
			}
			return r
		}
		sort.SliceStable(fresh, func(i, j int) bool { return rank(fresh[i]) < rank(fresh[j]) })
		result = append(result, failover.TargetCluster{Name: fresh[0]})
		sortTargets(result)
		return result
	}
	// Divided: the clusters it still runs on when they are enough for the
	// spread minimum, else the least loaded new ones up to it; each takes
	// the evicted replicas one at a time, round robin, as far as its spare
	// capacity goes; what does not fit spills onto further new clusters.
	need := max(minG, 1)
	into := slices.Clone(kept)
	rest := fresh
	for len(into) < need && len(rest) > 0 {
		into, rest = append(into, rest[0]), rest[1:]
	}
	byLoad(into, w.load)
	adds := map[string]int32{}
	room := func(name string) bool {
		spare, known := w.spare(name)
		return !known || spare-adds[name] > 0
	}
	remaining := evicted
	fill := func(names []string) {
		for progress := true; remaining > 0 && progress; {
			progress = false
			for _, name := range names {
				if remaining > 0 && room(name) {
					adds[name]++
					remaining--
					progress = true
				}
			}
		}
	}
	fill(into)
	for _, name := range rest {
		if remaining == 0 {
			break
		}
		fill([]string{name})
	}
	var added []failover.TargetCluster
	for name, n := range adds {
		added = append(added, failover.TargetCluster{Name: name, Replicas: n})
	}
	return mergeSchedule(result, added)
}

func sortTargets(ts []failover.TargetCluster) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
}

package prescheduling

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/failoverkit/failover"
)

// byteReader hands out fuzz bytes; zero once they run out.
type byteReader []byte

func (r *byteReader) next() byte {
	if len(*r) == 0 {
		return 0
	}
	b := (*r)[0]
	*r = (*r)[1:]
	return b
}

func (r *byteReader) pick(xs ...string) string { return xs[int(r.next())%len(xs)] }

func (r *byteReader) affinity() *failover.ClusterAffinity {
	flags := r.next()
	if flags&1 == 0 {
		return nil
	}
	a := &failover.ClusterAffinity{}
	if flags&2 != 0 {
		a.LabelSelector = &metav1.LabelSelector{}
		if flags&4 != 0 {
			a.LabelSelector.MatchLabels = map[string]string{r.pick("team", "tier", "bad key!"): r.pick("team-eu", "gold", "")}
		}
		if flags&8 != 0 {
			a.LabelSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{
				Key: r.pick("team", "tier"), Operator: metav1.LabelSelectorOperator(r.pick("In", "NotIn", "Exists", "DoesNotExist", "Near")),
				Values: []string{r.pick("team-eu", "gold", "silver")}[:r.next()%2]}}
		}
	}
	if flags&16 != 0 {
		a.FieldSelector = &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: r.pick("region", "zone", "provider", "country"), Operator: corev1.NodeSelectorOperator(r.pick("In", "NotIn", "Exists", "DoesNotExist", "Gt")),
			Values: []string{r.pick("eu", "us-east", "aws", "eu-1a", "bad value!")}[:r.next()%2]}}}
	}
	if flags&32 != 0 {
		a.ClusterNames = []string{r.pick("a1", "a2", "b1", "c1"), r.pick("a1", "c2", "x")}
	}
	if flags&64 != 0 {
		a.ExcludeClusters = []string{r.pick("a1", "a2", "b1", "c1", "c2")}
	}
	return a
}

func (r *byteReader) cluster(i int) failover.Cluster {
	c := failover.Cluster{
		Name:     fmt.Sprintf("%s%d", r.pick("a", "b", "c"), i),
		Provider: r.pick("aws", "gcp", ""),
		Region:   r.pick("eu", "us-east", ""),
		Zone:     r.pick("eu-1a", "us-east-1a", ""),
		Labels:   map[string]string{"team": r.pick("team-eu", "team-us"), "tier": r.pick("gold", "silver")},
	}
	if r.next()%4 == 0 {
		c.Name = r.pick("a1", "a2", "b1", "c1", "c2")
	}
	if b := r.next(); b%5 == 0 { // spans zones, and then Zone is ignored
		c.Zones = []string{r.pick("eu-1a", "eu-1b", "us-east-1a"), r.pick("eu-1a", "us-east-1a", "us-east-1b")}[:1+b%2]
	}
	switch r.next() % 6 {
	case 1:
		c.Taints = []corev1.Taint{noSchedule}
	case 2:
		c.Taints = []corev1.Taint{notReady}
	case 3:
		c.Taints = []corev1.Taint{preferNoExec}
	}
	return c
}

// checkSelectsAsRoot builds a placement from fuzz bytes (a clusterAffinity,
// or two clusterAffinities terms, and sometimes a static weight list) and a
// fleet of uniquely named clusters, and checks that Check selects exactly as
// failover.ClusterAffinity.Matches, the one definition of an affinity: its
// candidates are the healthy, tolerating clusters the first term with any
// selects (and a weight's targetCluster selects), and an affinity the root
// rejects makes Check fail with an error naming the placement field.
func checkSelectsAsRoot(t *testing.T, data []byte) {
	r := byteReader(data)
	var p Placement
	var terms []*failover.ClusterAffinity
	termPaths := []string{"clusterAffinity"}
	if r.next()%2 == 0 {
		p.ClusterAffinity = r.affinity()
		terms = []*failover.ClusterAffinity{p.ClusterAffinity}
	} else {
		termPaths = []string{"clusterAffinities[0]", "clusterAffinities[1]"}
		for _, name := range []string{"x", "y"} {
			term := ClusterAffinityTerm{AffinityName: name}
			if a := r.affinity(); a != nil {
				term.ClusterAffinity = *a
			}
			p.ClusterAffinities = append(p.ClusterAffinities, term)
		}
		terms = []*failover.ClusterAffinity{&p.ClusterAffinities[0].ClusterAffinity, &p.ClusterAffinities[1].ClusterAffinity}
	}
	var weight *failover.ClusterAffinity
	if r.next()%3 == 0 {
		w := StaticClusterWeight{Weight: 1}
		if a := r.affinity(); a != nil {
			w.TargetCluster = *a
		}
		p.ReplicaScheduling = &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: ReplicaDivisionPreferenceWeighted, WeightPreference: &ClusterPreferences{StaticWeightList: []StaticClusterWeight{w}}}
		weight = &p.ReplicaScheduling.WeightPreference.StaticWeightList[0].TargetCluster
	}
	var fleet []failover.Cluster
	for i := range 10 {
		c := r.cluster(i)
		if !slices.ContainsFunc(fleet, func(x failover.Cluster) bool { return x.Name == c.Name }) {
			fleet = append(fleet, c)
		}
	}
	// The evicted cluster is not in the fleet, so every fleet cluster is a
	// possible target for either replica scheduling type.
	req := Request{Placement: p, Scheduled: []failover.TargetCluster{{Name: "gone", Replicas: 1}}, Evicting: []string{"gone"}}
	got := mustChecker().Check(req, fleet)

	paths := append(termPaths, "replicaScheduling.weightPreference.staticWeightList[0].targetCluster")
	for i, a := range append(terms, weight) {
		if err := a.Validate(); err != nil {
			if got.Err == nil {
				t.Fatalf("placement.%s: root rejects it (%v) but Check accepts", paths[i], err)
			}
			var ae *failover.AffinityError
			require.ErrorAs(t, err, &ae)
			assert.Contains(t, got.Err.Error(), "prescheduling: placement."+paths[i]+"."+ae.Field+": "+ae.Err.Error())
			assert.NotContains(t, got.Err.Error(), "failover:", "the placement path replaces the root's")
			return
		}
	}
	require.NoError(t, got.Err)

	var want []string
	term := 0
	for ti, a := range terms {
		want = want[:0]
		for _, c := range fleet {
			ok, err := a.Matches(c)
			require.NoError(t, err)
			inWeight, err := weight.Matches(c)
			require.NoError(t, err)
			if ok && inWeight && !failover.IsFaulty(c) && !slices.ContainsFunc(c.Taints, func(x corev1.Taint) bool { return x.Effect == corev1.TaintEffectNoSchedule }) {
				want = append(want, c.Name)
			}
		}
		if len(want) > 0 {
			term = ti
			break
		}
	}
	slices.Sort(want)
	if len(want) == 0 {
		want = nil
	}
	if !slices.Equal(got.Candidates, want) {
		t.Fatalf("candidates %q, root selects %q\nplacement %+v\nfleet %+v", got.Candidates, want, p, fleet)
	}
	if len(p.ClusterAffinities) > 0 && len(want) > 0 {
		assert.Equal(t, p.ClusterAffinities[term].AffinityName, got.AffinityName)
	}
}

// FuzzCheckSelectsAsRoot explores checkSelectsAsRoot; TestCheckSelectsAsRoot
// runs it on a fixed sample.
func FuzzCheckSelectsAsRoot(f *testing.F) {
	f.Add([]byte{0, 0xff, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{1, 0x13, 0, 0, 0, 1, 1, 0x61, 3, 0, 0})
	f.Fuzz(checkSelectsAsRoot)
}

// FuzzCheck builds requests and fleets from arbitrary bytes: Check never
// panics, an invalid request always carries Err, Candidates are sorted and
// are never evicting or faulty clusters, and a feasible Duplicated answer has
// enough candidates.
func FuzzCheck(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add([]byte{0xff, 0xfe, 0x80, 0x7f, 3, 3, 3, 3})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := byteReader(data)
		var p Placement
		if r.next()%3 == 0 {
			for i := range int(r.next() % 3) {
				p.ClusterAffinities = append(p.ClusterAffinities, ClusterAffinityTerm{AffinityName: r.pick("x", "y", "z", "")})
				if a := r.affinity(); a != nil {
					p.ClusterAffinities[i].ClusterAffinity = *a
				}
			}
		} else {
			p.ClusterAffinity = r.affinity()
		}
		for range int(r.next() % 3) {
			p.SpreadConstraints = append(p.SpreadConstraints, SpreadConstraint{
				SpreadByField: SpreadFieldValue(r.pick("", "cluster", "region", "zone", "provider", "country")),
				SpreadByLabel: r.pick("", "", "team"), MinGroups: int(int8(r.next())) % 5, MaxGroups: int(int8(r.next())) % 5})
		}
		if r.next()%2 == 0 {
			p.ClusterTolerations = []corev1.Toleration{{Key: r.pick("maintenance", ""), Operator: corev1.TolerationOperator(r.pick("Exists", "Equal", "", "Lt")),
				Value: r.pick("", "true"), Effect: corev1.TaintEffect(r.pick("", "NoSchedule", "NoExecute", "Bogus"))}}
		}
		switch r.next() % 4 {
		case 1:
			p.ReplicaScheduling = &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingType(r.pick("Duplicated", "Divided", "", "Bogus"))}
		case 2:
			p.ReplicaScheduling = &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: ReplicaDivisionPreferenceWeighted,
				WeightPreference: &ClusterPreferences{StaticWeightList: []StaticClusterWeight{{Weight: int64(int8(r.next())) % 3}}}}
			if a := r.affinity(); a != nil {
				p.ReplicaScheduling.WeightPreference.StaticWeightList[0].TargetCluster = *a
			}
		}
		fleet := make([]failover.Cluster, int(r.next()%12))
		for i := range fleet {
			fleet[i] = r.cluster(i)
		}
		req := Request{Placement: p}
		for range int(r.next() % 4) {
			req.Scheduled = append(req.Scheduled, failover.TargetCluster{Name: r.pick("a1", "a2", "b1", "c1", "c2", "", "x"), Replicas: int32(int8(r.next())) % 4})
		}
		for range int(r.next() % 3) {
			req.Evicting = append(req.Evicting, r.pick("a1", "a2", "b1", "c1", "c2", "", "x"))
		}
		var opts []Option
		var capacity func(string) (int32, bool)
		if r.next()%2 == 0 {
			cap := int32(int8(r.next()))
			capacity = func(c string) (int32, bool) { return cap, c != "a2" }
			opts = append(opts, WithCapacity(capacity))
		}

		got := mustChecker(opts...).Check(req, fleet)

		if got.Err == nil && uniqueNames(fleet) {
			// Feasible is a promise: never without a choice the joint rule
			// accepts, unless Reason says what the library could not check.
			// Infeasible is certain.
			want := plainFeasible(req, fleet, capacity)
			if got.Feasible != want && (!got.Feasible || !strings.Contains(got.Reason, "could not check")) {
				t.Fatalf("Feasible %v, DESIGN's rules read plainly give %v: %s", got.Feasible, want, got.Reason)
			}
		}

		if got.Reason == "" {
			t.Fatal("empty Reason")
		}
		if got.Err != nil && got.Feasible {
			t.Fatalf("feasible with error %v", got.Err)
		}
		if p.Validate() != nil && got.Err == nil {
			t.Fatalf("invalid placement accepted: %v", p.Validate())
		}
		if !slices.IsSorted(got.Candidates) {
			t.Fatalf("candidates not sorted: %v", got.Candidates)
		}
		for _, c := range got.Candidates {
			if slices.Contains(req.Evicting, c) {
				t.Fatalf("candidate %q is being evicted from", c)
			}
			// Names are unique in a real fleet; here some entry of that
			// name must be healthy.
			if !slices.ContainsFunc(fleet, func(x failover.Cluster) bool { return x.Name == c && !failover.IsFaulty(x) }) {
				t.Fatalf("candidate %q is not a healthy fleet cluster", c)
			}
		}
		if got.Feasible && p.duplicated() {
			evicted := 0
			for _, s := range req.Scheduled {
				if slices.Contains(req.Evicting, s.Name) {
					evicted++
				}
			}
			if len(got.Candidates) < evicted {
				t.Fatalf("feasible with %d candidates for %d copies", len(got.Candidates), evicted)
			}
		}
	})
}

func uniqueNames(fleet []failover.Cluster) bool {
	seen := map[string]bool{}
	for _, c := range fleet {
		if seen[c.Name] {
			return false
		}
		seen[c.Name] = true
	}
	return true
}

// plainFeasible restates DESIGN's feasibility rules the plain way, for a
// fleet of uniquely named clusters and a valid request, trying every choice
// of clusters to add. The joint rule: some set of eligible clusters added to
// the remaining ones (at least one per evicted copy for Duplicated; for
// Divided, so that some eligible cluster takes the replicas) makes every
// spread constraint hold at once, counted over remaining plus added; for
// Divided with capacities, the clusters that take replicas in that very
// choice have room for them (or one's capacity is unknown). Karmada ignores
// the spread constraints of a Divided placement weighted by a static list.
func plainFeasible(req Request, fleet []failover.Cluster, capacity func(string) (int32, bool)) bool {
	p := req.Placement
	scheduled, evicting := map[string]bool{}, map[string]bool{}
	for _, e := range req.Evicting {
		evicting[e] = true
	}
	var evicted []failover.TargetCluster
	var remaining []string
	for _, s := range req.Scheduled {
		scheduled[s.Name] = true
		if evicting[s.Name] {
			evicted = append(evicted, s)
		} else {
			remaining = append(remaining, s.Name)
		}
	}
	if len(evicted) == 0 {
		return false
	}
	byName := map[string]failover.Cluster{}
	for _, c := range fleet {
		byName[c.Name] = c
	}
	// groupsOf returns the groups of c: a cluster counts in each of its
	// zones (Zones when set, else Zone).
	groupsOf := func(sc SpreadConstraint, c failover.Cluster) []string {
		var g string
		switch {
		case sc.SpreadByLabel != "":
			g = c.Labels[sc.SpreadByLabel]
		case sc.SpreadByField == SpreadByFieldRegion:
			g = c.Region
		case sc.SpreadByField == SpreadByFieldZone:
			if len(c.Zones) > 0 {
				return c.Zones
			}
			g = c.Zone
		case sc.SpreadByField == SpreadByFieldProvider:
			g = c.Provider
		default:
			g = c.Name
		}
		if g == "" {
			return nil
		}
		return []string{g}
	}
	groups := func(sc SpreadConstraint, picked []failover.Cluster) int {
		seen := map[string]bool{}
		for _, n := range remaining {
			if c, ok := byName[n]; ok {
				for _, g := range groupsOf(sc, c) {
					seen[g] = true
				}
			} else if sc.SpreadByLabel == "" && (sc.SpreadByField == "" || sc.SpreadByField == SpreadByFieldCluster) {
				seen[n] = true
			}
		}
		for _, c := range picked {
			for _, g := range groupsOf(sc, c) {
				seen[g] = true
			}
		}
		return len(seen)
	}

	duplicated := p.ReplicaScheduling == nil || p.ReplicaScheduling.ReplicaSchedulingType == ReplicaSchedulingTypeDuplicated
	var weights []StaticClusterWeight
	ignoreSpread := false
	if rs := p.ReplicaScheduling; !duplicated && rs.ReplicaDivisionPreference == ReplicaDivisionPreferenceWeighted {
		if rs.WeightPreference != nil && rs.WeightPreference.DynamicWeight == "" {
			weights = rs.WeightPreference.StaticWeightList
		}
		ignoreSpread = rs.WeightPreference == nil || len(weights) > 0
	}
	var want int64
	for _, e := range evicted {
		want += int64(e.Replicas)
	}
	terms := []*failover.ClusterAffinity{p.ClusterAffinity}
	if len(p.ClusterAffinities) > 0 {
		terms = nil
		for i := range p.ClusterAffinities {
			terms = append(terms, &p.ClusterAffinities[i].ClusterAffinity)
		}
	}
	for _, term := range terms {
		var cands []failover.Cluster
	fleet:
		for _, c := range fleet {
			if evicting[c.Name] || failover.IsFaulty(c) || (duplicated && scheduled[c.Name]) {
				continue
			}
			if ok, _ := term.Matches(c); !ok {
				continue
			}
			for _, taint := range c.Taints {
				if taint.Effect == corev1.TaintEffectNoSchedule && !slices.ContainsFunc(p.ClusterTolerations, func(tol corev1.Toleration) bool {
					return tol.ToleratesTaint(klog.Logger{}, &taint, false)
				}) {
					continue fleet
				}
			}
			for _, sc := range p.SpreadConstraints {
				if len(groupsOf(sc, c)) == 0 {
					continue fleet
				}
			}
			if weights != nil && !slices.ContainsFunc(weights, func(w StaticClusterWeight) bool { ok, _ := w.TargetCluster.Matches(c); return ok }) {
				continue
			}
			cands = append(cands, c)
		}
		var kept, fresh []failover.Cluster
		for _, c := range cands {
			if scheduled[c.Name] {
				kept = append(kept, c)
			} else {
				fresh = append(fresh, c)
			}
		}
		for mask := range 1 << len(fresh) {
			var added []failover.Cluster
			for i, c := range fresh {
				if mask&(1<<i) != 0 {
					added = append(added, c)
				}
			}
			takers := append(slices.Clip(kept), added...)
			if duplicated && len(added) < len(evicted) || !duplicated && len(takers) == 0 {
				continue
			}
			ok := true
			for _, sc := range p.SpreadConstraints {
				n := groups(sc, added)
				ok = ok && (ignoreSpread || n >= sc.MinGroups && (sc.MaxGroups == 0 || n <= sc.MaxGroups))
			}
			if ok && !duplicated && capacity != nil {
				var spare int64
				unknown := false
				for _, c := range takers {
					n, known := capacity(c.Name)
					unknown = unknown || !known
					if known && n > 0 {
						spare += int64(n)
					}
				}
				ok = spare >= want || unknown
			}
			if ok {
				return true
			}
		}
	}
	return false
}

// TestCheckAgreesWithTheJointRule draws requests where spread constraints
// bind (a few clusters in two or three regions, constraints by region, zone,
// label and cluster with small bounds, Duplicated and Divided, capacities
// short and unknown) and holds Check to plainFeasible, as FuzzCheck does.
func TestCheckAgreesWithTheJointRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 2026))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for iter := range 4000 {
		var fleet []failover.Cluster
		for i := range 3 + rng.IntN(7) {
			region := pick("eu", "us", "ap")
			c := failover.Cluster{Name: fmt.Sprintf("m%d", i), Region: region, Zone: region + pick("-a", "-b"),
				Labels: map[string]string{"team": pick("x", "y")}}
			if rng.IntN(6) == 0 {
				c.Zones = []string{region + "-a", region + "-b"}
			}
			if rng.IntN(8) == 0 {
				c.Taints = []corev1.Taint{notReady}
			}
			fleet = append(fleet, c)
		}
		var p Placement
		for range 1 + rng.IntN(3) {
			sc := SpreadConstraint{SpreadByField: SpreadFieldValue(pick("cluster", "region", "region", "zone", "")), MinGroups: rng.IntN(4)}
			if sc.SpreadByField == "" {
				sc.SpreadByLabel = "team"
			}
			if rng.IntN(3) > 0 {
				sc.MaxGroups = max(sc.MinGroups, 1) + rng.IntN(2)
			}
			p.SpreadConstraints = append(p.SpreadConstraints, sc)
		}
		if rng.IntN(2) == 0 {
			p.ReplicaScheduling = divided
		}
		req := Request{Placement: p}
		for _, i := range rng.Perm(len(fleet))[:1+rng.IntN(len(fleet)/2+1)] {
			req.Scheduled = append(req.Scheduled, failover.TargetCluster{Name: fleet[i].Name, Replicas: int32(rng.IntN(50))})
		}
		if rng.IntN(4) == 0 {
			req.Scheduled = append(req.Scheduled, failover.TargetCluster{Name: "gone", Replicas: 60})
		}
		req.Evicting = []string{req.Scheduled[rng.IntN(len(req.Scheduled))].Name}
		var capacity func(string) (int32, bool)
		var opts []Option
		if rng.IntN(2) == 0 {
			spare := map[string]int32{}
			for _, c := range fleet {
				spare[c.Name] = int32(rng.IntN(40))
			}
			unknown := pick("m0", "none")
			capacity = func(c string) (int32, bool) { return spare[c], c != unknown }
			opts = append(opts, WithCapacity(capacity))
		}
		got := mustChecker(opts...).Check(req, fleet)
		if got.Err != nil {
			continue // two constraints of one kind that cannot both hold
		}
		want := plainFeasible(req, fleet, capacity)
		if got.Feasible != want && (!got.Feasible || !strings.Contains(got.Reason, "could not check")) {
			t.Fatalf("iteration %d: Feasible %v, the joint rule gives %v: %s\nplacement %+v\nscheduled %+v evicting %v\nfleet %+v",
				iter, got.Feasible, want, got.Reason, p, req.Scheduled, req.Evicting, fleet)
		}
	}
}

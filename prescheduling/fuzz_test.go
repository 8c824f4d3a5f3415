package prescheduling

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

	// The scheduler uses the first term that selects a cluster without a
	// NoSchedule or NoExecute taint (the placement tolerates none), and
	// the candidates are those of them that are not faulty either. A static
	// weight decides which of them get replicas, not which are candidates.
	var want []string
	term := 0
	for ti, a := range terms {
		want = want[:0]
		passing := false
		for _, c := range fleet {
			ok, err := a.Matches(c)
			require.NoError(t, err)
			if !ok || slices.ContainsFunc(c.Taints, func(x corev1.Taint) bool {
				return x.Effect == corev1.TaintEffectNoSchedule || x.Effect == corev1.TaintEffectNoExecute
			}) {
				continue
			}
			passing = true
			if !failover.IsFaulty(c) {
				want = append(want, c.Name)
			}
		}
		if passing {
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
	if len(p.ClusterAffinities) > 0 && got.Feasible {
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
		p := r.placement()
		fleet := make([]failover.Cluster, int(r.next()%12))
		for i := range fleet {
			fleet[i] = r.cluster(i)
		}
		req := r.request(p)
		var opts []Option
		if r.next()%2 == 0 {
			cap := int32(int8(r.next()))
			opts = append(opts, WithCapacity(func(c string) (int32, bool) { return cap, c != "a2" }))
		}

		req.ObservedAffinityName = r.pick("", "y", "none")
		req.ResourceUID = r.pick("", "uid-1", "uid-2")

		// Whether Karmada's scheduler agrees is the karmada module's
		// differential test; here, what holds whatever the input.
		got := mustChecker(opts...).Check(req, fleet)

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

// placement builds a placement from fuzz bytes: an affinity or affinity
// terms, spread constraints, a toleration, a replica scheduling strategy,
// each maybe invalid.
func (r *byteReader) placement() Placement {
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
	return p
}

// request builds a request for p from fuzz bytes: a schedule result and
// the clusters evicted from, each maybe invalid.
func (r *byteReader) request(p Placement) Request {
	req := Request{Placement: p}
	for range int(r.next() % 4) {
		req.Scheduled = append(req.Scheduled, failover.TargetCluster{Name: r.pick("a1", "a2", "b1", "c1", "c2", "", "x"), Replicas: int32(int8(r.next())) % 4})
	}
	for range int(r.next() % 3) {
		req.Evicting = append(req.Evicting, r.pick("a1", "a2", "b1", "c1", "c2", "", "x"))
	}
	return req
}

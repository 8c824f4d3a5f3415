package karmada_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/prescheduling"
)

// Fleet.Check answers as prescheduling.Check with Capacity on the same
// clusters: on the differential test's generated failovers, the Fleet fed
// the fleet before the failure and then, one cluster at a time, the fleet
// after it, but for some clusters given as fresh reads instead (one gone),
// field by field.
func TestFleetCheckAnswersAsCheck(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 2))
	compared, feasible := 0, 0
	for compared < 1000 {
		s := randSource{r}
		c := genCase(s)
		if c == nil {
			continue
		}
		compared++
		req, err := karmada.PreschedulingRequest(c.spec, c.evicting...)
		require.NoError(t, err)
		req.ObservedAffinityName = c.observed

		var f engine.Fleet
		for _, cl := range c.before {
			_, err := f.Set(cl)
			require.NoError(t, err)
		}
		// Asked before the failure too, so that the Fleet's index follows
		// the changes to a placement it already remembers.
		_ = f.Check(req, c.spec.ReplicaRequirements)
		var fresh []engine.Fresh
		var list []clusterv1alpha1.Cluster
		for _, cl := range c.after {
			switch s.intn(6) {
			case 0: // read afresh: the Fleet still holds the cluster before
				fr, err := engine.FreshCluster(cl)
				require.NoError(t, err)
				fresh = append(fresh, fr)
				list = append(list, *cl)
			case 1: // gone, though the Fleet still holds it
				fresh = append(fresh, engine.GoneCluster(cl.Name))
			default:
				_, err := f.Set(cl)
				require.NoError(t, err)
				list = append(list, *cl)
			}
		}
		slices.SortFunc(list, func(a, b clusterv1alpha1.Cluster) int { return cmp.Compare(a.Name, b.Name) })
		fleet := make([]failover.Cluster, len(list))
		for i := range list {
			fleet[i], err = karmada.FromCluster(&list[i])
			require.NoError(t, err)
		}
		checker, err := prescheduling.NewChecker(prescheduling.WithCapacity(karmada.Capacity(list, c.spec.ReplicaRequirements)))
		require.NoError(t, err)
		want := checker.Check(req, fleet)
		got := f.Check(req, c.spec.ReplicaRequirements, fresh...)
		at := fmt.Sprintf("case %d:\n%v", compared, c)
		assert.Equal(t, want.Feasible, got.Feasible, at)
		assert.Equal(t, want.Code, got.Code, at)
		assert.Equal(t, want.Reason, got.Reason, at)
		assert.Equal(t, want.Candidates, got.Candidates, at)
		assert.Equal(t, want.Moves, got.Moves, at)
		assert.Equal(t, want.PlacedByRoom, got.PlacedByRoom, at)
		assert.Equal(t, want.AffinityName, got.AffinityName, at)
		assert.Equal(t, fmt.Sprint(want.Err), fmt.Sprint(got.Err), at)
		if t.Failed() {
			return
		}
		if want.Feasible {
			feasible++
		}
	}
	t.Logf("%d cases, %d feasible", compared, feasible)
	assert.Greater(t, feasible, compared/4, "too few feasible answers to prove the Fleet's index")
}

// A cluster whose taints do not convert is no target, in the Fleet as read
// afresh: FreshCluster says why, and the check leaves it out.
func TestFreshClusterThatDoesNotConvert(t *testing.T) {
	var f engine.Fleet
	for _, cl := range []*clusterv1alpha1.Cluster{member("a", "R1", 5), member("b", "R1", 5), member("c", "R1", 5)} {
		_, err := f.Set(cl)
		require.NoError(t, err)
	}
	req := prescheduling.Request{Scheduled: []failover.TargetCluster{{Name: "c", Replicas: 1}}, Evicting: []string{"c"}}
	assert.Equal(t, []string{"a", "b"}, f.Check(req, nil).Candidates)

	bogus := member("a", "R1", 5)
	bogus.Spec.Taints = []corev1.Taint{{Key: "x", Effect: "Bogus"}}
	fr, err := engine.FreshCluster(bogus)
	assert.ErrorContains(t, err, "Bogus")
	assert.Equal(t, []string{"b"}, f.Check(req, nil, fr).Candidates)
	assert.Equal(t, []string{"b"}, f.Check(req, nil, engine.GoneCluster("a")).Candidates)
}

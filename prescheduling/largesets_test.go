package prescheduling

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/failoverkit/failover"
)

// A long clusterNames list, a long exclude list and many schedule entries
// take the map-backed paths; the answers stay those of the small paths.
func TestCheckWithLargeSets(t *testing.T) {
	fleet := make([]failover.Cluster, 200)
	var all, evens []string
	for i := range fleet {
		name := fmt.Sprintf("m%03d", i)
		fleet[i] = failover.Cluster{Name: name, Region: fmt.Sprintf("r%d", i%50), Labels: map[string]string{"rack": fmt.Sprintf("rack-%d", i%100)}}
		all = append(all, name)
		if i%2 == 0 {
			evens = append(evens, name)
		}
	}
	var scheduled []failover.TargetCluster
	for _, n := range all[:20] {
		scheduled = append(scheduled, failover.TargetCluster{Name: n})
	}
	req := Request{
		Placement: Placement{
			ClusterAffinity:   &failover.ClusterAffinity{ClusterNames: evens, ExcludeClusters: all[100:]},
			SpreadConstraints: []SpreadConstraint{{MinGroups: 45, MaxGroups: 100}},
		},
		Scheduled: scheduled,
		Evicting:  all[:10],
	}
	got := mustChecker().Check(req, fleet)
	assert.True(t, got.Feasible, got.Reason)
	assert.Equal(t, evens[10:50], got.Candidates, "even, below m100, not scheduled")

	// The clusters it keeps that the affinity still selects (the even ones
	// of m010-m019) and the candidates make 45.
	req.Placement.SpreadConstraints[0].MinGroups = 46
	got = mustChecker().Check(req, fleet)
	assert.False(t, got.Feasible)
	assert.Contains(t, got.Reason, "spreadConstraints[0] needs at least 46 clusters, but the remaining and eligible clusters span only 45 clusters")

	req.Scheduled = append(req.Scheduled, failover.TargetCluster{Name: "m005"})
	got = mustChecker().Check(req, fleet)
	assert.EqualError(t, got.Err, `prescheduling: request.scheduled[20].name: "m005" is also request.scheduled[5]`)
}

// Check selects exactly as failover.ClusterAffinity.Matches on a fixed
// pseudo-random sample of placements and fleets (FuzzCheckSelectsAsRoot
// explores further).
func TestCheckSelectsAsRoot(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	data := make([]byte, 96)
	for range 2000 {
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		checkSelectsAsRoot(t, data)
		if t.Failed() {
			return
		}
	}
}

package karmada_test

import (
	"errors"
	"testing"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/prescheduling"
)

func nodeReq(key, op string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOperator(op), Values: values}
}

// The Duplicated example of Karmada's failover documentation: two copies
// over four allowed clusters, spread over exactly two.
const duplicatedPolicy = `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: nginx
  placement:
    clusterAffinity:
      clusterNames: [member1, member2, member3, member5]
    spreadConstraints:
    - maxGroups: 2
      minGroups: 2
    replicaScheduling:
      replicaSchedulingType: Duplicated
`

// Its Divided example: member1 weighs 1, member2 weighs 2.
const dividedPolicy = `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: nginx
  placement:
    clusterAffinity:
      clusterNames: [member1, member2]
    clusterTolerations:
    - key: cluster.karmada.io/not-ready
      operator: Exists
      effect: NoExecute
      tolerationSeconds: 300
    replicaScheduling:
      replicaDivisionPreference: Weighted
      replicaSchedulingType: Divided
      weightPreference:
        staticWeightList:
        - targetCluster:
            clusterNames: [member1]
          weight: 1
        - targetCluster:
            clusterNames: [member2]
          weight: 2
  failover:
    cluster:
      purgeMode: Directly
`

func TestFromPlacement(t *testing.T) {
	secs := int64(300)
	for _, tc := range []struct {
		name string
		doc  string
		want prescheduling.Placement
	}{
		{"Duplicated with spread constraints", duplicatedPolicy, prescheduling.Placement{
			ClusterAffinity:   &failover.ClusterAffinity{ClusterNames: []string{"member1", "member2", "member3", "member5"}},
			SpreadConstraints: []prescheduling.SpreadConstraint{{MaxGroups: 2, MinGroups: 2}},
			ReplicaScheduling: &prescheduling.ReplicaSchedulingStrategy{ReplicaSchedulingType: prescheduling.ReplicaSchedulingTypeDuplicated},
		}},
		{"Divided by static weights, with tolerations", dividedPolicy, prescheduling.Placement{
			ClusterAffinity: &failover.ClusterAffinity{ClusterNames: []string{"member1", "member2"}},
			ClusterTolerations: []corev1.Toleration{{Key: "cluster.karmada.io/not-ready", Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs}},
			ReplicaScheduling: &prescheduling.ReplicaSchedulingStrategy{
				ReplicaSchedulingType:     prescheduling.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: prescheduling.ReplicaDivisionPreferenceWeighted,
				WeightPreference: &prescheduling.ClusterPreferences{StaticWeightList: []prescheduling.StaticClusterWeight{
					{TargetCluster: failover.ClusterAffinity{ClusterNames: []string{"member1"}}, Weight: 1},
					{TargetCluster: failover.ClusterAffinity{ClusterNames: []string{"member2"}}, Weight: 2},
				}},
			},
		}},
		{"ordered cluster groups, selectors by label and field", `
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: nginx}]
  placement:
    clusterAffinities:
    - affinityName: primary
      labelSelector:
        matchLabels: {dc: local}
    - affinityName: backup
      fieldSelector:
        matchExpressions:
        - {key: region, operator: In, values: [us-east-1]}
      exclude: [member9]
    spreadConstraints:
    - {spreadByField: region, minGroups: 1, maxGroups: 1}
    - {spreadByLabel: rack, minGroups: 2}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
`, prescheduling.Placement{
			ClusterAffinities: []prescheduling.ClusterAffinityTerm{
				{AffinityName: "primary", ClusterAffinity: failover.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"dc": "local"}}}},
				{AffinityName: "backup", ClusterAffinity: failover.ClusterAffinity{
					FieldSelector:   &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{nodeReq("region", "In", "us-east-1")}},
					ExcludeClusters: []string{"member9"},
				}},
			},
			SpreadConstraints: []prescheduling.SpreadConstraint{
				{SpreadByField: prescheduling.SpreadByFieldRegion, MinGroups: 1, MaxGroups: 1},
				{SpreadByLabel: "rack", MinGroups: 2},
			},
			ReplicaScheduling: &prescheduling.ReplicaSchedulingStrategy{
				ReplicaSchedulingType:     prescheduling.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: prescheduling.ReplicaDivisionPreferenceWeighted,
				WeightPreference:          &prescheduling.ClusterPreferences{DynamicWeight: prescheduling.DynamicWeightByAvailableReplicas},
			},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pp := decode[policyv1alpha1.PropagationPolicy](t, tc.doc)
			got, err := karmada.FromPlacement(&pp.Spec.Placement)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	got, err := karmada.FromPlacement(nil)
	require.NoError(t, err)
	assert.Equal(t, prescheduling.Placement{}, got, "no placement: every cluster, Duplicated")
}

func TestFromPlacementReportsWhatItCannotCarry(t *testing.T) {
	pp := decode[policyv1alpha1.PropagationPolicy](t, `
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: nginx}]
  placement:
    clusterAffinities:
    - affinityName: primary
      clusterNames: [member1]
      overflowAffinities:
      - affinityName: burst
        clusterNames: [member2]
    workloadAffinity:
      antiAffinity:
        groupByLabelKey: app.group
`)
	got, err := karmada.FromPlacement(&pp.Spec.Placement)
	var le *karmada.LossError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, []string{"placement.clusterAffinities[0].overflowAffinities", "placement.workloadAffinity"},
		[]string{le.Losses[0].Field, le.Losses[1].Field})
	assert.Contains(t, err.Error(), "karmada: placement: the library cannot carry placement.clusterAffinities[0].overflowAffinities (")
	assert.Equal(t, []prescheduling.ClusterAffinityTerm{{AffinityName: "primary", ClusterAffinity: failover.ClusterAffinity{ClusterNames: []string{"member1"}}}},
		got.ClusterAffinities, "the rest is converted, for a caller that accepts the loss")
}

func TestFromPlacementRefusesMalformedInput(t *testing.T) {
	for _, tc := range []struct {
		name      string
		placement policyv1alpha1.Placement
		want      string
	}{
		{"a label selector operator that does not exist", policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near", Values: []string{"x"}}}}}},
			`"Near" is not a valid label selector operator`},
		{"a field selector on a field clusters do not have", policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{
			FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{nodeReq("country", "In", "cn")}}}},
			`fieldSelector.matchExpressions[0].key: unknown field "country"`},
		{"an unknown spread field", policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: "rack"}}},
			`rack`},
		{"an unknown replica scheduling type", policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: "Mirrored"}},
			`Mirrored`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := karmada.FromPlacement(&tc.placement)
			require.Error(t, err)
			assert.False(t, errors.As(err, new(*karmada.LossError)), "malformed input is not a loss: %v", err)
			assert.Contains(t, err.Error(), "karmada: prescheduling: placement.")
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, prescheduling.Placement{}, got)
		})
	}
}

func TestFromClusterFailoverBehavior(t *testing.T) {
	pp := decode[policyv1alpha1.PropagationPolicy](t, dividedPolicy)
	got, err := karmada.FromClusterFailoverBehavior(pp.Spec.Failover.Cluster)
	require.NoError(t, err)
	assert.Equal(t, &failover.ClusterFailoverBehavior{PurgeMode: failover.PurgeModeDirectly}, got,
		"Karmada v1.18 has no tolerationSeconds: nil, the library's 300 s")

	got, err = karmada.FromClusterFailoverBehavior(nil)
	require.NoError(t, err)
	assert.Nil(t, got, "no failover.cluster: the workload has not opted in")

	_, err = karmada.FromClusterFailoverBehavior(&policyv1alpha1.ClusterFailoverBehavior{PurgeMode: "Eventually"})
	assert.ErrorContains(t, err, `karmada: failover.cluster.purgeMode: failover: unknown purge mode "Eventually"`)

	got, err = karmada.FromClusterFailoverBehavior(&policyv1alpha1.ClusterFailoverBehavior{
		PurgeMode: policyv1alpha1.PurgeModeGracefully,
		StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{
			{AliasLabelName: "failover.karmada.io/replicas", JSONPath: "{.replicas}"}}},
	})
	require.NoError(t, err, "statePreservation goes into the task (PreservedLabelState), not the decision: no loss")
	assert.Equal(t, &failover.ClusterFailoverBehavior{PurgeMode: failover.PurgeModeGracefully}, got)
}

// The Divided example end to end: member1 fails; its one replica goes to
// member2. The document's static weights give member2 all three replicas
// whatever its room, and Reason says when it has none; an Aggregated
// division moves the replica only if member2 has room, which its resource
// summary says.
func TestDividedPlacementWithCapacity(t *testing.T) {
	pp := decode[policyv1alpha1.PropagationPolicy](t, dividedPolicy)
	spec := &workv1alpha2.ResourceBindingSpec{
		Placement:           &pp.Spec.Placement,
		Replicas:            3,
		ReplicaRequirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "1")},
		Clusters:            []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 1}, {Name: "member2", Replicas: 2}},
	}
	member := func(name, cpuLeft string) clusterv1alpha1.Cluster {
		return clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: clusterv1alpha1.ClusterStatus{
			ResourceSummary: &clusterv1alpha1.ResourceSummary{Allocatable: list("cpu", cpuLeft, "pods", "110")}}}
	}
	aggregated := pp.Spec.Placement.DeepCopy()
	aggregated.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated}
	for _, tc := range []struct {
		placement *policyv1alpha1.Placement
		cpuLeft   string
		feasible  bool
		reason    string
	}{
		{&pp.Spec.Placement, "4", true, "feasible: member2 can take the 1 replica evicted from member1"},
		{&pp.Spec.Placement, "500m", true, "member2 (room for 0) may get more replicas than it has room for, which would wait pending"},
		{aggregated, "4", true, "feasible: member2 can take the 1 replica evicted from member1"},
		{aggregated, "500m", false, "the eligible clusters (member2) have spare capacity for 0 of the 1 replica evicted from member1"},
	} {
		spec.Placement = tc.placement
		req, err := karmada.PreschedulingRequest(spec, "member1")
		require.NoError(t, err)
		clusters := []clusterv1alpha1.Cluster{member("member1", "4"), member("member2", tc.cpuLeft)}
		var fleet []failover.Cluster
		for i := range clusters {
			c, err := karmada.FromCluster(&clusters[i])
			require.NoError(t, err)
			fleet = append(fleet, c)
		}
		checker, err := prescheduling.NewChecker(prescheduling.WithCapacity(karmada.Capacity(clusters, spec.ReplicaRequirements)))
		require.NoError(t, err)
		res := checker.Check(req, fleet)
		assert.Equal(t, tc.feasible, res.Feasible, "member2 with %s CPU left: %s", tc.cpuLeft, res.Reason)
		assert.Contains(t, res.Reason, tc.reason)
	}
}

// The scheduler never places a workload back on a cluster of one of its
// open graceful eviction tasks, and breaks a tie of its weighted division
// by the resource's UID: the request carries both.
func TestPreschedulingRequestCarriesTasksAndUID(t *testing.T) {
	spec := &workv1alpha2.ResourceBindingSpec{
		Resource:              workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "web", UID: "2f0c"},
		Placement:             &policyv1alpha1.Placement{},
		Clusters:              []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 1}},
		GracefulEvictionTasks: []workv1alpha2.GracefulEvictionTask{{FromCluster: "member3"}, {FromCluster: "member1"}},
	}
	req, err := karmada.PreschedulingRequest(spec, "member1")
	require.NoError(t, err)
	assert.Equal(t, []string{"member1", "member3"}, req.Evicting, "member1 once, then the task's member3")
	assert.Equal(t, "2f0c", req.ResourceUID)

	fleet := []failover.Cluster{{Name: "member1"}, {Name: "member2"}, {Name: "member3"}}
	res := mustCheck(t, req, fleet)
	assert.False(t, res.Feasible, "member3 is the only cluster left, and the scheduler keeps out of it: %s", res.Reason)
	assert.Contains(t, res.Reason, "member1 and member3 are being evicted from")
}

func mustCheck(t *testing.T, req prescheduling.Request, fleet []failover.Cluster) prescheduling.Result {
	t.Helper()
	checker, err := prescheduling.NewChecker()
	require.NoError(t, err)
	return checker.Check(req, fleet)
}

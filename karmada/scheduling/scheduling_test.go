package scheduling_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover/karmada/scheduling"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction(scheduling.LeakedGoroutine))
}

// configMapClusters are clusters that serve ConfigMaps, labelled by region.
func configMapClusters(names ...string) []*clusterv1alpha1.Cluster {
	var out []*clusterv1alpha1.Cluster
	for _, n := range names {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"region": n[:2]}}}
		c.Status.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}}}}
		out = append(out, c)
	}
	return out
}

func configMap(p *policyv1alpha1.Placement) *workv1alpha2.ResourceBindingSpec {
	return &workv1alpha2.ResourceBindingSpec{
		Resource:  workv1alpha2.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "w"},
		Placement: p,
	}
}

func names(ts []workv1alpha2.TargetCluster) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// The results anyone can work out by hand, so that a broken harness cannot
// pass as a scheduler that places nothing: Duplicated over three clusters
// lands on all three; a cluster in a graceful eviction task is left out;
// the caller's spec is not changed.
func TestScheduleDuplicated(t *testing.T) {
	clusters := configMapClusters("eu1", "eu2", "us1")
	spec := configMap(&policyv1alpha1.Placement{})
	got, term, err := scheduling.Schedule(clusters, spec, nil)
	if err != nil || names(got) != "eu1,eu2,us1" || term != "" {
		t.Fatalf("Schedule = %v, %q, %v; want every cluster", got, term, err)
	}
	spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "eu2"}}
	before := spec.DeepCopy()
	got, _, err = scheduling.Schedule(clusters, spec, &workv1alpha2.ResourceBindingStatus{})
	if err != nil || names(got) != "eu1,us1" {
		t.Fatalf("with eu2 evicted, Schedule = %v, %v; want eu1,us1", got, err)
	}
	if !reflect.DeepEqual(before, spec) {
		t.Fatal("Schedule changed the caller's spec")
	}
}

// clusterAffinities are tried from the observed term on: the first that
// schedules wins, and none scheduling is the first term's error.
func TestScheduleClusterAffinities(t *testing.T) {
	clusters := configMapClusters("eu1", "us1")
	term := func(name, region string) policyv1alpha1.ClusterAffinityTerm {
		return policyv1alpha1.ClusterAffinityTerm{AffinityName: name, ClusterAffinity: policyv1alpha1.ClusterAffinity{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": region}}}}
	}
	spec := configMap(&policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
		term("ap", "ap"), term("eu", "eu"), term("us", "us")}})
	got, name, err := scheduling.Schedule(clusters, spec, nil)
	if err != nil || names(got) != "eu1" || name != "eu" {
		t.Fatalf("Schedule = %v, %q, %v; want eu1 under eu (ap has no cluster)", got, name, err)
	}
	got, name, err = scheduling.Schedule(clusters, spec, &workv1alpha2.ResourceBindingStatus{SchedulerObservedAffinityName: "us"})
	if err != nil || names(got) != "us1" || name != "us" {
		t.Fatalf("resumed at us, Schedule = %v, %q, %v; want us1 under us", got, name, err)
	}
	spec = configMap(&policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{term("ap", "ap")}})
	if _, _, err := scheduling.Schedule(clusters, spec, nil); err == nil || !strings.Contains(err.Error(), `every clusterAffinities term from "" on failed`) {
		t.Fatalf("no term schedules: err = %v", err)
	}
}

func TestScheduleWithoutPlacement(t *testing.T) {
	if _, _, err := scheduling.Schedule(configMapClusters("eu1"), configMap(nil), nil); err == nil || !strings.Contains(err.Error(), "spec.placement") {
		t.Fatalf("err = %v, want one naming spec.placement", err)
	}
}

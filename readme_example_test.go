package failover_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/metrics"
	"github.com/failoverkit/failover/prescheduling"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

const policyYAML = `
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata:
  name: detect-cluster-not-ready
spec:
  matchConditions:
  - conditionType: Ready
    operator: In
    statusValues: ["False", "Unknown"]
  taintsToAdd:
  - key: cluster.karmada.io/not-ready
    effect: PreferNoExecute
    addOnMatchSeconds: 300
    removeOnMismatchSeconds: 180
`

// Example_wiring is the flow README.md walks through, one package at a
// time; the README's snippets are lines of this function (TestReadmeSnippets
// holds them to it), so they compile and run here.
func Example_wiring() {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	fleet := make([]failover.Cluster, 20)
	for i := range fleet {
		fleet[i] = failover.Cluster{Name: fmt.Sprintf("member%d", i+1), Conditions: []metav1.Condition{{
			Type: "Ready", Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}}
	}
	fleet[1].Conditions[0].Status = metav1.ConditionFalse // member2 went NotReady ten minutes ago
	fleet[1].Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-10 * time.Minute))

	// taintpolicy: conditions become taints, after their windows.
	policies, err := taintpolicy.LoadPolicies(strings.NewReader(policyYAML)) // Karmada YAML, either form
	if err != nil {
		panic(err)
	}
	evaluator, err := taintpolicy.NewEvaluator(policies)
	if err != nil {
		panic(err)
	}
	r := evaluator.Evaluate(fleet[1], now)
	fleet[1].Taints = r.Taints // write back when r.Changed(); evaluate again after r.RequeueAfter
	fmt.Println("member2 taints:", len(r.Added), "added; faulty:", failover.IsFaulty(fleet[1]))

	// metrics: every series on a registry the caller serves.
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		panic(err)
	}

	// ratelimit: one Limiter for the whole fleet, its rate following health.
	tracker := ratelimit.NewTracker() // or ratelimit.NewInformerSource(clusterInformer, isFaulty)
	for _, c := range fleet {
		tracker.Set(c.Name, failover.IsFaulty(c))
	}
	limiter, err := ratelimit.NewLimiter(ratelimit.DefaultConfig(), tracker, ratelimit.WithMetrics(m))
	if err != nil {
		panic(err)
	}
	fmt.Println("rate in force:", limiter.Rate())

	// prescheduling + gracefulevict inside the eviction handler.
	placement := prescheduling.Placement{ClusterAffinity: &failover.ClusterAffinity{
		ClusterNames: []string{"member1", "member2", "member3"}}}
	bindings := map[string]gracefulevict.Binding{"default/web": {Generation: 1, ObservedGeneration: 1,
		Clusters: []failover.TargetCluster{{Name: "member1"}, {Name: "member2"}}}}
	checker, err := prescheduling.NewChecker()
	if err != nil {
		panic(err)
	}
	handler := func(ctx context.Context, it evictionqueue.Item) error {
		b := bindings[it.Key]
		check := checker.Check(prescheduling.Request{
			Placement: placement, Scheduled: b.Clusters, Evicting: []string{it.Cluster},
		}, fleet)
		if !check.Feasible {
			return evictionqueue.Abandon(errors.New(check.Reason)) // nowhere to go: do not evict
		}
		bindings[it.Key] = gracefulevict.Evict(b, it.Cluster, gracefulevict.Task{
			Reason: "TaintUntolerated", Producer: "TaintManager", CreationTimestamp: &metav1.Time{Time: now}})
		fmt.Println("evicting", it.Key, "from", it.Cluster, "- candidates", check.Candidates)
		return nil
	}

	// evictionqueue: one queue per kind, all paced by the one Limiter.
	runCtx, stop := context.WithCancel(ctx)
	onOutcome := func(o evictionqueue.Outcome) { // e.g. emit a Kubernetes Event
		stop() // this example stops after its one item
	}
	queue, err := evictionqueue.New(evictionqueue.Config{
		Name: "resource-binding", Workers: 4, Pacer: limiter, Metrics: m, OnOutcome: onOutcome,
	}, handler)
	if err != nil {
		panic(err)
	}
	queue.Add(evictionqueue.Item{Cluster: "member2", Key: "default/web", ResourceKind: "apps/v1/Deployment"})
	err = queue.Run(runCtx) // blocks until runCtx ends; nothing queued is lost
	if err != nil {
		panic(err)
	}

	// gracefulevict: the task ends once the replacement is healthy.
	b := bindings["default/web"]
	b.Clusters = append(b.Clusters, failover.TargetCluster{Name: "member3"}) // the scheduler's answer
	b.ObservedGeneration = b.Generation
	b.Health = map[string]gracefulevict.ResourceHealth{"member1": gracefulevict.Healthy, "member3": gracefulevict.Healthy}
	assessor, err := gracefulevict.NewAssessor(gracefulevict.WithDefaultTimeout(10 * time.Minute))
	if err != nil {
		panic(err)
	}
	got := assessor.Assess(b, now)
	b.Tasks = got.Keep // delete the old copy on each got.Done[i].FromCluster; assess again after got.RequeueAfter
	fmt.Println("tasks done:", len(got.Done), "open:", len(b.Tasks))

	// member2 recovers: whatever it still has queued is dropped, unhandled.
	fmt.Println("cancelled:", queue.CancelCluster("member2"))
	// Output:
	// member2 taints: 1 added; faulty: true
	// rate in force: 0.5
	// evicting default/web from member2 - candidates [member3]
	// tasks done: 1 open: 0
	// cancelled: 0
}

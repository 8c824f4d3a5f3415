package gracefulevict

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover"
)

// BenchmarkAssess100Tasks assesses a binding with 100 tasks of every kind on
// a 20-cluster schedule result that is not yet healthy, so every rule runs.
func BenchmarkAssess100Tasks(b *testing.B) {
	bd := Binding{Generation: 1, ObservedGeneration: 1, Health: map[string]ResourceHealth{}}
	for i := range 20 {
		name := fmt.Sprintf("member%d", i)
		bd.Clusters = append(bd.Clusters, failover.TargetCluster{Name: name, Replicas: 2})
		bd.Health[name] = Healthy
	}
	bd.Health["member19"] = Unhealthy
	modes := []failover.PurgeMode{"", failover.PurgeModeGracefully, failover.PurgeModeNever, failover.PurgeModeDirectly}
	for i := range 100 {
		t := Task{FromCluster: fmt.Sprintf("evicted%d", i), PurgeMode: modes[i%len(modes)],
			CreationTimestamp: &metav1.Time{Time: t0.Add(time.Duration(i) * time.Second)}}
		if i%5 == 0 {
			t.GracePeriodSeconds = ptr.To[int32](600)
		}
		if i%7 == 0 {
			t.FromCluster = fmt.Sprintf("member%d", i%20) // back in the result
		}
		bd.Tasks = append(bd.Tasks, t)
	}
	now := t0.Add(5 * time.Minute)
	for _, bc := range []struct {
		name   string
		plugin Plugin
	}{
		// The built-in plugin is asked once per call.
		{"BuiltinResourceHealth", ResourceHealthPlugin()},
		// The same check as a user plugin, asked once per task: the
		// baseline the cache is measured against.
		{"PerTaskResourceHealth", perTask{ResourceHealthPlugin()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			a := mustAssessor(WithDefaultTimeout(10*time.Minute), WithPlugins(bc.plugin))
			b.ReportAllocs()
			for b.Loop() {
				_ = a.Assess(bd, now)
			}
		})
	}
}

// perTask hides the built-in plugin's type, so the Assessor treats it as a
// user plugin.
type perTask struct{ p Plugin }

func (p perTask) Name() string                      { return p.p.Name() }
func (p perTask) CanCleanup(t Task, b Binding) bool { return p.p.CanCleanup(t, b) }

// BenchmarkAssessScales assesses n tasks on an n-cluster schedule result, so
// the time per call grows with n if Assess is linear and with n² if every
// task scans the schedule result.
func BenchmarkAssessScales(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		bd := Binding{Generation: 1, ObservedGeneration: 1}
		for i := range n {
			bd.Clusters = append(bd.Clusters, failover.TargetCluster{Name: fmt.Sprintf("member%d", i)})
			bd.Tasks = append(bd.Tasks, Task{FromCluster: fmt.Sprintf("evicted%d", i), PurgeMode: failover.PurgeModeNever,
				CreationTimestamp: &metav1.Time{Time: t0}})
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			a := mustAssessor()
			b.ReportAllocs()
			for b.Loop() {
				_ = a.Assess(bd, t0)
			}
		})
	}
}

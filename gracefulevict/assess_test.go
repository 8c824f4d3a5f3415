package gracefulevict

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover"
)

var t0 = time.Date(2023, 6, 5, 11, 33, 31, 0, time.UTC)

func at(d time.Duration) *metav1.Time { return &metav1.Time{Time: t0.Add(d)} }

// healthyBinding is scheduled on member2 and member3, both healthy.
func healthyBinding(tasks ...Task) Binding {
	return Binding{
		Generation: 2, ObservedGeneration: 2,
		Clusters: []failover.TargetCluster{{Name: "member2", Replicas: 2}, {Name: "member3", Replicas: 1}},
		Health:   map[string]ResourceHealth{"member2": Healthy, "member3": Healthy},
		Tasks:    tasks,
	}
}

// unhealthyBinding is like healthyBinding but member3 is not healthy yet, so
// the ResourceHealth plugin does not pass.
func unhealthyBinding(tasks ...Task) Binding {
	b := healthyBinding(tasks...)
	b.Health = map[string]ResourceHealth{"member2": Healthy, "member3": Unhealthy}
	return b
}

func fromCluster(ts []Task) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.FromCluster)
	}
	return out
}

func TestAssessRules(t *testing.T) {
	stamped := at(0)
	cases := []struct {
		name     string
		assessor *Assessor
		binding  Binding
		now      time.Time
		done     bool
	}{
		// Rule 1.
		{"origin back in the result is done though it suppresses deletion", mustAssessor(),
			unhealthyBinding(Task{FromCluster: "member2", SuppressDeletion: ptr.To(true), CreationTimestamp: stamped}), t0, true},
		{"origin back in the result is done though it was never stamped", mustAssessor(),
			unhealthyBinding(Task{FromCluster: "member3", PurgeMode: failover.PurgeModeNever}), t0, true},
		// Rule 2.
		{"unstamped Directly task is kept for one pass", mustAssessor(),
			healthyBinding(Task{FromCluster: "member1", PurgeMode: failover.PurgeModeDirectly}), t0, false},
		{"unstamped task is kept even if suppressDeletion is false", mustAssessor(),
			healthyBinding(Task{FromCluster: "member1", SuppressDeletion: ptr.To(false)}), t0, false},
		// Rule 3.
		{"suppressDeletion true keeps a Directly task", mustAssessor(),
			healthyBinding(Task{FromCluster: "member1", PurgeMode: failover.PurgeModeDirectly, SuppressDeletion: ptr.To(true), CreationTimestamp: stamped}), t0.Add(time.Hour), false},
		{"suppressDeletion true keeps a task past its grace period", mustAssessor(WithDefaultTimeout(time.Minute)),
			healthyBinding(Task{FromCluster: "member1", SuppressDeletion: ptr.To(true), CreationTimestamp: stamped}), t0.Add(time.Hour), false},
		{"suppressDeletion false ends a Never task", mustAssessor(),
			unhealthyBinding(Task{FromCluster: "member1", PurgeMode: failover.PurgeModeNever, SuppressDeletion: ptr.To(false), CreationTimestamp: stamped}), t0, true},
		// Rule 4.
		{"Directly is done while nothing is healthy", mustAssessor(),
			unhealthyBinding(Task{FromCluster: "member1", PurgeMode: failover.PurgeModeDirectly, CreationTimestamp: stamped}), t0, true},
		{"legacy Immediately is Directly", mustAssessor(),
			unhealthyBinding(Task{FromCluster: "member1", PurgeMode: failover.PurgeModeImmediately, CreationTimestamp: stamped}), t0, true},
		// Rule 5.
		{"Never is kept though healthy and past the timeout", mustAssessor(WithDefaultTimeout(time.Minute)),
			healthyBinding(Task{FromCluster: "member1", PurgeMode: failover.PurgeModeNever, CreationTimestamp: stamped}), t0.Add(time.Hour), false},
		// Rule 6.
		{"Gracefully is done when every scheduled copy is healthy", mustAssessor(),
			healthyBinding(Task{FromCluster: "member1", PurgeMode: failover.PurgeModeGracefully, CreationTimestamp: stamped}), t0, true},
		{"empty mode is Gracefully", mustAssessor(),
			healthyBinding(Task{FromCluster: "member1", CreationTimestamp: stamped}), t0, true},
		{"legacy Graciously is Gracefully", mustAssessor(),
			healthyBinding(Task{FromCluster: "member1", PurgeMode: failover.PurgeModeGraciously, CreationTimestamp: stamped}), t0, true},
		{"unknown mode is assessed as Gracefully: healthy is done", mustAssessor(),
			healthyBinding(Task{FromCluster: "member1", PurgeMode: "Sometimes", CreationTimestamp: stamped}), t0, true},
		{"unknown mode is assessed as Gracefully: unhealthy is kept", mustAssessor(),
			unhealthyBinding(Task{FromCluster: "member1", PurgeMode: "Sometimes", CreationTimestamp: stamped}), t0, false},
		{"one unhealthy copy keeps the task", mustAssessor(),
			unhealthyBinding(Task{FromCluster: "member1", CreationTimestamp: stamped}), t0, false},
		{"no plugins: healthy is not enough", mustAssessor(WithPlugins()),
			healthyBinding(Task{FromCluster: "member1", CreationTimestamp: stamped}), t0, false},
		{"any plugin passing is enough", mustAssessor(WithPlugins(never{}, always{})),
			unhealthyBinding(Task{FromCluster: "member1", CreationTimestamp: stamped}), t0, true},
		// Rule 7.
		{"grace period elapsed exactly at the deadline", mustAssessor(),
			unhealthyBinding(Task{FromCluster: "member1", GracePeriodSeconds: ptr.To[int32](100), CreationTimestamp: stamped}), t0.Add(100 * time.Second), true},
		{"grace period not yet elapsed a second before", mustAssessor(),
			unhealthyBinding(Task{FromCluster: "member1", GracePeriodSeconds: ptr.To[int32](100), CreationTimestamp: stamped}), t0.Add(99 * time.Second), false},
		{"grace period wins over a shorter default timeout", mustAssessor(WithDefaultTimeout(time.Second)),
			unhealthyBinding(Task{FromCluster: "member1", GracePeriodSeconds: ptr.To[int32](100), CreationTimestamp: stamped}), t0.Add(50 * time.Second), false},
		{"default timeout applies without a grace period", mustAssessor(WithDefaultTimeout(10 * time.Minute)),
			unhealthyBinding(Task{FromCluster: "member1", CreationTimestamp: stamped}), t0.Add(10 * time.Minute), true},
		{"zero grace period has elapsed once stamped", mustAssessor(),
			unhealthyBinding(Task{FromCluster: "member1", GracePeriodSeconds: ptr.To[int32](0), CreationTimestamp: stamped}), t0, true},
		// Rule 8.
		{"no grace period and no default timeout waits forever", mustAssessor(),
			unhealthyBinding(Task{FromCluster: "member1", CreationTimestamp: stamped}), t0.Add(365 * 24 * time.Hour), false},
		{"a zero default timeout means none", mustAssessor(WithDefaultTimeout(0)),
			unhealthyBinding(Task{FromCluster: "member1", CreationTimestamp: stamped}), t0.Add(time.Hour), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.assessor.Assess(tc.binding, tc.now)
			if tc.done {
				assert.Len(t, got.Done, 1)
				assert.Empty(t, got.Keep)
			} else {
				assert.Len(t, got.Keep, 1)
				assert.Empty(t, got.Done)
			}
		})
	}
}

type always struct{}

func (always) Name() string                  { return "Always" }
func (always) CanCleanup(Task, Binding) bool { return true }

type never struct{}

func (never) Name() string                  { return "Never" }
func (never) CanCleanup(Task, Binding) bool { return false }

func TestResourceHealthPlugin(t *testing.T) {
	p := ResourceHealthPlugin()
	assert.Equal(t, "ResourceHealth", p.Name())
	cases := []struct {
		name string
		b    Binding
		want bool
	}{
		{"every scheduled copy healthy passes", healthyBinding(), true},
		{"empty schedule result is never healthy", Binding{Generation: 1, ObservedGeneration: 1, Health: map[string]ResourceHealth{"member1": Healthy}}, false},
		{"not yet scheduled does not pass", func() Binding { b := healthyBinding(); b.Generation++; return b }(), false},
		{"unknown health does not pass", func() Binding { b := healthyBinding(); b.Health["member3"] = Unknown; return b }(), false},
		{"a copy with no health reported does not pass", func() Binding { b := healthyBinding(); delete(b.Health, "member3"); return b }(), false},
		{"nil health map does not pass", func() Binding { b := healthyBinding(); b.Health = nil; return b }(), false},
		{"health of clusters outside the result is ignored", func() Binding { b := healthyBinding(); b.Health["member1"] = Unhealthy; return b }(), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, p.CanCleanup(Task{FromCluster: "member1"}, tc.b))
		})
	}
}

func TestAssessStampsMissingTimestampInKeepOnly(t *testing.T) {
	b := unhealthyBinding(Task{FromCluster: "member1", GracePeriodSeconds: ptr.To[int32](100)})
	got := mustAssessor().Assess(b, t0)
	require.Len(t, got.Keep, 1)
	require.NotNil(t, got.Keep[0].CreationTimestamp)
	assert.Equal(t, t0, got.Keep[0].CreationTimestamp.Time)
	assert.Equal(t, 1, got.Stamped)
	assert.Equal(t, 100*time.Second, got.RequeueAfter, "the grace period counts from the stamp")
	assert.Nil(t, b.Tasks[0].CreationTimestamp, "the input task is not stamped")
}

func TestAssessRequeueAfter(t *testing.T) {
	created := at(0)
	cases := []struct {
		name     string
		assessor *Assessor
		tasks    []Task
		now      time.Time
		want     time.Duration
	}{
		{"no tasks", mustAssessor(), nil, t0, 0},
		{"earliest deadline among kept tasks", mustAssessor(), []Task{
			{FromCluster: "a", GracePeriodSeconds: ptr.To[int32](300), CreationTimestamp: created},
			{FromCluster: "b", GracePeriodSeconds: ptr.To[int32](120), CreationTimestamp: created},
			{FromCluster: "c", GracePeriodSeconds: ptr.To[int32](600), CreationTimestamp: created},
		}, t0.Add(20 * time.Second), 100 * time.Second},
		{"a done task's deadline does not count", mustAssessor(), []Task{
			{FromCluster: "a", GracePeriodSeconds: ptr.To[int32](300), CreationTimestamp: created},
			{FromCluster: "b", GracePeriodSeconds: ptr.To[int32](10), CreationTimestamp: created},
		}, t0.Add(20 * time.Second), 280 * time.Second},
		{"default timeout gives a deadline", mustAssessor(WithDefaultTimeout(10 * time.Minute)), []Task{
			{FromCluster: "a", CreationTimestamp: created},
		}, t0.Add(time.Minute), 9 * time.Minute},
		{"suppressed, Never and timeout-less tasks have no deadline", mustAssessor(), []Task{
			{FromCluster: "a", SuppressDeletion: ptr.To(true), CreationTimestamp: created},
			{FromCluster: "b", PurgeMode: failover.PurgeModeNever, GracePeriodSeconds: ptr.To[int32](5), CreationTimestamp: created},
			{FromCluster: "c", CreationTimestamp: created},
		}, t0, 0},
		{"a task stamped now counts from now", mustAssessor(WithDefaultTimeout(time.Minute)), []Task{
			{FromCluster: "a"},
		}, t0.Add(time.Hour), time.Minute},
		{"a task stamped now with zero grace is due at once", mustAssessor(), []Task{
			{FromCluster: "a", GracePeriodSeconds: ptr.To[int32](0)},
		}, t0, time.Nanosecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.assessor.Assess(unhealthyBinding(tc.tasks...), tc.now)
			assert.Equal(t, tc.want, got.RequeueAfter)
		})
	}
}

// TestAssessRequeueEndsTask follows RequeueAfter on a fake clock: assessing
// again when it says so finishes the task, and not a moment earlier.
func TestAssessRequeueEndsTask(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	a := mustAssessor(WithDefaultTimeout(10 * time.Minute))
	b := unhealthyBinding(Task{FromCluster: "member1", Reason: "TaintUntolerated", Producer: "TaintManager"})

	got := a.Assess(b, clk.Now())
	require.Equal(t, 1, got.Stamped)
	b.Tasks = got.Keep

	clk.Step(got.RequeueAfter - time.Second)
	early := a.Assess(b, clk.Now())
	require.Len(t, early.Keep, 1)
	assert.Equal(t, time.Second, early.RequeueAfter)

	clk.Step(early.RequeueAfter)
	final := a.Assess(b, clk.Now())
	assert.Empty(t, final.Keep)
	assert.Equal(t, []string{"member1"}, fromCluster(final.Done))
	assert.Zero(t, final.RequeueAfter)
}

// TestAssessEndsTheRecoveryDeadlock is the story of the cluster failover
// proposal: member1 fails, its copy is evicted, the scheduler finds no other
// cluster (empty result), member1 recovers and the scheduler puts the workload
// back there. The task must end, without ever deleting the only copy.
func TestAssessEndsTheRecoveryDeadlock(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	a := mustAssessor() // ResourceHealth only, no timeout: nothing else would end it
	b := Binding{
		Generation: 1, ObservedGeneration: 1,
		Clusters: []failover.TargetCluster{{Name: "member1", Replicas: 3}},
		Health:   map[string]ResourceHealth{"member1": Healthy},
	}

	b = Evict(b, "member1", Task{Reason: "TaintUntolerated", Producer: "TaintManager"})
	b.ObservedGeneration = b.Generation // scheduled, result empty
	for range 3 {
		got := a.Assess(b, clk.Now())
		require.Empty(t, got.Done, "the old copy is the only one: it must not be removed")
		b.Tasks = got.Keep
		clk.Step(time.Hour)
	}

	// member1 recovers; the scheduler places the workload there again.
	b.Clusters = []failover.TargetCluster{{Name: "member1", Replicas: 3}}
	b.Generation++
	b.ObservedGeneration = b.Generation
	got := a.Assess(b, clk.Now())
	assert.Empty(t, got.Keep)
	assert.Equal(t, []string{"member1"}, fromCluster(got.Done))
}

func TestAssessKeepsOrderAndDoesNotMutateInput(t *testing.T) {
	b := healthyBinding(
		Task{FromCluster: "a", PurgeMode: failover.PurgeModeNever, CreationTimestamp: at(0)},
		Task{FromCluster: "b", CreationTimestamp: at(0)},
		Task{FromCluster: "c"},
		Task{FromCluster: "d", PurgeMode: failover.PurgeModeDirectly, CreationTimestamp: at(0)},
		Task{FromCluster: "e", SuppressDeletion: ptr.To(true), CreationTimestamp: at(0)},
	)
	before := cloneBinding(b)
	got := mustAssessor().Assess(b, t0)
	assert.Equal(t, []string{"a", "c", "e"}, fromCluster(got.Keep))
	assert.Equal(t, []string{"b", "d"}, fromCluster(got.Done))
	assert.Equal(t, before, b)
}

func cloneBinding(b Binding) Binding {
	b.Clusters = slices.Clone(b.Clusters)
	b.Health = maps.Clone(b.Health)
	b.Tasks = slices.Clone(b.Tasks)
	for i := range b.Tasks {
		if ts := b.Tasks[i].CreationTimestamp; ts != nil {
			c := *ts
			b.Tasks[i].CreationTimestamp = &c
		}
	}
	return b
}

// The built-in plugin is asked once per Assess, user plugins once per task
// that reaches them, and both decide the same.
func TestAssessAsksPluginsPerTask(t *testing.T) {
	tasks := []Task{{FromCluster: "a", CreationTimestamp: at(0)}, {FromCluster: "b", CreationTimestamp: at(0)}, {FromCluster: "c", PurgeMode: failover.PurgeModeNever, CreationTimestamp: at(0)}}
	for _, b := range []Binding{healthyBinding(tasks...), unhealthyBinding(tasks...)} {
		builtin := mustAssessor().Assess(b, t0)
		counter := &countingPlugin{p: ResourceHealthPlugin()}
		user := mustAssessor(WithPlugins(counter)).Assess(b, t0)
		assert.Equal(t, fromCluster(builtin.Done), fromCluster(user.Done))
		assert.Equal(t, 2, counter.calls, "Never is decided before the plugins")
	}
}

type countingPlugin struct {
	p     Plugin
	calls int
}

func (c *countingPlugin) Name() string { return "Counting" }
func (c *countingPlugin) CanCleanup(t Task, b Binding) bool {
	c.calls++
	return c.p.CanCleanup(t, b)
}

func TestDeadline(t *testing.T) {
	a := mustAssessor(WithDefaultTimeout(10 * time.Minute))
	cases := []struct {
		name string
		task Task
		want time.Time
		ok   bool
	}{
		{"grace period", Task{GracePeriodSeconds: ptr.To[int32](100), CreationTimestamp: at(0)}, t0.Add(100 * time.Second), true},
		{"default timeout", Task{CreationTimestamp: at(time.Minute)}, t0.Add(11 * time.Minute), true},
		{"not stamped yet", Task{GracePeriodSeconds: ptr.To[int32](100)}, time.Time{}, false},
		{"suppressed", Task{SuppressDeletion: ptr.To(false), CreationTimestamp: at(0)}, time.Time{}, false},
		{"Directly", Task{PurgeMode: failover.PurgeModeImmediately, CreationTimestamp: at(0)}, time.Time{}, false},
		{"Never", Task{PurgeMode: failover.PurgeModeNever, GracePeriodSeconds: ptr.To[int32](1), CreationTimestamp: at(0)}, time.Time{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := a.Deadline(tc.task)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
	_, ok := mustAssessor().Deadline(Task{CreationTimestamp: at(0)})
	assert.False(t, ok, "no grace period and no default timeout")
}

func TestNewAssessorIgnoresANilOption(t *testing.T) {
	var none Option
	a := mustAssessor(none, WithDefaultTimeout(time.Minute))
	got := a.Assess(unhealthyBinding(Task{FromCluster: "member1", CreationTimestamp: at(0)}), t0.Add(time.Minute))
	assert.Equal(t, []string{"member1"}, fromCluster(got.Done), "the default timeout after the nil option applies")
}

// With several tasks, rule 1 reads the schedule result through a set built
// once per call: a task whose cluster is back is done, the others are not.
func TestAssessManyTasksSomeBackInTheResult(t *testing.T) {
	var tasks []Task
	for _, c := range []string{"member1", "member2", "member4", "member3"} {
		tasks = append(tasks, Task{FromCluster: c, PurgeMode: failover.PurgeModeNever, CreationTimestamp: at(0)})
	}
	got := mustAssessor().Assess(healthyBinding(tasks...), t0)
	assert.Equal(t, []string{"member2", "member3"}, fromCluster(got.Done))
	assert.Equal(t, []string{"member1", "member4"}, fromCluster(got.Keep))
}

// mustAssessor is NewAssessor for options a test knows to be valid.
func mustAssessor(opts ...Option) *Assessor {
	a, err := NewAssessor(opts...)
	if err != nil {
		panic(err)
	}
	return a
}

func TestNewAssessorRejectsBadOptions(t *testing.T) {
	_, err := NewAssessor(WithDefaultTimeout(-time.Second), WithPlugins(ResourceHealthPlugin(), nil))
	assert.EqualError(t, err, "gracefulevict: WithDefaultTimeout: timeout must not be negative, got -1s\n"+
		"gracefulevict: WithPlugins: plugin 1 is nil")
	a, err := NewAssessor(nil, WithDefaultTimeout(0))
	require.NoError(t, err, "a nil option is skipped; a zero timeout means none")
	assert.Zero(t, a.defaultTimeout)
}

// EndsAtOnce is what rules 3 and 4 say, with SuppressDeletion before the
// purge mode: the Assessor, asked with no plugin and no timeout on a task
// whose cluster is not back, ends exactly the tasks it names, on their
// first assessment once stamped.
func TestEndsAtOnce(t *testing.T) {
	a, err := NewAssessor(WithPlugins())
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		task Task
		want bool
	}{
		{"suppressDeletion false", Task{SuppressDeletion: ptr.To(false)}, true},
		{"Directly", Task{PurgeMode: failover.PurgeModeDirectly}, true},
		{"Immediately, Directly's legacy name", Task{PurgeMode: "Immediately"}, true},
		{"Never, suppressDeletion false", Task{PurgeMode: failover.PurgeModeNever, SuppressDeletion: ptr.To(false)}, true},
		{"Directly, suppressDeletion true: waits", Task{PurgeMode: failover.PurgeModeDirectly, SuppressDeletion: ptr.To(true)}, false},
		{"Gracefully", Task{PurgeMode: failover.PurgeModeGracefully}, false},
		{"the empty mode", Task{}, false},
		{"Never", Task{PurgeMode: failover.PurgeModeNever}, false},
		{"an unknown mode", Task{PurgeMode: "Sometimes"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.task.EndsAtOnce())
			tc.task.FromCluster, tc.task.CreationTimestamp = "member1", at(0)
			got := a.Assess(unhealthyBinding(tc.task), t0)
			assert.Equal(t, tc.want, len(got.Done) == 1, "the Assessor")
		})
	}
}

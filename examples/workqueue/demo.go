package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
)

// The demo fleet: five member clusters, so a small fleet (not above the
// default --large-cluster-num-threshold of 10) in which more than 55% faulty
// pauses evictions.
var (
	demoClusters  = []string{"member-1", "member-2", "member-3", "member-4", "member-5"}
	demoWorkloads = map[string]int{"member-1": 6, "member-2": 3, "member-3": 3, "member-4": 1, "member-5": 1}
)

func demoObjects() []runtime.Object {
	var objs []runtime.Object
	for i, name := range demoClusters {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{corev1.LabelTopologyRegion: fmt.Sprintf("region-%d", i%2+1)},
		}})
		for j := range demoWorkloads[name] {
			objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: "apps",
				Name:      fmt.Sprintf("%s-app-%d", name, j+1),
				Labels:    map[string]string{ClusterLabel: name},
			}})
		}
	}
	return objs
}

// runDemo plays a short outage on a fake clientset, in real time:
//  1. member-1 fails: 1 of 5 clusters faulty, its workloads move at the
//     primary rate;
//  2. member-2 and member-3 fail as well: 3 of 5 is above the threshold in a
//     small fleet, so evictions pause, and nothing moves however long it lasts;
//  3. member-2 and member-3 recover: their queued workloads are dropped
//     without taking a permit, and member-1's remaining ones move at the
//     primary rate again.
func runDemo(ctx context.Context, out io.Writer, opts Options) error {
	clk := clock.RealClock{}
	client := fake.NewClientset(demoObjects()...)
	evicted := make(chan Eviction, 64)
	start := clk.Now()
	opts.Clock = clk
	opts.OnEvict = func(e Eviction) {
		fmt.Fprintf(out, "%6.1fs  evicted %-20s %s -> %s\n", e.At.Sub(start).Seconds(), e.Key, e.From, e.To)
		evicted <- e
	}
	opts.OnError = func(key string, err error) {
		fmt.Fprintf(out, "%6.1fs  retrying %s: %v\n", clk.Since(start).Seconds(), key, err)
	}
	c, err := New(client, opts)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case <-c.Synced():
	case err := <-done:
		return err
	}

	interval := time.Duration(float64(time.Second) / opts.Rate.ResourceEvictionRate)
	say := func(format string, args ...any) {
		h, _ := c.Health()
		fmt.Fprintf(out, "%6.1fs  "+format+"  [%d/%d faulty, rate %.2f/s]\n",
			append([]any{clk.Since(start).Seconds()}, append(args, h.Unhealthy, h.Total, c.Limiter().Rate())...)...)
	}
	var placed []string
	for _, name := range demoClusters {
		placed = append(placed, fmt.Sprintf("%s:%d", name, demoWorkloads[name]))
	}
	fmt.Fprintf(out, "demo: workloads per cluster %s; rate %.2f/s, secondary %.2f/s, threshold %.2f, large fleet > %d\n",
		strings.Join(placed, " "), opts.Rate.ResourceEvictionRate, opts.Rate.SecondaryResourceEvictionRate,
		opts.Rate.UnhealthyClusterThreshold, opts.Rate.LargeClusterNumThreshold)

	// Waits for n evictions; the faulty cluster must be member-1's.
	var moved int
	awaitEvictions := func(n int) error {
		for range n {
			select {
			case e := <-evicted:
				if e.From != "member-1" {
					return fmt.Errorf("demo: %s was evicted from %s, which had recovered", e.Key, e.From)
				}
				moved++
			case <-ctx.Done():
				return ctx.Err()
			case err := <-done:
				return fmt.Errorf("demo: controller stopped early: %v", err)
			}
		}
		return nil
	}

	if err := setTaint(ctx, client, "member-1", true); err != nil {
		return err
	}
	if err := waitFor(ctx, c, func(h int) bool { return h == 1 }); err != nil {
		return err
	}
	say("member-1 fails")
	phase1 := clk.Now()
	if err := awaitEvictions(3); err != nil {
		return err
	}
	phase1Rate := 2 / clk.Since(phase1).Seconds() // 3 evictions span 2 intervals

	for _, n := range []string{"member-2", "member-3"} {
		if err := setTaint(ctx, client, n, true); err != nil {
			return err
		}
	}
	if err := waitFor(ctx, c, func(h int) bool { return h == 3 }); err != nil {
		return err
	}
	pausedAt := clk.Now()
	say("member-2 and member-3 fail too: evictions paused")
	// A worker whose permit came before the pause may still finish its move;
	// no permit may be granted after it, however long the pause lasts.
	hold := clk.After(3 * interval)
	for held := false; !held; {
		select {
		case e := <-evicted:
			if e.Permit.After(pausedAt) {
				return fmt.Errorf("demo: %s was let through while paused", e.Key)
			}
			moved++
		case <-hold:
			held = true
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s := c.Stats()
	say("after %v paused: %d queued, %d workers holding in Limiter.Wait, 0 let through", (3 * interval).Round(time.Millisecond), s.Queued, s.Waiting)

	fmt.Fprintf(out, "%6.1fs  member-2 and member-3 recover\n", clk.Since(start).Seconds())
	phase3 := clk.Now()
	for _, n := range []string{"member-2", "member-3"} {
		if err := setTaint(ctx, client, n, false); err != nil {
			return err
		}
	}
	if err := waitFor(ctx, c, func(h int) bool { return h == 1 }); err != nil {
		return err
	}
	say("evictions resume")
	rest := demoWorkloads["member-1"] - moved
	if err := awaitEvictions(rest); err != nil {
		return err
	}
	// The first waiter goes at once on resume: rest evictions span rest-1
	// intervals.
	phase3Rate := float64(rest-1) / clk.Since(phase3).Seconds()

	s = c.Stats()
	fmt.Fprintf(out, "done: %d workloads moved off member-1, none off the recovered clusters; %d queued items dropped unprocessed\n",
		moved, s.Skipped)
	if rest >= 2 {
		fmt.Fprintf(out, "rate achieved: %.2f/s before the pause, %.2f/s after it (configured %.2f/s)\n",
			phase1Rate, phase3Rate, opts.Rate.ResourceEvictionRate)
	}
	return nil
}

// waitFor waits until the Tracker's faulty count satisfies ok.
func waitFor(ctx context.Context, c *Controller, ok func(faulty int) bool) error {
	for {
		ch := c.tracker.Changed()
		if h, err := c.Health(); err == nil && ok(h.Unhealthy) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// setTaint adds or removes the NoExecute taint that marks a cluster faulty.
func setTaint(ctx context.Context, client kubernetes.Interface, node string, faulty bool) error {
	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	n.Spec.Taints = nil
	if faulty {
		n.Spec.Taints = []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}}
	}
	_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	return err
}

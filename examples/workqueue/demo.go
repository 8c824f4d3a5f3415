package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
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
//  2. right after its third workload has moved, member-2 and member-3 fail as
//     well: 3 of 5 is above the threshold in a small fleet, so evictions
//     pause, and nothing moves however long it lasts;
//  3. member-2 and member-3 recover: their queued workloads are dropped
//     without taking a permit, and member-1's remaining ones move at the
//     primary rate again.
func runDemo(ctx context.Context, out io.Writer, opts Options) error {
	clk := clock.RealClock{}
	client := fake.NewClientset(demoObjects()...)
	start := clk.Now()
	var c *Controller

	// The outage widens from inside the third eviction's callback: the worker
	// that made it takes no next item until the pause is in force. (Another
	// worker may hold a permit granted before; the pause check allows that.)
	evicted := make(chan Eviction, 64)
	widened := make(chan error, 1)
	var moves atomic.Int32
	opts.Clock = clk
	opts.OnEvict = func(e Eviction) {
		fmt.Fprintf(out, "%6.1fs  evicted %-20s %s -> %s\n", e.At.Sub(start).Seconds(), e.Key, e.From, e.To)
		evicted <- e
		if moves.Add(1) == 3 {
			widened <- failClusters(ctx, client, c, true, 3, "member-2", "member-3")
		}
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

	// awaitEvictions waits for n moves, all off member-1.
	moved := 0
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

	if err := failClusters(ctx, client, c, true, 1, "member-1"); err != nil {
		return err
	}
	say("member-1 fails")
	phase1 := clk.Now()
	if err := awaitEvictions(3); err != nil {
		return err
	}
	phase1Rate := 2 / clk.Since(phase1).Seconds() // the first goes at once: 3 span 2 intervals
	select {
	case err := <-widened:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	pausedAt := clk.Now()
	say("member-2 and member-3 fail too: evictions paused")

	// A move whose permit came before the pause may still finish; no permit
	// may be granted after it, however long the pause lasts.
	for hold := clk.After(3 * interval); hold != nil; {
		select {
		case e := <-evicted:
			if e.Permit.After(pausedAt) || e.From != "member-1" {
				return fmt.Errorf("demo: %s let through from %s while paused", e.Key, e.From)
			}
			moved++
		case <-hold:
			hold = nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s := c.Stats()
	say("after %v paused: %d queued, %d held by workers in Limiter.Wait, 0 let through",
		clk.Since(pausedAt).Round(100*time.Millisecond), s.Queued, s.Waiting)

	fmt.Fprintf(out, "%6.1fs  member-2 and member-3 recover\n", clk.Since(start).Seconds())
	phase3 := clk.Now()
	if err := failClusters(ctx, client, c, false, 1, "member-2", "member-3"); err != nil {
		return err
	}
	rest := demoWorkloads["member-1"] - moved
	if err := awaitEvictions(rest); err != nil {
		return err
	}
	// The third eviction emptied the bucket just before the pause, and a
	// pause adds nothing: the first waiter goes one interval after the
	// resume, and rest evictions span rest intervals.
	phase3Rate := float64(rest) / clk.Since(phase3).Seconds()

	s = c.Stats()
	fmt.Fprintf(out, "done: %d workloads moved off member-1, none off the recovered clusters; %d queued items dropped unprocessed\n",
		moved, s.Skipped)
	if rest > 0 {
		fmt.Fprintf(out, "rate achieved: %.2f/s before the pause, %.2f/s after it (configured %.2f/s)\n",
			phase1Rate, phase3Rate, opts.Rate.ResourceEvictionRate)
	}
	return nil
}

// failClusters taints (or untaints) the named clusters and waits until the
// controller's Tracker counts wantFaulty faulty clusters.
func failClusters(ctx context.Context, client kubernetes.Interface, c *Controller, faulty bool, wantFaulty int, names ...string) error {
	for _, n := range names {
		if err := setTaint(ctx, client, n, faulty); err != nil {
			return err
		}
	}
	return waitFor(ctx, c, func(h int) bool { return h == wantFaulty })
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

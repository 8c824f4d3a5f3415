// Command workqueue is a small client-go controller that paces evictions with
// ratelimit's fleet-wide Limiter inside a plain client-go workqueue.
//
// Nodes stand in for member clusters (a Node with a NoExecute or
// PreferNoExecute taint is a faulty cluster) and ConfigMaps labelled
// failover.example/cluster=<node> stand in for workloads scheduled to them.
// When a cluster turns faulty the controller moves its workloads to the
// healthy cluster running the fewest, at the rate the fleet's health allows,
// and stops moving anything while too much of the fleet has failed.
//
// With no flags it runs a scripted demo against a fake clientset:
//
//	go run ./examples/workqueue
//
// With --kubeconfig it watches a real cluster's Nodes and the labelled
// ConfigMaps until interrupted:
//
//	go run ./examples/workqueue --kubeconfig ~/.kube/config
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/failoverkit/failover/ratelimit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "workqueue:", err)
		os.Exit(1)
	}
}

// run parses args and runs the demo, or the controller against a real cluster.
func run(ctx context.Context, args []string, out io.Writer) error {
	out = &syncWriter{w: out} // workers report concurrently
	fs := pflag.NewFlagSet("workqueue", pflag.ContinueOnError)
	fs.SetOutput(out)
	cfg := ratelimit.DefaultConfig()
	cfg.AddFlags(fs)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of a real cluster to run against; empty: the built-in demo on a fake clientset")
	namespace := fs.String("namespace", "", "namespace of the workload ConfigMaps; empty: all namespaces")
	workers := fs.Int("workers", 2, "eviction workers; the rate is fleet-wide whatever this is")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	opts := Options{Rate: cfg, Workers: *workers, Namespace: *namespace}
	if *kubeconfig == "" {
		return runDemo(ctx, out, opts)
	}

	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("loading --kubeconfig %s: %w", *kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	start := time.Now()
	opts.OnEvict = func(e Eviction) {
		fmt.Fprintf(out, "%7.1fs  evicted %s: %s -> %s\n", e.At.Sub(start).Seconds(), e.Key, e.From, e.To)
	}
	opts.OnError = func(key string, err error) {
		fmt.Fprintf(out, "%7.1fs  retrying %s: %v\n", time.Since(start).Seconds(), key, err)
	}
	c, err := New(client, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "watching Nodes and ConfigMaps labelled %s; rate %.2f/s, secondary %.2f/s, threshold %.2f, large fleet > %d\n",
		ClusterLabel, cfg.ResourceEvictionRate, cfg.SecondaryResourceEvictionRate, cfg.UnhealthyClusterThreshold, cfg.LargeClusterNumThreshold)
	return c.Run(ctx)
}

// syncWriter serialises writes from concurrent workers.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

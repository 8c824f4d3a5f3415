// Command clustertaint is a controller-runtime manager that keeps the taints
// of fleet.example.com/v1alpha1 MemberClusters as the ClusterTaintPolicies of
// a file decide (package clustertaint; see ../../README.md):
//
//	kubectl apply -f crds/ -f deploy/rbac.yaml
//	go run ./cmd/clustertaint --kubeconfig ~/.kube/config --policies policies.yaml
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/failoverkit/failover/examples/controllerruntime/api/v1alpha1"
	"github.com/failoverkit/failover/examples/controllerruntime/clustertaint"
	"github.com/failoverkit/failover/metrics"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

func main() {
	klog.InitFlags(flag.CommandLine) // --v and the other klog flags, beside controller-runtime's --kubeconfig
	ctrl.SetLogger(klog.NewKlogr())
	if err := run(ctrl.SetupSignalHandler(), os.Args[1:]); err != nil {
		if !errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

type options struct {
	policies       string
	metricsAddr    string
	probeAddr      string
	leaderElect    bool
	leaseNamespace string
	rc             clustertaint.Config
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{rc: clustertaint.Config{Rates: ratelimit.DefaultConfig()}}
	fs := pflag.NewFlagSet("clustertaint", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.AddGoFlagSet(flag.CommandLine)
	fs.StringVar(&o.policies, "policies", "", "file of ClusterTaintPolicies, apiVersion "+v1alpha1.GroupVersion.String()+" (required)")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address serving /metrics; 0 turns it off")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address serving /healthz and /readyz")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "run only while holding the Lease, so replicas never both write")
	fs.StringVar(&o.leaseNamespace, "leader-election-namespace", "", "namespace of the Lease; empty: the Pod's own")
	fs.DurationVar(&o.rc.PermitWait, "permit-wait", clustertaint.DefaultPermitWait, "how long one reconcile waits for an eviction permit")
	fs.IntVar(&o.rc.Workers, "workers", clustertaint.DefaultWorkers, "clusters reconciled in parallel")
	o.rc.Rates.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("clustertaint: unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	if o.policies == "" {
		return nil, errors.New("clustertaint: --policies is required: a file of ClusterTaintPolicies (see policies.yaml)")
	}
	f, err := os.Open(o.policies)
	if err != nil {
		return nil, fmt.Errorf("clustertaint: --policies: %w", err)
	}
	defer f.Close()
	// The policies are written in this controller's own group, not
	// Karmada's policy.karmada.io: name it, and LoadPoliciesWith accepts it.
	o.rc.Policies, err = taintpolicy.LoadPoliciesWith(f, taintpolicy.ValidateOptions{APIVersion: v1alpha1.GroupVersion.String()})
	if err != nil {
		return nil, fmt.Errorf("clustertaint: --policies %s: %w", o.policies, err)
	}
	if err := o.rc.Rates.Validate(); err != nil {
		return nil, fmt.Errorf("clustertaint: %w", err)
	}
	return o, nil
}

func run(ctx context.Context, args []string) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("clustertaint: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        "failover-clustertaint",
		LeaderElectionNamespace: o.leaseNamespace,
	})
	if err != nil {
		return fmt.Errorf("clustertaint: %w", err)
	}
	// The library's series on the manager's registry, served with its own
	// at /metrics: cluster_fault_num, cluster_failure_rate, eviction_rate.
	m, err := metrics.New(ctrlmetrics.Registry)
	if err != nil {
		return err
	}
	o.rc.Metrics = m
	r, err := clustertaint.New(mgr.GetClient(), o.rc)
	if err != nil {
		return err
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// Command karmadafork runs the failover loop as a Karmada fork would: a
// controller-runtime manager on Karmada v1.18's own Cluster,
// ClusterTaintPolicy, ResourceBinding and ClusterResourceBinding objects,
// with the library wired in by package fork. See README.md.
package main

import (
	"errors"
	goflag "flag"
	"fmt"
	"os"
	"time"

	"github.com/karmada-io/karmada/cmd/controller-manager/app/options"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/examples/karmadafork/fork"
	"github.com/failoverkit/failover/ratelimit"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "karmadafork:", err)
		os.Exit(1)
	}
}

// flags are the command line: Karmada's own ClusterFailoverOptions, the
// library's rate flags on the same flag set (--resource-eviction-rate is
// Karmada's flag, shared), and the manager's.
type flags struct {
	failover       options.ClusterFailoverOptions
	rate           ratelimit.Config
	kubeconfig     string
	metricsAddr    string
	probeAddr      string
	leaderElect    bool
	leaseNamespace string
	leaseName      string
	gracefulEvict  time.Duration
	workers        int
}

func parseFlags(args []string) (*flags, error) {
	f := &flags{}
	fs := pflag.NewFlagSet("karmadafork", pflag.ContinueOnError)
	f.failover.AddFlags(fs)
	f.rate.AddFlags(fs)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty: $KUBECONFIG, then in-cluster.")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "Address of /metrics (controller-runtime's registry); 0 disables.")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz; 0 disables.")
	fs.BoolVar(&f.leaderElect, "leader-elect", true, "Run the controllers and the eviction queues only while holding the Lease.")
	fs.StringVar(&f.leaseNamespace, "leader-elect-resource-namespace", "karmada-system", "Namespace of the leader election Lease.")
	fs.StringVar(&f.leaseName, "leader-elect-resource-name", "failover-karmadafork", "Name of the leader election Lease.")
	fs.DurationVar(&f.gracefulEvict, "graceful-eviction-timeout", 10*time.Minute, "How long a graceful eviction task without gracePeriodSeconds may wait for the workload to be healthy elsewhere.")
	fs.IntVar(&f.workers, "eviction-workers", 1, "Handler goroutines per eviction queue; the rate is shared by all.")
	klogFlags := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if errs := f.failover.Validate(); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return f, nil
}

func run(args []string) error {
	f, err := parseFlags(args)
	if errors.Is(err, pflag.ErrHelp) {
		return nil // pflag has printed the usage
	}
	if err != nil {
		return err
	}
	ctrl.SetLogger(klog.NewKlogr())
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := fork.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              f.leaseName,
		LeaderElectionNamespace:       f.leaseNamespace,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	if _, err := fork.Setup(ctx, mgr, fork.Options{
		Rate:                            f.rate,
		EnableNoExecuteTaintEviction:    f.failover.EnableNoExecuteTaintEviction,
		NoExecuteTaintEvictionPurgeMode: failover.PurgeMode(f.failover.NoExecuteTaintEvictionPurgeMode),
		GracefulEvictionTimeout:         f.gracefulEvict,
		Workers:                         f.workers,
	}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// restConfig reads --kubeconfig, else $KUBECONFIG, else the in-cluster
// configuration.
func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	if path == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", path)
}

// Command karmadafork runs the failover library's controllers for Karmada
// (package github.com/failoverkit/failover/karmada/controllers) in a
// controller-runtime manager of its own, on Karmada v1.18's Cluster,
// ClusterTaintPolicy, ResourceBinding and ClusterResourceBinding objects:
// the same controllers a fork registers in karmada-controller-manager with
// the diff in karmada-v1.18.patch. See README.md.
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
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada/controllermanager"
	"github.com/failoverkit/failover/karmada/controllers"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "karmadafork:", err)
		os.Exit(1)
	}
}

// flags are the command line, in the named sections
// karmada-controller-manager has: Karmada's own ClusterFailoverOptions,
// the library's "failover" section beside them (sharing
// --resource-eviction-rate), and the manager's.
type flags struct {
	clusterFailover options.ClusterFailoverOptions
	failover        *controllermanager.Options
	metricsAddr     string
	probeAddr       string
	leaderElect     bool
	leaseNamespace  string
	leaseName       string
	leaseDuration   time.Duration
	renewDeadline   time.Duration
	retryPeriod     time.Duration
	gracefulEvict   time.Duration
	kubeAPIQPS      float32
	kubeAPIBurst    int
}

func parseFlags(args []string) (*flags, error) {
	f := &flags{failover: controllermanager.NewOptions()}
	fss := cliflag.NamedFlagSets{}
	clusterFailoverFlagSet := fss.FlagSet("cluster failover")
	f.clusterFailover.AddFlags(clusterFailoverFlagSet)
	f.failover.AddFlags(fss.FlagSet(controllermanager.FlagSection), clusterFailoverFlagSet)
	gs := fss.FlagSet("generic")
	gs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "Address of /metrics (controller-runtime's registry); 0 disables.")
	gs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz; 0 disables.")
	gs.BoolVar(&f.leaderElect, "leader-elect", true, "Run the controllers and the eviction queues only while holding the Lease.")
	gs.StringVar(&f.leaseNamespace, "leader-elect-resource-namespace", "karmada-system", "Namespace of the leader election Lease.")
	gs.StringVar(&f.leaseName, "leader-elect-resource-name", "failover-karmadafork", "Name of the leader election Lease.")
	// Karmada's names and defaults: a standby takes over a killed leader's
	// Lease once lease-duration has passed since its last renewal.
	gs.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a standby waits after the Lease's last renewal before taking it over.")
	gs.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader tries to renew its Lease before it stops leading; at most the lease duration.")
	gs.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often a replica tries to take or renew the Lease.")
	gs.DurationVar(&f.gracefulEvict, "graceful-eviction-timeout", 10*time.Minute, "How long a graceful eviction task without gracePeriodSeconds may wait for the workload to be healthy elsewhere.")
	// Karmada's names and defaults. An eviction sends the API server about
	// three requests (karmada/controller-manager.md): a rate of r a second
	// needs a QPS of 3r beside the rest of the controllers' requests.
	gs.Float32Var(&f.kubeAPIQPS, "kube-api-qps", 40, "QPS to use while talking with the API server.")
	gs.IntVar(&f.kubeAPIBurst, "kube-api-burst", 60, "Burst to use while talking with the API server.")
	// controller-runtime's --kubeconfig and klog's flags, as Karmada adds them.
	klog.InitFlags(nil)
	gs.AddGoFlagSet(goflag.CommandLine)

	fs := pflag.NewFlagSet("karmadafork", pflag.ContinueOnError)
	for _, name := range fss.Order {
		fs.AddFlagSet(fss.FlagSets[name])
	}
	fs.Usage = func() { cliflag.PrintSections(os.Stderr, fss, 0) }
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if errs := f.clusterFailover.Validate(); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	if f.leaderElect {
		if err := checkLease(f.leaseDuration, f.renewDeadline, f.retryPeriod); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// leaseJitter is client-go's leaderelection.JitterFactor: the renew
// deadline must exceed the retry period times it.
const leaseJitter = 1.2

// checkLease holds the three Lease flags to the rules client-go's leader
// election enforces only once the manager starts, naming the flags.
func checkLease(lease, renew, retry time.Duration) error {
	switch {
	case retry <= 0:
		return fmt.Errorf("--leader-elect-retry-period %v: must be positive", retry)
	case renew <= time.Duration(leaseJitter*float64(retry)):
		return fmt.Errorf("--leader-elect-renew-deadline %v: must be more than %v times --leader-elect-retry-period (%v)",
			renew, leaseJitter, retry)
	case lease <= renew:
		return fmt.Errorf("--leader-elect-lease-duration %v: must be more than --leader-elect-renew-deadline (%v)", lease, renew)
	}
	return nil
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
	cfg, err := ctrl.GetConfig() // --kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = f.kubeAPIQPS, f.kubeAPIBurst
	scheme := runtime.NewScheme()
	if err := controllers.AddToScheme(scheme); err != nil {
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
		LeaseDuration:                 &f.leaseDuration,
		RenewDeadline:                 &f.renewDeadline,
		RetryPeriod:                   &f.retryPeriod,
	})
	if err != nil {
		return err
	}
	if err := errors.Join(mgr.AddHealthzCheck("ping", healthz.Ping), mgr.AddReadyzCheck("ping", healthz.Ping)); err != nil {
		return err
	}
	if err := setup(mgr, f); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// setup adds the three controllers, each built from the same flags as
// karmada-controller-manager's init functions (package controllermanager)
// build it.
func setup(mgr ctrl.Manager, f *flags) error {
	// The ledger of the evictions in flight, built from
	// --eviction-capacity-hold: the eviction controller holds room in it,
	// and gives it back when it sees a task end.
	ledger, err := f.failover.Ledger()
	if err != nil {
		return err
	}
	freeze, err := f.failover.Freeze()
	if err != nil {
		return err
	}
	ev, err := controllers.Setup(mgr, controllers.ClusterTaintPolicyOptions{}, controllers.EvictionOptions{
		Rate:                            f.failover.Rate,
		EnableNoExecuteTaintEviction:    f.clusterFailover.EnableNoExecuteTaintEviction,
		NoExecuteTaintEvictionPurgeMode: failover.PurgeMode(f.clusterFailover.NoExecuteTaintEvictionPurgeMode),
		Workers:                         f.failover.EvictionWorkers,
		Ledger:                          ledger,
		DisableLedger:                   ledger == nil,
		Freeze:                          freeze,
	}, controllers.GracefulEvictionOptions{Timeout: f.gracefulEvict})
	if err != nil {
		return err
	}
	// Failback shares the eviction controller's fleet, rate and freeze;
	// with --failback-stabilization-window 0 (the default) it acts only on
	// bindings whose annotation sets a window of their own.
	fb, err := controllers.NewFailbackController(f.failover.FailbackOptions(), ev)
	if err != nil {
		return err
	}
	return fb.SetupWithManager(mgr)
}

// Command taintcontroller keeps the taints of Karmada Cluster objects as the
// ClusterTaintPolicy objects in the same API server decide, using package
// taintpolicy. It runs against any kubeconfig; see README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"

	"github.com/failoverkit/failover/examples/taintcontroller/controller"
)

type options struct {
	kubeconfig     string
	workers        int
	resync         time.Duration
	metricsAddr    string
	leaderElect    bool
	leaseNamespace string
	leaseName      string
	identity       string
	leaseDuration  time.Duration
	renewDeadline  time.Duration
	retryPeriod    time.Duration
}

func main() {
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs := pflag.NewFlagSet(os.Args[0], pflag.ExitOnError)
	fs.AddGoFlagSet(klogFlags)
	o := bindFlags(fs)
	_ = fs.Parse(os.Args[1:]) // ExitOnError: Parse exits on a bad flag
	defer klog.Flush()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		klog.ErrorS(err, "taintcontroller failed")
		klog.Flush()
		os.Exit(1)
	}
}

func bindFlags(fs *pflag.FlagSet) *options {
	o := &options{}
	hostname, _ := os.Hostname()
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Empty: $KUBECONFIG, then the in-cluster config.")
	fs.IntVar(&o.workers, "workers", controller.DefaultWorkers, "Clusters evaluated and written in parallel.")
	fs.DurationVar(&o.resync, "resync-period", controller.DefaultResyncPeriod, "How often every cluster is evaluated again even without events.")
	fs.StringVar(&o.metricsAddr, "metrics-addr", ":8080", "Address serving /metrics and /healthz. Empty: no HTTP server.")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "Run only while holding the Lease, so replicas never both write.")
	fs.StringVar(&o.leaseNamespace, "lease-namespace", "kube-system", "Namespace of the leader election Lease.")
	fs.StringVar(&o.leaseName, "lease-name", "failover-taintcontroller", "Name of the leader election Lease.")
	fs.StringVar(&o.identity, "identity", hostname+"_"+rand.String(8), "This replica's name in the Lease; unique per replica.")
	fs.DurationVar(&o.leaseDuration, "lease-duration", controller.DefaultLeaseDuration, "How long a Lease is honoured without renewal.")
	fs.DurationVar(&o.renewDeadline, "renew-deadline", controller.DefaultRenewDeadline, "How long the leader retries renewal before giving up leadership.")
	fs.DurationVar(&o.retryPeriod, "retry-period", controller.DefaultRetryPeriod, "Pause between attempts to acquire or renew the Lease.")
	return o
}

func run(ctx context.Context, o *options) error {
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = "failover-taintcontroller"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	leader := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "taintcontroller_is_leader",
		Help: "1 while this replica holds the leader election Lease (always 1 without leader election).",
	})
	reg.MustRegister(leader)

	ctrl, err := controller.New(controller.Config{
		Client:       dyn,
		Workers:      o.workers,
		ResyncPeriod: o.resync,
		Registerer:   reg,
	})
	if err != nil {
		return err
	}

	var watchdog *leaderelection.HealthzAdaptor
	if o.leaderElect {
		// Healthy unless this replica leads and has missed renewals for
		// longer than the lease plus this slack.
		watchdog = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	}
	if o.metricsAddr != "" {
		srv, err := serve(o.metricsAddr, reg, watchdog)
		if err != nil {
			return err
		}
		defer func() {
			shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdownCtx)
		}()
	}

	runController := func(ctx context.Context) error {
		leader.Set(1)
		defer leader.Set(0)
		return ctrl.Run(ctx)
	}
	if !o.leaderElect {
		return runController(ctx)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	klog.InfoS("Campaigning for leadership", "lease", o.leaseNamespace+"/"+o.leaseName, "identity", o.identity)
	return controller.RunWithLeaderElection(ctx, controller.LeaderElection{
		Client:        kube,
		Namespace:     o.leaseNamespace,
		Name:          o.leaseName,
		Identity:      o.identity,
		LeaseDuration: o.leaseDuration,
		RenewDeadline: o.renewDeadline,
		RetryPeriod:   o.retryPeriod,
		WatchDog:      watchdog,
		OnNewLeader: func(identity string) {
			klog.InfoS("Observed leader", "leader", identity, "self", identity == o.identity)
		},
	}, runController)
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}

// serve starts the HTTP server for /metrics and /healthz. It listens before
// returning so that a port already in use fails the start, not a goroutine.
func serve(addr string, reg *prometheus.Registry, watchdog *leaderelection.HealthzAdaptor) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if watchdog != nil {
			if err := watchdog.Check(r); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		_, _ = w.Write([]byte("ok"))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Metrics server stopped")
		}
	}()
	return srv, nil
}

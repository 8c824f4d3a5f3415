//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/karmada-io/karmada/cmd/controller-manager/app/options"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	controllerscontext "github.com/karmada-io/karmada/pkg/controllers/context"
	karmadametrics "github.com/karmada-io/karmada/pkg/metrics"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/controllermanager"
	"github.com/failoverkit/failover/karmada/controllers"
	"github.com/failoverkit/failover/karmada/engine"
)

// forkControllerManagerArg, as the first argument of the test binary, makes
// it the fork's controller-manager (TestMain): see forkControllerManager.
const forkControllerManagerArg = "--e2e-fork-controller-manager"

// forkControllerManager is karmada-controller-manager as
// examples/karmadafork/karmada-v1.18.patch makes it, less Karmada's own
// controllers: Karmada v1.18's command line (its options.Options with
// --controllers, --feature-gates on Karmada's global gate, the leader
// election and probe flags, its "cluster failover" section) and the
// patch's "failover" section; the controller table holding the patch's
// four lines, its disabled-by-default set as the patch extends it, and
// Karmada's own Initializers.StartControllers over a
// controllerscontext.Context built as Karmada's setupControllers builds
// it; a controller-runtime manager with Karmada's leader election options,
// and Karmada's cluster collectors registered on controller-runtime's
// registry first, as Karmada's Run does. The test binary runs it in a
// process of its own (os.Args[0] with forkControllerManagerArg), so that
// a restart is a real one: a new process, with nothing in memory.
func forkControllerManager(args []string) error {
	failoverOptions := controllermanager.NewOptions()
	table := controllerscontext.Initializers{
		controllermanager.EvictionControllerName:            failoverOptions.StartEvictionController,
		controllermanager.GracefulEvictionControllerName:    failoverOptions.StartGracefulEvictionController,
		controllermanager.ClusterTaintPolicyControllerName:  failoverOptions.StartClusterTaintPolicyController,
		controllermanager.ApplicationFailoverControllerName: failoverOptions.StartApplicationFailoverController,
	}
	disabledByDefault := sets.New("hpaScaleTargetMarker", "deploymentReplicasSyncer").Insert(controllermanager.DisabledByDefault()...)

	opts := options.NewOptions()
	fs := pflag.NewFlagSet("karmada-controller-manager", pflag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "Path to karmada control plane kubeconfig file.")
	opts.AddFlags(fs, table.ControllerNames(), sets.List(disabledByDefault))
	clusterFailoverFlagSet := pflag.NewFlagSet("cluster failover", pflag.ContinueOnError)
	opts.ClusterFailoverOptions.AddFlags(clusterFailoverFlagSet)
	failoverFlagSet := pflag.NewFlagSet(controllermanager.FlagSection, pflag.ContinueOnError)
	failoverOptions.AddFlags(failoverFlagSet, clusterFailoverFlagSet)
	fs.AddFlagSet(clusterFailoverFlagSet)
	fs.AddFlagSet(failoverFlagSet)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if errs := opts.Validate(); len(errs) != 0 {
		return errs.ToAggregate()
	}
	ctrl.SetLogger(klog.Background())

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = opts.KubeAPIQPS, opts.KubeAPIBurst
	scheme := runtime.NewScheme()
	if err := controllers.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Logger:                     klog.Background(),
		Scheme:                     scheme,
		Cache:                      cache.Options{SyncPeriod: &opts.ResyncPeriod.Duration},
		LeaderElection:             opts.LeaderElection.LeaderElect,
		LeaderElectionID:           opts.LeaderElection.ResourceName,
		LeaderElectionNamespace:    opts.LeaderElection.ResourceNamespace,
		LeaseDuration:              &opts.LeaderElection.LeaseDuration.Duration,
		RenewDeadline:              &opts.LeaderElection.RenewDeadline.Duration,
		RetryPeriod:                &opts.LeaderElection.RetryPeriod.Duration,
		LeaderElectionResourceLock: opts.LeaderElection.ResourceLock,
		HealthProbeBindAddress:     opts.HealthProbeBindAddress,
		LivenessEndpointName:       "/healthz",
		Metrics:                    metricsserver.Options{BindAddress: opts.MetricsBindAddress},
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	ctrlmetrics.Registry.MustRegister(karmadametrics.ClusterCollectors()...)

	ctx := ctrl.SetupSignalHandler()
	controllerContext := controllerscontext.Context{
		Mgr:     mgr,
		Context: ctx,
		Opts: controllerscontext.Options{
			Controllers:                  opts.Controllers,
			ClusterStatusUpdateFrequency: opts.ClusterStatusUpdateFrequency,
			EnableTaintManager:           opts.EnableTaintManager,
			RateLimiterOptions:           opts.RateLimiterOpts,
			GracefulEvictionTimeout:      opts.GracefulEvictionTimeout,
			ClusterFailoverConfiguration: opts.ClusterFailoverOptions,
		},
	}
	if err := table.StartControllers(controllerContext, disabledByDefault); err != nil {
		return fmt.Errorf("error starting controllers: %w", err)
	}
	return mgr.Start(ctx)
}

// The restart case's timing. The window is long enough for a restart
// (SIGKILL, then the Lease of the killed process to lapse) to fit in its
// middle with room on either side on a loaded two-core machine.
const (
	appTolerationSeconds = 24
	appWindow            = appTolerationSeconds * time.Second
	// appFlapAt and appFlapFor place the flapping binding's Unknown stretch
	// in the window: from appFlapAt after the copy turned Unhealthy, for
	// appFlapFor.
	appFlapAt  = 3 * time.Second
	appFlapFor = 4 * time.Second
	// appKillAt is when, after the copy turned Unhealthy, the fork's
	// controller-manager is killed. The new process, started at once,
	// takes the Lease once it has seen the killed one's record unrenewed
	// for appLease (client-go counts from its own first sight of it).
	appKillAt = 8 * time.Second
	appLease  = 4 * time.Second
	// appResync bounds how long after the window's end the failover may
	// come. The controller needs no periodic resync: every decision that
	// does not fail over requeues the binding for the moment its window
	// ends (Result.After, counted from the timers in the annotation, so
	// also on the first reconcile of a restarted process, from its initial
	// list). That one requeued reconcile is "one resync" here, and the
	// bound is its own time, counted from the window's end as the timers
	// stamp it (whole seconds, at most a second or two after the test's
	// reckoning, asserted apart): a permit (immediate at 10/s), the
	// cluster read, the pre-scheduling check and the write, a few API
	// calls, on a loaded two-core machine shared with etcd and the API
	// server (measured: well under a second).
	appResync = 3 * time.Second
)

// appSuite is the restart case's world: an API server of its own (the
// fork's controller-manager caches every Cluster and binding, as Karmada's
// does, so the fleet it sees must be this test's alone), its admin client,
// and the fork's controller-manager process.
type appSuite struct {
	t   *testing.T
	e   *apiEnv
	c   client.Client
	ns  string
	bin string
	// metrics is the address of the current process's /metrics.
	metrics string
}

// TestKarmadaForkApplicationFailoverRestart is issue 39's e2e restart case,
// on a real kube-apiserver and etcd with Karmada v1.18's CRDs and the
// fork's controller-manager (forkControllerManager) started with
// --controllers=*,-applicationFailover,failoverEviction,failoverApplicationFailover:
// the application failover entry on, Karmada's applicationFailover off, as
// the entry requires (named without it, the process refuses to start and
// says which flag to change).
//
// Two bindings run on app-1, app-2 and app-3 (app-4 free), with
// spec.failover.application {tolerationSeconds 24, purgeMode Gracefully,
// gracePeriodSeconds 600} and propagateDeps. The test plays the members:
// it writes status.aggregatedStatus. At T0 it makes the copy on app-1
// Unhealthy on both; the flapping binding's copy turns Unknown at T0+3s and
// Unhealthy again at T0+7s. At T0+8s the process is killed (SIGKILL: no
// Lease released, nothing written at exit) and started again; the new
// process leads once the old Lease lapses, some 5 s later.
//
// Required: the timers annotation survives the restart (the new leader
// reads the record the killed one wrote and leaves it as it is); no
// failover before the window's end, counted from when the test made the
// copy Unhealthy (T0+24s for the steady binding; T0+28s for the flapping
// one, whose Unknown stretch neither starts nor resets the timer, Unknown
// excluded, up to the whole-second stamps' second); each fails over
// within one resync (appResync: the one reconcile the controller requeues
// for the window's end, as its timers stamp it) after its window's end, by
// the process started after the restart: a graceful eviction task from app-1 with
// producer ApplicationFailoverController, the binding's purge mode and
// grace period, app-1 out of spec.clusters and out of the timers, a
// Normal ApplicationFailedOver Event, and
// application_failover_total{result="failed_over"} 2 on the new process.
// Karmada v1.18's rules would fail the flapping binding over 31 s after T0
// (Unknown resets), and a controller with its timers in memory 24 s after
// the restart (some 37 s after T0): both far outside the bound.
func TestKarmadaForkApplicationFailoverRestart(t *testing.T) {
	noLeaks(t)
	s := newAppSuite(t)
	for i := 1; i <= 4; i++ {
		s.cluster(fmt.Sprintf("app-%d", i))
	}
	on := []string{"app-1", "app-2", "app-3"}
	healthy := map[string]workv1alpha2.ResourceHealth{"app-1": workv1alpha2.ResourceHealthy, "app-2": workv1alpha2.ResourceHealthy, "app-3": workv1alpha2.ResourceHealthy}
	for _, name := range []string{"steady", "flapping"} {
		s.binding(name, on)
		s.health(name, healthy)
	}
	watch := s.watchFailovers()

	// Named beside Karmada's applicationFailover, the entry refuses to
	// start and says what to change.
	conflicting := s.forkArgs("--controllers=*,failoverEviction,failoverApplicationFailover")
	p := runExample(t, s.bin, append([]string{forkControllerManagerArg}, conflicting...)...)
	select {
	case err := <-p.exited:
		p.exited <- err // for the cleanup
		require.Error(t, err, "the fork's controller-manager started beside Karmada's applicationFailover")
		log, _ := os.ReadFile(p.log)
		assert.Contains(t, string(log), "--controllers=*,-applicationFailover,failoverEviction,failoverApplicationFailover",
			"the error names the corrected flag")
	case <-time.After(60 * time.Second):
		t.Fatal("the fork's controller-manager, named beside Karmada's applicationFailover, did not stop within 60s")
	}

	args := s.forkArgs("--controllers=*,-applicationFailover,failoverEviction,failoverApplicationFailover")
	first := s.startFork(args)
	firstHolder := s.waitLeader("")

	// T0: the copy on app-1 turns Unhealthy on both bindings.
	unhealthy := maps.Clone(healthy)
	unhealthy["app-1"] = workv1alpha2.ResourceUnhealthy
	t0 := s.health("steady", unhealthy)
	t0flap := s.health("flapping", unhealthy)
	for _, name := range []string{"steady", "flapping"} {
		s.waitTimer(name, "app-1", func(tm appfailover.Timer) bool { return tm.Health == gracefulevict.Unhealthy })
	}

	// The flap: Unknown for appFlapFor, from appFlapAt.
	sleepUntil(t0flap.Add(appFlapAt))
	unknown := maps.Clone(healthy)
	unknown["app-1"] = workv1alpha2.ResourceUnknown
	flapFrom := s.health("flapping", unknown)
	s.waitTimer("flapping", "app-1", func(tm appfailover.Timer) bool {
		return tm.Health == gracefulevict.Unknown && tm.CountedSeconds > 0
	})
	sleepUntil(flapFrom.Add(appFlapFor))
	flapTo := s.health("flapping", unhealthy)
	flapped := flapTo.Sub(flapFrom)
	s.waitTimer("flapping", "app-1", func(tm appfailover.Timer) bool { return tm.Health == gracefulevict.Unhealthy })

	// The restart, mid-window.
	sleepUntil(t0.Add(appKillAt))
	require.Empty(t, watch.seen(), "a failover before the restart")
	before := map[string]string{}
	// stamped is each binding's window end as its timer in the annotation
	// sets it: the moment the controller means to fail over.
	stamped := map[string]time.Time{}
	for _, name := range []string{"steady", "flapping"} {
		rb := s.getBinding(name)
		before[name] = rb.Annotations[karmada.ApplicationTimersAnnotation]
		rec, err := karmada.ApplicationTimers(rb.Annotations)
		require.NoError(t, err, "%s: timers before the restart", name)
		tm, ok := rec.Find("app-1")
		require.True(t, ok, "%s: no timer of app-1 before the restart: %q", name, before[name])
		require.Equal(t, gracefulevict.Unhealthy, tm.Health, "%s: timer before the restart", name)
		stamped[name] = tm.Since.Add(appWindow - time.Duration(tm.CountedSeconds)*time.Second)
	}
	first.kill(t)
	killed := time.Now()
	s.startFork(args)
	s.waitLeader(firstHolder)
	led := time.Now()
	t.Logf("killed at T0+%v; the new process leads at T0+%v (%v after the kill)",
		killed.Sub(t0).Round(100*time.Millisecond), led.Sub(t0).Round(100*time.Millisecond), led.Sub(killed).Round(100*time.Millisecond))
	require.True(t, led.Before(t0.Add(appWindow-2*time.Second)), "the new process led at T0+%v: not mid-window", led.Sub(t0))
	// Its first reconciles (from its initial list) read the timers and
	// keep them: once it has reconciled both bindings, compare.
	reconciler := controllers.ApplicationFailoverName + "-resourcebinding"
	eventually(t, 10*time.Second, "the new process to reconcile both bindings", func() bool {
		n, ok := s.metric("controller_runtime_reconcile_total", `controller="`+reconciler+`",result="requeue_after"`)
		return ok && n >= 2
	})
	require.True(t, time.Now().Before(t0.Add(appWindow)), "the new process reconciled both bindings only after the window's end")
	for _, name := range []string{"steady", "flapping"} {
		assert.Equal(t, before[name], s.getBinding(name).Annotations[karmada.ApplicationTimersAnnotation],
			"%s: the timers annotation changed across the restart", name)
	}

	// The window's end, as the test made it: no failover before it, and
	// each within one resync of it.
	ends := map[string]time.Time{
		"steady":   t0.Add(appWindow),
		"flapping": t0flap.Add(appWindow + flapped),
	}
	// Whole-second stamps: a timer starts at the whole second after the
	// controller saw the change (a watch event after the test's write), so
	// its end comes up to a second, and that event's delay, after the
	// test's reckoning; the flapping binding's counted time is the
	// difference of two such stamps, so its end may also come up to a
	// second before it, and up to two (and the delays) after.
	early := map[string]time.Duration{"steady": 0, "flapping": time.Second}
	late := map[string]time.Duration{"steady": 2 * time.Second, "flapping": 3 * time.Second}
	for _, name := range []string{"steady", "flapping"} {
		end := ends[name]
		assert.False(t, stamped[name].Before(end.Add(-early[name])), "%s: the timers end the window at %v, before %v", name, stamped[name], end)
		assert.False(t, stamped[name].After(end.Add(late[name])), "%s: the timers end the window at %v, well after %v", name, stamped[name], end)
		seen := watch.wait(t, name, stamped[name].Add(appResync+10*time.Second))
		t.Logf("%s: window end at T0+%v (as stamped: T0+%v), the failover seen at T0+%v (%v after the stamped end); task created %v",
			name, end.Sub(t0).Round(100*time.Millisecond), stamped[name].Sub(t0).Round(100*time.Millisecond), seen.at.Sub(t0).Round(100*time.Millisecond),
			seen.at.Sub(stamped[name]).Round(10*time.Millisecond), seen.task.CreationTimestamp.Time.Format(time.TimeOnly))
		assert.False(t, seen.at.Before(end.Add(-early[name])), "%s failed over at %v, before its window's end %v", name, seen.at, end)
		assert.False(t, seen.at.Before(stamped[name]), "%s failed over at %v, before its timers' end %v", name, seen.at, stamped[name])
		assert.False(t, seen.task.CreationTimestamp.Time.Before(end.Add(-early[name]).Truncate(time.Second)),
			"%s: task created %v, before its window's end %v", name, seen.task.CreationTimestamp, end)
		assert.True(t, seen.at.Before(stamped[name].Add(appResync)), "%s failed over at %v, more than %v after its window's end %v (as stamped)",
			name, seen.at, appResync, stamped[name])

		assert.Equal(t, engine.ApplicationFailoverProducer, seen.task.Producer, "%s: producer", name)
		assert.Equal(t, policyv1alpha1.PurgeModeGracefully, seen.task.PurgeMode, "%s: purge mode", name)
		assert.Equal(t, ptr.To[int32](600), seen.task.GracePeriodSeconds, "%s: grace period", name)
		rb := s.getBinding(name)
		assert.NotContains(t, targets(&rb.Spec), "app-1", "%s: still scheduled on app-1", name)
		rec, err := karmada.ApplicationTimers(rb.Annotations)
		require.NoError(t, err)
		_, ok := rec.Find("app-1")
		assert.False(t, ok, "%s: app-1's timer stayed after the failover: %v", name, rec)
		ev := s.event(name, controllers.EventReasonApplicationFailedOver)
		assert.Equal(t, corev1.EventTypeNormal, ev.Type)
		assert.Contains(t, ev.Note, "failed over from app-1")
		t.Logf("%s: Event %s: %s", name, ev.Reason, ev.Note)
	}
	assert.Len(t, watch.seen(), 2, "failovers: %v", watch.seen())
	never(t, 2*time.Second, "a failover from a healthy copy", func() bool { return len(watch.seen()) > 2 })
	v, ok := s.metric("application_failover_total", `result="failed_over"`)
	assert.True(t, ok, "the new process serves no application_failover_total")
	assert.Equal(t, 2.0, v, "application_failover_total{result=\"failed_over\"} of the process started after the restart")
}

func newAppSuite(t *testing.T) *appSuite {
	e, err := startEnv(env.bin)
	if e != nil {
		t.Cleanup(func() {
			if t.Failed() {
				e.dumpLogs()
			}
			e.stop()
		})
	}
	require.NoError(t, err)
	c, err := client.New(e.config, client.Options{Scheme: scheme(t)})
	require.NoError(t, err)
	s := &appSuite{t: t, e: e, c: c, ns: "shop", bin: os.Args[0]}
	for _, ns := range []string{"karmada-system", s.ns} {
		require.NoError(t, c.Create(ctxFor(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	return s
}

// forkArgs are the fork's flags for this API server, with controllers.
type forkArgs []string

func (s *appSuite) forkArgs(controllersFlag string) forkArgs {
	return forkArgs{
		"--kubeconfig=" + filepath.Join(s.e.dir, "kubeconfig"),
		"--feature-gates=Failover=true",
		"--enable-taint-manager=false",
		controllersFlag,
		"--resource-eviction-rate=10",
		"--leader-elect-lease-duration=" + appLease.String(),
		"--leader-elect-renew-deadline=3s",
		"--leader-elect-retry-period=500ms",
	}
}

// startFork starts the fork's controller-manager with args and waits for
// its /healthz; it is the current process from then on.
func (s *appSuite) startFork(args forkArgs) *exampleProcess {
	t := s.t
	t.Helper()
	metrics, probe := freeAddr(t), freeAddr(t)
	p := runExample(t, s.bin, append([]string{forkControllerManagerArg,
		"--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + probe}, args...)...)
	eventually(t, 60*time.Second, "the fork's controller-manager to answer /healthz", func() bool {
		select {
		case err := <-p.exited:
			p.exited <- err
			log, _ := os.ReadFile(p.log)
			t.Fatalf("the fork's controller-manager exited: %v\n%s", err, log)
		default:
		}
		v, ok := httpGet("http://" + probe + "/healthz")
		return ok && v == "ok"
	})
	s.metrics = metrics
	return p
}

// waitLeader waits until a process other than previous holds the fork's
// Lease, and returns the holder.
func (s *appSuite) waitLeader(previous string) string {
	var holder string
	eventually(s.t, 60*time.Second, "a new holder of the fork's Lease", func() bool {
		var l coordinationv1.Lease
		if err := s.c.Get(ctxFor(s.t), client.ObjectKey{Namespace: "karmada-system", Name: "karmada-controller-manager"}, &l); err != nil {
			return false
		}
		holder = ptr.Deref(l.Spec.HolderIdentity, "")
		return holder != "" && holder != previous
	})
	return holder
}

// metric is the sample of name{labels} the current process serves.
func (s *appSuite) metric(name, labels string) (float64, bool) {
	body, ok := httpGet("http://" + s.metrics + "/metrics")
	if !ok {
		return 0, false
	}
	var v float64
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, name+"{"+labels+"} ")
		if !ok {
			continue
		}
		_, err := fmt.Sscan(rest, &v)
		return v, err == nil
	}
	return 0, false
}

// cluster creates a Ready Cluster without taints.
func (s *appSuite) cluster(name string) {
	t := s.t
	t.Helper()
	ctx := ctxFor(t)
	c := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       clusterv1alpha1.ClusterSpec{APIEndpoint: "https://" + name + ".invalid:6443"},
	}
	require.NoError(t, s.c.Create(ctx, c))
	c.Status.Conditions = []metav1.Condition{{
		Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: "E2E", Message: "set by the e2e test",
		LastTransitionTime: metav1.Now(),
	}}
	require.NoError(t, s.c.Status().Update(ctx, c))
}

// binding creates a ResourceBinding on clusters, allowed on app-1 to app-4,
// opted in to application failover as a PropagationPolicy with
// propagateDeps and spec.failover.application leaves it.
func (s *appSuite) binding(name string, clusters []string) {
	t := s.t
	t.Helper()
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}}
	rb.Spec = workv1alpha2.ResourceBindingSpec{
		Resource:      workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: s.ns, Name: name},
		PropagateDeps: true,
		Placement: &policyv1alpha1.Placement{
			ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"app-1", "app-2", "app-3", "app-4"}},
		},
		Failover: &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To[int32](appTolerationSeconds)},
			PurgeMode:          policyv1alpha1.PurgeModeGracefully,
			GracePeriodSeconds: ptr.To[int32](600),
		}},
	}
	for _, c := range clusters {
		rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: 1})
	}
	applied, err := json.Marshal(rb.Spec.Placement)
	require.NoError(t, err)
	rb.Annotations = map[string]string{karmada.AppliedPlacementAnnotation: string(applied)}
	require.NoError(t, s.c.Create(ctxFor(t), rb))
}

// health plays Karmada's agents: the binding's aggregated status, one item
// per cluster with its health. It returns the time just before the write
// that made it so.
func (s *appSuite) health(name string, health map[string]workv1alpha2.ResourceHealth) time.Time {
	t := s.t
	t.Helper()
	ctx := ctxFor(t)
	var at time.Time
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rb := s.getBinding(name)
		rb.Status.SchedulerObservedGeneration = rb.Generation
		rb.Status.AggregatedStatus = nil
		for _, c := range slices.Sorted(maps.Keys(health)) {
			rb.Status.AggregatedStatus = append(rb.Status.AggregatedStatus, workv1alpha2.AggregatedStatusItem{
				ClusterName: c, Applied: true, Health: health[c],
			})
		}
		at = time.Now()
		return s.c.Status().Update(ctx, rb)
	}))
	return at
}

func (s *appSuite) getBinding(name string) *workv1alpha2.ResourceBinding {
	var rb workv1alpha2.ResourceBinding
	require.NoError(s.t, s.c.Get(ctxFor(s.t), client.ObjectKey{Namespace: s.ns, Name: name}, &rb))
	return &rb
}

// waitTimer waits until the binding's timers annotation holds a timer of
// cluster for which ok holds.
func (s *appSuite) waitTimer(name, cluster string, ok func(appfailover.Timer) bool) {
	s.t.Helper()
	eventually(s.t, 10*time.Second, name+"'s timer of "+cluster, func() bool {
		rec, err := karmada.ApplicationTimers(s.getBinding(name).Annotations)
		if err != nil {
			return false
		}
		tm, found := rec.Find(cluster)
		return found && ok(tm)
	})
}

// event waits for an Event of reason regarding the binding.
func (s *appSuite) event(name, reason string) eventsv1.Event {
	s.t.Helper()
	var ev eventsv1.Event
	eventually(s.t, 10*time.Second, "an Event "+reason+" on "+name, func() bool {
		var list eventsv1.EventList
		if err := s.c.List(ctxFor(s.t), &list, client.InNamespace(s.ns)); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				ev = e
				return true
			}
		}
		return false
	})
	return ev
}

// appFailoverLog records, from a watch, when each binding's graceful eviction
// task from app-1 first appeared, as the test's clock saw it.
type appFailoverLog struct {
	mu    sync.Mutex
	first map[string]appFailoverSeen
}

type appFailoverSeen struct {
	at   time.Time
	task workv1alpha2.GracefulEvictionTask
}

func (s *appSuite) watchFailovers() *appFailoverLog {
	t := s.t
	t.Helper()
	l := &appFailoverLog{first: map[string]appFailoverSeen{}}
	wc, err := client.NewWithWatch(s.e.config, client.Options{Scheme: scheme(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &workv1alpha2.ResourceBindingList{}, client.InNamespace(s.ns))
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			rb, ok := ev.Object.(*workv1alpha2.ResourceBinding)
			if !ok {
				continue
			}
			now := time.Now()
			if tk := task(&rb.Spec, "app-1"); tk != nil {
				l.mu.Lock()
				if _, ok := l.first[rb.Name]; !ok {
					l.first[rb.Name] = appFailoverSeen{at: now, task: *tk.DeepCopy()}
				}
				l.mu.Unlock()
			}
		}
	})
	return l
}

func (l *appFailoverLog) seen() map[string]appFailoverSeen {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.first)
}

func (l *appFailoverLog) wait(t *testing.T, name string, until time.Time) appFailoverSeen {
	t.Helper()
	var f appFailoverSeen
	eventually(t, time.Until(until), name+" to fail over from app-1", func() bool {
		var ok bool
		f, ok = l.seen()[name]
		return ok
	})
	return f
}

// sleepUntil sleeps until at, if it is still to come.
func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

// httpGet is the body of a 200 answer from url.
func httpGet(url string) (string, bool) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return "", false
	}
	return strings.TrimSpace(string(body)), true
}

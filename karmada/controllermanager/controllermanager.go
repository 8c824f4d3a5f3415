// Package controllermanager is what karmada-controller-manager's own
// command needs to run the failover library's controllers (package
// controllers): an init function per controller, of the shape Karmada
// v1.18's controller table in cmd/controller-manager/app takes, and their
// flags as a named section, "failover", that Karmada's sectioned --help
// shows. A fork adds a handful of lines to that file (the guide is
// karmada/controller-manager.md; the whole diff is
// examples/karmadafork/karmada-v1.18.patch):
//
//	var failoverOptions = controllermanager.NewOptions()
//
//	failoverFlagSet := fss.FlagSet(controllermanager.FlagSection)
//	failoverOptions.AddFlags(failoverFlagSet, clusterFailoverFlagSet)
//	cmd.Flags().AddFlagSet(failoverFlagSet)
//
//	controllers[controllermanager.EvictionControllerName] = failoverOptions.StartEvictionController
//	controllers[controllermanager.GracefulEvictionControllerName] = failoverOptions.StartGracefulEvictionController
//	controllers[controllermanager.ClusterTaintPolicyControllerName] = failoverOptions.StartClusterTaintPolicyController
//	controllersDisabledByDefault.Insert(controllermanager.DisabledByDefault()...)
//
// The guarantees:
//   - The three are off by default: they run only when --controllers names
//     them ("*" does not), so with Karmada's flags the patched binary runs
//     what stock Karmada runs, and a fork can roll the image out before it
//     changes a flag.
//   - Turning them on is one change of flags:
//     --feature-gates=Failover=true --enable-taint-manager=false
//     --controllers=*,-gracefulEviction,-clustertaintpolicy,failoverEviction,failoverGracefulEviction,failoverClusterTaintPolicy
//   - Named beside the Karmada controller it replaces (two controllers
//     would evict, or end tasks, twice), each init function fails with a
//     *ConflictError that names every flag the three need changed, not only
//     its own, and the corrected flags.
//   - The init functions read Karmada's own flags and feature gates from
//     the controller context (--enable-no-execute-taint-eviction,
//     --no-execute-taint-eviction-purge-mode, --resource-eviction-rate,
//     --graceful-eviction-timeout, Failover, StatefulFailoverInjection), so
//     an operator keeps setting them where they are. Without the Failover
//     gate the eviction and cluster taint policy controllers are skipped,
//     as their Karmada counterparts are.
package controllermanager

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	controllerscontext "github.com/karmada-io/karmada/pkg/controllers/context"
	"github.com/karmada-io/karmada/pkg/features"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/controllers"
	"github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/ratelimit"
)

// FlagSection is the name of the flags' section in karmada-controller-manager's
// --help.
const FlagSection = "failover"

// The names the controllers take in Karmada's controller table, which
// --controllers enables and disables them by.
const (
	EvictionControllerName           = "failoverEviction"
	GracefulEvictionControllerName   = "failoverGracefulEviction"
	ClusterTaintPolicyControllerName = "failoverClusterTaintPolicy"
	// FailbackControllerName, named in --controllers beside
	// EvictionControllerName, starts the FailbackController with the
	// EvictionController, whose fleet, rate and freeze it shares: it has
	// no init function of its own, as Karmada's table starts its entries
	// in no set order.
	FailbackControllerName = "failoverFailback"
	// ApplicationFailoverControllerName is the ApplicationFailoverController's
	// entry, which replaces Karmada's applicationFailover. It shares the
	// EvictionController's fleet, rate, Ledger and freeze, and so needs
	// EvictionControllerName named too (and the Failover gate): whichever
	// of the two Karmada starts first sets the EvictionController up.
	ApplicationFailoverControllerName = "failoverApplicationFailover"
)

// The names of the Karmada v1.18 controllers they replace, in its table.
const (
	KarmadaGracefulEvictionController    = "gracefulEviction"
	KarmadaClusterTaintPolicyController  = "clustertaintpolicy"
	KarmadaApplicationFailoverController = "applicationFailover"
)

// Options are the flags of the "failover" section: what the library adds
// to Karmada's own flags. Create them with NewOptions.
type Options struct {
	// Rate is the eviction rate rule: --secondary-resource-eviction-rate,
	// --unhealthy-cluster-threshold, --large-cluster-num-threshold and
	// --disruption-domain. Its primary rate is Karmada's own
	// --resource-eviction-rate, read from the controller context.
	Rate ratelimit.Config
	// EvictionWorkers is --eviction-workers: the handler goroutines of
	// each eviction queue, paced together by the one rate.
	EvictionWorkers int
	// MaxEvictionsInFlight is --max-evictions-in-flight: how many
	// evictions of each queue may be in flight at once, from the handler
	// call until their graceful eviction task ends
	// (controllers.EvictionOptions.MaxInFlight); 0, the default, is
	// unlimited, as in Karmada.
	MaxEvictionsInFlight int
	// CapacityHold is --eviction-capacity-hold: how long the Ledger the
	// two eviction controllers share holds the room an approved eviction
	// will take, at most (engine.WithHold); 0 turns the Ledger off.
	CapacityHold time.Duration
	// FreezeConfigMap is --eviction-freeze-configmap: the namespace/name
	// of the ConfigMap whose existence freezes every automatic eviction
	// (controllers.EvictionOptions.Freeze); empty watches none. Default
	// karmada-system/failover-freeze.
	FreezeConfigMap string
	// MaxClustersInTransit is --max-clusters-in-transit: how many clusters
	// of one binding may be in graceful eviction at once, unless the
	// binding's controllers.MaxClustersInTransitAnnotation says otherwise
	// (controllers.EvictionOptions.MaxClustersInTransit); 0, the default,
	// is unlimited, as in Karmada.
	MaxClustersInTransit int
	// FailbackWindow is --failback-stabilization-window: how long a cluster
	// a binding failed over from must have been healthy before the binding
	// goes back (controllers.FailbackOptions.Window); 0, the default, is
	// off but for bindings whose annotation sets a window of their own.
	FailbackWindow time.Duration
	// MaxFailbacksInFlight is --max-failbacks-in-flight: how many bindings
	// may be going back at once, fleet wide
	// (controllers.FailbackOptions.MaxInFlight).
	MaxFailbacksInFlight int
	// ApplicationUnknown is --application-failover-unknown: what an
	// Unknown health does to an application failover timer, Hold
	// (default), Count or Reset (appfailover.UnknownPolicy).
	ApplicationUnknown string
	// ApplicationUnknownToleration is
	// --application-failover-unknown-toleration: with Count, how long a
	// copy may be Unknown before that time counts as Unhealthy. Whole
	// seconds; default appfailover.DefaultUnknownTolerationSeconds.
	ApplicationUnknownToleration time.Duration
	// ApplicationStartupGrace is --application-failover-startup-grace: the
	// start-up grace of a copy first seen, or first seen at a new
	// generation (appfailover.Options.StartupGraceSeconds). Whole seconds;
	// 0, the default, is none, as in Karmada.
	ApplicationStartupGrace time.Duration
	// BadRolloutThreshold is --application-failover-bad-rollout-threshold
	// (controllers.ApplicationFailoverOptions.BadRolloutThreshold).
	BadRolloutThreshold float64

	ledgerOnce sync.Once
	ledger     *engine.Ledger
	ledgerErr  error

	// eviction is the EvictionController, set up once by whichever of
	// StartEvictionController and StartApplicationFailoverController
	// Karmada calls first.
	evictionOnce sync.Once
	eviction     *controllers.EvictionController
	evictionErr  error
}

// NewOptions returns the defaults: ratelimit.DefaultConfig(), one worker
// per queue and room held for engine.DefaultHold.
func NewOptions() *Options {
	return &Options{Rate: ratelimit.DefaultConfig(), EvictionWorkers: 1, CapacityHold: engine.DefaultHold,
		FreezeConfigMap: DefaultFreezeNamespace + "/" + controllers.DefaultFreezeName, MaxFailbacksInFlight: controllers.DefaultMaxFailbacksInFlight,
		ApplicationUnknown: string(appfailover.UnknownHolds), ApplicationUnknownToleration: appfailover.DefaultUnknownTolerationSeconds * time.Second,
		BadRolloutThreshold: controllers.DefaultBadRolloutThreshold}
}

// DefaultFreezeNamespace is the namespace of the default
// --eviction-freeze-configmap: Karmada's own, where the controller
// manager's leader election Lease lives on the karmada-apiserver.
const DefaultFreezeNamespace = "karmada-system"

// Freeze is --eviction-freeze-configmap as
// controllers.EvictionOptions.Freeze takes it: the zero value when empty.
func (o *Options) Freeze() (types.NamespacedName, error) {
	if o.FreezeConfigMap == "" {
		return types.NamespacedName{}, nil
	}
	ns, name, ok := strings.Cut(o.FreezeConfigMap, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("failover: --eviction-freeze-configmap %q: want namespace/name of a ConfigMap, or empty for none", o.FreezeConfigMap)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// Ledger is the engine.Ledger of the evictions in flight that
// StartEvictionController gives the EvictionController, for a program that
// reads it too: built on the first call, after the flags are parsed, from
// CapacityHold. Nil when CapacityHold is 0.
func (o *Options) Ledger() (*engine.Ledger, error) {
	o.ledgerOnce.Do(func() {
		switch {
		case o.CapacityHold < 0:
			o.ledgerErr = fmt.Errorf("failover: --eviction-capacity-hold %v: must not be negative (0 turns it off)", o.CapacityHold)
		case o.CapacityHold > 0:
			o.ledger, o.ledgerErr = engine.NewLedger(engine.WithHold(o.CapacityHold))
		}
	})
	return o.ledger, o.ledgerErr
}

// AddFlags adds the failover section's flags to fs. karmada is the flag set
// that holds Karmada's ClusterFailoverOptions flags (its "cluster failover"
// section; nil outside Karmada): a flag the two share, --resource-eviction-rate,
// stays there and is not defined again, so --help lists it once and pflag
// does not drop either copy when the sections are added to the command.
func (o *Options) AddFlags(fs, karmada *pflag.FlagSet) {
	all := pflag.NewFlagSet(FlagSection, pflag.ContinueOnError)
	if karmada != nil {
		all.AddFlagSet(karmada)
	}
	o.Rate.AddFlags(all)
	all.VisitAll(func(f *pflag.Flag) {
		if karmada == nil || karmada.Lookup(f.Name) == nil {
			fs.AddFlag(f)
		}
	})
	fs.IntVar(&o.EvictionWorkers, "eviction-workers", o.EvictionWorkers,
		"Handler goroutines of each of the two eviction queues (ResourceBinding, ClusterResourceBinding). "+
			"One rate paces all of them together.")
	fs.IntVar(&o.MaxEvictionsInFlight, "max-evictions-in-flight", o.MaxEvictionsInFlight,
		"How many evictions of each of the two queues may be in flight at once, counted from the start of the eviction "+
			"until its graceful eviction task ends (or --graceful-eviction-timeout passes). Evictions beyond it wait in "+
			"their queue. 0 means unlimited, as in Karmada.")
	fs.DurationVar(&o.CapacityHold, "eviction-capacity-hold", o.CapacityHold,
		"How long the room an approved eviction will take on the clusters the scheduler puts its replicas on stays held, at most: "+
			"until their resource summaries show the replicas placed or the eviction's graceful eviction task ends. "+
			"An eviction the scheduler would put where the room left is short waits meanwhile. "+
			"0 turns it off: evictions checked one after another all count the same room.")
	fs.StringVar(&o.FreezeConfigMap, "eviction-freeze-configmap", o.FreezeConfigMap,
		"namespace/name of the ConfigMap whose existence freezes every automatic eviction (data keys, all optional: "+
			"reason, free text; until, RFC 3339, when the freeze lapses; confirm=storm makes it no freeze but the "+
			"operator's confirmation that ends a failure storm's hold, see --storm-threshold). Queued evictions wait; "+
			"taints and graceful eviction tasks go on. Empty watches no ConfigMap.")
	fs.IntVar(&o.MaxClustersInTransit, "max-clusters-in-transit", o.MaxClustersInTransit,
		"How many clusters of one ResourceBinding or ClusterResourceBinding may be in graceful eviction at once "+
			"(its open graceful eviction tasks, whoever wrote them), unless its annotation "+
			controllers.MaxClustersInTransitAnnotation+" says otherwise. An eviction beyond it waits until a task of "+
			"the binding ends. 0 means unlimited, as in Karmada.")
	fs.DurationVar(&o.FailbackWindow, "failback-stabilization-window", o.FailbackWindow,
		"How long a cluster a binding failed over from must have been healthy (Ready, no NoExecute or PreferNoExecute "+
			"taint), without a break, before the binding goes back to it, when Karmada's scheduler would put replicas "+
			"there again. Needs "+FailbackControllerName+" in --controllers. 0 turns failback off, but for bindings whose "+
			"annotation "+controllers.FailbackWindowAnnotation+" sets a window of their own.")
	fs.IntVar(&o.MaxFailbacksInFlight, "max-failbacks-in-flight", o.MaxFailbacksInFlight,
		"How many bindings may be going back to where they failed over from at once, fleet wide: until the graceful "+
			"eviction tasks that keep their old copies end.")
	fs.StringVar(&o.ApplicationUnknown, "application-failover-unknown", o.ApplicationUnknown,
		"What an Unknown health of an application's copy does to its application failover timer: Hold (neither starts "+
			"nor resets it, so a copy flapping between Unhealthy and Unknown fails over once its Unhealthy time reaches "+
			"the window), Count (Unknown counts as Unhealthy once it has lasted --application-failover-unknown-toleration) "+
			"or Reset (as Karmada v1.18). Needs "+ApplicationFailoverControllerName+" in --controllers.")
	fs.DurationVar(&o.ApplicationUnknownToleration, "application-failover-unknown-toleration", o.ApplicationUnknownToleration,
		"With --application-failover-unknown=Count, how long a copy may be Unknown without a break before that time "+
			"counts as Unhealthy (whole seconds).")
	fs.DurationVar(&o.ApplicationStartupGrace, "application-failover-startup-grace", o.ApplicationStartupGrace,
		"How long a copy first seen on a cluster, or first seen at a new generation, may be unhealthy before its time "+
			"counts toward decisionConditions.tolerationSeconds, unless it turns Healthy first (whole seconds). 0 means "+
			"none, as in Karmada.")
	fs.Float64Var(&o.BadRolloutThreshold, "application-failover-bad-rollout-threshold", o.BadRolloutThreshold,
		"Above this fraction of a binding's clusters (and on at least two), an application unhealthy on that many at "+
			"once is a bad rollout, not a bad cluster: every application failover of the binding holds, with a Warning "+
			"Event, until it recovers or an operator annotates the binding "+controllers.ConfirmBadRolloutAnnotation+
			"=true. In (0, 1]; 1 turns the hold off.")
}

// ApplicationFailoverOptions are the ApplicationFailoverController's
// options, from the failover section's flags: a duration that is not a
// whole number of seconds, or does not fit, is an error naming its flag.
func (o *Options) ApplicationFailoverOptions() (controllers.ApplicationFailoverOptions, error) {
	var errs []error
	seconds := func(flag string, d time.Duration) int32 {
		if d%time.Second != 0 || d < 0 || d > math.MaxInt32*time.Second {
			errs = append(errs, fmt.Errorf("failover: --%s %v: want whole non-negative seconds", flag, d))
			return 0
		}
		return int32(d / time.Second)
	}
	p := appfailover.Options{
		Unknown:             appfailover.UnknownPolicy(o.ApplicationUnknown),
		StartupGraceSeconds: seconds("application-failover-startup-grace", o.ApplicationStartupGrace),
	}
	if p.Unknown == appfailover.UnknownCounts {
		p.UnknownTolerationSeconds = ptr.To(seconds("application-failover-unknown-toleration", o.ApplicationUnknownToleration))
	}
	return controllers.ApplicationFailoverOptions{Policy: p, BadRolloutThreshold: o.BadRolloutThreshold}, errors.Join(errs...)
}

// StartEvictionController is the controller table's init function of the
// EvictionController, which replaces Karmada's taint manager, and, when
// --controllers names FailbackControllerName too, of the
// FailbackController beside it. It runs only
// when --controllers names it (see DisabledByDefault) and, like the taint
// manager, only with the Failover feature gate. It fails while Karmada's
// taint manager would run too (--enable-taint-manager, default true):
// set --enable-taint-manager=false. Its error is a *ConflictError naming
// every flag the failover set needs changed.
//
// From the context it reads --enable-no-execute-taint-eviction,
// --no-execute-taint-eviction-purge-mode (as Karmada's taint manager
// reads it: anything but Directly is Gracefully), --resource-eviction-rate
// and the StatefulFailoverInjection gate.
func (o *Options) StartEvictionController(ctx controllerscontext.Context) (enabled bool, err error) {
	if !named(ctx, EvictionControllerName) {
		return false, nil
	}
	if err := checkConflicts(ctx); err != nil {
		return false, err
	}
	if !features.FeatureGate.Enabled(features.Failover) {
		return false, nil
	}
	c, err := o.evictionController(ctx)
	if err != nil {
		return false, err
	}
	if named(ctx, FailbackControllerName) {
		fb, err := controllers.NewFailbackController(o.FailbackOptions(), c)
		if err != nil {
			return false, err
		}
		if err := fb.SetupWithManager(ctx.Mgr); err != nil {
			return false, err
		}
	}
	return true, nil
}

// evictionController is the EvictionController of ctx's manager, set up
// on the first call; the calls after return what the first did.
func (o *Options) evictionController(ctx controllerscontext.Context) (*controllers.EvictionController, error) {
	o.evictionOnce.Do(func() {
		opts, err := o.evictionOptions(ctx.Opts)
		if err != nil {
			o.evictionErr = err
			return
		}
		c, err := controllers.NewEvictionController(opts)
		if err != nil {
			o.evictionErr = err
			return
		}
		if err := c.SetupWithManager(ctx.Mgr); err != nil {
			o.evictionErr = err
			return
		}
		o.eviction = c
	})
	return o.eviction, o.evictionErr
}

// StartApplicationFailoverController is the controller table's init
// function of the ApplicationFailoverController, which replaces Karmada's
// applicationFailover controllers. It runs only when --controllers names
// it (see DisabledByDefault), and fails while Karmada's applicationFailover
// is on too (it is by default: add -applicationFailover to --controllers),
// with a *ConflictError naming every flag the failover set needs changed.
// It shares the EvictionController's fleet, rate, Ledger and freeze, and
// so needs EvictionControllerName named too, and the Failover gate: named
// without the gate it fails, naming the gate, where the others are
// skipped, since Karmada's applicationFailover runs without it. Its options
// are the failover section's --application-failover-* flags.
func (o *Options) StartApplicationFailoverController(ctx controllerscontext.Context) (enabled bool, err error) {
	if !named(ctx, ApplicationFailoverControllerName) {
		return false, nil
	}
	if err := checkConflicts(ctx); err != nil {
		return false, err
	}
	if !features.FeatureGate.Enabled(features.Failover) {
		return false, nil
	}
	if !named(ctx, EvictionControllerName) {
		return false, fmt.Errorf("failover: %s needs %s in --controllers too: it shares its fleet, rate and freeze",
			ApplicationFailoverControllerName, EvictionControllerName)
	}
	opts, err := o.ApplicationFailoverOptions()
	if err != nil {
		return false, err
	}
	ev, err := o.evictionController(ctx)
	if err != nil {
		return false, err
	}
	c, err := controllers.NewApplicationFailoverController(opts, ev)
	if err != nil {
		return false, err
	}
	return true, c.SetupWithManager(ctx.Mgr)
}

// FailbackOptions are the FailbackController's options, from the failover
// section's flags.
func (o *Options) FailbackOptions() controllers.FailbackOptions {
	return controllers.FailbackOptions{Window: o.FailbackWindow, MaxInFlight: o.MaxFailbacksInFlight}
}

// evictionOptions are the EvictionController's options: the failover
// section's and Karmada's own. The Ledger is checked again whenever the
// cluster status controller reports the summaries that free its room
// (--cluster-status-update-frequency).
func (o *Options) evictionOptions(karmadaOpts controllerscontext.Options) (controllers.EvictionOptions, error) {
	cf := karmadaOpts.ClusterFailoverConfiguration
	rate := o.Rate
	// Karmada's flag is a float32: take its shortest decimal, as typed
	// (0.1, not 0.10000000149011612). FormatFloat's output always parses
	// (NaN and infinities too, which the Limiter's Validate rejects).
	rate.ResourceEvictionRate, _ = strconv.ParseFloat(strconv.FormatFloat(float64(cf.ResourceEvictionRate), 'g', -1, 32), 64)
	ledger, err := o.Ledger()
	freeze, ferr := o.Freeze()
	return controllers.EvictionOptions{
		Rate:                            rate,
		EnableNoExecuteTaintEviction:    cf.EnableNoExecuteTaintEviction,
		NoExecuteTaintEvictionPurgeMode: karmada.EvictionPurgeMode(nil, cf.NoExecuteTaintEvictionPurgeMode),
		StatefulFailoverInjection:       features.FeatureGate.Enabled(features.StatefulFailoverInjection),
		Workers:                         o.EvictionWorkers,
		Ledger:                          ledger,
		DisableLedger:                   ledger == nil,
		ClusterStatusUpdateFrequency:    karmadaOpts.ClusterStatusUpdateFrequency.Duration,
		MaxInFlight:                     o.MaxEvictionsInFlight,
		InFlightTTL:                     karmadaOpts.GracefulEvictionTimeout.Duration,
		Freeze:                          freeze,
		MaxClustersInTransit:            o.MaxClustersInTransit,
	}, errors.Join(err, ferr)
}

// StartGracefulEvictionController is the controller table's init function
// of the GracefulEvictionController, which replaces Karmada's
// gracefulEviction controllers. It runs only when --controllers names it
// (see DisabledByDefault) and, like those, is not gated. It fails while
// they are on too (they are by default): add -gracefulEviction to
// --controllers. Its error is a *ConflictError naming every flag the
// failover set needs changed. Its timeout is Karmada's
// --graceful-eviction-timeout.
func (o *Options) StartGracefulEvictionController(ctx controllerscontext.Context) (enabled bool, err error) {
	if !named(ctx, GracefulEvictionControllerName) {
		return false, nil
	}
	if err := checkConflicts(ctx); err != nil {
		return false, err
	}
	c, err := controllers.NewGracefulEvictionController(controllers.GracefulEvictionOptions{
		Timeout: ctx.Opts.GracefulEvictionTimeout.Duration,
	})
	if err != nil {
		return false, err
	}
	return true, c.SetupWithManager(ctx.Mgr)
}

// StartClusterTaintPolicyController is the controller table's init
// function of the ClusterTaintPolicyController, which replaces Karmada's
// clustertaintpolicy controller. It runs only when --controllers names it
// (see DisabledByDefault) and, like that one, only with the Failover
// feature gate. It fails while that one is on too: add -clustertaintpolicy
// to --controllers. Its error is a *ConflictError naming every flag the
// failover set needs changed.
func (o *Options) StartClusterTaintPolicyController(ctx controllerscontext.Context) (enabled bool, err error) {
	if !named(ctx, ClusterTaintPolicyControllerName) {
		return false, nil
	}
	if err := checkConflicts(ctx); err != nil {
		return false, err
	}
	if !features.FeatureGate.Enabled(features.Failover) {
		return false, nil
	}
	c, err := controllers.NewClusterTaintPolicyController(controllers.ClusterTaintPolicyOptions{})
	if err != nil {
		return false, err
	}
	return true, c.SetupWithManager(ctx.Mgr)
}

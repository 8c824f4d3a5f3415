package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The data keys of the freeze ConfigMap (EvictionOptions.Freeze). All are
// optional: the ConfigMap's existence is the freeze, unless FreezeConfirmKey
// says it confirms a failure storm instead.
const (
	// FreezeReasonKey holds why evictions are frozen, in free text: the
	// controllers log it and the guide's runbook asks for it.
	FreezeReasonKey = "reason"
	// FreezeUntilKey holds when the freeze lapses, in RFC 3339
	// (2026-03-01T12:00:00Z). Past it the ConfigMap freezes nothing.
	FreezeUntilKey = "until"
	// FreezeConfirmKey set to ConfirmStorm makes the ConfigMap an operator's
	// confirmation that a failure storm's failures are real, not a freeze:
	// each version of it written ends the storm's hold in force
	// (ratelimit.Limiter.ConfirmStorm), and a later storm holds again.
	// Another value freezes, and the log says why, so that a typo never
	// lets evictions through.
	FreezeConfirmKey = "confirm"
)

// ConfirmStorm is the value of FreezeConfirmKey that confirms a failure
// storm.
const ConfirmStorm = "storm"

// DefaultFreezeName is the name of the freeze ConfigMap that
// karmada-controller-manager's --eviction-freeze-configmap names by default,
// in karmada-system.
const DefaultFreezeName = "failover-freeze"

// freezeRecheck is how long an item held back by a freeze waits before it
// is decided again, and how often every replica looks whether a freeze has
// lapsed. The queues cannot be told of a thaw (a deferred item keeps its
// course), so it is also the longest an item waits after one; a freeze
// holding many items back costs one cheap handler call per item per
// freezeRecheck.
const freezeRecheck = 10 * time.Second

// freezeState is a freeze as read from its ConfigMap at one moment.
type freezeState struct {
	frozen bool
	// why says why evictions are frozen, or why no longer: the reason,
	// the expiry, and anything in the ConfigMap that could not be read.
	why string
	// until is the valid expiry of a freeze that will lapse; zero
	// otherwise.
	until time.Time
	// confirmStorm: the ConfigMap confirms a failure storm (rule 2a).
	confirmStorm bool
}

// readFreeze is the freeze cm holds at now, cm being nil when there is no
// such ConfigMap. The rules, in order:
//
//  1. No ConfigMap: not frozen.
//  2. A ConfigMap: frozen, whatever else it holds, except:
//     2a. confirm set to storm: not frozen; it confirms a failure storm.
//     Another confirm value freezes and is named in why.
//  3. An until that is not RFC 3339 cannot say when the freeze ends: it
//     never lapses, and why names the key and the value.
//  4. Past a valid until, the freeze has lapsed: not frozen.
//  5. A key other than reason and until (binaryData included) is named in
//     why and changes nothing, so a typo is seen and never thaws.
func readFreeze(cm *corev1.ConfigMap, now time.Time) freezeState {
	if cm == nil { // 1
		return freezeState{why: "no freeze ConfigMap"}
	}
	confirm, hasConfirm := cm.Data[FreezeConfirmKey]
	if hasConfirm && strings.TrimSpace(confirm) == ConfirmStorm { // 2a
		return freezeState{why: "the operator confirms the failure storm", confirmStorm: true}
	}
	reason := strings.TrimSpace(cm.Data[FreezeReasonKey])
	if reason == "" {
		reason = "no reason given"
	}
	notes := []string{reason}
	var until time.Time
	if s, ok := cm.Data[FreezeUntilKey]; ok {
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
		switch {
		case err != nil: // 3
			notes = append(notes, fmt.Sprintf("data.%s %q is not RFC 3339 (2006-01-02T15:04:05Z07:00), so the freeze holds until the ConfigMap is deleted or corrected", FreezeUntilKey, s))
		case !now.Before(t): // 4
			return freezeState{why: fmt.Sprintf("the freeze (%s) lapsed at %s", reason, t.Format(time.RFC3339))}
		default:
			until = t
			notes = append(notes, "until "+t.Format(time.RFC3339))
		}
	}
	if hasConfirm { // 2a
		notes = append(notes, fmt.Sprintf("data.%s %q is not %q, so the ConfigMap freezes", FreezeConfirmKey, confirm, ConfirmStorm))
	}
	var unknown []string // 5
	for k := range cm.Data {
		if k != FreezeReasonKey && k != FreezeUntilKey && k != FreezeConfirmKey {
			unknown = append(unknown, "data."+k)
		}
	}
	for k := range cm.BinaryData {
		unknown = append(unknown, "binaryData."+k)
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		notes = append(notes, fmt.Sprintf("unknown keys %s ignored (want data.%s and data.%s)", strings.Join(unknown, ", "), FreezeReasonKey, FreezeUntilKey))
	}
	return freezeState{frozen: true, why: strings.Join(notes, "; "), until: until} // 2
}

// retryAfter is how long an item the freeze holds back at now waits: until
// the freeze lapses, and at most freezeRecheck, as it may be thawed sooner.
func (s freezeState) retryAfter(now time.Time) time.Duration {
	if !s.until.IsZero() {
		return min(freezeRecheck, s.until.Sub(now))
	}
	return freezeRecheck
}

// frozenMetrics is what the freeze reports: metrics.Metrics.EvictionsFrozen.
type frozenMetrics interface {
	EvictionsFrozen(frozen bool)
}

// freezeGate is an operator's freeze of every automatic eviction, read from
// one ConfigMap through an informer of that ConfigMap alone, on every
// replica (a standby too, so a new leader knows it before its first
// eviction). The eviction handler asks it first, in each attempt. A nil
// *freezeGate freezes nothing: no freeze ConfigMap is watched.
//
// It keeps the ConfigMap as the informer last saw it; whether that freezes
// is read at the time of asking, so a freeze lapses at its until without an
// event. eviction_frozen and the log line at each freeze and thaw follow the
// state as last asked, by an attempt, an informer event or the recheck
// every freezeRecheck.
type freezeGate struct {
	name    types.NamespacedName
	clock   clock.WithTicker
	metrics frozenMetrics
	logger  logr.Logger
	// informer and synced are nil until watch gives g an informer (tests
	// set the ConfigMap directly); synced says that the informer has
	// handed g what it listed first.
	informer toolscache.SharedIndexInformer
	synced   toolscache.InformerSynced

	// confirmStorm ends a failure storm's hold (the Limiter's
	// ConfirmStorm), reporting whether one was on; nil: none to end.
	confirmStorm func() bool
	// onThaw are called, outside g's lock, after a report that thawed a
	// freeze: the items it held back are tried again at once rather than
	// at their next look (freezeRecheck). Added while the controllers are
	// set up, before the manager starts; none: nothing to wake.
	onThaw []func()

	mu   sync.Mutex
	cm   *corev1.ConfigMap
	last *freezeState // as last reported; nil before the first report
	// confirmed is the resourceVersion of the last confirmation acted on:
	// each version confirms once, so one left in place does not confirm
	// the next storm before anyone has looked at it.
	confirmed string
}

// newFreezeGate returns the gate of the ConfigMap name, holding no
// ConfigMap yet; it starts nothing.
func newFreezeGate(name types.NamespacedName, clk clock.WithTicker, m frozenMetrics, logger logr.Logger) *freezeGate {
	return &freezeGate{name: name, clock: clk, metrics: m, logger: logger}
}

// validFreezeName checks EvictionOptions.Freeze: unset, or a ConfigMap's
// namespace and name.
func validFreezeName(n types.NamespacedName) error {
	if n == (types.NamespacedName{}) {
		return nil
	}
	var problems []string
	if n.Namespace == "" {
		problems = append(problems, "the namespace is empty")
	}
	problems = append(problems, validation.IsDNS1123Label(n.Namespace)...)
	if n.Name == "" {
		problems = append(problems, "the name is empty")
	}
	problems = append(problems, validation.IsDNS1123Subdomain(n.Name)...)
	if len(problems) > 0 {
		return fmt.Errorf("controllers: EvictionOptions.Freeze (--eviction-freeze-configmap) %q: want namespace/name of a ConfigMap: %s",
			n.String(), strings.Join(slices.Compact(problems), "; "))
	}
	return nil
}

// check is the freeze now, reported if it changed.
func (g *freezeGate) check() freezeState {
	if g == nil {
		return freezeState{}
	}
	g.mu.Lock()
	s, thawed := g.reportLocked()
	g.mu.Unlock()
	if thawed {
		g.thaw()
	}
	return s
}

// thaw wakes the items a freeze held back: the queues' locks are taken
// outside g's.
func (g *freezeGate) thaw() {
	for _, f := range g.onThaw {
		f()
	}
}

// set records the ConfigMap as the informer shows it (nil: deleted) and
// reports the freeze it makes.
func (g *freezeGate) set(cm *corev1.ConfigMap) {
	g.mu.Lock()
	thawed := g.setLocked(cm)
	g.mu.Unlock()
	if thawed {
		g.thaw()
	}
}

// setLocked is set under g.mu, reporting whether the freeze thawed.
func (g *freezeGate) setLocked(cm *corev1.ConfigMap) (thawed bool) {
	g.cm = cm
	s, thawed := g.reportLocked()
	if !s.confirmStorm || g.confirmStorm == nil || cm.ResourceVersion == g.confirmed && g.confirmed != "" {
		return
	}
	g.confirmed = cm.ResourceVersion
	// The Limiter calls nothing of its callers but metrics, which take no
	// lock of g: no cycle.
	if g.confirmStorm() {
		g.logger.Info("the operator confirmed the failure storm: evictions go on at the rule's rate",
			"configMap", g.name.String(), "resourceVersion", cm.ResourceVersion)
	}
	return thawed
}

// notRead is the freeze before the informer has read the ConfigMap: a
// freeze that cannot be read freezes. The queues do not start before it is
// read, so it holds back no item; if the informer cannot list the
// ConfigMap (RBAC), client-go logs why, eviction_frozen stays 1 and
// nothing is evicted.
var notRead = freezeState{frozen: true, why: "the freeze ConfigMap has not been read yet"}

// reportLocked reads the freeze at the clock's now and, when it froze,
// thawed or changed why it is frozen, sets eviction_frozen and logs it. Under g.mu, so
// that reports of two callers cannot land out of order. thawed is true
// when this report ends a freeze.
func (g *freezeGate) reportLocked() (s freezeState, thawed bool) {
	if g.synced != nil && !g.synced() {
		// Not logged: every start passes through it.
		g.metrics.EvictionsFrozen(true)
		return notRead, false
	}
	s = readFreeze(g.cm, g.clock.Now())
	// A freeze whose why changes is news (a reason edited, an until
	// corrected); a thaw whose why changes (a lapsed freeze deleted) is not.
	if g.last != nil && g.last.frozen == s.frozen && (!s.frozen || g.last.why == s.why) {
		return s, false
	}
	was := g.last
	g.last = &s
	g.metrics.EvictionsFrozen(s.frozen)
	switch {
	case s.frozen:
		g.logger.Info("every automatic eviction is frozen: queued items wait, taints and graceful eviction tasks go on",
			"configMap", g.name.String(), "why", s.why)
	case was != nil:
		g.logger.Info("evictions thawed: queued items go on at the rate in force", "configMap", g.name.String(),
			"why", s.why, "frozenFor", was.why)
	}
	return s, was != nil && was.frozen && !s.frozen
}

// hasSynced reports whether the informer has handed g the ConfigMap it
// listed first, so that the gate says what the API server holds; always
// true for a nil gate or one without an informer.
func (g *freezeGate) hasSynced() bool {
	return g == nil || g.synced == nil || g.synced()
}

// setupWithManager gives g an informer of its ConfigMap on the manager's
// API server and adds g to mgr as a Runnable of every replica.
func (g *freezeGate) setupWithManager(mgr manager.Manager) error {
	if err := g.watch(mgr.GetConfig()); err != nil {
		return err
	}
	return mgr.Add(g)
}

// watch gives g an informer of its ConfigMap alone, on the API server cfg
// names: a field selector on the name, so that neither every ConfigMap is
// cached nor more than get, list and watch of that one name needed (RBAC
// resourceNames allow list and watch with that selector). It starts
// nothing.
func (g *freezeGate) watch(cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("controllers: the freeze ConfigMap's client: %w", err)
	}
	lw := toolscache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", g.name.Namespace,
		fields.OneTermEqualSelector("metadata.name", g.name.Name))
	g.informer = toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	reg, err := g.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { g.setObject(obj) },
		UpdateFunc: func(_, obj any) { g.setObject(obj) },
		DeleteFunc: func(any) { g.set(nil) },
	})
	if err != nil {
		return fmt.Errorf("controllers: the freeze ConfigMap's informer: %w", err)
	}
	g.synced = reg.HasSynced
	return nil
}

// setObject is set for what an informer handler got.
func (g *freezeGate) setObject(obj any) {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		g.set(cm)
	}
}

// Start runs the informer and, every freezeRecheck, reports a freeze that
// lapsed; it blocks until ctx ends.
func (g *freezeGate) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		g.informer.Run(ctx.Done())
	}()
	defer wg.Wait()
	g.check() // eviction_frozen 1 until read
	if toolscache.WaitForCacheSync(ctx.Done(), g.synced) {
		g.check()
	}
	every(ctx, g.clock, freezeRecheck, func() { g.check() })
	return nil
}

// NeedLeaderElection is false: every replica reads the freeze, so that
// eviction_frozen is right on each and a new leader knows the freeze
// before its first eviction.
func (g *freezeGate) NeedLeaderElection() bool { return false }

var _ manager.LeaderElectionRunnable = (*freezeGate)(nil)

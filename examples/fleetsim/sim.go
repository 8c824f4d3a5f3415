package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	kengine "github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/karmada/scheduling"
	"github.com/failoverkit/failover/metrics"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

// sim drives one run: it owns the simulated clock and plays the parts of a
// control plane that the library leaves to its user (cluster status, the
// taint controller, the taint manager, the scheduler, the graceful eviction
// controller), around the real Limiter, Checker and Assessor, and the real
// eviction queues, whose workers it runs at the simulated instant it is at
// (engine, in engine.go), jumping from one event to the next.
type sim struct {
	sc    *scenario
	cfg   ratelimit.Config
	w     *world
	clk   *clocktesting.FakeClock // the simulated time; only run moves it
	out   io.Writer               // progress; nil: none
	speed float64                 // simulated seconds per wall second; 0: as fast as possible

	phases []phaseMark
	faulty []faultyMark
	lines  []progressLine
	events []event
	// notReady is how many clusters are not Ready, after each timeline
	// event; notReady0 at the start. For the figure.
	notReady  []faultyMark
	notReady0 int
	// depth is the queues' lengths after each step, for the figure.
	depth []depthMark
	// fleetNames are the clusters' names, sorted: what a range of
	// clusters in an event line runs over.
	fleetNames []string
	// storming: the last event line said a failure storm holds evictions.
	storming bool
}

// The kinds of event lines.
const (
	eventPhase      = "phase"      // a phase of the timeline starts
	eventConditions = "conditions" // the timeline changes clusters' conditions
	eventTaints     = "taints"     // the taint controller adds or removes taints
	eventHealth     = "health"     // the fleet's health and the rate in force change
	eventQueued     = "queued"     // the taint manager queues evictions
	eventFreeze     = "freeze"     // an operator freezes or thaws evictions
	eventStorm      = "storm"      // a failure storm's hold starts or ends
	eventFailback   = "failback"   // the failback controller sends bindings back
	// eventAppHealth: the timeline sets an application's health, or an
	// operator confirms its failures; eventAppFailover: the application
	// failover controller fails workloads over, or a bad rollout holds.
	eventAppHealth   = "application-health"
	eventAppFailover = "application-failover"
)

// event is one » line: what changed at T (since the start).
type event struct {
	T        time.Duration
	Kind     string
	Message  string
	Clusters []string // the clusters it is about, if any
	Count    int      // eventQueued: evictions queued; eventHealth: faulty clusters; eventConditions: clusters changed
	// Retried (eventQueued) is how many of them had been abandoned for
	// want of a target and are tried again; Cancelled (eventHealth) how
	// many queued items of recovered clusters were cancelled.
	Retried   int
	Cancelled int
}

// progressLine is one line of the progress table.
type progressLine struct {
	T         time.Duration
	Clock     string // simulated time since the start, hh:mm:ss
	Faulty    int
	Total     int
	Rate      float64
	Queued    [2]int
	Evicted   int
	Abandoned int
	Cancelled int
	TasksOpen int
	InFlight  int // background evictions awaiting Complete
}

func newSim(sc *scenario, cfg ratelimit.Config, reg prometheus.Registerer, out io.Writer, speed float64, metricsOpts ...metrics.Option) (*sim, error) {
	m, err := metrics.New(reg, metricsOpts...)
	if err != nil {
		return nil, err
	}
	clk := clocktesting.NewFakeClock(sc.Start)
	evaluator, err := taintpolicy.NewEvaluator(sc.Policies)
	if err != nil {
		return nil, fmt.Errorf("fleetsim: %s: %w", sc.Source, err)
	}
	tracker := ratelimit.NewTracker()
	// The Limiter's log lines carry the wall clock's time: the event lines
	// say the same on the simulated clock (noteStorm).
	limiter, err := ratelimit.NewLimiter(cfg, tracker, ratelimit.WithClock(clk), ratelimit.WithMetrics(m),
		ratelimit.WithLogger(logr.Discard()))
	if err != nil {
		return nil, err
	}
	assessor, err := gracefulevict.NewAssessor(gracefulevict.WithDefaultTimeout(sc.GracefulEvictionTimeout))
	if err != nil {
		return nil, err
	}
	w := &world{
		sc:        sc,
		cfg:       cfg,
		clk:       clk,
		byName:    map[string]*clusterState{},
		watched:   map[*clusterState]struct{}{},
		byKey:     [2]map[string]*binding{{}, {}},
		load:      map[string]int{},
		onCluster: map[string]map[*binding]struct{}{},
		active:    map[*binding]struct{}{},
		used:      map[string]int32{},
		evaluator: evaluator,
		tracker:   tracker,
		limiter:   limiter,
		assessor:  assessor,
		abandoned: map[itemID]int{},
		rec:       newRecorder(),
		metrics:   m,
	}
	if sc.FailbackWindow > 0 {
		w.failback = newFailbackState(sc.FailbackWindow, sc.MaxFailbacksInFlight, m)
		for _, r := range []string{metrics.FailbackWaitingStabilizing, metrics.FailbackWaitingNotPlaced, metrics.FailbackWaitingHeldBack} {
			m.FailbackWaiting(r, 0) // served before the first wait
		}
	}
	if sc.AppFailover != nil {
		w.appf = newAppFailoverState(sc, m)
	}
	if w.ledger, err = kengine.NewLedger(); err != nil {
		return nil, err
	}
	w.fleet = &kengine.Fleet{}
	w.scheduler = scheduling.NewScheduler(nil)
	// The fork's controllers as fleetsim runs them: a NoExecute taint
	// evicts (--enable-no-execute-taint-eviction), and each binding's
	// budget of clusters in transit is its annotation's.
	if w.evictor, err = kengine.NewEvictor(kengine.EvictorOptions{Fleet: w.fleet, Ledger: w.ledger, EnableNoExecuteTaintEviction: true}); err != nil {
		return nil, err
	}
	w.apis = apiEnablements(sc.Bindings)
	for i := range sc.Clusters {
		c := &clusterState{Cluster: sc.Clusters[i], dirty: true, idx: i}
		w.watched[c] = struct{}{}
		c.Conditions = append(c.Conditions[:0:0], c.Conditions...)
		w.clusters = append(w.clusters, c)
		w.byName[c.Name] = c
		// Under the fleet rule DomainsOf is nil: every cluster in "".
		domains := ratelimit.DomainsOf(c.Cluster, cfg.DisruptionDomain)
		tracker.SetInDomains(c.Name, false, domains...)
		if len(domains) > 0 {
			c.domain = domains[0] // a multi-zone cluster's items wait in its first zone
		}
	}
	// The queues read a cluster's domain once (DomainOf), when they first
	// hold an item of it: a scenario's clusters never change domain, so no
	// Queue.DomainChanged is needed.
	var domainOf func(string) string
	if w.perDomain() {
		domainOf = w.domainOf
	}
	if w.engine, err = newEngine(limiter); err != nil {
		return nil, err
	}
	for i := range 2 {
		cfg := evictionqueue.Config{Name: queueNames[i], MaxInFlight: sc.MaxInFlight, Metrics: m, DomainOf: domainOf,
			OnOutcome: func(o evictionqueue.Outcome) { w.rec.outcome(i, o) }}
		if err := w.engine.newQueue(i, cfg, w.handler(i), sc.Workers); err != nil {
			return nil, err
		}
		w.queues[i] = w.engine.queues[i]
		m.WaitingForTransitBudget(queueNames[i], 0) // served before the first wait
		m.Parked(queueNames[i], "refused", 0)       // served though refusals are abandoned here, not parked
	}
	// The clusters as the scheduler and the check read them; each is
	// published again when the replicas it runs change.
	for _, c := range w.clusters {
		w.publish(c)
	}
	for _, spec := range sc.Bindings {
		obj, err := newObject(spec)
		if err != nil {
			return nil, err
		}
		b := &binding{spec: spec, queue: qRB, obj: obj, idx: len(w.bindings), readyAt: map[string]time.Time{}}
		if spec.Kind == kindClusterResourceBinding {
			b.queue = qCRB
		}
		result := spec.Clusters
		if len(result) == 0 {
			if result, err = w.schedule(b, b.gb); err != nil {
				return nil, fmt.Errorf("fleetsim: %s: %w", sc.Source, err)
			}
		}
		for _, t := range result {
			if w.byName[t.Name] == nil {
				return nil, fmt.Errorf("fleetsim: %s: %s %s: spec.clusters: no cluster %q in the fleet", sc.Source, spec.Kind, spec.key(), t.Name)
			}
		}
		w.setSchedule(b, result, func(string) time.Time { return sc.Start })
		if (len(w.bindings)+1)%sc.PlacementBatch == 0 {
			w.reportSummaries()
		}
		b.gb.Generation, b.gb.ObservedGeneration = 1, 1
		b.write()
		w.bindings = append(w.bindings, b)
		w.byKey[b.queue][b.key()] = b
		if w.appf != nil && optsIn(spec) {
			w.appf.bindings = append(w.appf.bindings, b)
			w.appf.due[b] = sc.Start
		}
	}
	w.reportSummaries()
	w.reportAt = sc.Start.Add(clusterStatusUpdateFrequency)
	for _, c := range w.clusters {
		if spare, known := w.spare(c.Name); known && spare < 0 {
			return nil, fmt.Errorf("fleetsim: %s: the initial placement puts %d replicas on %s, whose capacity is %d: raise it or place fewer",
				sc.Source, w.used[c.Name], c.Name, sc.Capacity[c.Name])
		}
	}
	if w.fleetErr != nil {
		return nil, fmt.Errorf("fleetsim: %s: %w", sc.Source, w.fleetErr)
	}
	notReady0 := w.notReady()
	names := make([]string, len(w.clusters))
	for i, c := range w.clusters {
		names[i] = c.Name
	}
	sort.Strings(names)
	return &sim{sc: sc, cfg: cfg, w: w, clk: clk, out: out, speed: speed, fleetNames: names, notReady0: notReady0}, nil
}

// run plays the scenario to its end, or until ctx ends. At each instant it
// lets the queues' workers take the permits and items due, then does what the
// controllers have due (step), and then jumps the clock to the next moment
// anything can happen: a permit, a backoff or in-flight TTL ending, a
// controller's deadline, a timeline event, a progress line. With --speed it
// sleeps until that moment's wall-clock time first.
func (s *sim) run(ctx context.Context) (err error) {
	start, end := s.sc.Start, s.sc.Start.Add(s.sc.Duration)
	wallStart := time.Now()
	nextEvent, nextLine := 0, start
	for {
		now := s.clk.Now()
		if err = s.dispatch(ctx, now); err != nil {
			break
		}
		s.noteStorm(now)
		if err = s.step(ctx, now, &nextEvent); err != nil {
			break
		}
		s.noteStorm(now)
		s.depth = append(s.depth, depthMark{now, [2]int{s.w.queues[qRB].Len(), s.w.queues[qCRB].Len()}})
		if !now.Before(nextLine) {
			s.progress(now)
			nextLine = nextLine.Add(s.sc.Interval)
		}
		if !now.Before(end) {
			break
		}
		next := minTime(end, nextLine)
		if nextEvent < len(s.sc.Timeline) {
			next = minTime(next, start.Add(s.sc.Timeline[nextEvent].At.Duration))
		}
		if t := s.w.engine.permitAt; !t.IsZero() {
			next = minTime(next, t)
		}
		if t, ok := s.w.engine.nextDue(); ok {
			next = minTime(next, t)
		}
		if t, ok := s.w.nextWake(now); ok {
			next = minTime(next, t)
		}
		if err = s.pace(ctx, wallStart, next.Sub(start)); err != nil {
			break
		}
		s.clk.SetTime(next)
	}
	s.w.observeRate(s.clk.Now())
	return err
}

// step does everything due at now: timeline events, the taint controller,
// background evictions landing, cancellations and health, the taint manager,
// then the graceful eviction controller. After each change that can free a
// permit or bring an item, the workers take what is due (dispatch), in the
// order a control plane's goroutines would see the changes.
func (s *sim) step(ctx context.Context, now time.Time, nextEvent *int) error {
	w := s.w
	t := now.Sub(s.sc.Start)
	if !now.Before(w.reportAt) {
		w.reportSummaries()
		w.reportAt = w.reportAt.Add((now.Sub(w.reportAt)/clusterStatusUpdateFrequency + 1) * clusterStatusUpdateFrequency)
	}
	for *nextEvent < len(s.sc.Timeline) && s.sc.Timeline[*nextEvent].At.Duration <= t {
		e := s.sc.Timeline[*nextEvent]
		*nextEvent++
		if e.Phase != "" {
			s.phases = append(s.phases, phaseMark{now, e.Phase})
			s.note(now, event{Kind: eventPhase, Message: "phase: " + e.Phase})
		}
		if e.Freeze != nil {
			w.frozen = *e.Freeze
			w.rec.freeze(now, w.frozen)
			if !w.frozen {
				// The items the freeze held back are decided again at
				// once, in their places, as the fork's controllers do.
				for _, q := range w.queues {
					q.Open(kengine.FreezeGate)
				}
			}
			msg := "an operator thaws evictions: queued items go on at the rate in force"
			if w.frozen {
				msg = "an operator freezes every eviction: queued items wait"
			}
			s.note(now, event{Kind: eventFreeze, Message: msg})
			continue
		}
		if e.ConfirmStorm {
			msg := "an operator confirms the failure storm (confirm: storm), but no hold is on: nothing changes"
			if w.limiter.ConfirmStorm() {
				w.stormConfirmed = now
				msg = "an operator confirms the failure storm (confirm: storm): its hold ends"
			}
			s.note(now, event{Kind: eventStorm, Message: msg})
			s.noteStorm(now)
			continue
		}
		names := w.applyEvent(e, now)
		var conds []string
		for _, c := range e.Conditions {
			conds = append(conds, c.Type+"="+string(c.Status))
		}
		s.notReady = append(s.notReady, faultyMark{now, w.notReady()})
		s.note(now, event{
			Kind:     eventConditions,
			Message:  fmt.Sprintf("%s on %s (%s)", strings.Join(conds, ", "), plural(len(names), "cluster", "clusters"), describeClusters(names, s.fleetNames)),
			Clusters: names, Count: len(names),
		})
	}
	s.appTimeline(now)
	failed, recovered, changes := w.taintController(now)
	if len(changes) > 0 {
		s.note(now, event{Kind: eventTaints, Message: "taints: " + summarizeTaints(changes), Clusters: taintedClusters(changes, "")})
	}
	// The taint manager queues again the evictions abandoned for want of a
	// target once a cluster has lost a taint: the event line says so.
	abandonedBefore := maps.Clone(w.abandoned)
	due := w.taintManager(now)

	for _, c := range w.completeDue(now) {
		w.queues[c.queue].Complete(c.item) // its in-flight slot is free
		if err := s.dispatch(ctx, now); err != nil {
			return err
		}
	}

	// Cancel before telling the Tracker: the better health frees permits,
	// and no worker may find a recovered cluster's items queued.
	cancelled := 0
	for _, name := range recovered {
		for i := range w.queues {
			n := w.queues[i].CancelCluster(name)
			w.rec.cancelled(i, now, n)
			cancelled += n
		}
	}
	for _, name := range append(failed, recovered...) {
		w.tracker.Set(name, w.byName[name].faulty)
	}
	if err := s.dispatch(ctx, now); err != nil {
		return err
	}
	if len(failed)+len(recovered) > 0 {
		h, _ := w.tracker.Health()
		s.faulty = append(s.faulty, faultyMark{now, h.Unhealthy})
		msg := fmt.Sprintf("%d/%d clusters faulty (%s), rate in force %s", h.Unhealthy, h.Total, fmtPercent(h.FailureRate()), fmtRate(w.observeRate(now)))
		if w.perDomain() {
			msg += " (" + describeDomains(w.cfg.DisruptionDomain, w.limiter.DomainRates()) + ")"
		}
		if cancelled > 0 {
			msg += fmt.Sprintf("; %s of recovered clusters cancelled", plural(cancelled, "queued item", "queued items"))
		}
		s.note(now, event{Kind: eventHealth, Message: msg, Clusters: append(failed, recovered...), Count: h.Unhealthy, Cancelled: cancelled})
		s.noteStorm(now)
	}
	w.observeRate(now)
	// Workers ran since the taint manager looked: an item it found due may
	// have been evicted meanwhile (its binding left the cluster), and must
	// not be queued again to take a permit for nothing.
	for i := range due {
		due[i] = slices.DeleteFunc(due[i], func(it evictionqueue.Item) bool {
			b := w.byKey[i][it.Key]
			return !slices.ContainsFunc(b.gb.Clusters, func(t failover.TargetCluster) bool { return t.Name == it.Cluster })
		})
	}
	queued, retried := 0, 0
	for i, items := range due {
		for _, it := range items {
			if w.queues[i].Add(it, now) {
				queued++
				w.rec.queued(i)
				if _, ok := abandonedBefore[itemID{it.Cluster, it.Key}]; ok {
					retried++
				}
			}
		}
		if err := s.dispatch(ctx, now); err != nil {
			return err
		}
	}
	if queued > 0 {
		s.note(now, s.queuedEvent(queued, retried, taintedClusters(changes, "-")))
	}

	w.observeRate(now)
	w.gracefulEvictionController(now)
	s.noteAppFailover(w.appFailoverController(ctx, now))
	if back := w.failbackController(now); len(back) > 0 {
		var origins []string
		for _, d := range back {
			origins = append(origins, d.origin)
		}
		slices.Sort(origins)
		origins = slices.Compact(origins)
		s.note(now, event{Kind: eventFailback, Count: len(back), Clusters: origins,
			Message: fmt.Sprintf("failback: %s sent back to %s", plural(len(back), "binding", "bindings"), describeClusters(origins, s.fleetNames))})
	}
	return nil
}

// noteAppFailover says which bindings the application failover
// controller failed over, and which a bad rollout started to hold.
func (s *sim) noteAppFailover(done []appFailoverDone, holds []appHold) {
	for _, h := range holds {
		s.note(h.from, event{Kind: eventAppFailover, Message: fmt.Sprintf("bad-rollout hold: %s is not failed over: %s", h.b.key(), h.why)})
	}
	byBinding := map[*binding][]string{}
	var order []*binding
	for _, d := range done {
		if byBinding[d.b] == nil {
			order = append(order, d.b)
		}
		byBinding[d.b] = append(byBinding[d.b], d.cluster)
	}
	for _, b := range order {
		clusters := byBinding[b]
		s.note(s.clk.Now(), event{Kind: eventAppFailover, Count: len(clusters), Clusters: clusters,
			Message: fmt.Sprintf("application failover: %s failed over from %s", b.key(), describeClusters(clusters, s.fleetNames))})
	}
}

// noteStorm says when a failure storm's hold starts or ends, as the
// Limiter logs it.
func (s *sim) noteStorm(now time.Time) {
	w := s.w
	if on := w.limiter.StormHold(); on != s.storming {
		s.storming = on
		w.rec.stormHold(now, on)
		h, _ := w.tracker.Health()
		msg := fmt.Sprintf("failure storm (%d/%d clusters faulty): every eviction holds until they recover, an operator confirms or --%s (%v) passes",
			h.Unhealthy, h.Total, ratelimit.FlagStormConfirm, s.cfg.StormConfirm)
		if !on {
			msg = fmt.Sprintf("failure storm hold ended (%d/%d clusters faulty): the rate rule applies, %s", h.Unhealthy, h.Total, fmtRate(w.observeRate(now)))
		}
		s.note(now, event{Kind: eventStorm, Message: msg, Count: h.Unhealthy})
	}
}

func (s *sim) note(now time.Time, e event) {
	e.T = now.Sub(s.sc.Start)
	s.events = append(s.events, e)
	if s.out != nil {
		fmt.Fprintf(s.out, "%8s   » %s\n", fmtClock(e.T), e.Message)
	}
}

// queuedEvent says how many evictions the taint manager queued and, when
// some had been abandoned before, why they are back: clusters lost taints
// (a region recovering, say), and the pre-scheduling check may find a
// target among them now.
func (s *sim) queuedEvent(queued, retried int, untainted []string) event {
	e := event{Kind: eventQueued, Count: queued, Retried: retried, Clusters: untainted}
	e.Message = "taint manager queued " + plural(queued, "eviction", "evictions")
	if retried == 0 {
		return e
	}
	why := "clusters lost taints"
	switch len(untainted) {
	case 0:
	case 1:
		why = untainted[0] + " lost its taints"
	default:
		why = describeClusters(untainted, s.fleetNames) + " lost their taints"
	}
	if fresh := queued - retried; fresh > 0 {
		e.Message += fmt.Sprintf(": %d newly due, and %d", fresh, retried)
	}
	e.Message += " abandoned earlier for want of a target, to try again now that " + why
	return e
}

// dispatch lets the queues' workers take the permits free at now and
// handle their items (engine.dispatch).
func (s *sim) dispatch(ctx context.Context, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.w.engine.dispatch(ctx, now)
}

// pace holds the run back to --speed simulated seconds per wall second.
func (s *sim) pace(ctx context.Context, wallStart time.Time, simElapsed time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.speed <= 0 {
		return nil
	}
	d := time.Until(wallStart.Add(time.Duration(float64(simElapsed) / s.speed)))
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

const lineHeader = "    time  faulty     rate  rb-queue  crb-queue  evicted  abandoned  cancelled  tasks open"

func (s *sim) progress(now time.Time) {
	w := s.w
	h, _ := w.tracker.Health()
	l := progressLine{
		T:      now.Sub(s.sc.Start),
		Clock:  fmtClock(now.Sub(s.sc.Start)),
		Faulty: h.Unhealthy, Total: h.Total,
		Rate:   w.observeRate(now),
		Queued: [2]int{w.queues[qRB].Len(), w.queues[qCRB].Len()},
	}
	for b := range w.active {
		l.TasksOpen += len(b.gb.Tasks)
	}
	l.InFlight = len(w.inFlight)
	c := w.rec.snapshot()
	l.Evicted, l.Abandoned, l.Cancelled = sum2(c.Evicted), sum2(c.Abandoned), sum2(c.Cancelled)
	var prev progressLine
	if n := len(s.lines); n > 0 {
		prev = s.lines[n-1]
	}
	s.lines = append(s.lines, l)
	if s.out == nil {
		return
	}
	background := s.sc.CompletesAfter > 0
	if len(s.lines) == 1 {
		if background {
			fmt.Fprintln(s.out, lineHeader+"  in flight")
		} else {
			fmt.Fprintln(s.out, lineHeader)
		}
	}
	fmt.Fprintf(s.out, "%8s  %6s  %7s  %8d  %9d  %7s  %9s  %9s  %10d",
		fmtClock(l.T), fmt.Sprintf("%d/%d", l.Faulty, l.Total), fmtRate(l.Rate), l.Queued[0], l.Queued[1],
		delta(l.Evicted, prev.Evicted), delta(l.Abandoned, prev.Abandoned), delta(l.Cancelled, prev.Cancelled), l.TasksOpen)
	if background {
		fmt.Fprintf(s.out, "  %9d", l.InFlight)
	}
	fmt.Fprintln(s.out)
}

// delta shows an interval's count as +n, or a dot when nothing happened.
func delta(cur, prev int) string {
	if cur == prev {
		return "·"
	}
	return fmt.Sprintf("+%d", cur-prev)
}

// accounted checks that every item a queue accepted left it with an outcome
// or is still queued.
func (s *sim) accounted() {
	w := s.w
	for i, q := range w.queues {
		o := w.rec.outcomes[i]
		left := o[evictionqueue.Succeeded] + o[evictionqueue.Skipped] + o[evictionqueue.Completed] + o[evictionqueue.Abandoned] + o[evictionqueue.Failed] + o[evictionqueue.Cancelled]
		if got := left + q.Len(); got != w.rec.c.Queued[i] {
			w.rec.violations[checkAccounted] = append(w.rec.violations[checkAccounted],
				fmt.Sprintf("%s: %d queued, %d left with an outcome, %d still queued", queueNames[i], w.rec.c.Queued[i], left, q.Len()))
		}
		if o[evictionqueue.Cancelled] != w.rec.c.Cancelled[i] {
			w.rec.violations[checkCancelled] = append(w.rec.violations[checkCancelled],
				fmt.Sprintf("%s: CancelCluster returned %d in all, outcomes report %d", queueNames[i], w.rec.c.Cancelled[i], o[evictionqueue.Cancelled]))
		}
	}
}

// taintedClusters are the clusters named in the taint changes, those whose
// change starts with prefix ("+", "-" or "" for all), sorted.
func taintedClusters(changes []string, prefix string) []string {
	var out []string
	for _, c := range changes {
		if !strings.HasPrefix(c, prefix) {
			continue
		}
		_, cluster, _ := strings.Cut(c, " ")
		out = append(out, cluster)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func summarizeTaints(changes []string) string {
	// "+key:Effect cluster" → "+key:Effect on n clusters"
	byTaint := map[string][]string{}
	var order []string
	for _, c := range changes {
		taint, cluster, _ := strings.Cut(c, " ")
		if _, ok := byTaint[taint]; !ok {
			order = append(order, taint)
		}
		byTaint[taint] = append(byTaint[taint], cluster)
	}
	sort.Strings(order)
	parts := make([]string, len(order))
	for i, t := range order {
		parts[i] = fmt.Sprintf("%s on %d", t, len(byTaint[t]))
	}
	return strings.Join(parts, ", ")
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func fmtClock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%02d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}

func fmtRate(r float64) string {
	if r == 0 {
		return "paused"
	}
	return fmt.Sprintf("%.2f/s", r)
}

var errChecksFailed = errors.New("fleetsim: some checks failed")

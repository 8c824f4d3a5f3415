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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/metrics"
	"github.com/failoverkit/failover/prescheduling"
	"github.com/failoverkit/failover/ratelimit"
	"github.com/failoverkit/failover/taintpolicy"
)

// sim drives one run: it owns the simulated clock and plays the parts of a
// control plane that the library leaves to its user (cluster status, the
// taint controller, the taint manager, the scheduler, the graceful eviction
// controller), around the real Limiter, queues, Checker and Assessor.
type sim struct {
	sc      *scenario
	cfg     ratelimit.Config
	w       *world
	clk     *simClock
	settler *settler
	out     io.Writer // progress; nil: none
	speed   float64   // simulated seconds per wall second; 0: as fast as possible

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
}

// The kinds of event lines.
const (
	eventPhase      = "phase"      // a phase of the timeline starts
	eventConditions = "conditions" // the timeline changes clusters' conditions
	eventTaints     = "taints"     // the taint controller adds or removes taints
	eventHealth     = "health"     // the fleet's health and the rate in force change
	eventQueued     = "queued"     // the taint manager queues evictions
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

func newSim(sc *scenario, cfg ratelimit.Config, reg prometheus.Registerer, out io.Writer, speed float64) (*sim, error) {
	m, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	clk := newSimClock(sc.Start)
	evaluator, err := taintpolicy.NewEvaluator(sc.Policies)
	if err != nil {
		return nil, fmt.Errorf("fleetsim: %s: %w", sc.Source, err)
	}
	tracker := ratelimit.NewTracker()
	limiter, err := ratelimit.NewLimiter(cfg, tracker, ratelimit.WithClock(clk), ratelimit.WithMetrics(m))
	if err != nil {
		return nil, err
	}
	w := &world{
		sc:        sc,
		clk:       clk,
		byName:    map[string]*clusterState{},
		byKey:     [2]map[string]*binding{{}, {}},
		load:      map[string]int{},
		used:      map[string]int32{},
		evaluator: evaluator,
		tracker:   tracker,
		limiter:   limiter,
		assessor:  gracefulevict.NewAssessor(gracefulevict.WithDefaultTimeout(sc.GracefulEvictionTimeout)),
		abandoned: map[itemID]int{},
		rec:       newRecorder(),
	}
	// The check is called with w.mu held, so the capacity function reads
	// the world directly.
	w.checker = prescheduling.NewChecker(prescheduling.WithCapacity(w.spare))
	for i := range sc.Clusters {
		c := &clusterState{Cluster: sc.Clusters[i], dirty: true}
		c.Conditions = append(c.Conditions[:0:0], c.Conditions...)
		w.clusters = append(w.clusters, c)
		w.byName[c.Name] = c
		tracker.Set(c.Name, false)
	}
	for i := range 2 {
		q, err := evictionqueue.New(evictionqueue.Config{
			Name:        queueNames[i],
			Workers:     sc.Workers,
			Pacer:       limiter,
			MaxInFlight: sc.MaxInFlight,
			Metrics:     m,
			Clock:       clk,
			OnOutcome:   func(o evictionqueue.Outcome) { w.rec.outcome(i, o) },
		}, w.handler(i))
		if err != nil {
			return nil, err
		}
		w.queues[i] = q
	}
	for _, spec := range sc.Bindings {
		b := &binding{spec: spec, queue: qRB, readyAt: map[string]time.Time{}}
		if spec.Kind == kindClusterResourceBinding {
			b.queue = qCRB
		}
		result := spec.Clusters
		if len(result) == 0 {
			result = w.initialSchedule(b)
		}
		for _, t := range result {
			if w.byName[t.Name] == nil {
				return nil, fmt.Errorf("fleetsim: %s: %s %s: spec.clusters: no cluster %q in the fleet", sc.Source, spec.Kind, spec.key(), t.Name)
			}
		}
		w.setSchedule(b, result, func(string) time.Time { return sc.Start })
		b.gb.Generation, b.gb.ObservedGeneration = 1, 1
		w.bindings = append(w.bindings, b)
		w.byKey[b.queue][b.key()] = b
	}
	for _, c := range w.clusters {
		if spare, known := w.spare(c.Name); known && spare < 0 {
			return nil, fmt.Errorf("fleetsim: %s: the initial placement puts %d replicas on %s, whose capacity is %d: raise it or place fewer",
				sc.Source, w.used[c.Name], c.Name, sc.Capacity[c.Name])
		}
	}
	st, err := newSettler()
	if err != nil {
		return nil, err
	}
	notReady0 := w.notReady()
	names := make([]string, len(w.clusters))
	for i, c := range w.clusters {
		names[i] = c.Name
	}
	sort.Strings(names)
	return &sim{sc: sc, cfg: cfg, w: w, clk: clk, settler: st, out: out, speed: speed, fleetNames: names, notReady0: notReady0}, nil
}

// run plays the scenario to its end, or until ctx ends. It drives under the
// run's label, so that every goroutine it starts, and every goroutine those
// start, is one the settler waits for.
func (s *sim) run(ctx context.Context) error {
	var err error
	s.settler.do(ctx, func(ctx context.Context) { err = s.drive(ctx) })
	return err
}

func (s *sim) drive(ctx context.Context) error {
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 2)
	for _, q := range s.w.queues {
		go func() { done <- q.Run(runCtx) }()
	}
	defer func() {
		stop()
		// After a settle failure a goroutine of the run may never end;
		// the error names it, and waiting for it would turn it into a hang.
		var giveUp <-chan time.Time
		if s.settler.err != nil {
			giveUp = time.After(s.settler.limit)
		}
		for range 2 {
			select {
			case <-done:
			case <-giveUp:
				return
			}
		}
	}()

	start, end := s.sc.Start, s.sc.Start.Add(s.sc.Duration)
	wallStart := time.Now()
	nextEvent, nextLine := 0, start
	var err error
	for {
		now := s.clk.Now()
		s.step(now, &nextEvent)
		if err = s.settler.err; err != nil {
			break
		}
		s.depth = append(s.depth, depthMark{now, [2]int{s.w.queues[qRB].Len(), s.w.queues[qCRB].Len()}})
		if !now.Before(nextLine) {
			s.line(now)
			nextLine = nextLine.Add(s.sc.Interval)
		}
		if !now.Before(end) {
			break
		}
		next := minTime(end, nextLine)
		if nextEvent < len(s.sc.Timeline) {
			next = minTime(next, start.Add(s.sc.Timeline[nextEvent].At.Duration))
		}
		if t, ok := s.clk.nextDue(); ok {
			next = minTime(next, t)
		}
		s.w.mu.Lock()
		if t, ok := s.w.nextWake(now); ok {
			next = minTime(next, t)
		}
		s.w.mu.Unlock()
		if err = s.pace(ctx, wallStart, next.Sub(start)); err != nil {
			break
		}
		s.clk.SetTime(next)
		if err = s.settler.settle(); err != nil {
			break
		}
	}
	s.w.mu.Lock()
	s.w.observeRate(s.clk.Now())
	s.w.mu.Unlock()
	return err
}

// step does everything due at now: timeline events, the taint controller,
// cancellations and health, the taint manager; lets the workers run; then
// the graceful eviction controller.
func (s *sim) step(now time.Time, nextEvent *int) {
	w := s.w
	w.mu.Lock()
	t := now.Sub(s.sc.Start)
	for *nextEvent < len(s.sc.Timeline) && s.sc.Timeline[*nextEvent].At.Duration <= t {
		e := s.sc.Timeline[*nextEvent]
		*nextEvent++
		if e.Phase != "" {
			s.phases = append(s.phases, phaseMark{now, e.Phase})
			s.note(now, event{Kind: eventPhase, Message: "phase: " + e.Phase})
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
	failed, recovered, changes := w.taintController(now)
	if len(changes) > 0 {
		s.note(now, event{Kind: eventTaints, Message: "taints: " + summarizeTaints(changes), Clusters: taintedClusters(changes, "")})
	}
	// The taint manager queues again the evictions abandoned for want of a
	// target once a cluster has lost a taint: the event line says so.
	abandonedBefore := maps.Clone(w.abandoned)
	due := w.taintManager(now)
	completed := w.completeDue(now)
	w.mu.Unlock()

	for _, c := range completed {
		w.queues[c.queue].Complete(c.item)
		_ = s.settler.settle() // a failure sticks: drive stops after this step
	}

	// The workers are all blocked now, and each of the changes below wakes
	// some of them: the driver lets them settle after each, so that they
	// reach the Limiter's first-come-first-served line in the same order on
	// every run. Cancel before telling the Tracker: the better health wakes
	// waiting workers, who must not find a recovered cluster's items queued.
	cancelled := 0
	for _, name := range recovered {
		for i, q := range w.queues {
			n := q.CancelCluster(name)
			w.rec.cancelled(i, now, n)
			cancelled += n
		}
	}
	for _, name := range append(failed, recovered...) {
		w.tracker.Set(name, w.byName[name].faulty)
	}
	_ = s.settler.settle() // a failure sticks: drive stops after this step
	w.mu.Lock()
	if len(failed)+len(recovered) > 0 {
		h, _ := w.tracker.Health()
		s.faulty = append(s.faulty, faultyMark{now, h.Unhealthy})
		msg := fmt.Sprintf("%d/%d clusters faulty (%s), rate in force %s", h.Unhealthy, h.Total, fmtPercent(h.FailureRate()), fmtRate(w.limiter.Rate()))
		if cancelled > 0 {
			msg += fmt.Sprintf("; %s of recovered clusters cancelled", plural(cancelled, "queued item", "queued items"))
		}
		s.note(now, event{Kind: eventHealth, Message: msg, Clusters: append(failed, recovered...), Count: h.Unhealthy, Cancelled: cancelled})
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
	w.mu.Unlock()
	queued, retried := 0, 0
	for i, items := range due {
		// Highest priority first: a worker may take the head while the rest
		// is being added, and it must be the head it would be once all are.
		sort.SliceStable(items, func(a, b int) bool { return items[a].Priority > items[b].Priority })
		for _, it := range items {
			if w.queues[i].Add(it) {
				queued++
				w.rec.queued(i)
				if _, ok := abandonedBefore[itemID{it.Cluster, it.Key}]; ok {
					retried++
				}
			}
		}
		_ = s.settler.settle() // a failure sticks: drive stops after this step
	}
	if queued > 0 {
		s.note(now, s.queuedEvent(queued, retried, taintedClusters(changes, "-")))
	}

	w.mu.Lock()
	w.observeRate(now)
	w.gracefulEvictionController(now)
	w.mu.Unlock()
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

func (s *sim) line(now time.Time) {
	w := s.w
	w.mu.Lock()
	h, _ := w.tracker.Health()
	l := progressLine{
		T:      now.Sub(s.sc.Start),
		Clock:  fmtClock(now.Sub(s.sc.Start)),
		Faulty: h.Unhealthy, Total: h.Total,
		Rate:   w.limiter.Rate(),
		Queued: [2]int{w.queues[qRB].Len(), w.queues[qCRB].Len()},
	}
	for _, b := range w.bindings {
		l.TasksOpen += len(b.gb.Tasks)
	}
	l.InFlight = len(w.inFlight)
	w.mu.Unlock()
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
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	for i, q := range w.queues {
		o := w.rec.outcomes[i]
		left := o[evictionqueue.Succeeded] + o[evictionqueue.Completed] + o[evictionqueue.Abandoned] + o[evictionqueue.Failed] + o[evictionqueue.Cancelled]
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

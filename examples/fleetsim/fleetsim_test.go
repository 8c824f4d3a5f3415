package main

import (
	"bytes"
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/evictionqueue"
	"github.com/failoverkit/failover/gracefulevict"
	kengine "github.com/failoverkit/failover/karmada/engine"
	"github.com/failoverkit/failover/karmada/scheduling"
	"github.com/failoverkit/failover/prescheduling"
	"github.com/failoverkit/failover/ratelimit"
)

func TestMain(m *testing.M) {
	// Karmada's scheduler framework starts one goroutine per process that
	// never ends (karmada/scheduling); the queues' goroutines must all end.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction(scheduling.LeakedGoroutine))
}

// runReport runs fleetsim with args as run does, without printing, and
// returns its report; the error is errChecksFailed when a check failed.
func runReport(t *testing.T, args ...string) (*report, error) {
	t.Helper()
	o, err := parseFlags(args, io.Discard)
	if err != nil {
		return nil, err
	}
	sc, err := readScenario(o.scenario)
	if err != nil {
		return nil, err
	}
	cfg, err := o.rateConfig(sc)
	if err != nil {
		return nil, err
	}
	s, err := newSim(sc, cfg, prometheus.NewRegistry(), nil, o.speed)
	if err != nil {
		return nil, err
	}
	if err := s.run(context.Background()); err != nil {
		return nil, err
	}
	r := s.report()
	if !r.Pass {
		return r, errChecksFailed
	}
	return r, nil
}

// runSim runs a scenario file and returns the simulation, to inspect the
// world it left behind.
func runSim(t testing.TB, path string) (*sim, *report) {
	t.Helper()
	sc, err := readScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	return runLoaded(t, sc)
}

// runLoaded runs a loaded scenario, which a test may have changed, with
// fleetsim's default flags.
func runLoaded(t testing.TB, sc *scenario) (*sim, *report) {
	t.Helper()
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.rateConfig(sc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSim(sc, cfg, prometheus.NewRegistry(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, s.report()
}

// assertRates holds every measurable phase to the configured rate.
func assertRates(t *testing.T, r *report) {
	t.Helper()
	for _, p := range r.Phases {
		if p.Gaps < minGapsForRate || p.Rate == 0 {
			continue
		}
		if dev := math.Abs(p.Achieved-p.Rate) / p.Rate; dev > 0.05 {
			t.Errorf("phase %q from %s: achieved %.4f/s against %.4f/s (%.1f%% off)", p.Phase, p.From.Format(time.TimeOnly), p.Achieved, p.Rate, 100*dev)
		}
	}
}

func findPhase(t *testing.T, r *report, name string, rate float64) segment {
	t.Helper()
	for _, p := range r.Phases {
		if p.Phase == name && p.Rate == rate {
			return p
		}
	}
	t.Fatalf("no phase %q at rate %v in %+v", name, rate, r.Phases)
	return segment{}
}

func TestBuiltinScenarioTellsTheStory(t *testing.T) {
	r, err := runReport(t)
	if err != nil {
		t.Fatalf("run: %v (checks: %+v)", err, r)
	}
	if !r.Pass || r.Clusters != 40 || r.Bindings[qRB]+r.Bindings[qCRB] < 200 || r.Bindings[qCRB] == 0 {
		t.Fatalf("want a passing run of 40 clusters and a few hundred bindings of both kinds, got pass=%v clusters=%d bindings=%v", r.Pass, r.Clusters, r.Bindings)
	}
	assertRates(t, r)

	// One region (15% of the fleet) out: the primary rate, saturated.
	outage := findPhase(t, r, "us-east-1 outage", 0.5)
	if outage.MaxFaulty != 6 || outage.Gaps < 30 || outage.Evicted == 0 {
		t.Errorf("us-east-1 outage: want 6 faulty, ≥30 backlogged gaps at 0.5/s and evictions, got %+v", outage)
	}
	// 60% faulty in a fleet of 40 (> 10): slowed to the secondary rate, not paused.
	wide := findPhase(t, r, "southeastasia unreachable too", 0.1)
	if wide.MaxFaulty != 24 || wide.Gaps < 10 {
		t.Errorf("wider outage: want 24 faulty and ≥10 backlogged gaps at 0.1/s, got %+v", wide)
	}
	if wide.Abandoned == 0 {
		t.Errorf("wider outage: want workloads with nowhere to go abandoned, got %+v", wide)
	}
	for _, p := range r.Phases {
		if p.Rate == 0 {
			t.Errorf("a fleet of 40 must never pause: %+v", p)
		}
	}
	// us-east-1 back: 45% faulty, the primary rate again.
	back := findPhase(t, r, "us-east-1 recovers", 0.5)
	if back.MaxFaulty != 18 || back.Gaps < 30 {
		t.Errorf("us-east-1 recovers: want 18 faulty and a saturated primary rate, got %+v", back)
	}
	// southeastasia back: what it still had queued is cancelled.
	rec := findPhase(t, r, "southeastasia recovers", 0.5)
	if rec.Cancelled == 0 || rec.Cancelled != sum2(r.Totals.Cancelled) {
		t.Errorf("southeastasia recovers: want every cancellation there, got %d of %d", rec.Cancelled, sum2(r.Totals.Cancelled))
	}
	// No task ends because its cluster is back in the schedule result:
	// the engine's check, as Karmada's scheduler, never places a workload
	// back on a cluster a task of it comes from.
	for _, why := range []string{"replacement healthy", "grace period elapsed", "purgeMode Directly"} {
		if r.TasksDoneBy[why] == 0 {
			t.Errorf("want graceful eviction tasks done because %q, got %v", why, r.TasksDoneBy)
		}
	}
	if r.TasksOpen != r.TasksOpenBy["purgeMode Never"] {
		t.Errorf("only purgeMode Never tasks may stay open at the end, got %v", r.TasksOpenBy)
	}
}

func TestBuiltinScenarioWorkloads(t *testing.T) {
	s, r := runSim(t, "")
	if !r.Pass {
		t.Fatalf("checks failed: %+v", r.Checks)
	}
	w := s.w
	for _, b := range w.bindings {
		switch b.spec.Namespace {
		case "legacy":
			// No failover and tolerates NoExecute: never queued, never moved.
			if len(b.gb.Tasks) != 0 || b.gb.Generation != 1 {
				t.Errorf("%s has no failover but was evicted: %+v", b.key(), b.gb)
			}
		case "residency":
			// Pinned to us-east-1, which failed as a whole: abandoned, so it
			// still runs where it ran, in us-east-1 only.
			if b.gb.Generation != 1 {
				t.Errorf("%s had nowhere to go but was evicted: %+v", b.key(), b.gb)
			}
			for _, c := range b.gb.Clusters {
				if w.byName[c.Name].Region != "us-east-1" {
					t.Errorf("%s left its region: %+v", b.key(), b.gb.Clusters)
				}
			}
		}
		if b.spec.divided() && b.replicas() != b.spec.Replicas {
			t.Errorf("%s runs %d replicas, want %d", b.key(), b.replicas(), b.spec.Replicas)
		}
	}
	if r.Abandoned == nil || sum2(r.Totals.Abandoned) == 0 {
		t.Error("want evictions abandoned by the pre-scheduling check")
	}
	// Nothing is still queued and every cluster is healthy again.
	for i, q := range w.queues {
		if q.Len() != 0 {
			t.Errorf("%s still holds %d items", queueNames[i], q.Len())
		}
	}
	if h, _ := w.tracker.Health(); h.Unhealthy != 0 || h.Total != 40 {
		t.Errorf("fleet health at the end: %+v", h)
	}
}

func TestScenariosAreReproducible(t *testing.T) {
	for _, args := range [][]string{
		nil, // the built-in scenario
		{"--scenario", "scenarios/small-fleet-pause.yaml"},
		{"--scenario", "scenarios/flapping-region.yaml"},
	} {
		t.Run(strings.Join(append([]string{"fleetsim"}, args...), " "), func(t *testing.T) {
			var a, b bytes.Buffer
			if err := run(context.Background(), args, &a); err != nil {
				t.Fatal(err)
			}
			if err := run(context.Background(), args, &b); err != nil {
				t.Fatal(err)
			}
			if a.String() != b.String() {
				t.Errorf("two runs differ:\n%s\n---\n%s", a.String(), b.String())
			}
		})
	}
}

func TestShippedScenarios(t *testing.T) {
	files, err := filepath.Glob("scenarios/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("want the built-in and two more scenarios, got %v (%v)", files, err)
	}
	for _, f := range files {
		for _, d := range ratelimit.Domains {
			t.Run(filepath.Base(f)+"/"+string(d), func(t *testing.T) {
				r, err := runReport(t, "--scenario", f, "--disruption-domain", string(d))
				if err != nil {
					t.Fatalf("run: %v\n%+v", err, r.Checks)
				}
				if r.Rates.DisruptionDomain != d {
					t.Errorf("ran with --disruption-domain=%s, report says %q", d, r.Rates.DisruptionDomain)
				}
				assertRates(t, r)
				if sum2(r.Totals.Evicted) == 0 {
					t.Error("nothing was evicted")
				}
			})
		}
	}
}

func TestSmallFleetPauses(t *testing.T) {
	s, r := runSim(t, "scenarios/small-fleet-pause.yaml")
	if !r.Pass {
		t.Fatalf("checks failed: %+v", r.Checks)
	}
	paused := findPhase(t, r, "five of eight unreachable", 0)
	if paused.MaxFaulty != 5 || paused.Evicted+paused.Abandoned != 0 {
		t.Errorf("5 of 8 faulty in a fleet of 8 must pause evictions, got %+v", paused)
	}
	resumed := findPhase(t, r, "two come back", 0.5)
	if resumed.Cancelled == 0 || resumed.Evicted == 0 {
		t.Errorf("two clusters back: want their items cancelled and evictions resumed, got %+v", resumed)
	}
	// The Divided example of Karmada's failover analysis: member2 takes the
	// replica member1 had.
	nginx := s.w.byKey[qRB]["default/nginx"]
	if want := []failover.TargetCluster{{Name: "member2", Replicas: 3}}; !slices.Equal(nginx.gb.Clusters, want) {
		t.Errorf("nginx: got %+v, want %+v", nginx.gb.Clusters, want)
	}
}

func TestFlappingRegion(t *testing.T) {
	r, err := runReport(t, "--scenario", "scenarios/flapping-region.yaml")
	if err != nil {
		t.Fatal(err)
	}
	flapping := findPhase(t, r, "flapping", 0.1)
	if flapping.MaxFaulty != 0 || flapping.Evicted+flapping.Abandoned != 0 {
		t.Errorf("short flaps must be absorbed by the windows, got %+v", flapping)
	}
	brief := findPhase(t, r, "brief return", 0.1)
	if brief.MaxFaulty != 5 || brief.Cancelled != 0 {
		t.Errorf("a 30s return inside removeOnMismatchSeconds must keep the taint, got %+v", brief)
	}
	// The frontends that find no room are abandoned as soon as the room
	// runs out: an abandon gives its permit back, so none waits 10s for
	// one, they all go while the region is down, and none is still queued
	// when it recovers.
	down := findPhase(t, r, "down for good", 0.1)
	rec := findPhase(t, r, "recovered", 0.1)
	if rec.Cancelled != 0 || down.Abandoned < 10 || down.Abandoned != sum2(r.Totals.Abandoned) {
		t.Errorf("want the abandons while the region is down, nothing left to cancel at recovery, got %+v and %+v", down, rec)
	}
	// The survivors (21 replicas each) fill up: the check abandons the last
	// divided frontends for want of capacity.
	if g := r.AbandonedBy["web/frontend"]; g == nil || !strings.Contains(g.Example, "spare capacity") {
		t.Errorf("want frontends abandoned for capacity, got %+v", r.AbandonedBy)
	}
}

func TestBackgroundEvictionsComplete(t *testing.T) {
	s, r := runSim(t, "scenarios/flapping-region.yaml")
	if !r.Pass {
		t.Fatalf("checks failed: %+v", r.Checks)
	}
	maxInFlight := 0
	for _, l := range r.Lines {
		maxInFlight = max(maxInFlight, l.InFlight)
	}
	if maxInFlight == 0 {
		t.Error("no eviction was ever in flight")
	}
	// Every eviction accepted in the background was completed, and every
	// queue outcome agrees.
	if len(s.w.inFlight) != 0 {
		t.Errorf("%d evictions still in flight at the end", len(s.w.inFlight))
	}
	for i := range 2 {
		o := s.w.rec.outcomes[i]
		if o[evictionqueue.InProgress] == 0 || o[evictionqueue.InProgress] != o[evictionqueue.Completed] || o[evictionqueue.Completed] != r.Totals.Evicted[i] {
			t.Errorf("%s: outcomes %v, %d evicted", queueNames[i], o, r.Totals.Evicted[i])
		}
	}
}

func TestInFlightBudgetIsNotMistakenForTheRate(t *testing.T) {
	// At 0.25/s, evictions that take 15s need 3.75 slots; with 3 the
	// budget paces them. The achieved-rate check must not blame the Limiter.
	r, err := runReport(t, "--scenario", "scenarios/flapping-region.yaml", "--resource-eviction-rate=0.25")
	if err != nil {
		t.Fatalf("run: %v\n%+v", err, r.Checks)
	}
	assertRates(t, r)
}

func TestRateFlagsOverrideTheScenario(t *testing.T) {
	r, err := runReport(t, "--scenario", "scenarios/flapping-region.yaml", "--resource-eviction-rate=0.25")
	if err != nil {
		t.Fatal(err)
	}
	if r.Rates.ResourceEvictionRate != 0.25 || r.Rates.SecondaryResourceEvictionRate != 0.05 {
		t.Fatalf("rates: got %+v, want the flag's 0.25 and the scenario's 0.05", r.Rates)
	}
	p := findPhase(t, r, "down for good", 0.25)
	if p.Gaps < minGapsForRate {
		t.Fatalf("no measurable phase at 0.25/s: %+v", p)
	}
	assertRates(t, r)
}

func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"realtime and speed disagree", []string{"--realtime", "--speed", "5"}, "--realtime and --speed"},
		{"negative speed", []string{"--speed", "-1"}, "--speed"},
		{"stray argument", []string{"extra"}, `unexpected argument "extra"`},
		{"rate out of range", []string{"--unhealthy-cluster-threshold=1.5"}, "UnhealthyClusterThreshold"},
		{"a rate faster than a Limiter can keep", []string{"--resource-eviction-rate", "1e12"},
			"ResourceEvictionRate (--resource-eviction-rate) must be at most 1e+09 per second (one a nanosecond), got 1e+12"},
		{"the same under --compare-domains", []string{"--compare-domains", "--resource-eviction-rate", "1e12"}, "must be at most 1e+09"},
		{"unknown disruption domain", []string{"--disruption-domain=country"}, `"country" for "--disruption-domain" flag: ratelimit: unknown disruption domain`},
		{"missing file", []string{"--scenario", "scenarios/nope.yaml"}, "nope.yaml"},
		{"bad metrics address", []string{"--metrics-addr", "127.0.0.1:99999"}, "--metrics-addr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestSpeedPacesAgainstTheWallClock(t *testing.T) {
	// 15 simulated minutes at 90,000× take 10ms of wall time at least.
	start := time.Now()
	r, err := runReport(t, "--scenario", "scenarios/small-fleet-pause.yaml", "--speed", "90000")
	if err != nil || !r.Pass {
		t.Fatalf("run: %v", err)
	}
	if el := time.Since(start); el < 10*time.Millisecond {
		t.Errorf("--speed 90000 ran 15m in %v, faster than paced", el)
	}
}

// scrapeWriter scrapes /metrics from inside the simulation's own progress
// output: while Write blocks, the simulation waits, so the scrape happens
// mid-run at a known simulated time.
type scrapeWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	url    string
	at     string // the progress line to scrape at, e.g. "00:04:00 "
	body   string
	err    error
	client *http.Client
}

var metricsURL = regexp.MustCompile(`metrics: (http://\S+/metrics)`)

func (w *scrapeWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := metricsURL.FindSubmatch(p); m != nil {
		w.url = string(m[1])
	}
	if w.body == "" && w.err == nil && w.url != "" && bytes.HasPrefix(p, []byte(w.at)) {
		resp, err := w.client.Get(w.url)
		if err != nil {
			w.err = err
			return len(p), nil
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		w.body, w.err = string(b), err
	}
	return len(p), nil
}

func TestMetricsAreServedWhileItRuns(t *testing.T) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	// At 00:08:00 us-east-1 is out (6/40) and its evictions are under way.
	w := &scrapeWriter{at: "00:08:00  ", client: client}
	if err := run(context.Background(), []string{"--metrics-addr", "127.0.0.1:0"}, w); err != nil {
		t.Fatal(err)
	}
	if w.err != nil || w.body == "" {
		t.Fatalf("scrape: %v (url %q)\n%s", w.err, w.url, w.buf.String())
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^eviction_total\{queue_name="resource-binding"\} [1-9]`),
		regexp.MustCompile(`(?m)^evict_kind_total\{cluster_name="use1-0\d",resource_kind="apps/v1/Deployment"\} [1-9]`),
		regexp.MustCompile(`(?m)^eviction_processing_total\{queue_name="resource-binding",result="success"\} [1-9]`),
		regexp.MustCompile(`(?m)^eviction_processing_latency_seconds_count\{queue_name="resource-binding"\} [1-9]`),
		regexp.MustCompile(`(?m)^cluster_fault_num 6$`),
		regexp.MustCompile(`(?m)^cluster_failure_rate 0.15$`),
		regexp.MustCompile(`(?m)^eviction_rate 0.5$`),
	} {
		if !want.MatchString(w.body) {
			t.Errorf("/metrics at 00:08:00 has no line matching %s", want)
		}
	}
}

// A busy --metrics-addr is a bad flag: the run fails before it prints
// anything, header included.
func TestBusyMetricsAddrFailsBeforePrinting(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	var out bytes.Buffer
	err = run(context.Background(), []string{"--metrics-addr", busy.Addr().String()}, &out)
	if err == nil || !strings.Contains(err.Error(), "fleetsim: --metrics-addr:") {
		t.Fatalf("want a --metrics-addr error, got %v", err)
	}
	if out.Len() > 0 {
		t.Errorf("printed before failing:\n%s", out.String())
	}
}

func TestRecorderChecksCanFail(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, tc := range []struct {
		name    string
		permits []float64 // seconds, at 0.5/s (one every 2s is allowed)
		check   string
	}{
		{"two evictions at one instant", []float64{0, 2, 4, 4, 6, 8}, checkRateBound},
		{"three in a window of 2s", []float64{0, 1, 2}, checkRateBound},
		{"backlogged but slow", []float64{0, 2.5, 5, 7.5, 10, 12.5, 15}, checkAchieved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			r.rate(t0, 0.5, 0.5)
			for _, p := range tc.permits {
				r.permit(qRB, at(p), 0.5, 10, "")
				r.setResult("evicted")
			}
			r.analyse(nil, nil, at(60))
			if len(r.violations[tc.check]) == 0 {
				t.Errorf("want a violation of %q, got %v", tc.check, r.violations)
			}
		})
	}
	t.Run("exact pacing passes", func(t *testing.T) {
		r := newRecorder()
		r.rate(t0, 0.5, 0.5)
		for i := range 10 {
			r.permit(qRB, at(float64(2*i)), 0.5, 10, "")
			r.setResult("evicted")
			// An abandon at the same instant gave its permit back: it
			// counts against nothing.
			r.permit(qRB, at(float64(2*i)), 0.5, 10, "")
			r.setResult("abandoned")
		}
		segs := r.analyse(nil, nil, at(60))
		if len(r.violations) != 0 || len(segs) != 1 || segs[0].Achieved != 0.5 || segs[0].Gaps != 9 {
			t.Errorf("got %v, %+v", r.violations, segs)
		}
	})
	t.Run("any eviction while paused", func(t *testing.T) {
		r := newRecorder()
		r.rate(t0, 0, 0)
		r.permit(qRB, at(5), 0, 10, "")
		r.setResult("evicted")
		r.analyse(nil, nil, at(60))
		if len(r.violations[checkRateBound]) == 0 {
			t.Error("an eviction while paused must fail the rate check")
		}
	})
}

func TestReportExitStatus(t *testing.T) {
	// A run whose checks fail returns errChecksFailed, which main turns into
	// exit status 1. Force a failure through the recorder of a real run.
	sc, err := readScenario("scenarios/small-fleet-pause.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSim(sc, ratelimit.DefaultConfig(), prometheus.NewRegistry(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.w.rec.violation(checkLastCopy, "injected")
	r := s.report()
	if r.Pass {
		t.Fatal("a violation must fail the run")
	}
	var out bytes.Buffer
	printSummary(&out, r)
	if !strings.Contains(out.String(), "FAIL no workload lost its last copy") || !strings.Contains(out.String(), "verdict: FAIL") {
		t.Errorf("summary does not show the failure:\n%s", out.String())
	}
}

func TestCheckCopies(t *testing.T) {
	divided := &bindingSpecResolved{Name: "web", Namespace: "shop", Replicas: 3,
		Placement: prescheduling.Placement{ReplicaScheduling: &prescheduling.ReplicaSchedulingStrategy{}}}
	duplicated := &bindingSpecResolved{Name: "api", Namespace: "shop"}
	task := gracefulevict.Task{FromCluster: "c1"}
	for _, tc := range []struct {
		name     string
		spec     *bindingSpecResolved
		clusters []failover.TargetCluster
		tasks    []gracefulevict.Task
		incoming []failover.TargetCluster
		lost     bool
	}{
		{"scheduled", duplicated, []failover.TargetCluster{{Name: "c2"}}, nil, nil, false},
		{"only the old copy, kept by its task", duplicated, nil, []gracefulevict.Task{task}, nil, false},
		{"only an answer on its way", duplicated, nil, nil, []failover.TargetCluster{{Name: "c2"}}, false},
		{"nothing anywhere", duplicated, nil, nil, nil, true},
		{"divided, all replicas", divided, []failover.TargetCluster{{Name: "c2", Replicas: 3}}, nil, nil, false},
		{"divided, replicas incoming", divided, []failover.TargetCluster{{Name: "c2", Replicas: 1}}, nil, []failover.TargetCluster{{Name: "c3", Replicas: 2}}, false},
		{"divided, a replica lost", divided, []failover.TargetCluster{{Name: "c2", Replicas: 2}}, []gracefulevict.Task{task}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{rec: newRecorder()}
			b := &binding{spec: tc.spec, gb: gracefulevict.Binding{Clusters: tc.clusters, Tasks: tc.tasks}}
			if tc.incoming != nil {
				w.inFlight = []*completion{{b: b, added: tc.incoming}}
			}
			w.checkCopies(b)
			if lost := len(w.rec.violations[checkLastCopy]) > 0; lost != tc.lost {
				t.Errorf("lost = %v, want %v (%v)", lost, tc.lost, w.rec.violations)
			}
		})
	}
}

// BenchmarkBuiltinScenario measures a whole run of the built-in scenario
// against the 30 simulated minutes it covers: sim-s/wall-s is how many times
// faster than real time it plays.
func BenchmarkBuiltinScenario(b *testing.B) {
	b.ReportAllocs()
	var simulated time.Duration
	for b.Loop() {
		if err := run(context.Background(), nil, io.Discard); err != nil {
			b.Fatal(err)
		}
		simulated += 30 * time.Minute
	}
	b.ReportMetric(simulated.Seconds()/b.Elapsed().Seconds(), "sim-s/wall-s")
}

// The taint manager decides as the fork's does (karmada.DecideBindingEviction):
// NoExecute against the tolerations of the applied placement, PreferNoExecute
// for the bindings that opted in, after Karmada v1.18's default of 300s.
func TestEvictAt(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	added := &metav1.Time{Time: t0}
	noExecute := corev1.Taint{Key: "cluster.karmada.io/unreachable", Effect: corev1.TaintEffectNoExecute, TimeAdded: added}
	preferNoExecute := corev1.Taint{Key: "cluster.karmada.io/not-ready", Effect: failover.TaintEffectPreferNoExecute, TimeAdded: added}
	sixty := int64(60)
	tolerate := func(seconds *int64) *policyv1alpha1.Placement {
		return &policyv1alpha1.Placement{ClusterTolerations: []corev1.Toleration{{Key: noExecute.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}}}
	}
	optedIn := &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{}}
	for _, tc := range []struct {
		name      string
		taints    []corev1.Taint
		placement *policyv1alpha1.Placement
		failover  *policyv1alpha1.FailoverBehavior
		want      time.Duration
		evicted   bool
	}{
		{"NoExecute not tolerated: at once", []corev1.Taint{noExecute}, &policyv1alpha1.Placement{}, nil, 0, true},
		{"NoExecute tolerated for ever: stays", []corev1.Taint{noExecute}, tolerate(nil), nil, 0, false},
		{"NoExecute tolerated 60s", []corev1.Taint{noExecute}, tolerate(&sixty), nil, time.Minute, true},
		{"PreferNoExecute without failover: stays", []corev1.Taint{preferNoExecute}, &policyv1alpha1.Placement{}, nil, 0, false},
		{"PreferNoExecute with failover: after 300s", []corev1.Taint{preferNoExecute}, &policyv1alpha1.Placement{}, optedIn, 300 * time.Second, true},
		{"both: the earliest", []corev1.Taint{noExecute, preferNoExecute}, tolerate(&sixty), optedIn, time.Minute, true},
		{"NoSchedule never evicts", []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule, TimeAdded: added}}, &policyv1alpha1.Placement{}, optedIn, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &bindingSpecResolved{Kind: kindResourceBinding, Namespace: "ns", Name: "b", Karmada: tc.placement, Failover: tc.failover}
			obj, err := newObject(spec)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := kengine.NewEvictor(kengine.EvictorOptions{Fleet: &kengine.Fleet{}, EnableNoExecuteTaintEviction: true})
			if err != nil {
				t.Fatal(err)
			}
			w := &world{evictor: ev, rec: newRecorder()}
			b := &binding{spec: spec, obj: obj}
			c := &clusterState{Cluster: failover.Cluster{Name: "c1"}, kc: &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Spec: clusterv1alpha1.ClusterSpec{Taints: tc.taints}}}
			at, ok := w.evictAt(b, c, t0)
			if ok != tc.evicted || (ok && !at.Equal(t0.Add(tc.want))) {
				t.Errorf("got (%v, %v), want (%v, %v)", at, ok, t0.Add(tc.want), tc.evicted)
			}
			if len(w.rec.violations) != 0 {
				t.Errorf("violations: %v", w.rec.violations)
			}
		})
	}
}

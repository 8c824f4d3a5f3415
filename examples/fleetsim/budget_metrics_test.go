package main

import (
	"context"
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/failoverkit/failover/evictionqueue"
)

// waitingGauge is eviction_waiting_for_transit_budget{queue_name=queue}
// as reg serves it now.
func waitingGauge(t *testing.T, reg *prometheus.Registry, queue string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "eviction_waiting_for_transit_budget" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "queue_name" && l.GetValue() == queue {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("eviction_waiting_for_transit_budget{queue_name=%q} not served", queue)
	return 0
}

// sampler reads the gauge at every progress line: the simulation waits
// while Write runs, so each read is one moment of the run.
type sampler struct {
	t      *testing.T
	reg    *prometheus.Registry
	values []float64
}

func (s *sampler) Write(p []byte) (int, error) {
	if progressClock.Match(p) {
		s.values = append(s.values, waitingGauge(s.t, s.reg, queueNames[qRB]))
	}
	return len(p), nil
}

// The transit-budget scenario serves eviction_waiting_for_transit_budget
// as the fork's controllers keep it: payments/api, on three failed clusters
// with a budget of 1, has two evictions waiting while the first is in
// transit, one while the second is, none at the end; its series is served
// at 0 from the start, before anything waits.
func TestTransitBudgetServesTheWaitingEvictions(t *testing.T) {
	sc, err := readScenario("scenarios/transit-budget.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.rateConfig(sc)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	out := &sampler{t: t, reg: reg}
	s, err := newSim(sc, cfg, reg, out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := waitingGauge(t, reg, queueNames[qCRB]); got != 0 {
		t.Errorf("before the run: want 0 waiting, got %v", got)
	}
	if err := s.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	seen := map[float64]bool{}
	for _, v := range out.values {
		seen[v] = true
	}
	if !seen[2] || !seen[1] || seen[3] {
		t.Errorf("want 2 then 1 evictions waiting at some progress lines, never 3; got %v", out.values)
	}
	if got := waitingGauge(t, reg, queueNames[qRB]); got != 0 {
		t.Errorf("at the end: want 0 waiting, got %v (samples %v)", got, out.values)
	}
}

// hold, unhold, wake and a recovery keep the gauge at the number of items
// waiting for their budget: an item held twice counts once, a frozen one
// not at all (it waits for the thaw), and one whose cluster recovered, or
// which is woken or decided again, stops counting.
func TestTransitBudgetGaugeFollowsTheHeldItems(t *testing.T) {
	sc, err := readScenario("scenarios/transit-budget.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.rateConfig(sc)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := newSim(sc, cfg, reg, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := s.w
	a := evictionqueue.Item{Cluster: "euc1-01", Key: "payments/api"}
	b := evictionqueue.Item{Cluster: "euc1-02", Key: "payments/api"}
	c := evictionqueue.Item{Cluster: "euc1-03", Key: "payments/api"}
	want := func(n float64, why string) {
		t.Helper()
		if got := waitingGauge(t, reg, queueNames[qRB]); got != n {
			t.Errorf("%s: want %v waiting, got %v", why, n, got)
		}
	}
	w.hold(qRB, a, false)
	w.hold(qRB, b, false)
	w.hold(qRB, b, false)
	want(2, "two held, one twice")
	w.hold(qRB, a, true)
	want(1, "a frozen since")
	w.hold(qRB, c, false)
	w.unholdCluster(qRB, "euc1-03")
	want(1, "c's cluster recovered")
	w.unhold(qRB, b)
	want(0, "b decided again")
	w.hold(qRB, b, false)
	w.wake(qRB, func(_ evictionqueue.Item, frozen bool) bool { return !frozen })
	want(0, "b woken")
	if _, ok := w.held[qRB][a]; !ok {
		t.Error("the frozen item was woken with the budget's")
	}
	if testutil.CollectAndCount(reg, "eviction_waiting_for_transit_budget") != 2 {
		t.Error("want one series per queue")
	}
}

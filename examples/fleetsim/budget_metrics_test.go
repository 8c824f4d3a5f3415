package main

import (
	"context"
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
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

package controller

import "github.com/prometheus/client_golang/prometheus"

// controllerMetrics are the controller's own series. They are registered on
// the Registerer given in Config, never globally, so two controllers in one
// process (as in the end-to-end test) do not collide.
type controllerMetrics struct {
	syncs        *prometheus.CounterVec
	taintChanges *prometheus.CounterVec
	conflicts    prometheus.Counter
	policies     *prometheus.GaugeVec
}

func newControllerMetrics(reg prometheus.Registerer) (*controllerMetrics, error) {
	m := &controllerMetrics{
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taintcontroller_syncs_total",
			Help: "Cluster evaluations by result: unchanged, updated or error.",
		}, []string{"result"}),
		taintChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taintcontroller_taint_changes_total",
			Help: "Taints written to clusters, by change: added or removed.",
		}, []string{"change"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "taintcontroller_update_conflicts_total",
			Help: "Cluster updates rejected because the object changed since it was read; each is re-read and retried.",
		}),
		policies: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "taintcontroller_policies",
			Help: "ClusterTaintPolicies last loaded, by state: valid (in force) or invalid (ignored).",
		}, []string{"state"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.syncs, m.taintChanges, m.conflicts, m.policies} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

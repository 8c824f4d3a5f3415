//go:build !failover_newest

// This test runs SetupWithManager on the model's manager, which implements
// controller-runtime's manager.Manager and so builds only against the
// controller-runtime version the module requires (see model_harness_test.go).

package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// SetupWithManager wires both queues' sets to the controller's metrics:
// eviction_waiting_for_transit_budget is served at 0 for each queue before
// anything waits, on every replica (standbys included: their queues never
// run, so 0 is what they wait for).
func TestSetupServesTheTransitGauge(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c := transitWorld(t, "1")
	mgr, err := newModelManager(c.Scheme(), c, func() time.Duration { return 0 }, &eventLog{}, logr.Discard())
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	ctrl, err := NewEvictionController(EvictionOptions{EnableNoExecuteTaintEviction: true, Registerer: reg})
	require.NoError(t, err)
	require.NoError(t, ctrl.SetupWithManager(mgr))

	want := `
# HELP eviction_waiting_for_transit_budget Number of evictions waiting because their binding's budget of clusters in transit is used up.
# TYPE eviction_waiting_for_transit_budget gauge
eviction_waiting_for_transit_budget{queue_name="binding-eviction"} 0
eviction_waiting_for_transit_budget{queue_name="cluster-binding-eviction"} 0
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "eviction_waiting_for_transit_budget"))
}

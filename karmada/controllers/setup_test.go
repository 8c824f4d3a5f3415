package controllers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/failoverkit/failover/karmada"
)

// The graceful eviction controller gives back the room the eviction
// controller holds: Setup hands it the eviction controller's Ledger, unless
// it was given one, and none when the Ledger is off.
func TestSetupSharesTheLedger(t *testing.T) {
	_, e, g, err := newControllers(ClusterTaintPolicyOptions{}, EvictionOptions{}, GracefulEvictionOptions{})
	require.NoError(t, err)
	require.NotNil(t, e.Ledger())
	assert.Same(t, e.Ledger(), g.ledger)

	own, err := karmada.NewLedger()
	require.NoError(t, err)
	_, e, g, err = newControllers(ClusterTaintPolicyOptions{}, EvictionOptions{}, GracefulEvictionOptions{Ledger: own})
	require.NoError(t, err)
	assert.Same(t, own, g.ledger)
	assert.NotSame(t, own, e.Ledger())

	_, _, g, err = newControllers(ClusterTaintPolicyOptions{}, EvictionOptions{DisableLedger: true}, GracefulEvictionOptions{})
	require.NoError(t, err)
	assert.Nil(t, g.ledger)
}

// Setup checks every option before it touches the manager: a bad one of
// any controller is reported, and nothing is added.
func TestSetupChecksOptionsFirst(t *testing.T) {
	var untouched manager.Manager // nil: Setup must fail before using it
	_, err := Setup(untouched, ClusterTaintPolicyOptions{}, EvictionOptions{Workers: -1}, GracefulEvictionOptions{})
	assert.ErrorContains(t, err, "EvictionOptions.Workers -1")
	_, err = Setup(untouched, ClusterTaintPolicyOptions{}, EvictionOptions{}, GracefulEvictionOptions{Timeout: -time.Minute})
	assert.ErrorContains(t, err, "GracefulEvictionOptions.Timeout")
}

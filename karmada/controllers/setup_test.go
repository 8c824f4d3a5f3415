package controllers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Setup checks every option before it touches the manager: a bad one of
// any controller is reported, and nothing is added.
func TestSetupChecksOptionsFirst(t *testing.T) {
	var untouched manager.Manager // nil: Setup must fail before using it
	_, err := Setup(untouched, ClusterTaintPolicyOptions{}, EvictionOptions{Workers: -1}, GracefulEvictionOptions{})
	assert.ErrorContains(t, err, "EvictionOptions.Workers -1")
	_, err = Setup(untouched, ClusterTaintPolicyOptions{}, EvictionOptions{}, GracefulEvictionOptions{Timeout: -time.Minute})
	assert.ErrorContains(t, err, "GracefulEvictionOptions.Timeout")
}

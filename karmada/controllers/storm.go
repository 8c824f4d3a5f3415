package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/failoverkit/failover/metrics"
	"github.com/failoverkit/failover/ratelimit"
)

// The reasons of the Events on the freeze ConfigMap when a failure storm's
// hold (ratelimit.Config.StormThreshold) starts and ends.
const (
	// EventReasonStormHold is the Warning Event's reason when a storm's
	// hold starts: evictions wait, and the note says how to confirm.
	EventReasonStormHold = "EvictionStormHold"
	// EventReasonStormHoldEnded is the Normal Event's reason when it ends.
	EventReasonStormHoldEnded = "EvictionStormHoldEnded"
)

const eventActionHold = "Hold"

// stormEvents is the Limiter's Metrics: the controller's metrics, and an
// Event when a storm's hold starts or ends. The Limiter calls it under its
// lock; the recorder only queues the Event.
type stormEvents struct {
	*metrics.Metrics
	recorder eventRecorder
	// freeze is the ConfigMap the Events regard: the object through which
	// the operator answers. Zero: no Event (no ConfigMap is watched).
	freeze types.NamespacedName
}

var _ ratelimit.StormMetrics = stormEvents{}

// StormHold reports the hold to eviction_storm_hold and, with a freeze
// ConfigMap, as an Event regarding it (whether or not it exists:
// kubectl get events --field-selector involvedObject.name=<name> shows it).
func (s stormEvents) StormHold(holding bool) {
	s.Metrics.StormHold(holding)
	if s.recorder == nil || s.freeze == (types.NamespacedName{}) {
		return
	}
	ref := &corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: s.freeze.Namespace, Name: s.freeze.Name}
	if holding {
		s.recorder.Eventf(ref, nil, corev1.EventTypeWarning, EventReasonStormHold, eventActionHold,
			"Many clusters turned faulty at once: evictions hold until the confirmation period passes or they recover. "+
				"If the failures are real, confirm: kubectl -n %s create configmap %s --from-literal=%s=%s",
			s.freeze.Namespace, s.freeze.Name, FreezeConfirmKey, ConfirmStorm)
		return
	}
	s.recorder.Eventf(ref, nil, corev1.EventTypeNormal, EventReasonStormHoldEnded, eventActionHold,
		"The failure storm's hold ended (passed, recovered or confirmed): evictions go on at the rule's rate")
}

// healthFollower reads fleet health into the Limiter at every change, on
// every replica, so that a failure storm is timed from when the clusters
// turned faulty. The Limiter reads only when asked (a waiting queue, Rate);
// without it, clusters turning faulty while no eviction waits (their
// workloads still tolerate the taint) would be seen together at the first
// eviction, a storm that never was, and a standby would start leading
// blind to a storm under way.
type healthFollower struct {
	src     ratelimit.Notifier
	limiter *ratelimit.Limiter
	clock   clock.WithTicker
}

// stormEnabled reports whether cfg holds evictions in a failure storm.
func stormEnabled(cfg ratelimit.Config) bool {
	return cfg.StormThreshold > 0 && cfg.StormWindow > 0 && cfg.StormConfirm > 0
}

// followSyncWait is how often healthFollower looks whether its source has
// synced: before, Changed is nil.
const followSyncWait = time.Second

// Start refreshes the Limiter at each change of the source until ctx ends.
func (f healthFollower) Start(ctx context.Context) error {
	for {
		ch := f.src.Changed()
		if ch == nil { // not synced yet
			t := f.clock.NewTimer(followSyncWait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C():
			}
			continue
		}
		// Read after taking the channel, so that no change between a
		// read and the wait is missed.
		f.limiter.Refresh()
		select {
		case <-ctx.Done():
			return nil
		case <-ch:
		}
	}
}

// NeedLeaderElection is false: a standby follows health too, so that it
// leads knowing of a storm under way.
func (f healthFollower) NeedLeaderElection() bool { return false }

var _ manager.LeaderElectionRunnable = healthFollower{}

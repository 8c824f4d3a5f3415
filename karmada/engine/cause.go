package engine

import (
	"context"
	"fmt"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/appfailover"
	"github.com/failoverkit/failover/gracefulevict"
	"github.com/failoverkit/failover/karmada"
)

// cause is what makes one eviction differ from another on the one decision
// path (Evictor.evict): whether it is time, the task it writes, and
// whether the binding records the cluster as an origin to fail back to.
// Everything else, from the binding's budget to the Ledger, is the path's.
type cause interface {
	// decide is the path's first step: is it time to leave cluster?
	decide(annotations map[string]string, spec *workv1alpha2.ResourceBindingSpec, cluster *clusterv1alpha1.Cluster, now time.Time) (failover.EvictionDecision, error)
	// task is the graceful eviction task from cluster, with why as its
	// message; spec is the binding's before the eviction.
	task(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, cluster, why string, now time.Time) (gracefulevict.Task, error)
	// recordsOrigin says the eviction adds cluster to the binding's
	// karmada.FailedOverFromAnnotation, the record failback reads.
	recordsOrigin() bool
}

// taintCause is the cause of Evict: a taint the binding does not tolerate,
// decided as Karmada v1.18's taint manager decides.
type taintCause struct{ e *Evictor }

func (c taintCause) decide(annotations map[string]string, spec *workv1alpha2.ResourceBindingSpec, cluster *clusterv1alpha1.Cluster, now time.Time) (failover.EvictionDecision, error) {
	return karmada.DecideBindingEviction(annotations, spec, cluster, c.e.opts.EnableNoExecuteTaintEviction, now)
}

func (c taintCause) task(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, cluster, why string, now time.Time) (gracefulevict.Task, error) {
	return c.e.task(spec, status, cluster, why, now)
}

// recordsOrigin: a cluster left for its taints is one to go back to once
// it has been healthy for failback's window.
func (taintCause) recordsOrigin() bool { return true }

// ApplicationFailoverProducer is the producer of the graceful eviction
// tasks an application failover writes (EvictApplication), where Karmada
// v1.18's application failover controllers write their own names.
const ApplicationFailoverProducer = "ApplicationFailoverController"

// EvictApplication is [Evictor.Evict] for an eviction whose cause is the
// application's own health on cluster, not a taint: d is the caller's
// answer to "is it time?" (appfailover.Policy.Decide, on the timers the
// caller keeps), and every step after it is Evict's, on the same code:
// skip a binding deleted or no longer on cluster, the binding's budget of
// clusters in transit, the pre-scheduling check on the Fleet with confirm
// reads (nowhere to go: EvictionRefused with the check's reason), the
// Ledger, and the graceful eviction task. A binding that no longer opts in
// (no spec.failover.application) stays (EvictionStays), as does one d
// does not fail over; a spec.failover.application that does not validate
// is EvictionInvalid.
//
// The task is the one Karmada v1.18's application failover controller
// writes (buildTaskOptions): producer ApplicationFailoverProducer, reason
// karmada.ApplicationFailureReason, the purge mode of
// spec.failover.application in its canonical name (empty is the CRD's
// default, Gracefully), its gracePeriodSeconds with Gracefully,
// suppressDeletion true with Never, and, with StatefulFailoverInjection
// and statePreservation rules, the preserved label state read from the
// status collected from cluster (karmada.ApplicationPreservedLabelState;
// an error while it cannot be read, as Karmada retries) with the clusters
// of the schedule result before the failover. As the taint manager's
// task, it carries d.Reason as its message and now as its creation time.
//
// Unlike Evict, it adds no origin to the binding's
// karmada.FailedOverFromAnnotation: failback returns a binding to a
// cluster once the cluster has been healthy for a window, and a cluster
// left for the application's health was healthy all along, so it would
// send the workload straight back to where it failed.
func (e *Evictor) EvictApplication(ctx context.Context, now time.Time, key string, binding runtime.Object, cluster *clusterv1alpha1.Cluster, confirm Confirm, d appfailover.Decision) (EvictionStep, error) {
	return e.evict(ctx, now, key, binding, cluster, confirm, applicationCause{e: e, d: d})
}

// applicationCause is the cause of EvictApplication.
type applicationCause struct {
	e *Evictor
	d appfailover.Decision
}

func (c applicationCause) decide(_ map[string]string, spec *workv1alpha2.ResourceBindingSpec, cluster *clusterv1alpha1.Cluster, _ time.Time) (failover.EvictionDecision, error) {
	if spec.Failover == nil || spec.Failover.Application == nil {
		return failover.EvictionDecision{Reason: fmt.Sprintf("the binding no longer opts in to application failover (spec.failover.application): it stays on %s", cluster.Name)}, nil
	}
	if _, err := karmada.FromApplicationFailoverBehavior(spec.Failover.Application); err != nil {
		return failover.EvictionDecision{}, err
	}
	return failover.EvictionDecision{Evict: c.d.FailOver, After: c.d.After, Reason: c.d.Reason}, nil
}

func (c applicationCause) task(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, cluster, why string, now time.Time) (gracefulevict.Task, error) {
	a := spec.Failover.Application
	created := metav1.NewTime(now)
	t := gracefulevict.Task{
		PurgeMode:         failover.PurgeMode(a.PurgeMode).Canonical(),
		Reason:            karmada.ApplicationFailureReason,
		Message:           why,
		Producer:          ApplicationFailoverProducer,
		CreationTimestamp: &created,
	}
	if c.e.opts.StatefulFailoverInjection {
		state, err := karmada.ApplicationPreservedLabelState(a, status.AggregatedStatus, cluster)
		if err != nil {
			return gracefulevict.Task{}, err
		}
		if state != nil {
			t.PreservedLabelState = state
			t.ClustersBeforeFailover = make([]string, len(spec.Clusters))
			for i, tc := range spec.Clusters {
				t.ClustersBeforeFailover[i] = tc.Name
			}
		}
	}
	switch t.PurgeMode {
	case failover.PurgeModeGracefully:
		if g := a.GracePeriodSeconds; g != nil {
			t.GracePeriodSeconds = ptr.To(*g)
		}
	case failover.PurgeModeNever:
		t.SuppressDeletion = ptr.To(true)
	}
	return t, nil
}

// recordsOrigin: see EvictApplication.
func (applicationCause) recordsOrigin() bool { return false }

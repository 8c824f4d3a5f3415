package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"
)

func TestClusterEventsThatQueueAnEvaluation(t *testing.T) {
	defer goleak.VerifyNone(t)
	base := clusterObj("m1", "7", metav1.ConditionTrue, t0, userTaint())
	withRV := func(u *unstructured.Unstructured, rv string) *unstructured.Unstructured {
		u.SetResourceVersion(rv)
		return u
	}
	tests := []struct {
		name   string
		newObj *unstructured.Unstructured
		queued bool
	}{
		{"a resync (same resourceVersion) re-evaluates", base.DeepCopy(), true},
		{"a condition change re-evaluates", clusterObj("m1", "8", metav1.ConditionFalse, t0.Add(time.Minute), userTaint()), true},
		{"a taint edit re-evaluates", clusterObj("m1", "8", metav1.ConditionTrue, t0), true},
		{"a label change re-evaluates (label selectors)", func() *unstructured.Unstructured {
			u := withRV(base.DeepCopy(), "8")
			u.SetLabels(map[string]string{"env": "prod"})
			return u
		}(), true},
		{"an annotation-only write is skipped", func() *unstructured.Unstructured {
			u := withRV(base.DeepCopy(), "8")
			u.SetAnnotations(map[string]string{"heartbeat": "now"})
			return u
		}(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.c.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
			defer f.c.queue.ShutDown()
			f.c.clusterUpdated(base.DeepCopy(), tt.newObj)
			if tt.queued {
				assert.Equal(t, 1, f.c.queue.Len())
			} else {
				assert.Zero(t, f.c.queue.Len())
			}
		})
	}
}

func TestPolicyEventsReloadPoliciesAndQueueEveryCluster(t *testing.T) {
	defer goleak.VerifyNone(t)
	a := clusterObj("a", "1", metav1.ConditionTrue, t0)
	b := clusterObj("b", "1", metav1.ConditionTrue, t0)
	pol := policyObj("p", 60, 60)
	newGen := pol.DeepCopy()
	newGen.SetGeneration(2)
	relabelled := pol.DeepCopy()
	relabelled.SetLabels(map[string]string{"team": "sre"})
	tests := []struct {
		name   string
		event  func(c *Controller)
		reload bool
	}{
		{"an added policy", func(c *Controller) { c.policiesChanged() }, true},
		{"a spec change (new generation)", func(c *Controller) { c.policyUpdated(pol, newGen) }, true},
		{"a deleted policy", func(c *Controller) { c.policiesChanged() }, true},
		{"a resync or metadata-only edit is ignored", func(c *Controller) { c.policyUpdated(pol, relabelled) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, []*unstructured.Unstructured{a, b})
			f.c.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
			defer f.c.queue.ShutDown()
			gen := f.c.policyGeneration.Load()
			tt.event(f.c)
			if tt.reload {
				assert.Equal(t, gen+1, f.c.policyGeneration.Load(), "policies must be loaded again")
				assert.Equal(t, 2, f.c.queue.Len(), "every cluster is evaluated against the new policies")
			} else {
				assert.Equal(t, gen, f.c.policyGeneration.Load())
				assert.Zero(t, f.c.queue.Len())
			}
		})
	}
}

package controllerruntime_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	"github.com/failoverkit/failover/ratelimit"
)

// Both informer kinds a controller may hold fit NewInformerSource.
var (
	_ ratelimit.Informer = crcache.Informer(nil)
	_ ratelimit.Informer = toolscache.SharedIndexInformer(nil)
)

var nodeGVK = corev1.SchemeGroupVersion.WithKind("Node")

func taintedNode(name string, faulty bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if faulty {
		n.Spec.Taints = []corev1.Taint{{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoExecute}}
	}
	return n
}

func isTainted(obj any) bool {
	n, ok := obj.(*corev1.Node)
	return ok && len(n.Spec.Taints) > 0
}

// syncingInformer is controller-runtime's fake informer with the initial
// list's delivery under the test's control: its registrations report synced
// once synced is set. (The fake's own switch is a field up to v0.24 and a
// method from v0.25, so a test that flipped it would not build at both ends of
// the versions CI tests, hack/newest.sh's and the floor's.)
type syncingInformer struct {
	*controllertest.FakeInformer
	synced atomic.Bool
}

func (s *syncingInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := s.FakeInformer.AddEventHandler(h)
	return syncingRegistration{reg, s}, err
}

// syncingRegistration embeds the fake's registration for the methods
// newer client-go releases add.
type syncingRegistration struct {
	toolscache.ResourceEventHandlerRegistration
	s *syncingInformer
}

func (r syncingRegistration) HasSynced() bool { return r.s.synced.Load() }

// A controller-runtime manager hands out informers as cache.Informer; one
// feeds a Tracker as a client-go informer does, sync included.
func TestInformerSourceControllerRuntime(t *testing.T) {
	fake := &syncingInformer{FakeInformer: &controllertest.FakeInformer{}} // not synced yet
	informers := &informertest.FakeInformers{
		Scheme:         scheme.Scheme,
		InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{nodeGVK: fake},
	}
	var inf crcache.Informer
	inf, err := informers.GetInformer(context.Background(), &corev1.Node{})
	require.NoError(t, err)

	tr, err := ratelimit.NewInformerSource(inf, isTainted)
	require.NoError(t, err)
	fake.Add(taintedNode("member1", false))
	fake.Add(taintedNode("member2", true))
	_, err = tr.Health()
	require.ErrorIs(t, err, ratelimit.ErrNotSynced, "before the cache syncs, health is unknown")

	fake.synced.Store(true)
	h, err := tr.Health()
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Health{Total: 2, Unhealthy: 1}, h)

	fake.Update(taintedNode("member2", true), taintedNode("member2", false))
	fake.Delete(taintedNode("member1", false))
	h, err = tr.Health()
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Health{Total: 1, Unhealthy: 0}, h)
}

package controllers

import (
	"context"
	"slices"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/failoverkit/failover/evictionqueue"
)

// handlerInformer records the handler added to it, as a Cluster informer.
type handlerInformer struct {
	h toolscache.ResourceEventHandler
}

func (i *handlerInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.h = h
	return nil, nil
}

// TestAClusterThatMovesTakesItsItemsAlong: the queues read a cluster's
// domain once, and again when an update changes its region, zone or
// provider; an update of anything else (its status, every few seconds)
// reads nothing.
func TestAClusterThatMovesTakesItsItemsAlong(t *testing.T) {
	region := map[string]string{"member1": "eu"}
	reads := 0
	var kinds []*kind
	for _, name := range []string{"rb", "crb"} {
		q, err := evictionqueue.New(evictionqueue.Config{Name: name, DomainOf: func(c string) string {
			reads++
			return region[c]
		}}, func(context.Context, evictionqueue.Item) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		q.Add(evictionqueue.Item{Cluster: "member1", Key: "ns/b"})
		kinds = append(kinds, &kind{q: q})
	}
	c := &EvictionController{kinds: kinds}
	inf := &handlerInformer{}
	if err := c.watchDomains(inf); err != nil {
		t.Fatal(err)
	}
	old := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}, Spec: clusterv1alpha1.ClusterSpec{Region: "eu"}}
	heartbeat := old.DeepCopy()
	heartbeat.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now())}}
	inf.h.OnUpdate(old, heartbeat)
	if reads != 2 {
		t.Fatalf("DomainOf read %d times after a status update, want 2 (once per queue, at Add)", reads)
	}
	moved := heartbeat.DeepCopy()
	moved.Spec.Region = "us"
	region["member1"] = "us"
	inf.h.OnUpdate(heartbeat, moved)
	if reads != 4 {
		t.Fatalf("DomainOf read %d times after a move, want 4", reads)
	}
	for _, k := range kinds {
		if got := k.q.Pending(); len(got) != 1 {
			t.Errorf("%s: pending %v after the move, want the item", k.q.Name(), got)
		}
	}
}

func TestDomainFieldsChanged(t *testing.T) {
	base := clusterv1alpha1.ClusterSpec{Provider: "aws", Region: "eu", Zones: []string{"eu-1a"}}
	for _, tc := range []struct {
		name string
		edit func(*clusterv1alpha1.ClusterSpec)
		want bool
	}{
		{"nothing", func(*clusterv1alpha1.ClusterSpec) {}, false},
		{"taints only", func(s *clusterv1alpha1.ClusterSpec) { s.Taints = nil }, false},
		{"provider", func(s *clusterv1alpha1.ClusterSpec) { s.Provider = "gcp" }, true},
		{"region", func(s *clusterv1alpha1.ClusterSpec) { s.Region = "us" }, true},
		{"zone", func(s *clusterv1alpha1.ClusterSpec) { s.Zone = "eu-1b" }, true},
		{"zones", func(s *clusterv1alpha1.ClusterSpec) { s.Zones = append(slices.Clone(s.Zones), "eu-1b") }, true},
	} {
		n := base
		n.Zones = slices.Clone(base.Zones)
		tc.edit(&n)
		if got := domainFieldsChanged(&base, &n); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

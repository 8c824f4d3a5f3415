package controllers

import (
	"strings"
	"testing"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A queued item's key must lead the handler back to the same binding, for
// both kinds.
func TestItemKeyRoundTrip(t *testing.T) {
	for _, o := range []client.Object{
		&workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment"}},
		&workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "crd-widgets"}},
	} {
		key := itemKey(o)
		got, err := objectKey(key)
		if err != nil {
			t.Fatalf("objectKey(%q): %v", key, err)
		}
		if want := client.ObjectKeyFromObject(o); got != want {
			t.Errorf("objectKey(itemKey(%v)) = %v via %q", want, got, key)
		}
	}
	if _, err := objectKey("a/b/c"); err == nil || !strings.Contains(err.Error(), `"a/b/c"`) {
		t.Errorf("objectKey(a/b/c) = %v, want an error naming the key", err)
	}
}

//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/examples/taintcontroller/controller"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/controllers"
)

// TestKarmadaForkWindowsOnKarmadasCRD runs the ClusterTaintPolicyController
// on an API server of its own, whose ClusterTaintPolicy CRD is Karmada
// v1.18's from the module cache with the fork's extension
// (karmada/crds/clustertaintpolicy-windows-patch.yaml) applied, where the
// suite's shared server serves examples/taintcontroller's CRD under that
// name. The API server stores the windows and refuses a negative one; the
// controller says at start-up that the CRD carries them; Ready=False taints
// the cluster only once addOnMatchSeconds have passed since the condition
// turned, and Ready=True lifts the taint only once removeOnMismatchSeconds
// have.
func TestKarmadaForkWindowsOnKarmadasCRD(t *testing.T) {
	e, err := startEnvWith(env.bin, installForkPolicyCRDs)
	if e != nil {
		t.Cleanup(e.stop)
	}
	if err != nil && e != nil {
		e.dumpLogs()
	}
	require.NoError(t, err)
	noLeaks(t)
	ctx := ctxFor(t)
	policies := e.dynamic.Resource(controller.PolicyGVR)

	policy := func(name string, add, remove int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterTaintPolicy",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{
				"addOnConditions":    []any{map[string]any{"conditionType": "Ready", "operator": "NotIn", "statusValues": []any{"True"}}},
				"removeOnConditions": []any{map[string]any{"conditionType": "Ready", "operator": "In", "statusValues": []any{"True"}}},
				"taints": []any{map[string]any{
					"key": forkTaintKey, "effect": string(failover.TaintEffectPreferNoExecute),
					"addOnMatchSeconds": add, "removeOnMismatchSeconds": remove,
				}},
			},
		}}
	}
	_, err = policies.Create(ctx, policy("negative", -1, 0), metav1.CreateOptions{})
	require.ErrorContains(t, err, "addOnMatchSeconds", "the patched schema refuses a negative window")
	stored, err := policies.Create(ctx, policy("not-ready", 3, 2), metav1.CreateOptions{})
	require.NoError(t, err)
	kept, _, _ := unstructured.NestedSlice(stored.Object, "spec", "taints")
	require.Equal(t, int64(3), kept[0].(map[string]any)["addOnMatchSeconds"], "the API server kept the window: %v", kept)

	// The controller, alone in a manager, with its start-up line captured.
	var (
		mu    sync.Mutex
		lines []string
	)
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{})
	mgr, err := ctrl.NewManager(e.config, ctrl.Options{
		Scheme:  scheme(t),
		Logger:  logger,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	require.NoError(t, err)
	r, err := controllers.NewClusterTaintPolicyController(controllers.ClusterTaintPolicyOptions{})
	require.NoError(t, err)
	require.NoError(t, r.SetupWithManager(mgr))

	// Ready turns False on a whole second, as lastTransitionTime is stored.
	since := time.Now().Add(time.Second).Truncate(time.Second)
	createClusterIn(t, e, "member1", metav1.ConditionFalse, since)
	stop := runUntilStopped(t, "fork-windows", mgr.Start)
	defer func() { require.NoError(t, stop()) }()

	eventually(t, 10*time.Second, "the start-up line about the CRD", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, "carries the condition windows") {
				return true
			}
		}
		return false
	})
	tainted := func() *corev1.Taint {
		c := clusterIn(t, e, "member1")
		return findTaint(c.Taints, forkTaintKey, failover.TaintEffectPreferNoExecute)
	}
	addAt := since.Add(3 * time.Second)
	never(t, time.Until(addAt)-200*time.Millisecond, "tainted before addOnMatchSeconds passed", func() bool { return tainted() != nil })
	eventually(t, 5*time.Second, "the taint once addOnMatchSeconds passed", func() bool { return tainted() != nil })
	require.False(t, tainted().TimeAdded.Time.Before(addAt), "TimeAdded %s before the window closed at %s", tainted().TimeAdded, addAt)

	recovered := time.Now().Add(time.Second).Truncate(time.Second)
	setReadyIn(t, e, "member1", metav1.ConditionTrue, recovered)
	removeAt := recovered.Add(2 * time.Second)
	never(t, time.Until(removeAt)-200*time.Millisecond, "untainted before removeOnMismatchSeconds passed", func() bool { return tainted() == nil })
	eventually(t, 5*time.Second, "the taint lifted once removeOnMismatchSeconds passed", func() bool { return tainted() == nil })
}

// installForkPolicyCRDs installs what the fork's controllers read, with
// Karmada's own ClusterTaintPolicy CRD patched as the fork patches it:
// examples/taintcontroller's Cluster CRD (Karmada serves Clusters from its
// aggregated API server, which has no CRD), Karmada's ClusterTaintPolicy
// CRD with karmada/crds/clustertaintpolicy-windows-patch.yaml applied (a
// JSON 6902 patch, as kustomize applies it), and Karmada's other policy and
// work CRDs.
func installForkPolicyCRDs(ctx context.Context, e *apiEnv) error {
	bases, err := karmadaCRDBases(ctx)
	if err != nil {
		return err
	}
	crd, err := os.ReadFile(filepath.Join(bases, "policy", "policy.karmada.io_clustertaintpolicies.yaml"))
	if err != nil {
		return err
	}
	patchYAML, err := os.ReadFile(filepath.Join("..", "karmada", "crds", "clustertaintpolicy-windows-patch.yaml"))
	if err != nil {
		return err
	}
	crdJSON, err := yaml.YAMLToJSON(crd)
	if err != nil {
		return err
	}
	patchJSON, err := yaml.YAMLToJSON(patchYAML)
	if err != nil {
		return err
	}
	patch, err := jsonpatch.DecodePatch(patchJSON)
	if err != nil {
		return err
	}
	patched, err := patch.Apply(crdJSON)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(patched); err != nil {
		return err
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := e.dynamic.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := e.createCRDs(ctx, []string{filepath.Join("..", "examples", "taintcontroller", "crds", "cluster.karmada.io_clusters.yaml")},
		controller.ClusterGVR, controller.PolicyGVR); err != nil {
		return err
	}
	return e.installKarmadaCRDs(ctx)
}

// createClusterIn stores a Cluster in e with a Ready condition that last
// changed at since.
func createClusterIn(t *testing.T, e *apiEnv, name string, ready metav1.ConditionStatus, since time.Time) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"apiEndpoint": "https://" + name + ".invalid:6443"},
	}}
	_, err := e.dynamic.Resource(controller.ClusterGVR).Create(ctxFor(t), u, metav1.CreateOptions{})
	require.NoError(t, err)
	setReadyIn(t, e, name, ready, since)
}

// setReadyIn writes the cluster's Ready condition through the status
// subresource, as Karmada's cluster status controller does.
func setReadyIn(t *testing.T, e *apiEnv, name string, ready metav1.ConditionStatus, since time.Time) {
	t.Helper()
	clusters := e.dynamic.Resource(controller.ClusterGVR)
	err := wait.PollUntilContextTimeout(ctxFor(t), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := clusters.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := map[string]any{"type": "Ready", "status": string(ready), "reason": "E2E", "message": "",
			"lastTransitionTime": since.UTC().Format(time.RFC3339)}
		if err := unstructured.SetNestedSlice(u.Object, []any{cond}, "status", "conditions"); err != nil {
			return false, err
		}
		_, err = clusters.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return err == nil, nil // a conflict with the controller's write: read again
	})
	require.NoError(t, err)
}

// clusterIn reads a Cluster of e in the library's form.
func clusterIn(t *testing.T, e *apiEnv, name string) failover.Cluster {
	t.Helper()
	u, err := e.dynamic.Resource(controller.ClusterGVR).Get(ctxFor(t), name, metav1.GetOptions{})
	require.NoError(t, err)
	c, err := karmada.FromUnstructuredCluster(u)
	require.NoError(t, err)
	return c
}

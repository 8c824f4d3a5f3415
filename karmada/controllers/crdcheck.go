package controllers

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/failoverkit/failover/karmada"
)

// ClusterTaintPolicyCRD is the name of Karmada's ClusterTaintPolicy
// CustomResourceDefinition, which the ClusterTaintPolicyController reads at
// start-up to say whether it carries the condition windows.
const ClusterTaintPolicyCRD = "clustertaintpolicies.policy.karmada.io"

// windowsPatch names the fork's CRD extension in the start-up log line.
const windowsPatch = "github.com/failoverkit/failover/karmada/crds/clustertaintpolicy-windows-patch.yaml " +
	"(kubectl apply -k on that module's crds/, or add the patch to charts/karmada/_crds/kustomization.yaml)"

// windowFields are the fields the extension adds to spec.taints items.
var windowFields = []string{"addOnMatchSeconds", "removeOnMismatchSeconds"}

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// crdCheck is the runnable SetupWithManager adds. It runs on every
// replica, leader or not, so each says once what it would do.
type crdCheck struct{ r *ClusterTaintPolicyController }

var (
	_ manager.Runnable               = crdCheck{}
	_ manager.LeaderElectionRunnable = crdCheck{}
)

func (c crdCheck) Start(ctx context.Context) error {
	c.r.checkCRD(ctx, c.r.reader, c.r.log)
	return nil // a check that cannot read the CRD says so; it never stops the manager
}

func (crdCheck) NeedLeaderElection() bool { return false }

// checkCRD logs one line: whether the ClusterTaintPolicy CRD keeps the
// window fields, or why it could not tell. The CRD is read as unstructured
// with a get (no informer, no list or watch), so the controller needs only
// get on that one CRD, and nothing fails without it.
func (r *ClusterTaintPolicyController) checkCRD(ctx context.Context, reader client.Reader, log logr.Logger) {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	err := reader.Get(ctx, client.ObjectKey{Name: ClusterTaintPolicyCRD}, crd)
	switch {
	case apierrors.IsNotFound(err):
		log.Info("the ClusterTaintPolicy CRD is not installed: no policy applies until it is; install Karmada's CRD with the fork's extension, "+windowsPatch,
			"crd", ClusterTaintPolicyCRD)
		return
	case err != nil:
		log.Info("cannot read the ClusterTaintPolicy CRD to check that it carries the condition windows (grant get on customresourcedefinitions.apiextensions.k8s.io "+
			ClusterTaintPolicyCRD+"); without the fork's extension the API server drops addOnMatchSeconds and removeOnMismatchSeconds: "+windowsPatch,
			"crd", ClusterTaintPolicyCRD, "error", err.Error())
		return
	}
	missing, err := missingWindows(crd)
	switch {
	case err != nil:
		log.Info("cannot tell whether the ClusterTaintPolicy CRD carries the condition windows: "+err.Error()+"; the fork's extension is "+windowsPatch,
			"crd", ClusterTaintPolicyCRD)
	case len(missing) > 0:
		log.Info("the ClusterTaintPolicy CRD has no condition window fields: the API server drops them from every policy, so taints are added "+
			"and removed at once, as Karmada does; apply the fork's CRD extension, "+windowsPatch,
			"crd", ClusterTaintPolicyCRD, "missing", missing)
	default:
		log.Info("the ClusterTaintPolicy CRD carries the condition windows", "crd", ClusterTaintPolicyCRD, "fields", windowFields)
	}
}

// missingWindows returns the window fields the CRD's schema for the
// version the controller reads would prune from spec.taints items: those
// it neither declares nor keeps as unknown fields.
func missingWindows(crd *unstructured.Unstructured) ([]string, error) {
	version := karmada.ClusterTaintPolicyGVK.Version
	versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if err != nil {
		return nil, fmt.Errorf("spec.versions: %w", err)
	}
	for _, v := range versions {
		vm, ok := v.(map[string]any)
		if !ok || vm["name"] != version {
			continue
		}
		s, found, err := unstructured.NestedMap(vm, "schema", "openAPIV3Schema")
		if err != nil || !found {
			return nil, fmt.Errorf("spec.versions[%s].schema.openAPIV3Schema: missing or not an object", version)
		}
		// Walk down to spec.taints items; a level that keeps unknown
		// fields keeps the windows too.
		for _, step := range [][]string{{"properties", "spec"}, {"properties", "taints"}, {"items"}} {
			if keeps, _, _ := unstructured.NestedBool(s, "x-kubernetes-preserve-unknown-fields"); keeps {
				return nil, nil
			}
			next, found, err := unstructured.NestedMap(s, step...)
			if err != nil || !found {
				return windowFields, nil // no schema for spec.taints items: pruned
			}
			s = next
		}
		if keeps, _, _ := unstructured.NestedBool(s, "x-kubernetes-preserve-unknown-fields"); keeps {
			return nil, nil
		}
		var missing []string
		for _, f := range windowFields {
			if _, found, _ := unstructured.NestedMap(s, "properties", f); !found {
				missing = append(missing, f)
			}
		}
		return missing, nil
	}
	return nil, fmt.Errorf("the CRD serves no version %s", version)
}

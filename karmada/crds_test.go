package karmada

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// karmadaCRD is where Karmada's ClusterTaintPolicy CRD sits in its module,
// and in the kustomization's raw.githubusercontent.com URL after the tag.
const karmadaCRD = "charts/karmada/_crds/bases/policy/policy.karmada.io_clustertaintpolicies.yaml"

// TestCRDWindowsPatch builds crds/kustomization.yaml as kustomize does, on
// Karmada's own CRD from the module cache (the version go.mod requires) in
// place of the URL, and checks that the result is a CRD the API server
// accepts, that it changes nothing but the two windows on spec.taints
// items, and that those keep and check the proposal's fields where
// Karmada's CRD prunes them.
func TestCRDWindowsPatch(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", "github.com/karmada-io/karmada").Output()
	version, dir, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if err != nil || !ok || dir == "" {
		t.Fatalf("the github.com/karmada-io/karmada module is not in the module cache (go mod download): %v", err)
	}
	original, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(karmadaCRD)))
	if err != nil {
		t.Fatal(err)
	}
	kustomization, err := os.ReadFile(filepath.Join("crds", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	patch, err := os.ReadFile(filepath.Join("crds", "clustertaintpolicy-windows-patch.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	// The kustomization must name a release of the Karmada minor version
	// this module is built on (CI's newest step builds on a later patch).
	m := regexp.MustCompile(`- (https://raw\.githubusercontent\.com/karmada-io/karmada/(v\d+\.\d+)\.\d+/` + regexp.QuoteMeta(karmadaCRD) + `)\n`).
		FindSubmatch(kustomization)
	if m == nil || !strings.HasPrefix(version, string(m[2])+".") {
		t.Fatalf("crds/kustomization.yaml does not list Karmada %s's %s as a resource", version, karmadaCRD)
	}
	url := string(m[1])
	fs := filesys.MakeFsInMemory()
	for name, data := range map[string][]byte{
		"/crds/kustomization.yaml":                    []byte(strings.Replace(string(kustomization), url, "karmada-crd.yaml", 1)),
		"/crds/clustertaintpolicy-windows-patch.yaml": patch,
		"/crds/karmada-crd.yaml":                      original,
	} {
		if err := fs.WriteFile(name, data); err != nil {
			t.Fatal(err)
		}
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/crds")
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	if n := resources.Size(); n != 1 {
		t.Fatalf("kustomize build gave %d resources, want the one CRD", n)
	}
	built, err := resources.Resources()[0].AsYAML()
	if err != nil {
		t.Fatal(err)
	}
	patched := decodeCRD(t, built)
	karmadas := decodeCRD(t, original)

	// A v1 CRD needs a structural schema, which the API server checks as
	// here (the rest of the CRD is Karmada's, unchanged, as checked below).
	if errs := validateStructural(t, patched); len(errs) > 0 {
		t.Fatalf("the patched CRD's schema is not structural: %v", errs.ToAggregate())
	}

	// Nothing changed but the two fields.
	items := taintItems(t, patched)
	for _, name := range []string{"addOnMatchSeconds", "removeOnMismatchSeconds"} {
		p, ok := items.Properties[name]
		if !ok {
			t.Fatalf("spec.taints items have no %s", name)
		}
		if p.Type != "integer" || p.Format != "int32" || p.Minimum == nil || *p.Minimum != 0 || p.Description == "" {
			t.Errorf("spec.taints items' %s: type %q format %q minimum %v, want a described integer, int32, minimum 0", name, p.Type, p.Format, p.Minimum)
		}
		if slices.Contains(items.Required, name) {
			t.Errorf("spec.taints items require %s; unset must mean no window", name)
		}
		delete(items.Properties, name)
	}
	if !equality.Semantic.DeepEqual(patched, karmadas) {
		t.Error("the patch changed more of Karmada's CRD than the two windows")
	}

	// On objects: Karmada's schema prunes the windows, the patched one keeps
	// them and refuses a negative or non-integer one, naming the field.
	policy := func(window any) map[string]any {
		return map[string]any{
			"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterTaintPolicy",
			"metadata": map[string]any{"name": "p"},
			"spec": map[string]any{
				"addOnConditions": []any{map[string]any{"conditionType": "Ready", "operator": "NotIn", "statusValues": []any{"True"}}},
				"taints": []any{map[string]any{
					"key": "cluster.karmada.io/not-ready", "effect": "PreferNoExecute",
					"addOnMatchSeconds": window, "removeOnMismatchSeconds": int64(30),
				}},
			},
		}
	}
	if kept := pruneWith(t, decodeCRD(t, original), policy(int64(60))); kept["addOnMatchSeconds"] != nil {
		t.Error("Karmada's own CRD kept addOnMatchSeconds; the patch would not be needed")
	}
	kept := pruneWith(t, decodeCRD(t, built), policy(int64(60)))
	if kept["addOnMatchSeconds"] != int64(60) || kept["removeOnMismatchSeconds"] != int64(30) {
		t.Errorf("the patched CRD pruned the windows: taint %v", kept)
	}
	for _, tc := range []struct {
		window any
		want   string // "": valid
	}{
		{window: int64(0)},
		{window: int64(60)},
		{window: int64(-1), want: "spec.taints[0].addOnMatchSeconds in body should be greater than or equal to 0"},
		{window: "60s", want: `spec.taints[0].addOnMatchSeconds in body must be of type integer: "string"`},
	} {
		got := strings.Join(validateWith(t, decodeCRD(t, built).Spec.Versions[0].Schema.OpenAPIV3Schema, policy(tc.window)), "; ")
		if got != tc.want {
			t.Errorf("addOnMatchSeconds %v:\n got  %q\n want %q", tc.window, got, tc.want)
		}
	}
}

func decodeCRD(t *testing.T, data []byte) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatalf("not a CustomResourceDefinition: %v", err)
	}
	if crd.Name != "clustertaintpolicies.policy.karmada.io" || len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1alpha1" {
		t.Fatalf("CRD %s with %d versions: want clustertaintpolicies.policy.karmada.io serving only v1alpha1, as Karmada v1.18 does", crd.Name, len(crd.Spec.Versions))
	}
	return &crd
}

func taintItems(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	taints, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["taints"]
	if !ok || taints.Items == nil || taints.Items.Schema == nil {
		t.Fatal("the CRD has no spec.taints items")
	}
	return taints.Items.Schema
}

func internalSchema(t *testing.T, s *apiextensionsv1.JSONSchemaProps) *apiextensions.JSONSchemaProps {
	t.Helper()
	var out apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, &out, nil); err != nil {
		t.Fatal(err)
	}
	return &out
}

func structural(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *structuralschema.Structural {
	t.Helper()
	s, err := structuralschema.NewStructural(internalSchema(t, crd.Spec.Versions[0].Schema.OpenAPIV3Schema))
	if err != nil {
		t.Fatalf("the CRD's schema: %v", err)
	}
	return s
}

func validateStructural(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	t.Helper()
	return structuralschema.ValidateStructural(field.NewPath("spec", "versions").Index(0).Child("schema", "openAPIV3Schema"), structural(t, crd))
}

// pruneWith prunes obj as the API server does on a write under crd, and
// returns its first taint.
func pruneWith(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, obj map[string]any) map[string]any {
	t.Helper()
	pruning.Prune(obj, structural(t, crd), true)
	return obj["spec"].(map[string]any)["taints"].([]any)[0].(map[string]any)
}

// validateWith checks obj against schema with the OpenAPI validator the
// API server runs on a write (kube-openapi's; the API server's wrapper adds
// only CEL rules, which this schema has none of).
func validateWith(t *testing.T, schema *apiextensionsv1.JSONSchemaProps, obj map[string]any) []string {
	t.Helper()
	// JSONSchemaProps and OpenAPI's Schema share their JSON form.
	data, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	var s spec.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	// Through JSON, so numbers are what a decoded request holds.
	if data, err = json.Marshal(obj); err != nil {
		t.Fatal(err)
	}
	var decoded any
	if err := json.Unmarshal(data, &decoded); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, err := range validate.NewSchemaValidator(&s, nil, "", strfmt.Default).Validate(decoded).Errors {
		out = append(out, err.Error())
	}
	return out
}

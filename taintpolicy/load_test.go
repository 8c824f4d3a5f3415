package taintpolicy

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"
)

func loadFile(t *testing.T, name string) []ClusterTaintPolicy {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ps, err := LoadPolicies(f)
	if err != nil {
		t.Fatalf("LoadPolicies(%s): %v", name, err)
	}
	return ps
}

func TestLoadTheProposalsExample(t *testing.T) {
	ps := loadFile(t, "detect-cluster-not-ready.yaml")
	if len(ps) != 1 {
		t.Fatalf("loaded %d policies, want 1", len(ps))
	}
	if want := exampleRaw(); !equality.Semantic.DeepEqual(&ps[0], want) {
		got, _ := yaml.Marshal(ps[0])
		t.Errorf("loaded:\n%s", got)
	}
}

func TestLoadTheReleasedForm(t *testing.T) {
	ps := loadFile(t, "released.yaml")
	if len(ps) != 2 {
		t.Fatalf("loaded %d policies, want 2", len(ps))
	}
	p := ps[0]
	if !p.Spec.Released() || p.Spec.TargetClusters == nil || len(p.Spec.TargetClusters.ClusterNames) != 2 ||
		len(p.Spec.AddOnConditions) != 1 || len(p.Spec.RemoveOnConditions) != 1 || p.Spec.Taints[0].Key != notReady {
		t.Errorf("decoded %+v", p.Spec)
	}
	if ps[1].Spec.Taints[0].Value != "degraded" || ps[1].Spec.RemoveOnConditions != nil {
		t.Errorf("decoded %+v", ps[1].Spec)
	}
}

func TestLoadAStreamWithItsCorners(t *testing.T) {
	ps := loadFile(t, "fleet.yaml")
	if len(ps) != 2 || ps[0].Name != "unreachable" || ps[1].Name != "eu-network" {
		t.Fatalf("loaded %v", names(ps))
	}
	// Defaults fill only what is unset.
	w := ps[0].Spec.TaintsToAdd
	if *w[0].AddOnMatchSeconds != 30 || *w[0].RemoveOnMismatchSeconds != 180 || *w[1].AddOnMatchSeconds != 300 {
		t.Errorf("windows %d/%d, %d", *w[0].AddOnMatchSeconds, *w[0].RemoveOnMismatchSeconds, *w[1].AddOnMatchSeconds)
	}
	if got := *ps[1].Spec.TaintsToAdd[0].RemoveOnMismatchSeconds; got != 60 {
		t.Errorf("removeOnMismatchSeconds %d, want 60", got)
	}
}

func names(ps []ClusterTaintPolicy) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

const minimal = `apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata: {name: NAME}
spec:
  taintsToAdd: [{key: k, effect: NoSchedule}]
`

func doc(name string) string { return strings.ReplaceAll(minimal, "NAME", name) }

func TestLoadPoliciesAccepts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		want  []string
	}{
		{"nothing at all", "", nil},
		{"only comments and separators", "# x\n---\n# y\n---\n", nil},
		{"Windows line endings", strings.ReplaceAll(doc("a")+"---\r\n"+doc("b"), "\n", "\r\n"), []string{"a", "b"}},
		{"a separator with a comment", doc("a") + "--- # next\n" + doc("b"), []string{"a", "b"}},
		{"content on the separator line", "--- {apiVersion: policy.karmada.io/v1alpha1, kind: ClusterTaintPolicy, metadata: {name: a}, spec: {taintsToAdd: [{key: k, effect: NoSchedule}]}}\n", []string{"a"}},
		{"a document-end marker", doc("a") + "...\n---\n" + doc("b"), []string{"a", "b"}},
		{"a null document", "~\n---\n" + doc("a"), []string{"a"}},
		{"JSON", `{"apiVersion":"policy.karmada.io/v1alpha1","kind":"ClusterTaintPolicy","metadata":{"name":"a"},"spec":{"taintsToAdd":[{"key":"k","effect":"NoSchedule"}]}}`, []string{"a"}},
		{"a kubectl List", "apiVersion: v1\nkind: List\nmetadata: {resourceVersion: \"\"}\nitems:\n- " +
			strings.ReplaceAll(strings.TrimSpace(doc("a")), "\n", "\n  ") + "\n- " + strings.ReplaceAll(strings.TrimSpace(doc("b")), "\n", "\n  ") + "\n", []string{"a", "b"}},
		{"a ClusterTaintPolicyList", "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterTaintPolicyList\nitems: []\n", nil},
		{"a byte-order mark", "\xef\xbb\xbf" + doc("a"), []string{"a"}},
		{"lines of --- inside a block scalar stay content", strings.Replace(doc("a"), "metadata: {name: a}", "metadata:\n  name: a\n  annotations:\n    note: |\n      ---\n      text", 1), []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := LoadPolicies(strings.NewReader(tc.input))
			if err != nil {
				t.Fatalf("LoadPolicies: %v", err)
			}
			if got := names(ps); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("loaded %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLoadPoliciesRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		want  []string // substrings of the error
	}{
		{
			name:  "an unknown field: the document, its line and the field path",
			input: doc("a") + "---\n# comment\n" + strings.Replace(doc("b"), "effect: NoSchedule", "effect: NoSchedule, addOnMatchSecond: 3", 1),
			want:  []string{`taintpolicy: document 2 (line 8): unknown field "spec.taintsToAdd[0].addOnMatchSecond"`},
		},
		{
			name:  "field names are case-sensitive",
			input: strings.Replace(doc("a"), "taintsToAdd", "TaintsToAdd", 1),
			want:  []string{`document 1 (line 1): unknown field "spec.TaintsToAdd"`},
		},
		{
			name:  "every unknown field is named",
			input: strings.Replace(doc("a"), "spec:", "status: {}\nspec:\n  matchCondition: []", 1),
			want:  []string{`unknown field "spec.matchCondition", unknown field "status"`},
		},
		{
			name:  "a released-form taint's window (a Karmada fork's extension) is a number of seconds",
			input: "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterTaintPolicy\nmetadata: {name: a}\nspec:\n  taints: [{key: k, effect: NoSchedule, addOnMatchSeconds: 5m}]\n",
			want:  []string{`spec.taints[0].addOnMatchSeconds`},
		},
		{
			name:  "a wrong-case field name points at the right one",
			input: strings.Replace(doc("a"), "effect: NoSchedule", "Effect: NoSchedule", 1),
			want:  []string{`document 1 (line 1): unknown field "spec.taintsToAdd[0].Effect" (did you mean "effect"?)`},
		},
		{
			name: "unknown fields of several list items are named together, with their indexes",
			input: "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(strings.Replace(doc("a"), "spec:", "spex:", 1)), "\n", "\n  ") +
				"\n- " + strings.ReplaceAll(strings.TrimSpace(strings.Replace(doc("b"), "key: k", "key: k, valu: v", 1)), "\n", "\n  ") + "\n",
			want: []string{`document 1 (line 1): unknown field "items[0].spex", unknown field "items[1].spec.taintsToAdd[0].valu"`},
		},
		{
			name:  "a list metadata field that is unknown",
			input: "apiVersion: v1\nkind: List\nmetadata: {resourceVersion: \"\", owner: me}\nitems: []\n",
			want:  []string{`document 1 (line 1): unknown field "metadata.owner"`},
		},
		{
			name:  "a duplicated field",
			input: strings.Replace(doc("a"), "spec:", "spec: {}\nspec:", 1),
			want:  []string{`document 1 (line 1):`, `"spec" already set`},
		},
		{
			name:  "a value of the wrong type: its full path, list index included",
			input: strings.Replace(doc("a"), "effect: NoSchedule", "effect: NoSchedule, addOnMatchSeconds: soon", 1),
			want:  []string{`document 1 (line 1): spec.taintsToAdd[0].addOnMatchSeconds: "soon": want an integer (int32)`},
		},
		{
			name:  "malformed YAML",
			input: "apiVersion: [\n",
			want:  []string{`taintpolicy: document 1 (line 1):`},
		},
		{
			name:  "YAML errors count lines from the start of the stream",
			input: doc("a") + "---\n\napiVersion: [\n",
			want:  []string{`taintpolicy: document 2 (line 8): yaml: line 8: did not find expected node content`},
		},
		{
			name:  "a wrong kind",
			input: strings.Replace(doc("a"), "kind: ClusterTaintPolicy", "kind: PropagationPolicy", 1),
			want:  []string{`document 1 (line 1): apiVersion "policy.karmada.io/v1alpha1", kind "PropagationPolicy": want apiVersion "policy.karmada.io/v1alpha1", kind "ClusterTaintPolicy"`},
		},
		{
			name:  "a missing apiVersion",
			input: strings.Replace(doc("a"), "apiVersion: policy.karmada.io/v1alpha1\n", "", 1),
			want:  []string{`apiVersion ""`},
		},
		{
			name:  "a list item of another kind",
			input: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n",
			want:  []string{`document 1 (line 1): items[0].apiVersion "v1", kind "ConfigMap"`},
		},
		{
			name: "an invalid list item, with its index",
			input: "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(doc("a")), "\n", "\n  ") +
				"\n- " + strings.ReplaceAll(strings.TrimSpace(strings.Replace(doc("b"), "NoSchedule", "Evict", 1)), "\n", "\n  ") + "\n",
			want: []string{`taintpolicy: document 1 (line 1): items[1]: policy "b" is invalid: spec.taintsToAdd[0].effect`},
		},
		{
			name:  "not an object",
			input: "- a\n- b\n",
			want:  []string{`document 1 (line 1): not a ClusterTaintPolicy object: the document is a YAML list`},
		},
		{
			name: "invalid policies: every one, with document, line, name and field",
			input: strings.Replace(doc("a"), "NoSchedule", "Evict", 1) + "---\n" +
				strings.Replace(doc("b"), "key: k", "key: 'bad key'", 1),
			want: []string{
				`taintpolicy: document 1 (line 1): policy "a" is invalid: spec.taintsToAdd[0].effect: Unsupported value: "Evict"`,
				`taintpolicy: document 2 (line 7): policy "b" is invalid: spec.taintsToAdd[0].key: Invalid value: "bad key"`,
			},
		},
		{
			name:  "duplicate names",
			input: doc("a") + "---\n" + doc("a"),
			want:  []string{`taintpolicy: document 2 (line 7): duplicate policy name "a" (first in document 1 (line 1))`},
		},
		{
			name:  "the two forms mixed in one policy",
			input: strings.Replace(doc("a"), "spec:", "spec:\n  taints: [{key: k2, effect: NoSchedule}]", 1),
			want:  []string{`spec.taintsToAdd: Forbidden: may not be combined with the released form`},
		},
		{
			name:  "decoding and validation errors are reported together",
			input: strings.Replace(doc("a"), "spec:", "spex:", 1) + "---\n" + strings.Replace(doc("b"), "NoSchedule", "Evict", 1),
			want:  []string{`document 1 (line 1): unknown field "spex"`, `document 2 (line 7): policy "b" is invalid`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := LoadPolicies(strings.NewReader(tc.input))
			if err == nil {
				t.Fatalf("LoadPolicies accepted it: %v", names(ps))
			}
			if ps != nil {
				t.Errorf("returned policies along with an error: %v", names(ps))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nlacks %q", err, w)
				}
			}
		})
	}
}

func TestLoadPoliciesErrorsAreTyped(t *testing.T) {
	_, err := LoadPolicies(strings.NewReader(strings.Replace(doc("a"), "spec:", "spex:", 1) + "---\n" + strings.Replace(doc("b"), "NoSchedule", "Evict", 1)))
	var de *DecodeError
	if !errors.As(err, &de) || de.Document != 1 || de.Line != 1 {
		t.Errorf("DecodeError: %+v", de)
	}
	var ipe *InvalidPolicyError
	if !errors.As(err, &ipe) || ipe.Document != 2 || ipe.Line != 7 || ipe.Name != "b" || ipe.Errs[0].Field != "spec.taintsToAdd[0].effect" {
		t.Errorf("InvalidPolicyError: %+v", ipe)
	}
}

func TestLoadPoliciesWithDenyNoExecute(t *testing.T) {
	input := strings.Replace(doc("a"), "NoSchedule", "NoExecute", 1)
	if _, err := LoadPolicies(strings.NewReader(input)); err != nil {
		t.Fatalf("LoadPolicies refused NoExecute: %v", err)
	}
	_, err := LoadPoliciesWith(strings.NewReader(input), ValidateOptions{DenyNoExecute: true})
	if err == nil || !strings.Contains(err.Error(), "spec.taintsToAdd[0].effect: Forbidden") {
		t.Fatalf("error %v", err)
	}
}

func TestLoadPoliciesReportsAReadError(t *testing.T) {
	_, err := LoadPolicies(iotest.ErrReader(errors.New("disk on fire")))
	if err == nil || !strings.Contains(err.Error(), "taintpolicy: reading policies: disk on fire") {
		t.Fatalf("error %v", err)
	}
}

// TestLoadPoliciesRefusesWhatWouldExhaustMemory: a 10 MB stream used to
// allocate hundreds of megabytes and return an error as long as itself, and
// a few hundred bytes of nested aliases used to expand to gigabytes. Both
// are refused before decoding, with a short error.
func TestLoadPoliciesRefusesWhatWouldExhaustMemory(t *testing.T) {
	huge := doc("a") + "---\n" + strings.Repeat("# filler\n", 10<<20/9)
	var bomb strings.Builder
	bomb.WriteString(doc("b") + "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&bomb, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	for name, tc := range map[string]struct{ input, want string }{
		"10 MB":          {huge, "taintpolicy: reading policies: strictyaml: the input is larger than 1048576 bytes"},
		"nested aliases": {bomb.String(), "expands to more than 524288 nodes"},
	} {
		t.Run(name, func(t *testing.T) {
			ps, err := LoadPolicies(strings.NewReader(tc.input))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if len(ps) > 0 || len(err.Error()) > 2000 {
				t.Errorf("%d policies, an error of %d bytes", len(ps), len(err.Error()))
			}
		})
	}
}

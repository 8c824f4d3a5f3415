package taintpolicy

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/failoverkit/failover"
)

// ownGroup is a group/version a controller with its own ClusterTaintPolicy
// CRD serves.
const ownGroup = "fleet.example.com/v1alpha1"

func ownDoc(name string) string {
	return strings.Replace(doc(name), "policy.karmada.io/v1alpha1", ownGroup, 1)
}

func TestLoadPoliciesWithAPIVersionReadsTheCallersGroup(t *testing.T) {
	opts := ValidateOptions{APIVersion: ownGroup}
	list := "apiVersion: " + ownGroup + "\nkind: ClusterTaintPolicyList\nitems:\n- " +
		strings.ReplaceAll(strings.TrimSpace(ownDoc("c")), "\n", "\n  ") + "\n"
	kubectlList := "apiVersion: v1\nkind: List\nitems:\n- " +
		strings.ReplaceAll(strings.TrimSpace(ownDoc("d")), "\n", "\n  ") + "\n"
	ps, err := LoadPoliciesWith(strings.NewReader(ownDoc("a")+"---\n"+ownDoc("b")+"---\n"+list+"---\n"+kubectlList), opts)
	if err != nil {
		t.Fatalf("LoadPoliciesWith: %v", err)
	}
	if got := strings.Join(names(ps), ","); got != "a,b,c,d" {
		t.Fatalf("loaded %s, want a,b,c,d", got)
	}
	if ps[0].APIVersion != ownGroup || *ps[0].Spec.TaintsToAdd[0].AddOnMatchSeconds != DefaultAddOnMatchSeconds {
		t.Errorf("policy a: apiVersion %q, addOnMatchSeconds %d: want the document's apiVersion and the defaults applied",
			ps[0].APIVersion, *ps[0].Spec.TaintsToAdd[0].AddOnMatchSeconds)
	}

	// The policies as loaded feed an Evaluator told the same group/version.
	e, err := NewEvaluator(ps, WithAPIVersion(ownGroup))
	if err != nil {
		t.Fatalf("NewEvaluator: %v", err)
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r := e.Evaluate(failover.Cluster{Name: "m1", Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}}, now)
	if len(r.Added) != 1 || r.Added[0].Key != "k" {
		t.Errorf("evaluation added %v, want the policies' taint k (they have no conditions)", r.Added)
	}
	// Without the option the Evaluator refuses them, naming the field.
	if _, err := NewEvaluator(ps); err == nil || !strings.Contains(err.Error(), `apiVersion: Unsupported value: "`+ownGroup+`"`) {
		t.Errorf("NewEvaluator without WithAPIVersion: %v", err)
	}
}

func TestLoadPoliciesWithAPIVersionRefusesOtherGroups(t *testing.T) {
	opts := ValidateOptions{APIVersion: ownGroup}
	for _, tc := range []struct {
		name, input, want string
	}{
		{"Karmada's group", doc("a"),
			`document 1 (line 1): apiVersion "policy.karmada.io/v1alpha1", kind "ClusterTaintPolicy": want apiVersion "fleet.example.com/v1alpha1"`},
		{"Karmada's list kind", "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterTaintPolicyList\nitems: []\n",
			`apiVersion: "policy.karmada.io/v1alpha1" for kind ClusterTaintPolicyList, want "fleet.example.com/v1alpha1"`},
		{"another version of the group", strings.Replace(ownDoc("a"), "v1alpha1", "v1", 1),
			`apiVersion "fleet.example.com/v1", kind "ClusterTaintPolicy": want apiVersion "fleet.example.com/v1alpha1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := LoadPoliciesWith(strings.NewReader(tc.input), opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadPoliciesWith = %v, %v; want an error containing\n%s", names(ps), err, tc.want)
			}
		})
	}
	// And the default still refuses the caller's group.
	if _, err := LoadPolicies(strings.NewReader(ownDoc("a"))); err == nil || !strings.Contains(err.Error(), `want apiVersion "policy.karmada.io/v1alpha1"`) {
		t.Errorf("LoadPolicies of another group: %v", err)
	}
}

func TestAPIVersionOptionIsChecked(t *testing.T) {
	for _, tc := range []struct {
		value, want string
	}{
		{"fleet.example.com", "want group/version"},
		{"v1", "want group/version"},
		{"/v1alpha1", "the core group serves no ClusterTaintPolicy"},
		{"fleet.example.com/v1/x", "want group/version"},
		{"Fleet.Example.com/v1", "a lowercase RFC 1123 subdomain"},
		{"fleet.example.com/V1", "version: a DNS-1035 label"},
		{"fleet.example.com/", "version: a DNS-1035 label"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			prefix := `taintpolicy: ValidateOptions.APIVersion "` + tc.value + `": `
			_, err := LoadPoliciesWith(strings.NewReader(ownDoc("a")), ValidateOptions{APIVersion: tc.value})
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadPoliciesWith: %v\nwant %s…%s", err, prefix, tc.want)
			}
			if _, err := NewEvaluator(nil, WithAPIVersion(tc.value)); err == nil || !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("NewEvaluator: %v\nwant %s…", err, prefix)
			}
			p := exampleRaw()
			p.APIVersion = tc.value
			if errs := p.ValidateWith(ValidateOptions{APIVersion: tc.value}); len(errs) != 1 || errs[0].Field != "apiVersion" ||
				!strings.Contains(errs[0].Error(), prefix) {
				t.Errorf("ValidateWith: %v", errs)
			}
		})
	}
}

func TestValidateWithAPIVersion(t *testing.T) {
	p := exampleRaw()
	p.APIVersion = ownGroup
	if errs := p.ValidateWith(ValidateOptions{APIVersion: ownGroup}); len(errs) > 0 {
		t.Errorf("a policy of the named group: %v", errs)
	}
	p.APIVersion = ""
	if errs := p.ValidateWith(ValidateOptions{APIVersion: ownGroup}); len(errs) > 0 {
		t.Errorf("a policy without apiVersion (as typed clients return it): %v", errs)
	}
	p.APIVersion = APIVersion
	errs := p.ValidateWith(ValidateOptions{APIVersion: ownGroup})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `apiVersion: Unsupported value: "policy.karmada.io/v1alpha1": supported values: "fleet.example.com/v1alpha1"`) {
		t.Errorf("Karmada's apiVersion with another named: %v", errs)
	}
}

package taintpolicy

import (
	"errors"
	"fmt"
	"io"

	"github.com/failoverkit/failover/internal/strictyaml"
)

// LoadPolicies reads ClusterTaintPolicies from a stream of YAML (or JSON)
// documents separated by "---" lines, as kubectl applies them. Each document
// is a ClusterTaintPolicy (policy.karmada.io/v1alpha1; another group/version
// through LoadPoliciesWith) in either form, or a list of them (kind
// ClusterTaintPolicyList, or kind List as `kubectl get -o yaml` prints);
// empty documents are skipped.
//
// Decoding is strict: an unknown field (compared case-sensitively, as the
// API server does), a duplicated field, a value of the wrong type, a missing
// or wrong apiVersion or kind are errors naming the document, its first line
// and the field path. Defaults are applied and every policy is validated
// (NoExecute allowed; see LoadPoliciesWith); policy names must be unique. All
// problems are reported together, as DecodeError and InvalidPolicyError
// values joined with errors.Join; on any problem no policy is returned.
func LoadPolicies(r io.Reader) ([]ClusterTaintPolicy, error) {
	return LoadPoliciesWith(r, ValidateOptions{})
}

// LoadPoliciesWith is LoadPolicies with validation options, for example to
// refuse NoExecute taints, or to read policies of a group/version of the
// caller's own (ValidateOptions.APIVersion): documents and lists must then
// carry that apiVersion instead of policy.karmada.io/v1alpha1.
func LoadPoliciesWith(r io.Reader, opts ValidateOptions) ([]ClusterTaintPolicy, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	data, err := strictyaml.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("taintpolicy: reading policies: %w", err)
	}
	var (
		out   []ClusterTaintPolicy
		errs  []error
		names = map[string]string{} // policy name -> where first seen
	)
	for _, doc := range strictyaml.Split(data) {
		policies, items, err := decodeDocument(doc, opts.apiVersion())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := range policies {
			p := &policies[i]
			p.SetDefaults()
			where, idx := fmt.Sprintf("document %d (line %d)", doc.Index, doc.Line), -1
			if items {
				where, idx = where+fmt.Sprintf(": items[%d]", i), i
			}
			if fe := p.validate(opts, nil); len(fe) > 0 {
				errs = append(errs, &InvalidPolicyError{Document: doc.Index, Line: doc.Line, Index: idx, Name: p.Name, Errs: fe})
				continue
			}
			if first, dup := names[p.Name]; dup {
				errs = append(errs, fmt.Errorf("taintpolicy: %s: duplicate policy name %q (first in %s)", where, p.Name, first))
				continue
			}
			names[p.Name] = where
			out = append(out, *p)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// decodeDocument decodes one document into its policies, which carry
// apiVersion; items reports whether the document was a list.
func decodeDocument(doc strictyaml.Document, apiVersion string) (policies []ClusterTaintPolicy, items bool, err error) {
	fail := func(err error) ([]ClusterTaintPolicy, bool, error) {
		// DecodeError names the document itself: keep only the cause,
		// which names the field.
		if se := (*strictyaml.Error)(nil); errors.As(err, &se) {
			err = se.Err
		}
		return nil, false, &DecodeError{Document: doc.Index, Line: doc.Line, Err: err}
	}
	// Read the kind first: it says which type to decode strictly into.
	var head any
	if err := strictyaml.Decode(doc, &head); err != nil {
		return fail(err)
	}
	obj, ok := head.(map[string]any)
	if !ok {
		if head == nil {
			return nil, false, nil // a null document ("~"), as kubectl skips it
		}
		what := "scalar"
		switch head.(type) {
		case []any:
			what = "list"
		case string:
			what = "string"
		}
		return fail(fmt.Errorf("not a ClusterTaintPolicy object: the document is a YAML %s", what))
	}
	gotVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	listVersion := "" // the apiVersion of a list kind; "" for other kinds
	switch kind {
	case "List":
		listVersion = "v1"
	case Kind + "List":
		listVersion = apiVersion
	}
	if listVersion != "" {
		if gotVersion != listVersion {
			return fail(fmt.Errorf("apiVersion: %q for kind %s, want %q", gotVersion, kind, listVersion))
		}
		var list ClusterTaintPolicyList
		if err := strictyaml.Decode(doc, &list); err != nil {
			return fail(err)
		}
		var errs []error
		for i := range list.Items {
			if err := checkKind(&list.Items[i], apiVersion, fmt.Sprintf("items[%d].", i)); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return fail(errors.Join(errs...))
		}
		return list.Items, true, nil
	}
	policies = make([]ClusterTaintPolicy, 1)
	if err := strictyaml.Decode(doc, &policies[0]); err != nil {
		return fail(err)
	}
	if err := checkKind(&policies[0], apiVersion, ""); err != nil {
		return fail(err)
	}
	return policies, false, nil
}

// checkKind refuses an object that is not a ClusterTaintPolicy of
// apiVersion; prefix is its path in the document.
func checkKind(p *ClusterTaintPolicy, apiVersion, prefix string) error {
	if p.APIVersion != apiVersion || p.Kind != Kind {
		return fmt.Errorf("%sapiVersion %q, kind %q: want apiVersion %q, kind %q", prefix, p.APIVersion, p.Kind, apiVersion, Kind)
	}
	return nil
}

package taintpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// LoadPolicies reads ClusterTaintPolicies from a stream of YAML (or JSON)
// documents separated by "---" lines, as kubectl applies them. Each document
// is a ClusterTaintPolicy (policy.karmada.io/v1alpha1) in either form, or a
// list of them (kind ClusterTaintPolicyList, or kind List as
// `kubectl get -o yaml` prints); empty documents are skipped.
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
// refuse NoExecute taints.
func LoadPoliciesWith(r io.Reader, opts ValidateOptions) ([]ClusterTaintPolicy, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("taintpolicy: reading policies: %w", err)
	}
	var (
		out   []ClusterTaintPolicy
		errs  []error
		names = map[string]string{} // policy name -> where first seen
	)
	for _, doc := range splitDocuments(data) {
		policies, items, err := decodeDocument(doc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := range policies {
			p := &policies[i]
			p.SetDefaults()
			where, idx := fmt.Sprintf("document %d (line %d)", doc.number, doc.line), -1
			if items {
				where, idx = where+fmt.Sprintf(": items[%d]", i), i
			}
			if fe := p.ValidateWith(opts); len(fe) > 0 {
				errs = append(errs, &InvalidPolicyError{Document: doc.number, Line: doc.line, Index: idx, Name: p.Name, Errs: fe})
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

type document struct {
	number int // 1-based, counting documents with content only
	line   int // 1-based line of its first line
	data   []byte
}

// splitDocuments splits a YAML stream at "---" lines. A separator is "---"
// at the start of a line followed by nothing, a space or a tab (so a
// "--- # comment" line separates, and "--- {...}" starts a document with
// content); "..." document-end lines are dropped. Documents holding only
// blanks and comments are skipped and not numbered.
func splitDocuments(data []byte) []document {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var (
		docs  []document
		cur   []byte
		start = 1
	)
	flush := func() {
		if hasContent(cur) {
			docs = append(docs, document{number: len(docs) + 1, line: start, data: cur})
		}
		cur = nil
	}
	for n, line := range bytes.SplitAfter(data, []byte("\n")) {
		bare := bytes.TrimRight(line, "\r\n")
		switch {
		case isMarker(bare, "---"):
			flush()
			start = n + 1
			if rest := bytes.TrimSpace(bare[3:]); len(rest) > 0 && rest[0] != '#' {
				cur = append(cur, rest...)
				cur = append(cur, '\n')
			} else {
				start = n + 2
			}
		case isMarker(bare, "..."):
			// end of document: the next "---" (or the end) closes it
		default:
			if cur == nil && !hasContent(line) {
				start = n + 2 // leading blanks and comments: point at the content
				continue
			}
			cur = append(cur, line...)
		}
	}
	flush()
	return docs
}

func isMarker(line []byte, m string) bool {
	return bytes.HasPrefix(line, []byte(m)) && (len(line) == 3 || line[3] == ' ' || line[3] == '\t')
}

func hasContent(b []byte) bool {
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' {
			return true
		}
	}
	return false
}

var (
	policyType = reflect.TypeFor[ClusterTaintPolicy]()
	listKinds  = map[string]string{"List": "v1", Kind + "List": APIVersion}
)

// decodeDocument decodes one document into its policies; items reports
// whether the document was a list.
func decodeDocument(doc document) (policies []ClusterTaintPolicy, items bool, err error) {
	fail := func(err error) ([]ClusterTaintPolicy, bool, error) {
		return nil, false, &DecodeError{Document: doc.number, Line: doc.line, Err: err}
	}
	js, err := yaml.YAMLToJSONStrict(doc.data)
	if err != nil {
		return fail(fileLines(err, doc.line))
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, false, nil
	}
	if js = bytes.TrimSpace(js); len(js) == 0 || js[0] != '{' {
		what := "scalar"
		switch string(js[:min(len(js), 1)]) {
		case "[":
			what = "list"
		case `"`:
			what = "string"
		}
		return fail(fmt.Errorf("not a ClusterTaintPolicy object: the document is a YAML %s", what))
	}
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return fail(fmt.Errorf("not a ClusterTaintPolicy object: %w", err))
	}
	if want, ok := listKinds[head.Kind]; ok {
		if head.APIVersion != want {
			return fail(fmt.Errorf("apiVersion: %q for kind %s, want %q", head.APIVersion, head.Kind, want))
		}
		var list struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Metadata   json.RawMessage   `json:"metadata"`
			Items      []json.RawMessage `json:"items"`
		}
		if err := strictJSON(js, &list, reflect.TypeOf(list), ""); err != nil {
			return fail(err)
		}
		policies = make([]ClusterTaintPolicy, len(head.Items))
		var errs []error
		for i, item := range head.Items {
			if err := decodePolicy(item, &policies[i], fmt.Sprintf("items[%d]", i)); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return fail(errors.Join(errs...))
		}
		return policies, true, nil
	}
	policies = make([]ClusterTaintPolicy, 1)
	if err := decodePolicy(js, &policies[0], ""); err != nil {
		return fail(err)
	}
	return policies, false, nil
}

var yamlLine = regexp.MustCompile(`\bline (\d+)`)

// fileLines turns the YAML parser's line numbers, which count from the start
// of the document, into lines of the whole stream.
func fileLines(err error, first int) error {
	return errors.New(yamlLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
		n, convErr := strconv.Atoi(m[len("line "):])
		if convErr != nil {
			return m
		}
		return "line " + strconv.Itoa(n+first-1)
	}))
}

func decodePolicy(js []byte, p *ClusterTaintPolicy, path string) error {
	if err := strictJSON(js, p, policyType, path); err != nil {
		return err
	}
	if p.APIVersion != APIVersion || p.Kind != Kind {
		return fmt.Errorf("%sapiVersion %q, kind %q: want apiVersion %q, kind %q", prefix(path), p.APIVersion, p.Kind, APIVersion, Kind)
	}
	return nil
}

// strictJSON decodes js into v, refusing fields v's type does not have. The
// standard decoder matches field names case-insensitively and names neither
// the path nor every offender, so the names are checked here first, against
// the JSON tags, exactly.
func strictJSON(js []byte, v any, t reflect.Type, path string) error {
	var generic any
	if err := json.Unmarshal(js, &generic); err != nil {
		return err
	}
	var unknown []string
	unknownFields(generic, t, path, &unknown)
	if len(unknown) > 0 {
		for i, u := range unknown {
			unknown[i] = strconv.Quote(u)
		}
		return fmt.Errorf("unknown field %s", strings.Join(unknown, ", "))
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s%s: cannot use JSON %s as %s", prefix(path), te.Field, te.Value, te.Type)
		}
		return err
	}
	return nil
}

func prefix(path string) string {
	if path == "" {
		return ""
	}
	return path + "."
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// unknownFields appends the path of every key in v that t has no JSON field
// for. Types that decode themselves (metav1.Time and the like) are leaves.
func unknownFields(v any, t reflect.Type, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return // a type error, which the decoder reports
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				*out = append(*out, prefix(path)+k)
				continue
			}
			unknownFields(m[k], ft, prefix(path)+k, out)
		}
	case reflect.Slice, reflect.Array:
		a, ok := v.([]any)
		if !ok {
			return
		}
		for i, e := range a {
			unknownFields(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, e := range m {
			unknownFields(e, t.Elem(), fmt.Sprintf("%s[%s]", path, k), out)
		}
	}
}

// jsonFields maps the JSON names of t's fields, including those promoted
// from embedded structs, to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" && f.Anonymous {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					if _, ok := fields[k]; !ok {
						fields[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

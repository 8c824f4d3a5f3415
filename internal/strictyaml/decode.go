package strictyaml

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Decode decodes doc into v, a non-nil pointer, as kubectl does:
// sigs.k8s.io/yaml turns the YAML into JSON, refusing duplicated keys, and
// sigs.k8s.io/json's strict mode decodes it, matching names case-sensitively
// and naming every unknown field (v is still decoded from the known ones).
//
// It adds where each problem is: an *Error naming the document and its
// line; a syntax error's line in the stream; a hint for a name in the wrong
// case; the full path, list indexes included, of a value of the wrong type,
// one its type's UnmarshalJSON refuses, or a .nan or .inf. A document past
// the limits is refused undecoded; no message exceeds about 1000 bytes.
func Decode(doc Document, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return doc.fail(fmt.Errorf("strictyaml: Decode needs a non-nil pointer, not %T", v))
	}
	if doc.err != nil {
		return doc.fail(doc.err)
	}
	js, err := yaml.YAMLToJSONStrict(doc.Data)
	if err != nil {
		if nf := nonFinite(doc.Data, doc.Line); nf != nil {
			return doc.fail(nf)
		}
		return doc.fail(yamlError(err, doc.Line))
	}
	strict, err := kjson.UnmarshalStrict(js, v)
	if err != nil {
		// The decoder names no path for a type's own error, and one
		// without list indexes for a type error: find the value at fault.
		var generic any
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.UseNumber() // so that the value shown is the one written
		if dec.Decode(&generic) == nil {
			if path, value, why := badValue(generic, rv.Type().Elem(), ""); why != nil {
				return doc.fail(valueError(path, value, why))
			}
		}
		return doc.fail(err)
	}
	if len(strict) > 0 {
		var b strings.Builder
		for i, e := range strict {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(e.Error())
			if fe, ok := e.(kjson.FieldError); ok && strings.HasPrefix(e.Error(), "unknown field") {
				if h := caseHint(rv.Type().Elem(), fe.FieldPath()); h != "" {
					fmt.Fprintf(&b, " (did you mean %q?)", h)
				}
			}
		}
		return doc.fail(errors.New(b.String()))
	}
	return nil
}

// Error is a document Decode refused.
type Error struct {
	// Document is the document's Index.
	Document int
	// Line is the line its content starts on. A YAML syntax error names the
	// exact line of the stream in its message.
	Line int
	// Err is the cause. Its message names the field, so callers that report
	// the document their own way print Err alone.
	Err error
}

// Error names the document, its first line and the problem.
func (e *Error) Error() string {
	return fmt.Sprintf("document %d (line %d): %v", e.Document, e.Line, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func (d Document) fail(err error) *Error {
	return &Error{Document: d.Index, Line: d.Line, Err: shorten(err)}
}

var yamlLine = regexp.MustCompile(`\bline (\d+)`)

// yamlError drops the converter's prefix, puts the YAML parser's message on
// one line and turns its line numbers, which count from the document's
// start, into lines of the stream.
func yamlError(err error, first int) error {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = strings.Join(strings.Fields(msg), " ")
	msg = yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, _ := strconv.Atoi(m[len("line "):]) // \d+ after a YAML parser: fits
		return "line " + strconv.Itoa(n+first-1)
	})
	return errors.New(msg)
}

// badValue finds the first value in v (the document decoded generically),
// keys sorted, depth first, that its type t refuses when decoded alone, and
// returns its path, the value and the error.
func badValue(v any, t reflect.Type, path string) (string, []byte, error) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		if v == nil {
			return "", nil, nil // null sets them to nil
		}
	}
	t = deref(t)
	m, isMap := v.(map[string]any)
	list, isList := v.([]any)
	switch {
	case reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()):
		// Its contents are its own business: decode it whole.
	case isMap && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map):
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if ct := child(t, k); ct != nil {
				if p, value, err := badValue(m[k], ct, join(path, k)); err != nil {
					return p, value, err
				}
			}
		}
		return "", nil, nil
	case isList && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for i, e := range list {
			if p, value, err := badValue(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return p, value, err
			}
		}
		return "", nil, nil
	}
	js, err := json.Marshal(v)
	if err != nil {
		return "", nil, nil
	}
	if err := json.Unmarshal(js, reflect.New(t).Interface()); err != nil {
		return path, js, err
	}
	return "", nil, nil
}

// valueError says what is wrong with value at path: what the type wants, or
// the type's own words.
func valueError(path string, value []byte, err error) error {
	if path == "" {
		path = "the document"
	}
	const limit = 60 // so that a large mapping does not flood the message
	if len(value) > limit {
		value = append(value[:limit:limit], "…"...)
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("%s: %s: %w", path, value, err)
	}
	want := "an integer (" + te.Type.String() + ")"
	switch te.Type.Kind() {
	case reflect.Struct, reflect.Map:
		want = "a mapping"
	case reflect.Slice, reflect.Array:
		want = "a list"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "a boolean (true or false)"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		want = "a non-negative integer (" + te.Type.String() + ")"
	}
	return fmt.Errorf("%s: %s: want %s", path, value, want)
}

// caseHint returns the name of the field of the struct holding path (an
// unknown field's path in t, as sigs.k8s.io/json writes it) that differs
// from path's last name only in case, or "".
func caseHint(t reflect.Type, path string) string {
	names := strings.FieldsFunc(path, func(r rune) bool { return r == '.' || r == '[' || r == ']' })
	for _, k := range names[:len(names)-1] {
		if t = child(t, k); t == nil {
			return ""
		}
	}
	var hint string
	if t = deref(t); t.Kind() == reflect.Struct {
		for name := range fieldsOf(t) {
			if strings.EqualFold(name, names[len(names)-1]) && (hint == "" || name < hint) {
				hint = name
			}
		}
	}
	return hint
}

// child is the type of the value under key or index k in a value of type
// t, or nil when t has none.
func child(t reflect.Type, k string) reflect.Type {
	switch t = deref(t); t.Kind() {
	case reflect.Struct:
		return fieldsOf(t)[k]
	case reflect.Map, reflect.Slice, reflect.Array:
		return t.Elem()
	}
	return nil
}

// fieldsOf maps the JSON names of struct t's fields to their types, as
// encoding/json names them: the tag's name, else the Go name; "-" and
// unexported fields left out; an untagged embedded struct's fields counted as
// t's own unless t has that name. A ",string" field is left out: its value is
// a quoted number, which the decoder's own error describes.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case f.Anonymous && name == "" && deref(f.Type).Kind() == reflect.Struct:
			embedded = append(embedded, deref(f.Type))
		case f.IsExported() && tag != "-" && !slices.Contains(strings.Split(opts, ","), "string"):
			fields[cmp.Or(name, f.Name)] = f.Type
		}
	}
	for _, et := range embedded {
		for k, ft := range fieldsOf(et) {
			if _, ok := fields[k]; !ok {
				fields[k] = ft
			}
		}
	}
	return fields
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

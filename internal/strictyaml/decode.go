package strictyaml

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Decode decodes doc into v, which must be a non-nil pointer, as
// sigs.k8s.io/yaml does (YAML to JSON, then encoding/json), but strictly:
//
//   - a key v's type has no JSON field for is an error, and keys are compared
//     case-sensitively, as the Kubernetes API server does: encoding/json would
//     put "Spec" into the field tagged "spec" without a word;
//   - a key given twice in one mapping is an error;
//   - a value of the wrong type is an error naming its full path, list
//     indexes included, and so is a value a type's own UnmarshalJSON refuses
//     (a duration, a time), whose error would otherwise not say where it is.
//
// The error is an *Error. Every unknown field is named, not only the first,
// and v is still decoded from the known ones (as far as encoding/json gets),
// so that the caller can name the object in its own message.
// Types with their own UnmarshalJSON or UnmarshalText, and interfaces, are
// taken whole: their contents are not checked for unknown fields. A null or
// empty document leaves v as it is.
//
// Decode into *any or *map[string]any accepts any mapping: callers use it to
// read the apiVersion and kind that say which type to decode into.
func Decode(doc Document, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return doc.fail("", fmt.Errorf("strictyaml: Decode needs a non-nil pointer, not %T", v))
	}
	js, err := yaml.YAMLToJSONStrict(doc.Data)
	if err != nil {
		if path, value, line, ok := nonFinite(doc.Data); ok {
			return doc.fail(path, nonFiniteError(path, value, line+doc.Line-1))
		}
		return doc.fail("", yamlError(err, doc.Line))
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber() // so that a value re-encoded to find a bad one is the one written
	if err := dec.Decode(&generic); err != nil {
		return doc.fail("", err)
	}
	t := rv.Type().Elem()
	if unknown := unknownFields(generic, t, "", nil); len(unknown) > 0 {
		// Decode the rest anyway, so that the caller can name the object
		// (its kind and name) in its own message.
		_ = json.Unmarshal(js, v)
		return doc.fail(unknown[0].path, unknown)
	}
	dec = json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields() // a safety net: unknownFields is stricter
	if err := dec.Decode(v); err != nil {
		if path, msg := badValue(generic, t, ""); msg != "" {
			return doc.fail(path, errors.New(msg))
		}
		return doc.fail("", err)
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
	// Field is the path of the field at fault, e.g. "spec.taints[0].key" or
	// "metadata.labels[app]"; the first of them when several fields are
	// unknown; empty when the problem is not in one field (malformed YAML, a
	// duplicated key).
	Field string
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

// ErrUnknownField matches, with errors.Is, the error of a document that has
// fields its type does not.
var ErrUnknownField = errors.New("unknown field")

func (d Document) fail(field string, err error) *Error {
	return &Error{Document: d.Index, Line: d.Line, Field: field, Err: err}
}

// unknownFieldsError lists every unknown field of a document.
type unknownFieldsError []unknownField

type unknownField struct {
	path string
	hint string // the field's name when only the case differs
}

func (e unknownFieldsError) Error() string {
	var b strings.Builder
	b.WriteString("unknown field ")
	for i, u := range e {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(u.path))
		if u.hint != "" {
			fmt.Fprintf(&b, " (did you mean %q?)", u.hint)
		}
	}
	return b.String()
}

func (e unknownFieldsError) Is(target error) bool { return target == ErrUnknownField }

var yamlLine = regexp.MustCompile(`\bline (\d+)`)

// yamlError drops the converter's prefix, puts the YAML parser's message on
// one line and turns its line numbers, which count from the document's
// start, into lines of the stream.
func yamlError(err error, first int) error {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	lines := strings.Split(msg, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	msg = strings.Join(lines, " ")
	msg = yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, convErr := strconv.Atoi(m[len("line "):])
		if convErr != nil {
			return m
		}
		return "line " + strconv.Itoa(n+first-1)
	})
	return errors.New(msg)
}

package strictyaml

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// isLeaf reports whether t decodes itself (metav1.Time, resource.Quantity,
// json.RawMessage, ...) or takes anything (an interface): its contents are
// the type's business, not a list of fields to check.
func isLeaf(t reflect.Type) bool {
	return t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(jsonUnmarshaler) ||
		reflect.PointerTo(t).Implements(textUnmarshaler)
}

// unknownFields appends to out every key of v (the document decoded
// generically) that t has no JSON field of exactly that name for, in a
// stable order: keys sorted, depth first.
func unknownFields(v any, t reflect.Type, path string, out unknownFieldsError) unknownFieldsError {
	t = deref(t)
	if isLeaf(t) {
		return out
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return out // a type error, which badValue reports
		}
		fields := fieldsOf(t)
		for _, k := range sortedKeys(m) {
			f, ok := fields[k]
			if !ok {
				out = append(out, unknownField{path: join(path, k), hint: fold(fields, k)})
				continue
			}
			out = unknownFields(m[k], f.typ, join(path, k), out)
		}
	case reflect.Slice, reflect.Array:
		if a, ok := v.([]any); ok {
			for i, e := range a {
				out = unknownFields(e, t.Elem(), index(path, i), out)
			}
		}
	case reflect.Map:
		if m, ok := v.(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				out = unknownFields(m[k], t.Elem(), key(path, k), out)
			}
		}
	}
	return out
}

// badValue finds the first value of v that type t refuses and says why. It
// runs only once encoding/json has failed, whose errors name a path without
// list indexes, or no path at all when a type's own UnmarshalJSON fails:
// each leaf is decoded on its own to find the one at fault.
func badValue(v any, t reflect.Type, path string) (string, string) {
	if v == nil {
		switch t.Kind() {
		case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
			return "", "" // null sets them to nil
		}
		// Otherwise encoding/json gives null to an UnmarshalJSON method,
		// which may refuse it: decode it below like any other leaf.
	}
	t = deref(t)
	switch m, isMap := v.(map[string]any); {
	case isLeaf(t):
	case t.Kind() == reflect.Struct && isMap:
		fields := fieldsOf(t)
		for _, k := range sortedKeys(m) {
			if f, ok := fields[k]; ok && !f.quoted {
				if p, why := badValue(m[k], f.typ, join(path, k)); why != "" {
					return p, why
				}
			}
		}
		return "", ""
	case t.Kind() == reflect.Map && isMap:
		for _, k := range sortedKeys(m) {
			if p, why := badValue(m[k], t.Elem(), key(path, k)); why != "" {
				return p, why
			}
		}
		// A key a map[int]T cannot take falls through to decoding the
		// whole map below.
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		if a, ok := v.([]any); ok {
			for i, e := range a {
				if p, why := badValue(e, t.Elem(), index(path, i)); why != "" {
					return p, why
				}
			}
			return "", ""
		}
	}
	js, err := json.Marshal(v)
	if err != nil {
		return "", ""
	}
	if err := json.Unmarshal(js, reflect.New(t).Interface()); err != nil {
		return path, describe(path, js, v, t, err)
	}
	return "", ""
}

// describe says what is wrong with the value js at path: the document's
// words (a list, a string) against what the type wants.
func describe(path string, js []byte, v any, t reflect.Type, err error) string {
	if _, ok := err.(*json.UnmarshalTypeError); !ok {
		return fmt.Sprintf("%s: %s: %v", path, short(js), err) // the type's own words
	}
	if path == "" {
		return fmt.Sprintf("the document is %s, want %s", yamlKind(v, t), want(t))
	}
	return fmt.Sprintf("%s: %s: want %s, not %s", path, short(js), want(t), yamlKind(v, t))
}

// yamlKind names what the document holds where t was wanted.
func yamlKind(v any, t reflect.Type) string {
	switch v := v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		switch t.Kind() {
		case reflect.Float32, reflect.Float64:
			return "a number out of range"
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			if _, err := v.Int64(); err != nil && strings.ContainsAny(v.String(), ".eE") {
				return "a number with a fraction or exponent"
			}
			return "a number out of range"
		}
		return "a number"
	}
	return "null"
}

func want(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a mapping"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer (" + t.String() + ")"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a non-negative integer (" + t.String() + ")"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return t.String()
}

// short is js, cut so that a large mapping does not flood the message.
func short(js []byte) string {
	const limit = 60
	if len(js) <= limit {
		return string(js)
	}
	return string(js[:limit]) + "…"
}

// field is what encoding/json knows of a struct field.
type field struct {
	typ    reflect.Type
	quoted bool // the ",string" option: the value is a quoted number or bool
}

var fieldCache sync.Map // reflect.Type -> map[string]field

// fieldsOf maps the JSON names of t's fields to them, those of embedded
// structs included, following encoding/json: a tag's name wins over the Go
// name, "-" hides a field, unexported fields are skipped, and an untagged
// embedded struct's fields count as t's own unless t (or an embedded struct
// met earlier) already has that name. Two embedded structs with the same
// field at the same depth, which encoding/json drops, are not detected.
func fieldsOf(t reflect.Type) map[string]field {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]field)
	}
	fields := map[string]field{}
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			if et := deref(f.Type); et.Kind() == reflect.Struct {
				embedded = append(embedded, et)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = field{typ: f.Type, quoted: slices.Contains(strings.Split(opts, ","), "string")}
	}
	// Shallower fields win, so embedded ones come after t's own.
	for _, et := range embedded {
		for k, f := range fieldsOf(et) {
			if _, ok := fields[k]; !ok {
				fields[k] = f
			}
		}
	}
	fieldCache.Store(t, fields)
	return fields
}

// fold returns the field name k matches when case is ignored, as
// encoding/json would match it, or "".
func fold(fields map[string]field, k string) string {
	var match string
	for name := range fields {
		if strings.EqualFold(name, k) && (match == "" || name < match) {
			match = name
		}
	}
	return match
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func key(path, k string) string { return path + "[" + k + "]" }

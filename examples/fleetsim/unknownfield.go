package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func typeOf(v any) reflect.Type { return reflect.TypeOf(v) }

// badValuePath finds the first value of v (decoded generically) that the
// type of its field rejects when decoded on its own, and says why. It looks
// at fields whose type has its own JSON decoding, such as metav1.Duration,
// whose errors do not say which field they came from.
func badValuePath(t reflect.Type, v any, path string) (string, string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		data, err := json.Marshal(v)
		if err != nil {
			return "", ""
		}
		if err := json.Unmarshal(data, reflect.New(t).Interface()); err != nil {
			return path, fmt.Sprintf("%s: %v", data, err)
		}
		return "", ""
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return "", ""
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ft, ok := fields[k]; ok {
				if p, why := badValuePath(ft, m[k], join(path, k)); p != "" {
					return p, why
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if s, ok := v.([]any); ok {
			for i, e := range s {
				if p, why := badValuePath(t.Elem(), e, fmt.Sprintf("%s[%d]", path, i)); p != "" {
					return p, why
				}
			}
		}
	}
	return "", ""
}

// unknownFieldPath finds the first field of v (decoded generically from the
// document) that type t has no JSON field for, and returns its path, e.g.
// "spec.placement.replicaScheduling.replicas". encoding/json names an
// unknown field without saying where it is, which in a document of a hundred
// lines is not enough to fix it.
func unknownFieldPath(t reflect.Type, v any, path string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return ""
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				ft, ok = foldedField(fields, k)
			}
			if !ok {
				return join(path, k)
			}
			if p := unknownFieldPath(ft, m[k], join(path, k)); p != "" {
				return p
			}
		}
	case reflect.Slice, reflect.Array:
		s, ok := v.([]any)
		if !ok {
			return ""
		}
		for i, e := range s {
			if p := unknownFieldPath(t.Elem(), e, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		for k, e := range m {
			if p := unknownFieldPath(t.Elem(), e, join(path, k)); p != "" {
				return p
			}
		}
	}
	return ""
}

// jsonFields maps the JSON names of t's fields, inlined ones included, to
// their types, as encoding/json decodes them.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if (f.Anonymous && name == "") || strings.Contains(","+opts+",", ",inline,") {
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, ok := out[k]; !ok {
						out[k] = v
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
		out[name] = f.Type
	}
	return out
}

// foldedField finds k as encoding/json does when no field has exactly that
// name: ignoring case.
func foldedField(fields map[string]reflect.Type, k string) (reflect.Type, bool) {
	for name, t := range fields {
		if strings.EqualFold(name, k) {
			return t, true
		}
	}
	return nil, false
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

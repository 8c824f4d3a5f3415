package whatif

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// reference is the documentation of the --what-if --json schema.
const reference = "../../REFERENCE.md"

// jsonPaths lists the field paths of typ as REFERENCE.md names them:
// `failure.by`, `evictions[].to[].name`; an object or array of objects
// is listed too (`failure`, `evictions[]`).
func jsonPaths(prefix string, typ reflect.Type) []string {
	var out []string
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ.Kind() {
	case reflect.Slice:
		if typ.Elem().Kind() == reflect.Struct {
			out = append(out, prefix+"[]")
			out = append(out, jsonPaths(prefix+"[]", typ.Elem())...)
		} else {
			out = append(out, prefix)
		}
	case reflect.Struct:
		if prefix != "" {
			out = append(out, prefix)
		}
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			p := name
			if prefix != "" {
				p = prefix + "." + name
			}
			ft := typ.Field(i).Type
			if ft.Kind() == reflect.Struct || (ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct) {
				out = append(out, jsonPaths(p, ft)...)
			} else {
				out = append(out, p)
			}
		}
	default:
		out = append(out, prefix)
	}
	return out
}

// documented reads the paths the schema's table in REFERENCE.md lists.
func documented(t *testing.T) []string {
	t.Helper()
	return documentedIn(t, "The `--what-if --json` schema")
}

// documentedIn is the fields the table of REFERENCE.md's section heading
// names.
func documentedIn(t *testing.T, heading string) []string {
	t.Helper()
	data, err := os.ReadFile(reference)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", reference, heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	code := regexp.MustCompile("`([^`]+)`")
	var out []string
	for line := range strings.SplitSeq(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell := strings.Split(line, "|")[1]
		for _, m := range code.FindAllStringSubmatch(cell, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// TestJSONMatchesReference: the --json output of a plan decodes strictly
// into Report, has every field, and REFERENCE.md documents exactly the
// fields it has, no more, no fewer.
func TestJSONMatchesReference(t *testing.T) {
	r := readAndPlan(t, newFake(t, fleetObjects()...), "region=east")
	var out bytes.Buffer
	if err := WriteJSON(&out, r); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	dec.DisallowUnknownFields()
	var back Report
	if err := dec.Decode(&back); err != nil {
		t.Fatalf("the output does not decode strictly into Report: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		t.Fatalf("more than one JSON document: %v", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	// Every field is present in the output, in every element.
	var walk func(path string, typ reflect.Type, v any)
	walk = func(path string, typ reflect.Type, v any) {
		for typ.Kind() == reflect.Pointer {
			if v == nil {
				return
			}
			typ = typ.Elem()
		}
		switch typ.Kind() {
		case reflect.Slice:
			items, ok := v.([]any)
			if !ok {
				t.Errorf("%s: want an array, got %T", path, v)
				return
			}
			for _, it := range items {
				walk(path+"[]", typ.Elem(), it)
			}
		case reflect.Struct:
			obj, ok := v.(map[string]any)
			if !ok {
				t.Errorf("%s: want an object, got %T", path, v)
				return
			}
			for i := range typ.NumField() {
				name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
				fv, ok := obj[name]
				if !ok {
					t.Errorf("%s.%s is missing", path, name)
					continue
				}
				walk(path+"."+name, typ.Field(i).Type, fv)
			}
		}
	}
	walk("", reflect.TypeFor[Report](), raw)
	if back.SchemaVersion != SchemaVersion {
		t.Errorf("schemaVersion %q, want %q", back.SchemaVersion, SchemaVersion)
	}

	have, doc := jsonPaths("", reflect.TypeFor[Report]()), documented(t)
	slices.Sort(have)
	slices.Sort(doc)
	for _, p := range have {
		if !slices.Contains(doc, p) {
			t.Errorf("%s: in the output, not documented in %s", p, reference)
		}
	}
	for _, p := range doc {
		if !slices.Contains(have, p) {
			t.Errorf("%s: documented in %s, not in the output", p, reference)
		}
	}
}

package strictyaml

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type inner struct {
	B int `json:"b"`
}

type base struct {
	Name   string `json:"name"`
	Shadow string `json:"shadow"` // hidden by target.Shadow, which is shallower
}

// target has a field of every kind the walk treats differently.
type target struct {
	base
	Shadow     int               `json:"shadow,omitempty"`
	Items      []inner           `json:"items,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	ByName     map[string]inner  `json:"byName,omitempty"`
	Ptr        *inner            `json:"ptr,omitempty"`
	Small      int8              `json:"small,omitempty"`
	Count      uint              `json:"count,omitempty"`
	Wait       metav1.Duration   `json:"wait,omitempty"`
	Waits      []metav1.Duration `json:"waits,omitempty"`
	Raw        json.RawMessage   `json:"raw,omitempty"`
	Any        any               `json:"any,omitempty"`
	Quoted     int               `json:"quoted,omitempty,string"`
	Hidden     string            `json:"-"`
	NoTag      string
	unexported string //lint:ignore U1000 present to prove that Decode refuses a key named after it
}

func TestDecodeAccepts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		want  target
	}{
		{"every kind of field", `
name: web
shadow: 3
items: [{b: 1}, {b: 2}]
labels: {app: web}
byName: {x: {b: 4}}
ptr: {b: 5}
small: -128
count: 7
wait: 90s
quoted: "12"
NoTag: t
`, target{base: base{Name: "web"}, Shadow: 3, Items: []inner{{1}, {2}}, Labels: map[string]string{"app": "web"},
			ByName: map[string]inner{"x": {4}}, Ptr: &inner{5}, Small: -128, Count: 7, Wait: metav1.Duration{Duration: 90e9},
			Quoted: 12, NoTag: "t"}},
		{"types that decode themselves are not searched for unknown fields; integers stay integers", "raw: {anything: [1, {goes: here}]}\nany: {Whatever: 1}\n",
			target{Raw: json.RawMessage(`{"anything":[1,{"goes":"here"}]}`), Any: map[string]any{"Whatever": int64(1)}}},
		{"JSON is YAML", `{"name": "j", "items": [{"b": 1}]}`, target{base: base{Name: "j"}, Items: []inner{{1}}}},
		{"a null document leaves the value as it is", "~\n", target{}},
		{"an empty document leaves the value as it is", "", target{}},
		{"null fields are fine", "name: ~\nitems: ~\nptr: null\n", target{}},
		{"yes and n are YAML 1.1 booleans, as sigs.k8s.io/yaml reads them", "any: [yes, n, 'n']\n", target{Any: []any{true, false, "n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got target
			if err := Decode(Document{Index: 1, Line: 1, Data: []byte(tc.input)}, &got); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("decoded %+v\n   want %+v", got, tc.want)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		msg   string // Error.Err's message, exactly
	}{
		{"an unknown field", "nmae: x\n", `unknown field "nmae"`},
		{"an unknown field in a list item, with its index", "items: [{b: 1}, {b: 2, c: 3}]\n", `unknown field "items[1].c"`},
		{"an unknown field in a map value, with its key", "byName: {x: {c: 1}}\n", `unknown field "byName.x.c"`},
		{"an unknown field behind a pointer", "ptr: {bb: 1}\n", `unknown field "ptr.bb"`},
		{"a field name in the wrong case, which encoding/json would take", "Name: x\n", `unknown field "Name" (did you mean "name"?)`},
		{"a field name in the wrong case in a list item", "items: [{b: 1}, {B: 2}]\n", `unknown field "items[1].B" (did you mean "b"?)`},
		{"the Go name of a tagged field", "Items: []\n", `unknown field "Items" (did you mean "items"?)`},
		{"a field hidden with json:\"-\"", "Hidden: x\n", `unknown field "Hidden"`},
		{"an unexported field", "unexported: x\n", `unknown field "unexported"`},
		{"every unknown field, sorted, depth first", "zz: 1\nitems: [{c: 1}]\naa: 2\nname: ok\n",
			`unknown field "aa", unknown field "items[0].c", unknown field "zz"`},
		{"a duplicated key, with the stream's line", "name: a\nitems: []\nname: b\n",
			`yaml: unmarshal errors: line 13: key "name" already set in map`},
		{"malformed YAML, with the stream's line", "name: a\nitems: [\n", `yaml: line 12: did not find expected node content`},
		{"a string for an integer in a list", "items: [{b: 1}, {b: two}]\n", `items[1].b: "two": want an integer (int)`},
		{"a number out of range", "small: 300\n", `small: 300: want an integer (int8)`},
		{"a negative number for an unsigned field", "count: -1\n", `count: -1: want a non-negative integer (uint)`},
		{"a fraction for an integer", "items: [{b: 1.5}]\n", `items[0].b: 1.5: want an integer (int)`},
		{"a list for a string in a map", "labels: {app: [web]}\n", `labels.app: ["web"]: want a string`},
		{"a mapping for a list", "items: {b: 1}\n", `items: {"b":1}: want a list`},
		{"a value a type's own UnmarshalJSON refuses", "wait: soon\n", `wait: "soon": time: invalid duration "soon"`},
		{"a value a type's own UnmarshalJSON refuses, in a list", "waits: [1s, soon]\n", `waits[1]: "soon": time: invalid duration "soon"`},
		{"null for a type whose UnmarshalJSON refuses it, as encoding/json calls it", "wait: null\n", `wait: null: time: invalid duration ""`},
		{"a long value is cut short", "labels: {app: [" + strings.Repeat("x", 80) + "]}\n",
			`labels.app: ["` + strings.Repeat("x", 58) + `…: want a string`},
		{"NaN, which JSON cannot carry, with its path and line", "items: [{b: 1}, {b: .nan}]\n",
			`items[1].b: .nan (line 11): want a number, not NaN or infinity`},
		{"infinity on a later line", "name: x\nsmall: -.Inf\n", `small: -.Inf (line 12): want a number, not NaN or infinity`},
		{"NaN behind an alias is named where its anchor is", "items: [{b: &n .nan}]\nsmall: *n\n", `items[0].b: .nan (line 11): want a number, not NaN or infinity`},
		{"an anchor that contains itself is refused, not followed forever", "any: &x [*x]\n", `yaml: anchor 'x' value contains itself`},
		{"a document that is NaN", "-.inf\n", `the document: -.inf (line 11): want a number, not NaN or infinity`},
		{"a document that is not a mapping", "- a\n- b\n", `the document: ["a","b"]: want a mapping`},
		{"a scalar document", "just words\n", `the document: "just words": want a mapping`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v target
			err := Decode(Document{Index: 3, Line: 11, Data: []byte(tc.input)}, &v)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Decode returned %v (%T), want an *Error", err, err)
			}
			if e.Document != 3 || e.Line != 11 || e.Err.Error() != tc.msg {
				t.Errorf("got Document %d, Line %d, Err %q\nwant Document 3, Line 11, Err %q", e.Document, e.Line, e.Err, tc.msg)
			}
			if want := "document 3 (line 11): " + tc.msg; err.Error() != want {
				t.Errorf("Error() = %q, want %q", err, want)
			}
		})
	}
}

func TestDecodeFillsKnownFieldsDespiteUnknownOnes(t *testing.T) {
	var v target
	err := Decode(Document{Index: 1, Line: 1, Data: []byte("name: web\nnmae: x\n")}, &v)
	if err == nil || !strings.Contains(err.Error(), `unknown field "nmae"`) || v.Name != "web" {
		t.Errorf("err %v, name %q: want an unknown field and the name decoded", err, v.Name)
	}
}

func TestDecodeIntoAnyTakesEveryMapping(t *testing.T) {
	var head map[string]any
	if err := Decode(Document{Index: 1, Line: 1, Data: []byte("kind: X\nspec: {Anything: 1}\n")}, &head); err != nil {
		t.Fatal(err)
	}
	if head["kind"] != "X" {
		t.Errorf("decoded %v", head)
	}
	// Duplicated keys are refused whatever the type.
	if err := Decode(Document{Index: 1, Line: 1, Data: []byte("kind: X\nkind: Y\n")}, &head); err == nil {
		t.Error("a duplicated key was accepted")
	}
}

func TestDecodeRefusesWhatIsNotAPointer(t *testing.T) {
	for _, v := range []any{target{}, (*target)(nil), nil} {
		err := Decode(Document{Index: 1, Line: 1, Data: []byte("name: x\n")}, v)
		if err == nil || !strings.Contains(err.Error(), "strictyaml: Decode needs a non-nil pointer") {
			t.Errorf("Decode(%#v): %v", v, err)
		}
	}
}

// A ",string" field is not walked (its value is a quoted number, not a
// number): a bad one gets encoding/json's own error, without a path, but
// still an *Error naming the document.
func TestDecodeQuotedFieldFallsBackToEncodingJSON(t *testing.T) {
	var v target
	err := Decode(Document{Index: 2, Line: 5, Data: []byte("quoted: \"x\"\n")}, &v)
	var e *Error
	if !errors.As(err, &e) || e.Document != 2 || e.Line != 5 || !strings.Contains(e.Err.Error(), `invalid use of ,string struct tag, trying to unmarshal "x" into int`) {
		t.Errorf("error %v", err)
	}
}

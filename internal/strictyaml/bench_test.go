package strictyaml

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// benchDoc is a policy-sized document: nested structs, lists and a map.
var benchDoc = []byte(`name: web
shadow: 2
labels: {app: web, tier: frontend, team: shop}
items:
` + strings.Repeat("- {b: 1}\n", 20) + `byName: {a: {b: 1}, b: {b: 2}}
wait: 90s
`)

// Decode (sigs.k8s.io/yaml's YAMLToJSONStrict, then sigs.k8s.io/json's
// UnmarshalStrict) against sigs.k8s.io/yaml's one-call UnmarshalStrict, which
// takes wrong-case names and names no path: the strict path costs nothing.
func BenchmarkDecode(b *testing.B) {
	b.Run("strictyaml.Decode", func(b *testing.B) {
		b.ReportAllocs()
		doc := Document{Index: 1, Line: 1, Data: benchDoc}
		for b.Loop() {
			var v target
			if err := Decode(doc, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("yaml.UnmarshalStrict", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v target
			if err := yaml.UnmarshalStrict(benchDoc, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkSplit(b *testing.B) {
	stream := []byte(strings.Repeat(string(benchDoc)+"---\n", 50))
	b.ReportAllocs()
	for b.Loop() {
		if n := len(Split(stream)); n != 50 {
			b.Fatalf("%d documents", n)
		}
	}
}

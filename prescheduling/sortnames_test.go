package prescheduling

import (
	"slices"
	"strings"
	"testing"
)

func TestSortNamesOrdersAsStrings(t *testing.T) {
	var many []string
	for _, c := range benchFleet(300) {
		many = append(many, c.Name)
	}
	cases := map[string][]string{
		"short list":                 {"b", "a", "c"},
		"shared prefix":              many,
		"prefix of another name":     append(slices.Clone(many), "member-0", "member-", "member-00010x", "member-00010"),
		"names beyond eight bytes":   append(slices.Clone(many), "member-0001999999999a", "member-0001999999999", "member-00019999999990"),
		"bytes zero and high":        append(slices.Clone(many), "member-\x00", "member-", "member-\xff\xff", "member-\x00\x00"),
		"no common prefix":           append(slices.Clone(many), "a", "zz", ""),
		"identical names are stable": append(slices.Clone(many), many[0], many[1]),
		"sorted already":             slices.Sorted(slices.Values(many)),
		"sorted but the last":        append(slices.Sorted(slices.Values(many)), "a"),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			got := slices.Clone(in)
			sortNames(got)
			want := slices.Clone(in)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("sortNames differs from slices.Sort: %s", strings.Join(got[:5], ","))
			}
		})
	}
}

func FuzzSortNames(f *testing.F) {
	f.Add("member-1,member-10,member-2,member-1\x00,a", uint8(70))
	f.Fuzz(func(t *testing.T, csv string, repeat uint8) {
		parts := strings.Split(csv, ",")
		var in []string
		for i := range int(repeat) {
			in = append(in, parts[i%len(parts)]+strings.Repeat("x", i%3))
		}
		got := slices.Clone(in)
		sortNames(got)
		want := slices.Clone(in)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("sortNames(%q) = %q, want %q", in, got, want)
		}
	})
}

// sortedNames returns the n names name(0) … name(n-1) sorted, by
// sortedOrder.
func sortedNames(n int, name func(i int) string) []string {
	out := make([]string, n)
	for i, j := range sortedOrder(n, name) {
		out[i] = name(j)
	}
	return out
}

// sortNames sorts xs in place with sortedNames.
func sortNames(xs []string) {
	copy(xs, sortedNames(len(xs), func(i int) string { return xs[i] }))
}

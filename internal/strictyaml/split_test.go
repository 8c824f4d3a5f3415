package strictyaml

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	type doc struct {
		Index, Line int
		Data        string
	}
	for _, tc := range []struct {
		name  string
		input string
		want  []doc
	}{
		{"nothing at all", "", nil},
		{"only blanks, comments and separators", "\n# a\n---\n  # b\n---\n\n...\n", nil},
		{"one document without a separator", "a: 1\nb: 2\n", []doc{{1, 1, "a: 1\nb: 2\n"}}},
		{"no final newline", "a: 1", []doc{{1, 1, "a: 1"}}},
		{"a leading separator", "---\na: 1\n", []doc{{1, 2, "a: 1\n"}}},
		{"two documents", "a: 1\n---\nb: 2\n", []doc{{1, 1, "a: 1\n"}, {2, 3, "b: 2\n"}}},
		{"a separator with a comment", "a: 1\n--- # next\nb: 2\n", []doc{{1, 1, "a: 1\n"}, {2, 3, "b: 2\n"}}},
		{"a separator with trailing blanks", "a: 1\n--- \t\nb: 2\n", []doc{{1, 1, "a: 1\n"}, {2, 3, "b: 2\n"}}},
		{"content on the separator line starts the document there", "a: 1\n--- {b: 2}\n", []doc{{1, 1, "a: 1\n"}, {2, 2, "{b: 2}\n"}}},
		{"a block scalar on the separator line", "--- |\n  text\n", []doc{{1, 1, "|\n  text\n"}}},
		{"a document-end marker before a separator", "a: 1\n...\n---\nb: 2\n", []doc{{1, 1, "a: 1\n"}, {2, 4, "b: 2\n"}}},
		{"a document-end marker starts a bare document", "a: 1\n...\nb: 2\n", []doc{{1, 1, "a: 1\n"}, {2, 3, "b: 2\n"}}},
		{"a document-end marker with a comment", "a: 1\n... # end\n", []doc{{1, 1, "a: 1\n"}}},
		{"empty documents are not numbered", "a: 1\n---\n---\n# only a comment\n---\nb: 2\n", []doc{{1, 1, "a: 1\n"}, {2, 6, "b: 2\n"}}},
		{"leading comments are left out and Line points at the content", "---\n# about b\n\nb: 2\n# trailing\n", []doc{{1, 4, "b: 2\n# trailing\n"}}},
		{"comments inside a document stay", "a: 1\n# note\nb: 2\n", []doc{{1, 1, "a: 1\n# note\nb: 2\n"}}},
		{"CRLF line ends", "a: 1\r\n---\r\nb: 2\r\n", []doc{{1, 1, "a: 1\r\n"}, {2, 3, "b: 2\r\n"}}},
		{"a byte-order mark is dropped", "\xef\xbb\xbfa: 1\n---\nb: 2\n", []doc{{1, 1, "a: 1\n"}, {2, 3, "b: 2\n"}}},
		{"an indented --- in a block scalar is content", "a: |\n  ---\n  x\n", []doc{{1, 1, "a: |\n  ---\n  x\n"}}},
		{"---- and ---x are not separators", "----\n---x\n", []doc{{1, 1, "----\n---x\n"}}},
		{"a null document is a document", "~\n---\na: 1\n", []doc{{1, 1, "~\n"}, {2, 3, "a: 1\n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []doc
			for _, d := range Split([]byte(tc.input)) {
				got = append(got, doc{d.Index, d.Line, string(d.Data)})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Split(%q)\n got %+q\nwant %+q", tc.input, fmt.Sprint(got), fmt.Sprint(tc.want))
			}
		})
	}
}

func TestSplitDoesNotAliasTheInput(t *testing.T) {
	in := []byte("a: 1\n---\nb: 2\n")
	docs := Split(in)
	for i := range in {
		in[i] = 'x'
	}
	if string(docs[0].Data) != "a: 1\n" || string(docs[1].Data) != "b: 2\n" {
		t.Errorf("documents changed with the input: %q, %q", docs[0].Data, docs[1].Data)
	}
}

// The lines Split reports are the lines a reader finds the content on.
func TestSplitLinesPointAtTheContent(t *testing.T) {
	in := "# header\n---\na: 1\n--- # two\n\n# about b\nb: 2\n...\n---\n--- {c: 3}\n"
	lines := strings.Split(in, "\n")
	for _, d := range Split([]byte(in)) {
		first, _, _ := strings.Cut(string(d.Data), "\n")
		if got := lines[d.Line-1]; !strings.Contains(got, first) {
			t.Errorf("document %d: line %d is %q, want it to hold %q", d.Index, d.Line, got, first)
		}
	}
}

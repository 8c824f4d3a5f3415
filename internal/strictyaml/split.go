// Package strictyaml reads multi-document YAML streams of Kubernetes-style
// objects strictly, for the loaders of this module (taint policies, fleetsim
// scenarios).
//
// Split cuts a stream into its documents; Decode decodes one strictly, as
// kubectl does, naming the document, its line and the field at fault, such
// as spec.taintsToAdd[0].effect. Both refuse, quickly and briefly, what
// would exhaust memory (MaxBytes, MaxNodes).
package strictyaml

import "bytes"

// Document is one document of a YAML stream.
type Document struct {
	// Index is the 1-based position among documents with content, so that
	// "document 2" is the second thing a reader sees.
	Index int
	// Line is the stream's line its content starts on (leading comments
	// skipped); lines in Decode's errors are the stream's too.
	Line int
	// Data is the document's text, without separator, leading blanks and
	// comments, or byte-order mark.
	Data []byte
	err  error // why Decode refuses it: past the limits
}

// Split cuts a YAML stream into its documents, as kubectl reads a file of
// manifests: a separator is "---" at the start of a line, then its end, a
// space or a tab (content after it starts the next document); a "..." line
// ends one; a byte-order mark is dropped and CRLF accepted; documents of
// blanks and comments are left out. A "---" in a block scalar is content
// only when indented, as YAML requires.
//
// A stream of more than MaxBytes is one document that Decode refuses, as is
// each that takes the stream past MaxNodes.
func Split(data []byte) []Document {
	if len(data) > MaxBytes {
		return []Document{{Index: 1, Line: 1, err: errTooLarge}}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var (
		docs  []Document
		cur   []byte
		start = 1 // the line cur's content starts on
	)
	flush := func() {
		if hasContent(cur) {
			docs = append(docs, Document{Index: len(docs) + 1, Line: start, Data: cur})
		}
		cur = nil
	}
	for i, line := range bytes.SplitAfter(data, []byte("\n")) {
		n := i + 1
		bare := bytes.TrimRight(line, "\r\n")
		switch {
		case isMarker(bare, "---"):
			flush()
			start = n + 1
			if rest := bytes.TrimSpace(bare[3:]); len(rest) > 0 && rest[0] != '#' {
				start = n
				cur = append(append(cur, rest...), '\n')
			}
		case isMarker(bare, "..."):
			// The document ends here; what follows, up to the next
			// separator, is a document of its own (YAML's bare document).
			flush()
			start = n + 1
		case cur == nil && !hasContent(line):
			// Leading blanks and comments: Line points at the content.
			start = n + 1
		default:
			cur = append(cur, line...)
		}
	}
	flush()
	limit(docs)
	return docs
}

// isMarker reports whether line is the document marker m ("---" or "...")
// standing alone or followed by a blank.
func isMarker(line []byte, m string) bool {
	return bytes.HasPrefix(line, []byte(m)) && (len(line) == len(m) || line[len(m)] == ' ' || line[len(m)] == '\t')
}

// hasContent reports whether b holds anything but blanks and comments.
func hasContent(b []byte) bool {
	for line := range bytes.Lines(b) {
		if line = bytes.TrimSpace(line); len(line) > 0 && line[0] != '#' {
			return true
		}
	}
	return false
}

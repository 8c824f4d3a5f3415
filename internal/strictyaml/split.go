// Package strictyaml reads multi-document YAML streams of Kubernetes-style
// objects strictly, for the loaders of this module (taint policies, fleetsim
// scenarios).
//
// Split cuts a stream into its documents and remembers where each starts;
// Decode decodes one document with the ecosystem's strict decoders, as
// kubectl does (sigs.k8s.io/yaml refuses duplicated keys, sigs.k8s.io/json
// unknown fields and field names in the wrong case), and adds where each
// problem is: every error is an *Error naming the document, the line it
// starts on and the path of the field at fault, such as
// spec.taintsToAdd[0].effect.
package strictyaml

import "bytes"

// Document is one document of a YAML stream.
type Document struct {
	// Index is the document's 1-based position in the stream, counting only
	// documents with content: blank and comment-only documents are not
	// numbered, so that "document 2" is the second thing a reader sees.
	Index int
	// Line is the 1-based line of the stream on which the document's content
	// starts (its leading comments skipped); lines in Decode's errors are
	// lines of the stream too.
	Line int
	// Data is the document's text, without its separator line, its leading
	// blanks and comments, or any byte-order mark.
	Data []byte
	// err is why Decode refuses the document: the stream passes the limits.
	err error
}

// Split cuts a YAML stream into its documents, as kubectl reads a file of
// manifests. A separator is "---" at the start of a line followed by the end
// of the line, a space or a tab: "--- # comment" separates, and content after
// the marker ("--- {a: 1}") starts the next document. A "..." line ends a
// document. A leading UTF-8 byte-order mark is dropped, and CRLF line ends
// are accepted. Documents holding only blanks and comments are left out.
//
// Split only looks at lines: a "---" inside a block scalar is content only
// when indented, as YAML itself requires.
//
// A stream of more than MaxBytes is one document that Decode refuses, and
// so is each document that takes the stream past MaxNodes.
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

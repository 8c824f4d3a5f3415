package strictyaml

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// The limits on what this package reads, so that a stream built to exhaust
// memory or time is refused at once with a short error, whatever its shape:
// MaxBytes, and MaxNodes nodes in all its documents with aliases once those
// are expanded, as decoding expands them (the YAML decoder's own check is a
// ratio, which nested aliases pass: 200 KB can expand to gigabytes). An
// error's message is cut to maxErrLen.
const (
	MaxBytes  = 1 << 20
	MaxNodes  = 1 << 19
	maxErrLen = 1000
)

var errTooLarge = fmt.Errorf("strictyaml: the input is larger than %d bytes: refused", MaxBytes)

// ReadAll reads r to its end, refusing more than MaxBytes.
func ReadAll(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err == nil && len(data) > MaxBytes {
		return nil, errTooLarge
	}
	return data, err
}

// limit marks the document whose nodes, expanded, pass the stream's budget,
// and every one after: Decode refuses them.
func limit(docs []Document) {
	budget := MaxNodes
	for i := range docs {
		if budget >= 0 {
			n := expanded(docs[i].Data, budget)
			if budget -= n; budget >= 0 {
				continue
			}
		}
		docs[i].err = fmt.Errorf("strictyaml: the stream expands to more than %d nodes (its aliases followed): refused", MaxNodes)
	}
}

// expanded counts data's nodes with its aliases followed, stopping past
// limit (an alias in its own anchor is past it); 0 without an alias, or
// when it does not parse (Decode says why).
func expanded(data []byte, limit int) int {
	var root yamlv3.Node
	if !bytes.Contains(data, []byte("*")) || yamlv3.Unmarshal(data, &root) != nil {
		return 0
	}
	anchors := map[*yamlv3.Node]int{} // anchored nodes counted, -1 while counting
	var count func(n *yamlv3.Node) int
	count = func(n *yamlv3.Node) int {
		if n.Kind == yamlv3.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if c, ok := anchors[n]; ok {
			if c < 0 {
				return limit + 1
			}
			return c
		}
		if n.Anchor != "" {
			anchors[n] = -1
		}
		c := 1
		for _, child := range n.Content {
			if c += count(child); c > limit {
				break
			}
		}
		if n.Anchor != "" {
			anchors[n] = c
		}
		return c
	}
	return count(&root)
}

// shortError is an error whose message was cut.
type shortError struct {
	msg string
	err error
}

func (e *shortError) Error() string { return e.msg }
func (e *shortError) Unwrap() error { return e.err }

// shorten cuts err's message to maxErrLen, keeping err for errors.Is.
func shorten(err error) error {
	msg := err.Error()
	if len(msg) <= maxErrLen {
		return err
	}
	cut := strings.ToValidUTF8(msg[:maxErrLen], "")
	return &shortError{msg: fmt.Sprintf("%s… (%d bytes more)", cut, len(msg)-len(cut)), err: err}
}

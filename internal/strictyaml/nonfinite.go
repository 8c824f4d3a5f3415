package strictyaml

import (
	"fmt"
	"math"
	"strconv"

	yamlv3 "go.yaml.in/yaml/v3"
)

// nonFinite finds the first float in data that JSON cannot carry (.nan,
// .inf, -.inf and their spellings), which sigs.k8s.io/yaml reports as
// "json: unsupported value: NaN" with no field or line. It returns the
// field's path, the value as written and its line counted from data's
// start; ok is false when there is none (or data does not parse).
func nonFinite(data []byte) (path, value string, line int, ok bool) {
	var root yamlv3.Node
	if yamlv3.Unmarshal(data, &root) != nil {
		return "", "", 0, false
	}
	var walk func(n *yamlv3.Node, path string) bool
	walk = func(n *yamlv3.Node, p string) bool {
		switch n.Kind {
		case yamlv3.DocumentNode:
			for _, c := range n.Content {
				if walk(c, p) {
					return true
				}
			}
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				child := n.Content[i].Value
				if p != "" {
					child = p + "." + child
				}
				if walk(n.Content[i+1], child) {
					return true
				}
			}
		case yamlv3.SequenceNode:
			for i, c := range n.Content {
				if walk(c, p+"["+strconv.Itoa(i)+"]") {
					return true
				}
			}
		case yamlv3.AliasNode:
			return n.Alias != nil && walk(n.Alias, p)
		case yamlv3.ScalarNode:
			if n.ShortTag() != "!!float" {
				return false
			}
			var f float64
			if n.Decode(&f) == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
				path, value, line, ok = p, n.Value, n.Line, true
				return true
			}
		}
		return false
	}
	walk(&root, "")
	return path, value, line, ok
}

// nonFiniteError is the error for a value nonFinite found.
func nonFiniteError(path, value string, line int) error {
	return fmt.Errorf("%s: %s (line %d): want a number, not NaN or infinity", path, value, line)
}

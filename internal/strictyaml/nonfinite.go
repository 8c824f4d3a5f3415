package strictyaml

import (
	"cmp"
	"fmt"
	"math"

	yamlv3 "go.yaml.in/yaml/v3"
)

// nonFinite finds the first float in data that JSON cannot carry (.nan,
// .inf, -.inf and their spellings), which sigs.k8s.io/yaml reports as
// "json: unsupported value: NaN" with no field or line, and says where it
// is; first is the line data starts on. It returns nil when there is none.
func nonFinite(data []byte, first int) error {
	var root yamlv3.Node
	if yamlv3.Unmarshal(data, &root) != nil {
		return nil
	}
	var walk func(n *yamlv3.Node, path string) error
	walk = func(n *yamlv3.Node, path string) error {
		// Aliases are not followed: their anchor comes first, and is
		// found there, and an anchor may contain its own alias.
		var f float64
		if n.Kind == yamlv3.ScalarNode && n.ShortTag() == "!!float" && n.Decode(&f) == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return fmt.Errorf("%s: %s (line %d): want a number, not NaN or infinity", cmp.Or(path, "the document"), n.Value, n.Line+first-1)
		}
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i) // a list item
			switch n.Kind {
			case yamlv3.DocumentNode:
				p = path
			case yamlv3.MappingNode:
				if i%2 == 0 {
					continue // a key
				}
				p = join(path, n.Content[i-1].Value)
			}
			if err := walk(c, p); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(&root, "")
}

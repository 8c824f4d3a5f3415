package failover_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeSnippets holds README.md's Go snippets to Example_wiring: every
// line of every snippet must be a line of readme_example_test.go, in the
// snippet's order, so the README shows code that compiles and runs.
func TestReadmeSnippets(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("readme_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var example []string
	for _, l := range strings.Split(string(src), "\n") {
		example = append(example, strings.TrimSpace(l))
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 5 {
		t.Fatalf("README.md has %d Go snippets; the tour should show one per package", len(blocks))
	}
	for _, b := range blocks {
		at := 0
		for _, line := range strings.Split(strings.TrimSpace(b[1]), "\n") {
			line = strings.TrimSpace(line)
			found := false
			for ; at < len(example); at++ {
				if example[at] == line {
					found = true
					at++
					break
				}
			}
			if !found {
				t.Errorf("README snippet line not in Example_wiring (in this order):\n\t%s", line)
				break
			}
		}
	}
}

package karmada_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeSnippet holds the karmada snippet of the repository's README.md
// (the block fenced as "go karmada", which the core module's README test
// does not read, since the core cannot import this module) to
// Example_readme: every line must be a line of readme_example_test.go, in
// order, whitespace aside, so the README shows calls that compile and run.
func TestReadmeSnippet(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("readme_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	norm := func(l string) string { return strings.Join(strings.Fields(l), " ") }
	var example []string
	for _, l := range strings.Split(string(src), "\n") {
		example = append(example, norm(l))
	}
	blocks := regexp.MustCompile("(?s)```go karmada\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) != 1 {
		t.Fatalf("README.md has %d karmada snippets, want 1", len(blocks))
	}
	at := 0
	for _, line := range strings.Split(strings.TrimSpace(blocks[0][1]), "\n") {
		line = norm(line)
		found := false
		for ; at < len(example); at++ {
			if example[at] == line {
				found = true
				at++
				break
			}
		}
		if !found {
			t.Fatalf("README karmada snippet line not in Example_readme (in this order):\n\t%s", line)
		}
	}
}

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeCalls holds the karmadafork snippet of this example's
// README.md to its code: each line, without its trailing comment, must
// stand as written in main.go or in the controllers it runs (the karmada
// module's packages karmada, engine, controllers and controllermanager),
// so the README shows the calls the reference wiring really makes.
func TestReadmeCalls(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go karmadafork\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) != 1 {
		t.Fatalf("README.md has %d karmadafork snippets, want 1", len(blocks))
	}
	var files []string
	for _, dir := range []string{".", "engine", "controllers", "controllermanager"} {
		fs, err := filepath.Glob(filepath.Join("..", "..", "karmada", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	var src strings.Builder
	for _, f := range append(files, "main.go") {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(data)
	}
	for _, line := range strings.Split(strings.TrimSpace(blocks[0][1]), "\n") {
		code, _, _ := strings.Cut(line, "//")
		code = strings.TrimSpace(code)
		if code == "" {
			continue
		}
		if !strings.Contains(src.String(), code) {
			t.Errorf("README karmadafork snippet line not in the example's source:\n\t%s", code)
		}
	}
}

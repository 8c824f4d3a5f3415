package failover_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeSnippets holds README.md's Go snippets to Example_wiring: every
// line of every snippet must be a line of readme_example_test.go, in the
// snippet's order, so the README shows code that compiles and runs. The
// tour shows one snippet for each core package.
func TestReadmeSnippets(t *testing.T) {
	readme := readFile(t, "README.md")
	var example []string
	for _, l := range strings.Split(readFile(t, "readme_example_test.go"), "\n") {
		example = append(example, strings.TrimSpace(l))
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(readme, -1)
	for _, pkg := range []string{"taintpolicy", "ratelimit", "evictionqueue", "prescheduling", "gracefulevict", "metrics"} {
		if !slices.ContainsFunc(blocks, func(b []string) bool { return strings.Contains(b[1], pkg+".") }) {
			t.Errorf("README.md's tour has no Go snippet that uses package %s", pkg)
		}
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

// TestReadmeCommands holds the shell commands of README.md and TESTING.md to
// the repository, so each one runs as written: a `go get` names a module of
// the repository; a `go run` a main package, and only flags it defines; a
// `go test -run` a test (and subtest) that exists in the package it names; a
// `bash` a script that exists; anything else must be a command .ci/run runs.
// Inline commands in backquotes that start with `go test -run` or `go run`
// are held to the same rules. And every command .ci/run says the README
// shows ("README: …") is in one of the two documents exactly as .ci/run runs
// it.
func TestReadmeCommands(t *testing.T) {
	ci := readFile(t, ".ci/run")
	modules := repoModules(t)
	var shown []string
	for _, doc := range []string{"README.md", "TESTING.md"} {
		text := readFile(t, doc)
		for _, b := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1) {
			for _, line := range strings.Split(b[1], "\n") {
				if cmd := stripShellComment(line); cmd != "" {
					shown = append(shown, cmd)
					checkCommand(t, doc, cmd, ci, modules, false)
				}
			}
		}
		for _, m := range regexp.MustCompile("`((?:[A-Z_]+=\\S+ )*go (?:test|run) [^`]*)`").FindAllStringSubmatch(text, -1) {
			checkCommand(t, doc, m[1], ci, modules, true)
		}
	}
	for _, m := range regexp.MustCompile(`\(README: (.*)\)"?\n`).FindAllStringSubmatch(ci, -1) {
		if !slices.Contains(shown, m[1]) {
			t.Errorf(".ci/run says the README shows %q; neither README.md nor TESTING.md has it in a sh block", m[1])
		}
	}
}

// checkCommand checks one command line of doc; inline is true for a
// command quoted in prose, where only go test -run and go run are checked.
func checkCommand(t *testing.T, doc, cmd, ci string, modules []string, inline bool) {
	t.Helper()
	base := "." // where a `cd` earlier in the command moved to
	for _, part := range strings.Split(cmd, "&&") {
		f := strings.Fields(part)
		for len(f) > 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(f[0]) {
			f = f[1:] // an environment variable
		}
		switch {
		case len(f) == 0:
			t.Errorf("%s: empty command in %q", doc, cmd)
		case len(f) == 2 && f[0] == "go" && f[1] != "get" && inline:
			// go test or go run with no arguments: nothing to check
		case f[0] == "go" && f[1] == "get":
			if path, _, _ := strings.Cut(f[len(f)-1], "@"); len(f) != 3 || !slices.Contains(modules, path) {
				t.Errorf("%s: %q gets no module of this repository (%v)", doc, part, modules)
			}
		case f[0] == "go" && f[1] == "run":
			checkGoRun(t, doc, base, f[2:])
		case f[0] == "go" && f[1] == "test" && slices.Contains(f, "-run"):
			if inline && !slices.ContainsFunc(f, func(a string) bool { return a == "." || strings.HasPrefix(a, "./") }) {
				break // prose about go test -run, not a command
			}
			checkGoTestRun(t, doc, base, f[2:])
		case inline:
		case f[0] == "bash" && len(f) == 2:
			if _, err := os.Stat(f[1]); err != nil {
				t.Errorf("%s: %q: %v", doc, part, err)
			}
		case f[0] == "cd":
			if _, err := os.Stat(filepath.Join(base, f[1])); err != nil {
				t.Errorf("%s: %q: %v", doc, part, err)
			}
			base = filepath.Join(base, f[1])
		default:
			if !strings.Contains(ci, strings.TrimSpace(part)) {
				t.Errorf("%s: %q is not a command .ci/run runs", doc, strings.TrimSpace(part))
			}
		}
	}
}

// checkGoRun checks `go run ./dir --flag …`, run in base: dir holds a main
// package that defines every flag given.
func checkGoRun(t *testing.T, doc, base string, args []string) {
	t.Helper()
	if len(args) == 0 || !strings.HasPrefix(args[0], "./") {
		t.Errorf("%s: go run %v: want a directory ./…", doc, args)
		return
	}
	src := goSource(t, filepath.Join(base, args[0]), false)
	if !strings.Contains(src, "package main\n") {
		t.Errorf("%s: go run %s: no main package there", doc, args[0])
	}
	for _, a := range args[1:] {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			if !strings.Contains(src, `"`+name+`"`) {
				t.Errorf("%s: go run %s: flag --%s is not defined there", doc, args[0], name)
			}
		}
	}
}

// checkGoTestRun checks `go test … -run Pattern ./dir`, run in base: the
// test the pattern's first part names exists in dir, and each later part
// starts the name of a subtest there (t.Run, spaces as underscores). With
// -run '^$' (no test) and -bench, each benchmark the -bench pattern names
// (its |-separated alternatives, up to a /) exists there.
func checkGoTestRun(t *testing.T, doc, base string, args []string) {
	t.Helper()
	var pattern, bench, dir string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case (a == "-run" || a == "-bench") && i+1 < len(args):
			if a == "-run" {
				pattern = strings.Trim(args[i+1], `'"`)
			} else {
				bench = strings.Trim(args[i+1], `'"`)
			}
			i++
		case a == "." || strings.HasPrefix(a, "./"):
			dir = filepath.Join(base, strings.TrimSuffix(a, "/..."))
		}
	}
	if pattern == "" || dir == "" {
		t.Errorf("%s: go test %v: want -run Pattern and a directory", doc, args)
		return
	}
	src := goSource(t, dir, true)
	if pattern == "^$" {
		if bench == "" {
			t.Errorf("%s: go test -run '^$' runs nothing without -bench", doc)
		}
		for _, alt := range strings.Split(bench, "|") {
			name, _, _ := strings.Cut(strings.Trim(alt, "^$"), "/")
			if !strings.Contains(src, "\nfunc Benchmark"+name) {
				t.Errorf("%s: go test -bench %s: no benchmark Benchmark%s… in %s's tests", doc, bench, name, dir)
			}
		}
		return
	}
	parts := strings.Split(pattern, "/")
	name := strings.Trim(parts[0], "^$")
	if !strings.Contains(src, "\nfunc "+name+"(") {
		t.Errorf("%s: go test -run %s: no func %s in %s's tests", doc, pattern, name, dir)
	}
	for _, sub := range parts[1:] {
		if !strings.Contains(src, `t.Run("`+strings.ReplaceAll(sub, "_", " ")) {
			t.Errorf("%s: go test -run %s: no subtest starting %q in %s's tests", doc, pattern, sub, dir)
		}
	}
}

// goSource is the text of dir's Go files, only its tests when tests is true.
func goSource(t *testing.T, dir string, tests bool) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") == tests {
			b.WriteString("\n" + readFile(t, f))
		}
	}
	return b.String()
}

// repoModules is the module path of every go.mod in the repository.
func repoModules(t *testing.T) []string {
	t.Helper()
	var mods []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "go.mod" {
			return err
		}
		for _, l := range strings.Split(readFile(t, path), "\n") {
			if m, ok := strings.CutPrefix(l, "module "); ok {
				mods = append(mods, strings.TrimSpace(m))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return mods
}

// stripShellComment drops a trailing "# …" and the spaces around a command.
func stripShellComment(line string) string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	if strings.HasPrefix(strings.TrimSpace(line), "#") {
		return ""
	}
	return strings.TrimSpace(line)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

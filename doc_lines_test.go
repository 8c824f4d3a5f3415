package failover_test

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// docLineLimit is the longest line the documents may have, in characters.
const docLineLimit = 120

// TestDocLines keeps the documents readable in a terminal and a diff: no
// line of README.md or TESTING.md is over docLineLimit characters. In the
// examples' READMEs and fleetsim's REFERENCE.md, table rows and code blocks
// are exempt, because they cannot be wrapped without changing what they
// say: a Markdown row is one line, and a code block shows what a program
// prints, a flag's one-word value, or source lines a test matches.
func TestDocLines(t *testing.T) {
	for _, f := range []struct {
		path   string
		strict bool
	}{
		{"README.md", true},
		{"TESTING.md", true},
		{"examples/fleetsim/README.md", false},
		{"examples/fleetsim/REFERENCE.md", false},
		{"examples/workqueue/README.md", false},
		{"examples/controllerruntime/README.md", false},
		{"examples/karmadafork/README.md", false},
	} {
		file, err := os.Open(f.path)
		if err != nil {
			t.Error(err)
			continue
		}
		sc := bufio.NewScanner(file)
		inCode := false
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if strings.HasPrefix(line, "```") {
				inCode = !inCode
			}
			if utf8.RuneCountInString(line) <= docLineLimit {
				continue
			}
			if !f.strict && (strings.HasPrefix(line, "|") || inCode) {
				continue
			}
			t.Errorf("%s:%d is %d characters long, over %d", f.path, n, utf8.RuneCountInString(line), docLineLimit)
		}
		if err := sc.Err(); err != nil {
			t.Error(err)
		}
		file.Close()
	}
}

package cmd

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestManPagesUpToDate fails when the committed man pages drift from the
// CLI definitions they are generated from.
func TestManPagesUpToDate(t *testing.T) {
	dir := filepath.Join("..", "man")
	want := ManPages()
	var names []string
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("man/%s is missing: run 'go run . gen-man man'", name)
			continue
		}
		if string(got) != want[name] {
			t.Errorf("man/%s is out of date: run 'go run . gen-man man'", name)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if _, ok := want[e.Name()]; !ok && strings.HasSuffix(e.Name(), ".1") {
			t.Errorf("man/%s has no command any more: delete it", e.Name())
		}
	}
}

// TestManPagesDocumentEveryFlag guards the generator itself: each visible
// flag of each command appears in that command's page.
func TestManPagesDocumentEveryFlag(t *testing.T) {
	pages := ManPages()
	for _, c := range App().Commands {
		if c.Hidden {
			continue
		}
		page := pages["gprof-"+c.Name+".1"]
		for _, f := range c.Flags {
			name := f.Names()[0]
			if !strings.Contains(page, `\-\-`+roff(name)) && !strings.Contains(page, `\-`+name) {
				t.Errorf("gprof-%s.1 does not document --%s", c.Name, name)
			}
		}
	}
}

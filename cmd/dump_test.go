package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/record"
)

// TestDumpJSONDocumented fails when docs/formats.md's tables of gprof dump
// --json and what it writes drift apart, either way.
func TestDumpJSONDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "formats.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## `gprof dump --json`\n")
	if i < 0 {
		t.Fatal("docs/formats.md has no \"gprof dump --json\" section")
	}
	s = s[i+1:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:j+3]
	}
	// The tables, in order: the document, a process, a thread, a frame.
	var tables [][]string
	for _, block := range regexp.MustCompile(`\n\n`).Split(s, -1) {
		if !strings.HasPrefix(block, "| field |") {
			continue
		}
		var fields []string
		for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(block, -1) {
			fields = append(fields, m[1])
		}
		tables = append(tables, fields)
	}
	d := &record.Dump{Pid: 7, Name: "app", Argv: []string{"app"}, Backend: "ptrace", Stopped: time.Millisecond,
		Threads: []record.DumpedThread{{Tid: 7, Name: "app", State: 'S', Wchan: "futex_wait", Error: "x",
			Frames: []record.DumpFrame{{Address: 0x1000, Function: "f", File: "a.c", Line: 3, Lib: "app", Python: true, Inlined: true}}}}}
	var out bytes.Buffer
	if err := encodeJSON(dumpJSONOf([]*record.Dump{d}))(&out); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	proc := doc["processes"].([]any)[0].(map[string]any)
	th := proc["threads"].([]any)[0].(map[string]any)
	fr := th["frames"].([]any)[0].(map[string]any)
	objs := []map[string]any{doc, proc, th, fr}
	if len(tables) != len(objs) {
		t.Fatalf("docs/formats.md has %d tables for gprof dump --json, want %d", len(tables), len(objs))
	}
	for i, o := range objs {
		var keys []string
		for k := range o {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		doc := slices.Clone(tables[i])
		slices.Sort(doc)
		if !slices.Equal(keys, doc) {
			t.Errorf("table %d documents %v, the output has %v", i+1, doc, keys)
		}
	}
}

package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/analysis/report"
	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/profile"
)

// jsonProfile is a small symbolicated profile with one thread.
func jsonProfile() *profile.Profile {
	key := profile.LibKey{DebugName: "app", BreakpadID: "A1"}
	st := &profile.SymbolTable{}
	st.Add(key, 0x100, []profile.SymbolFrame{{Function: "hot", File: "h.c", Line: 3}})
	st.Add(key, 0x200, []profile.SymbolFrame{{Function: "main", File: "m.c", Line: 9}})
	th := &profile.Thread{Tid: 7, Name: "app", Main: true, End: -1}
	for i := 0; i < 4; i++ {
		s := th.InternStack([]profile.Frame{{Address: 0x10100, Category: profile.CategoryUser}, {Address: 0x10200, Category: profile.CategoryUser}})
		th.Samples.Add(s, int64(i)*1e6, 1e6)
	}
	return &profile.Profile{
		Meta: profile.Meta{Product: "gprof", Interval: time.Millisecond, Duration: 4e6},
		Processes: []*profile.Process{{Pid: 7, Name: "app", End: -1, Threads: []*profile.Thread{th},
			Libs: []profile.Lib{{Start: 0x10000, End: 0x20000, Name: "app", DebugName: "app", BreakpadID: "A1"}}}},
		Symbols: st,
	}
}

// jsonDocs returns the JSON documents docs/formats.md describes, by the file
// name its examples use: record's summary and report's output.
func jsonDocs(t *testing.T) map[string]any {
	t.Helper()
	code := 0
	var rec bytes.Buffer
	sum := recordSummary{Version: recordSummaryVersion, Output: "p.json.gz", DurationSec: 1, Samples: 4, Processes: 1, Threads: 1, ExitCode: &code, Backend: "perf", Event: "cpu-clock"}
	if err := encodeJSON(sum)(&rec); err != nil {
		t.Fatal(err)
	}
	var rep bytes.Buffer
	if err := report.WriteJSON(&rep, report.Build(jsonProfile(), report.Options{Top: 1})); err != nil {
		t.Fatal(err)
	}
	docs := map[string]any{}
	for name, b := range map[string][]byte{"summary.json": rec.Bytes(), "report.json": rep.Bytes()} {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		docs[name] = v
	}
	return docs
}

var pathStep = regexp.MustCompile(`^(\.[a-z_]+|\[\d*\])`)

// jqPath evaluates a plain jq path (.a.b[0].c; [] takes the first
// element); ok is false when a step is missing.
func jqPath(v any, path string) (any, bool) {
	if path == "." {
		return v, true
	}
	for path != "" {
		step := pathStep.FindString(path)
		if step == "" {
			return nil, false
		}
		path = path[len(step):]
		if strings.HasPrefix(step, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[step[1:]]; !ok {
				return nil, false
			}
			continue
		}
		a, ok := v.([]any)
		i, _ := strconv.Atoi(strings.Trim(step, "[]"))
		if !ok || i >= len(a) {
			return nil, false
		}
		v = a[i]
	}
	return v, true
}

// docsJSONSection returns docs/formats.md's "JSON output" section.
func docsJSONSection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "formats.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## JSON output\n")
	if i < 0 {
		t.Fatal(`docs/formats.md has no "## JSON output" section`)
	}
	s = s[i+1:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:j+3]
	}
	return s
}

var (
	tableHeading = regexp.MustCompile("(?m)^### `(record|report)`[^`]*`([^`]+)`")
	tableField   = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|([^\n]*)$")
)

// TestJSONSchemaDocumented fails when docs/formats.md's tables of JSON fields
// and what record and report write drift apart, either way.
func TestJSONSchemaDocumented(t *testing.T) {
	section := docsJSONSection(t)
	docs := jsonDocs(t)
	documented := map[string][]string{} // "report .threads[]" -> fields
	optional := map[string]bool{}       // fields documented as present only sometimes
	heads := tableHeading.FindAllStringSubmatchIndex(section, -1)
	for i, h := range heads {
		end := len(section)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		key := section[h[2]:h[3]] + " " + section[h[4]:h[5]]
		for _, m := range tableField.FindAllStringSubmatch(section[h[1]:end], -1) {
			documented[key] = append(documented[key], m[1])
			if strings.Contains(m[2], "present only when") || strings.Contains(m[2], "present with") {
				optional[m[1]] = true
			}
		}
	}
	for _, want := range []struct{ table, file, path string }{
		{"record .", "summary.json", "."},
		{"report .", "report.json", "."},
		{"report .threads[]", "report.json", ".threads[0]"},
		{"report .process_totals[]", "report.json", ".process_totals[0]"},
		{"report .all", "report.json", ".all"},
		{"report .all.top_self[]", "report.json", ".all.top_self[0]"},
	} {
		fields, ok := documented[want.table]
		if !ok {
			t.Errorf("docs/formats.md documents no table for %s", want.table)
			continue
		}
		if want.table == "report .threads[]" {
			fields = append(fields, documented["report .all"]...) // a thread has a summary's fields too
		}
		obj, _ := jqPath(docs[want.file], want.path)
		m, ok := obj.(map[string]any)
		if !ok {
			t.Errorf("%s %s is not an object: %v", want.file, want.path, obj)
			continue
		}
		for _, f := range fields {
			if _, ok := m[f]; !ok && !optional[f] {
				t.Errorf("docs/formats.md documents %s field %q, which the output lacks", want.table, f)
			}
		}
		for f := range m {
			if !slices.Contains(fields, f) {
				t.Errorf("%s field %q is not documented in docs/formats.md's JSON output section", want.table, f)
			}
		}
	}
}

var jqExample = regexp.MustCompile(`jq (?:-[a-z] )*'([^']+)' (\w+\.json)`)

// TestJSONExamplesWork runs the jq paths of docs/formats.md's and --help's
// examples against real output: each must name something that is there.
func TestJSONExamplesWork(t *testing.T) {
	texts := []string{docsJSONSection(t)}
	for _, c := range App().Commands {
		texts = append(texts, c.Description)
	}
	docs := jsonDocs(t)
	n := 0
	for _, text := range texts {
		for _, m := range jqExample.FindAllStringSubmatch(text, -1) {
			doc, ok := docs[m[2]]
			if !ok {
				t.Errorf("example %q reads %s: use summary.json (record) or report.json (report)", m[0], m[2])
				continue
			}
			for _, p := range strings.Split(m[1], ",") {
				n++
				if v, ok := jqPath(doc, strings.TrimSpace(p)); !ok || v == nil {
					t.Errorf("example %q: %s is missing or null in %s", m[0], p, m[2])
				}
			}
		}
	}
	if n < 4 {
		t.Errorf("found %d jq example paths, want docs/formats.md's and both --help's", n)
	}
}

// TestJSONOutputFile: --json-output FILE writes the JSON to FILE and
// leaves stdout to the text report; - is stdout; --json is the same as -.
func TestJSONOutputFile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "p.json")
	if err := gecko.WriteFile(prof, jsonProfile()); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.json")
	stdout, errOut, code := runCLI(t, "report", "--json-output", out, prof)
	if code != ExitOK || !strings.Contains(stdout, "Top by self CPU time") {
		t.Fatalf("report --json-output FILE: exit %d, stdout %q (want the text report): %s", code, stdout, errOut)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil || r.Version != report.Version || r.All.TopSelf[0].Name != "hot" {
		t.Errorf("r.json: %v %+v", err, r)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	for _, args := range [][]string{{"report", "--json", prof}, {"report", "--json-output", "-", prof}} {
		stdout, errOut, code := runCLI(t, args...)
		var r report.Report
		if err := json.Unmarshal([]byte(stdout), &r); code != ExitOK || err != nil || r.Version != report.Version {
			t.Errorf("gprof %s: exit %d, stdout %q is not the report (%v): %s", strings.Join(args, " "), code, stdout, err, errOut)
		}
	}
	for _, args := range [][]string{
		{"report", "--json", "--json-output", out, prof},
		{"report", "--json-output", filepath.Join(dir, "no", "r.json"), prof},
		{"record", "--json-output", filepath.Join(dir, "no", "s.json"), "-o", filepath.Join(dir, "x.json"), "--", "true"},
	} {
		if _, errOut, code := runCLI(t, args...); code == ExitOK {
			t.Errorf("gprof %s: exit 0 (%s), want an error", strings.Join(args, " "), errOut)
		}
	}
}

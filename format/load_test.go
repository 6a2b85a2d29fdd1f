package format

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What Reader says of a file that is not a profile: one line, saying what
// it expected and what it found (issue 29: a text file was "invalid
// character 'g' looking for beginning of value at byte 0").
func TestReaderSaysWhatItFound(t *testing.T) {
	text := []byte(strings.Repeat("garbage line 1\ngarbage line 2\n", 1000))
	mini := []byte(`{"meta":{"version":36,"startTime":1,"interval":1,"categories":[{"name":"Other","color":"grey"}]},"libs":[],"threads":[],"processes":[]}`)
	for _, tc := range []struct {
		what  string
		in    []byte
		found string // what the message says was found; "" keeps the format reader's own error
		keep  string // with found "", a part of that error
	}{
		{"text", text, `a text file starting "garbage line 1"`, ""},
		{"text that sniffs as pprof", []byte("hello world\n"), `a text file starting "hello world"`, ""},
		{"empty", nil, "an empty file", ""},
		{"white space", []byte(" \n\t\n"), "a file of white space", ""},
		{"JSON object", []byte(`{"foo": 1, "bar": [1, 2], "baz": {"meta": 3}}`), `JSON that is not a profile (top-level keys "foo", "bar", "baz")`, ""},
		{"JSON cut in a value", []byte(`{"data": [1, 2, 3`), `JSON that is not a profile (top-level keys "data"…)`, ""},
		{"empty JSON object", []byte(`{}`), "JSON that is not a profile (an empty object)", ""},
		{"JSON array", []byte(`[{"a": 1}]`), "JSON that is not a profile (an array)", ""},
		{"not JSON after all", []byte(`{garbage`), `a text file starting "{garbage"`, ""},
		{"binary", []byte{0x02, 0x00, 0xff, 0xfe, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60}, "binary data starting 02 00 ff fe 10 20 30 40", ""},
		{"PNG", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "a PNG image", ""},
		{"ELF", append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 64)...), "an ELF file (a program or library: 'gprof record -- PROGRAM' profiles it)", ""},
		{"gzipped text", gz(text), `gzip data holding a text file starting "garbage line 1"`, ""},
		{"gzipped JSON", gz([]byte(`{"x": 1}`)), `gzip data holding JSON that is not a profile (top-level keys "x")`, ""},
		{"gzipped nothing", gz(nil), "gzip data holding an empty file", ""},
		{"damaged gzip", []byte("\x1f\x8bxxxxxxxxxxxxxxxxxxxx"), "damaged gzip data (gzip: invalid header)", ""},
		{"gzip cut short", gz(text)[:20], "gzip data cut short", ""},
		// A profile damaged: the format reader's error says where.
		{"Gecko cut short", mini[:60], "", "unexpected end of JSON input at byte 60"},
		{"Gecko without meta", []byte(`{"threads": [], "libs": []}`), "", "missing meta"},
	} {
		_, _, err := Reader(bytes.NewReader(tc.in))
		if err == nil {
			t.Errorf("%s: read without error", tc.what)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") {
			t.Errorf("%s: %q spans lines", tc.what, msg)
		}
		if tc.found == "" {
			if !strings.Contains(msg, tc.keep) || strings.Contains(msg, "found") {
				t.Errorf("%s: %q, want the reader's own error, %q", tc.what, msg, tc.keep)
			}
			continue
		}
		if want := "expected a profile (" + expectedKinds() + "), found " + tc.found; msg != want {
			t.Errorf("%s:\n got %q\nwant %q", tc.what, msg, want)
		}
	}
}

// A gzipped profile cut short (a partial copy, a recording stopped while
// writing) is named so, with its size, rather than by where its reader ran
// out of input: within the head Reader sniffs, and past it (a profile
// whose JSON is bigger than sniffSize), Gecko and processed alike.
func TestReaderCutShort(t *testing.T) {
	pad := strings.Repeat("x", 2*sniffSize)
	for _, tc := range []struct {
		what string
		json string
	}{
		{"small Gecko", `{"meta":{"version":36,"startTime":1,"interval":1,"categories":[{"name":"Other","color":"grey"}]},"libs":[],"threads":[],"processes":[]}`},
		{"big Gecko", `{"meta":{"version":36,"startTime":1,"interval":1,"product":"` + pad + `","categories":[{"name":"Other","color":"grey"}]},"libs":[],"threads":[],"processes":[]}`},
		{"big processed", `{"meta":{"version":36,"preprocessedProfileVersion":48,"startTime":1,"interval":1,"product":"` + pad + `"},"libs":[],"threads":[]}`},
	} {
		z := gz([]byte(tc.json))
		in := z[:len(z)*2/3]
		_, _, err := Reader(bytes.NewReader(in))
		want := fmt.Sprintf("expected a whole profile (%s), found gzip data cut short after %d bytes", expectedKinds(), len(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v\nwant %q…", tc.what, err, want)
		}
	}
}

// The kinds Reader names are those it reads: Gecko and processed JSON and
// pprof here, and every registered importer's.
func TestExpectedKinds(t *testing.T) {
	saved := importers
	defer func() { importers = saved }()
	importers = nil
	if got := expectedKinds(); got != "Gecko or processed JSON, or pprof" {
		t.Errorf("no importers: %q", got)
	}
	Register(Importer{Kind: "perf.data", Name: "perf.data"})
	Register(Importer{Kind: "etl", Name: "ETL"})
	if got := expectedKinds(); got != "Gecko or processed JSON, pprof, perf.data or ETL" {
		t.Errorf("with perf.data and ETL: %q", got)
	}
}

// File says a directory is one.
func TestFileDirectory(t *testing.T) {
	dir := t.TempDir()
	_, _, err := File(dir)
	if err == nil || err.Error() != dir+": expected a profile ("+expectedKinds()+"), found a directory" {
		t.Errorf("%v", err)
	}
	path := filepath.Join(dir, "big.txt")
	os.WriteFile(path, []byte("garbage\n"), 0o644)
	if _, _, err := File(path); err == nil || !strings.HasPrefix(err.Error(), path+": expected a profile") {
		t.Errorf("%v", err)
	}
}

package format

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// notProfile is Reader's one line for a file that is not a profile: what
// it reads, and what it found instead.
func notProfile(found string) error {
	return fmt.Errorf("expected a profile (%s), found %s", expectedKinds(), found)
}

// expectedKinds names the formats Reader reads, the importers registered
// with it included: "Gecko or processed JSON, pprof, perf.data or ETL".
func expectedKinds() string {
	kinds := []string{"Gecko or processed JSON", "pprof"}
	for _, im := range importers {
		name := im.Name
		if name == "" {
			name = string(im.Kind)
		}
		kinds = append(kinds, name)
	}
	last := len(kinds) - 1
	if last == 1 {
		// "Gecko or processed JSON, or pprof": the first "or" is
		// within one item.
		return kinds[0] + ", or " + kinds[1]
	}
	return strings.Join(kinds[:last], ", ") + " or " + kinds[last]
}

// describe says in a few words what head, the start of a file that no
// reader takes, holds.
func describe(head []byte) string {
	switch {
	case len(head) == 0:
		return "an empty file"
	case len(bytes.TrimSpace(head)) == 0:
		return "a file of white space"
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "an ELF file (a program or library: 'gprof record -- PROGRAM' profiles it)"
	case bytes.HasPrefix(head, []byte("MZ")):
		return "a Windows executable or DLL"
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return "a zip archive"
	case bytes.HasPrefix(head, []byte("\xfd7zXZ\x00")):
		return "xz data (gprof reads gzip-compressed profiles only)"
	case bytes.HasPrefix(head, []byte("\x28\xb5\x2f\xfd")):
		return "zstd data (gprof reads gzip-compressed profiles only)"
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "a PNG image"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "a JPEG image"
	case bytes.HasPrefix(head, []byte("%PDF-")):
		return "a PDF document"
	case bytes.HasPrefix(head, []byte("\x1f\x8b")):
		return "gzip data"
	case isText(head):
		line, _, _ := bytes.Cut(bytes.TrimLeft(head, " \t\r\n\f\ufeff"), []byte("\n"))
		s := strings.TrimSpace(string(line))
		if utf8.RuneCountInString(s) > 40 {
			s = string([]rune(s)[:40]) + "…"
		}
		return "a text file starting " + strconv.Quote(s)
	}
	n := min(len(head), 8)
	return "binary data starting " + strings.TrimSpace(fmt.Sprintf("% x", head[:n]))
}

// Describe says in a few words what a file that starts with head holds,
// for a command that expected something else: "a text file starting
// \"...\"", "a PNG image", "an empty file". Give it the file's first
// 512 bytes or more.
func Describe(head []byte) string { return describe(head) }

// textSniff is how much of a file isText looks at.
const textSniff = 512

// isText reports whether head starts with what a text file holds: UTF-8
// with no control characters but white space. A pprof file, whose first
// byte (0x0a, field 1) is a newline, has others within its first bytes
// (the 0x08 that starts a value type), so text is never pprof.
func isText(head []byte) bool {
	b := head[:min(len(head), textSniff)]
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			// A rune cut at the end of the window is still text.
			return len(b) < utf8.UTFMax && len(head) > textSniff && !utf8.FullRune(b)
		}
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != '\f' || r == 0x7f {
			return false
		}
		b = b[n:]
	}
	return true
}

// startsJSON reports whether head starts as a JSON object or array would
// (after white space and a byte order mark): a profile or something else
// in JSON.
func startsJSON(head []byte) bool {
	t := bytes.TrimLeft(bytes.TrimPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("\ufeff")), " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// profileKeys are top-level keys of Gecko and processed profiles: JSON
// with one of them is a profile, damaged or not, and its reader's error
// says best what is wrong with it.
var profileKeys = map[string]bool{"meta": true, "threads": true, "libs": true, "processes": true, "shared": true, "counters": true}

// describeJSON says what head, which starts as JSON does, holds when it is
// no profile: JSON of another kind, or not JSON at all. It returns "" for
// JSON with a top-level key of a profile's, a profile however damaged.
func describeJSON(head []byte) string {
	d := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("\ufeff"))))
	tok, err := d.Token()
	switch {
	case err != nil:
		return describe(head)
	case tok == json.Delim('['):
		return "JSON that is not a profile (an array)"
	}
	var keys []string
	complete := false
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		if tok == json.Delim('}') {
			complete = true
			break
		}
		key, ok := tok.(string)
		if !ok {
			break
		}
		if profileKeys[key] {
			return ""
		}
		keys = append(keys, strconv.Quote(key))
		if err := skipValue(d); err != nil {
			break
		}
	}
	switch {
	case len(keys) == 0 && complete:
		return "JSON that is not a profile (an empty object)"
	case len(keys) == 0:
		return describe(head) // not JSON past its first brace
	}
	more := ""
	if !complete {
		more = "…"
	}
	const show = 8
	if len(keys) > show {
		keys, more = keys[:show], "…"
	}
	return "JSON that is not a profile (top-level keys " + strings.Join(keys, ", ") + more + ")"
}

// skipValue reads one JSON value from d.
func skipValue(d *json.Decoder) error {
	depth := 0
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// cutShort is Reader's line for a gzip-compressed profile whose
// compressed stream ends early: a recording stopped while writing, or a
// partial copy. n is the compressed bytes there are.
func cutShort(n int64) error {
	return fmt.Errorf("expected a whole profile (%s), found gzip data cut short after %d bytes: the file is incomplete (a partial copy, or a recording stopped while writing)", expectedKinds(), n)
}

// gzipFound says what a gzip stream's failure to decompress found.
func gzipFound(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "gzip data cut short"
	}
	return "damaged gzip data (" + err.Error() + ")"
}

package report

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Printable escapes control characters (terminal escape sequences,
// newlines) in a name that came from a profile, so that printing a file
// cannot drive the terminal or break a line-oriented output.
func Printable(s string) string {
	if !strings.ContainsFunc(s, isControl) && utf8.ValidString(s) {
		return s
	}
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// LibLabel is how every listing shows the binary a function is in: its
// name in brackets ("[libc.so.6]"), or as it is when the name is a
// bracketed pseudo-library already ("[python]", "[vdso]", "[anon]"), so
// that no listing doubles them. Callers escape the name first, each as
// its listing does.
func LibLabel(lib string) string {
	if lib == "" {
		return ""
	}
	if strings.HasPrefix(lib, "[") && strings.HasSuffix(lib, "]") {
		return lib
	}
	return "[" + lib + "]"
}

// Truncate cuts s to width columns (runes), ending in "…"; width 0 keeps s.
func Truncate(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	if width == 1 {
		return "…"
	}
	n := 0
	for i := range s {
		if n == width-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// Match reports whether name matches pattern, where * matches any run of
// characters and every other character only itself (function names hold
// [, ], ? and / that a path glob would read as syntax).
func Match(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return strings.HasSuffix(name, last)
}

package record

import (
	"testing"
)

func TestParseMarkerLine(t *testing.T) {
	for line, want := range map[string]MarkerLine{
		"100 200 compile":     {100, 200, "compile"},
		"100 200 two words\r": {100, 200, "two words"},
		"5 5 zero":            {5, 5, "zero"},
		"9223372036854775807 9223372036854775807 max": {9223372036854775807, 9223372036854775807, "max"},
	} {
		got, ok := ParseMarkerLine(line)
		if !ok || got != want {
			t.Errorf("%q: %+v %v, want %+v", line, got, ok, want)
		}
	}
	for _, line := range []string{"", "100", "100 200", "100 200 ", "200 100 backwards", "-1 2 x", "a b c", "9223372036854775808 9223372036854775808 over"} {
		if m, ok := ParseMarkerLine(line); ok {
			t.Errorf("%q reads as %+v", line, m)
		}
	}
}

func FuzzParseMarkerLine(f *testing.F) {
	for _, s := range []string{"100 200 compile", "1 2 x y z", "", "2 1 b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, ok := ParseMarkerLine(s); ok && (m.End < m.Start || m.Start < 0 || m.Name == "") {
			t.Fatalf("%q: %+v", s, m)
		}
	})
}

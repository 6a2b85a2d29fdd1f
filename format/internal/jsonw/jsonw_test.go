package jsonw

import (
	"encoding/json"
	"testing"
)

func TestAppendFixed(t *testing.T) {
	for _, c := range []struct {
		v    int64
		d    int
		want string
	}{
		{0, 6, "0"}, {1, 6, "0.000001"}, {1500000, 6, "1.5"}, {-2500, 3, "-2.5"},
		{123456789, 3, "123456.789"}, {1e9, 6, "1000"}, {7, 0, "7"},
		{-9223372036854775808, 9, "-9223372036.854775808"},
	} {
		if got := string(AppendFixed(nil, c.v, c.d)); got != c.want {
			t.Errorf("AppendFixed(%d, %d) = %s, want %s", c.v, c.d, got, c.want)
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, c := range []struct {
		s, want, js string
	}{
		{"", `""`, `""`},
		{`a"b\c`, `"a\"b\\c"`, `"a\"b\\c"`},
		{"\n\r\t\x01\x7f", `"\n\r\t\u0001` + "\x7f\"", `"\n\r\t\u0001` + "\x7f\""},
		{"é\xffz", "\"é\\ufffdz\"", "\"é\\ufffdz\""},
		{"a\u2028b\u2029", "\"a\u2028b\u2029\"", `"a\u2028b\u2029"`},
	} {
		if got := string(AppendString(nil, c.s)); got != c.want {
			t.Errorf("AppendString(%q) = %s, want %s", c.s, got, c.want)
		}
		if got := string(AppendJSString(nil, c.s)); got != c.js {
			t.Errorf("AppendJSString(%q) = %s, want %s", c.s, got, c.js)
		}
		var back string
		if err := json.Unmarshal(AppendJSString(nil, c.s), &back); err != nil {
			t.Errorf("AppendJSString(%q) does not parse: %v", c.s, err)
		}
	}
}

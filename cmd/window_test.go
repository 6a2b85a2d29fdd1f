package cmd

import (
	"strings"
	"testing"
	"time"
)

func TestParseSwitchOutput(t *testing.T) {
	for _, tc := range []struct {
		in    string
		every time.Duration
		size  int64
		bad   bool
	}{
		{in: "signal"},
		{in: "30s", every: 30 * time.Second},
		{in: "500ms", every: 500 * time.Millisecond},
		{in: "5m", every: 5 * time.Minute},
		{in: "1h", every: time.Hour},
		{in: "2d", every: 48 * time.Hour},
		{in: "100M", size: 100 << 20},
		{in: "1G", size: 1 << 30},
		{in: "64K", size: 64 << 10},
		{in: "10", bad: true},
		{in: "10x", bad: true},
		{in: "1K", bad: true},
		{in: "1ms", bad: true},
		{in: "-5s", bad: true},
		{in: "", bad: true},
	} {
		so, err := parseSwitchOutput(tc.in)
		if (err != nil) != tc.bad || err == nil && (so.every != tc.every || so.size != tc.size || so.signal != (tc.in == "signal")) {
			t.Errorf("parseSwitchOutput(%q) = %+v, %v", tc.in, so, err)
		}
	}
}

// --switch-output alone is perf's signal mode; its value given, or a
// command's own arguments, are left alone.
func TestSwitchOutputAlone(t *testing.T) {
	app := App()
	for _, tc := range []struct{ in, want string }{
		{"gprof record --switch-output -o x -- prog", "gprof record --switch-output=signal -o x -- prog"},
		{"gprof record --switch-output=5s -- prog", "gprof record --switch-output=5s -- prog"},
		{"gprof record -o --switch-output -- prog", "gprof record -o --switch-output -- prog"},
		{"gprof record prog --switch-output", "gprof record prog --switch-output"},
		{"gprof report --switch-output", "gprof report --switch-output"},
	} {
		got := switchOutputAlone(app, strings.Fields(tc.in))
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, strings.Join(got, " "), tc.want)
		}
	}
}

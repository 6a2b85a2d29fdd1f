package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// The headings say what the samples measure: CPU time, unless threads were
// sampled off the CPU too. Issue 29: a Python recording, whose categories
// include Idle, was headed "wall-clock time", given a CPU column, and
// called off_cpu in JSON.
func TestHeadingsSayWhatSamplesMeasure(t *testing.T) {
	for _, tc := range []struct {
		what    string
		p       *profile.Profile
		opts    Options
		offCPU  bool
		heading string
	}{
		{"python, on the CPU", pythonProfile(), Options{}, false, "Top by self CPU time\n    samples       all"},
		{"native, on the CPU", testProfile(), Options{}, false, "Top by total CPU time\n"},
		{"off the CPU", offCPUProfile(), Options{}, true, "Top by self wall-clock time\n    samples      CPU"},
		{"off the CPU, by CPU", offCPUProfile(), Options{By: ByCPU}, true, "Top by self CPU time\n    samples      CPU"},
	} {
		r := Build(tc.p, tc.opts)
		var text, js bytes.Buffer
		if err := WriteText(&text, r); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&js, r); err != nil {
			t.Fatal(err)
		}
		if r.OffCPU != tc.offCPU || !strings.Contains(js.String(), `"off_cpu": `+map[bool]string{true: "true", false: "false"}[tc.offCPU]) {
			t.Errorf("%s: off_cpu %v, want %v", tc.what, r.OffCPU, tc.offCPU)
		}
		if !strings.Contains(text.String(), tc.heading) || strings.Contains(text.String(), "Top by self time") {
			t.Errorf("%s: no %q in\n%s", tc.what, tc.heading, text.String())
		}
		if !tc.offCPU && strings.Contains(text.String(), "wall-clock") {
			t.Errorf("%s: a CPU profile is called wall-clock:\n%s", tc.what, text.String())
		}
	}
}

package gecko

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// TestRoundTripPython: Python frames (name, file, lines) are written as
// the Firefox Profiler reads a script's frames, and read back whole.
func TestRoundTripPython(t *testing.T) {
	want := testProfile()
	want.Meta.Categories = profile.PythonCategories
	th := want.Processes[0].Threads[0]
	py := []profile.Frame{
		{Label: "inner", File: "/srv/app (v2)/x.py", Line: 12, FuncLine: 10, Category: profile.CategoryPython},
		{Address: want.Processes[0].Libs[0].Start + 0x20, Category: profile.CategoryUser},
		{Label: "<module>", File: "<frozen runpy>", Line: 3, FuncLine: 1, Category: profile.CategoryPython},
	}
	th.Samples.Add(th.InternStack(py), th.Samples.Time[th.Samples.Len()-1]+1, 5)
	data := encode(t, want)
	if !bytes.Contains(data, []byte(`"inner (/srv/app (v2)/x.py:10)"`)) {
		t.Errorf("no location string for the Python frame in %s", firstLine(data))
	}
	got, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	compareProfiles(t, got, want)
}

func firstLine(b []byte) string {
	s := string(b)
	if i := strings.Index(s, "inner"); i >= 0 {
		return s[max(i-100, 0):min(i+100, len(s))]
	}
	return s[:min(len(s), 300)]
}

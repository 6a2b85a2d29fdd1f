package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// pythonProfile is testProfile with a thread running a Python function
// under a native one.
func pythonProfile() *profile.Profile {
	p := testProfile()
	p.Meta.Categories = profile.PythonCategories
	th := p.Processes[0].Threads[0]
	py := profile.Frame{Label: "jsoner", Category: profile.CategoryPython, File: "/tmp/j.py", Line: 9, FuncLine: 8}
	s := th.InternStack([]profile.Frame{py, {Address: libStart + 0x300, Category: profile.CategoryUser}})
	for i := range 5 {
		th.Samples.Add(s, int64(20+i)*1e6, 1e6)
	}
	return p
}

// A library's label is bracketed once wherever a report prints it: the
// flat report, the call tree, and the names the Python pseudo-library
// already brackets (issue 29: the tree printed jsoner  [[python]]).
func TestLibBracketedOnce(t *testing.T) {
	p := pythonProfile()
	var flat, tree bytes.Buffer
	if err := WriteText(&flat, Build(p, Options{})); err != nil {
		t.Fatal(err)
	}
	if err := WriteTree(&tree, BuildTree(p), TreeOptions{}); err != nil {
		t.Fatal(err)
	}
	for what, out := range map[string]string{"report": flat.String(), "tree": tree.String()} {
		if strings.Contains(out, "[[") || strings.Contains(out, "]]") {
			t.Errorf("%s doubles brackets:\n%s", what, out)
		}
		if !strings.Contains(out, "[python]") || !strings.Contains(out, "[app]") {
			t.Errorf("%s lacks [python] or [app]:\n%s", what, out)
		}
	}
}

func TestLibLabel(t *testing.T) {
	for lib, want := range map[string]string{"app": "[app]", "[python]": "[python]", "[vdso]": "[vdso]", "": ""} {
		if got := LibLabel(lib); got != want {
			t.Errorf("LibLabel(%q) = %q, want %q", lib, got, want)
		}
	}
}

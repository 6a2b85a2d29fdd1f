package record

import (
	"testing"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/python"
)

// TestPythonMerge: each native frame of the eval function gives way to
// the Python frames its call ran, innermost first, other native frames
// staying where they are; a stack whose groups do not match the native
// eval frames is left alone and counted.
func TestPythonMerge(t *testing.T) {
	eval := []python.Range{{Start: 0x1000, End: 0x2000}}
	code := func(name string) *python.Code { return &python.Code{Name: name, File: "/x.py", FirstLine: 1} }
	st := &python.Stack{
		Frames: []python.Frame{{Code: code("inner"), Line: 3}, {Code: code("middle"), Line: 5}, {Code: code("outer"), Line: 9}},
		Groups: []int{2, 1},
		Eval:   eval,
	}
	native := []profile.Frame{
		{Address: 0x5000, Category: profile.CategoryUser}, // sha256 (leaf)
		{Address: 0x1100, Category: profile.CategoryUser}, // eval (return address)
		{Address: 0x3000, Category: profile.CategoryUser}, // a C helper
		{Address: 0x1200, Category: profile.CategoryUser}, // eval
		{Address: 0x4000, Category: profile.CategoryUser}, // main
	}
	ps := newPyStage()
	s := &event.Sample{Pid: 1, Tid: 1, Interp: st}
	got, _, ok := ps.merge(s, append([]profile.Frame(nil), native...), nil, nil)
	if !ok {
		t.Fatal("not merged")
	}
	var names []string
	for _, f := range got {
		if f.Category == profile.CategoryPython {
			names = append(names, f.Label)
		} else {
			names = append(names, "native")
		}
	}
	want := "native inner middle native outer native"
	if g := join(names); g != want {
		t.Errorf("merged %s, want %s", g, want)
	}
	if got[1].File != "/x.py" || got[1].Line != 3 || got[1].FuncLine != 1 {
		t.Errorf("inner frame %+v", got[1])
	}
	// One group too few: left as it was, counted.
	st.Groups = []int{3}
	got, _, ok = ps.merge(s, append([]profile.Frame(nil), native...), nil, nil)
	if ok || len(got) != len(native) || ps.unread != 1 || ps.samples != 2 || ps.merged != 1 {
		t.Errorf("mismatched groups: merged %v, %d frames, counts %d/%d/%d", ok, len(got), ps.samples, ps.merged, ps.unread)
	}
	// No stack read, in a process known to run Python: counted.
	_, _, ok = ps.merge(&event.Sample{Pid: 1, Tid: 2}, append([]profile.Frame(nil), native...), nil, nil)
	if ok || ps.unread != 2 {
		t.Errorf("unread sample: merged %v, unread %d", ok, ps.unread)
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

package processed

import (
	"encoding/json"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// TestOneFuncPerFunction: a function whose lines come from two files is
// one func, shown under the file most of its lines are in, each frame
// keeping its own line (issue 18: _PyEval_EvalFrameDefault was two funcs,
// Python/bytecodes.c and Python/generated_cases.c.h).
func TestOneFuncPerFunction(t *testing.T) {
	key := profile.LibKey{DebugName: "python", BreakpadID: "P1"}
	st := &profile.SymbolTable{}
	st.Add(key, 0x100, []profile.SymbolFrame{{Function: "eval", FuncAddr: 0x80, FuncSize: 0x400, File: "bytecodes.c", Line: 10}})
	st.Add(key, 0x140, []profile.SymbolFrame{{Function: "eval", FuncAddr: 0x80, FuncSize: 0x400, File: "bytecodes.c", Line: 12}})
	st.Add(key, 0x200, []profile.SymbolFrame{{Function: "eval", FuncAddr: 0x80, FuncSize: 0x400, File: "generated_cases.c.h", Line: 20}})
	th := &profile.Thread{Tid: 1, Main: true, End: -1}
	for _, rel := range []uint64{0x100, 0x140, 0x200} {
		th.Samples.Add(th.InternStack([]profile.Frame{{Address: 0x10000 + rel, Category: profile.CategoryUser}}), int64(rel), -1)
	}
	p := &profile.Profile{Symbols: st, Processes: []*profile.Process{{Pid: 1, Name: "python", End: -1, Threads: []*profile.Thread{th},
		Libs: []profile.Lib{{Start: 0x10000, End: 0x20000, Name: "python", DebugName: "python", BreakpadID: "P1"}}}}}
	var out struct {
		Shared struct {
			StringArray []string `json:"stringArray"`
			FuncTable   struct {
				Name   []int  `json:"name"`
				Source []*int `json:"source"`
			} `json:"funcTable"`
			FrameTable struct {
				Line []*int `json:"line"`
			} `json:"frameTable"`
			Sources struct {
				Filename []int `json:"filename"`
			} `json:"sources"`
		} `json:"shared"`
	}
	if err := json.Unmarshal(writeTest(t, p), &out); err != nil {
		t.Fatal(err)
	}
	sh := out.Shared
	var files []string
	for i, n := range sh.FuncTable.Name {
		if sh.StringArray[n] == "eval" {
			file := ""
			if s := sh.FuncTable.Source[i]; s != nil {
				file = sh.StringArray[sh.Sources.Filename[*s]]
			}
			files = append(files, file)
		}
	}
	if len(files) != 1 || files[0] != "bytecodes.c" {
		t.Errorf("eval funcs in files %q, want one in bytecodes.c", files)
	}
	lines := map[int]bool{}
	for _, l := range sh.FrameTable.Line {
		if l != nil {
			lines[*l] = true
		}
	}
	if !lines[10] || !lines[12] || !lines[20] {
		t.Errorf("frame lines %v, want 10, 12 and 20", lines)
	}
}

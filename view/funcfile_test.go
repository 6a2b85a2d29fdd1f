package view

import (
	"encoding/json"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// TestOneFilePerFunction: the front-end makes one function per name and
// file, so every address of a function is answered with the one file the
// function is shown under (the file most of its lines are in), each with
// its own line; otherwise CPython's interpreter loop is two functions.
func TestOneFilePerFunction(t *testing.T) {
	p := &profile.Profile{
		Processes: []*profile.Process{{Pid: 1, Libs: []profile.Lib{{
			Start: 0x400000, End: 0x500000, Name: "app", Path: "/nonexistent/app",
			DebugName: testKey.DebugName, BreakpadID: testKey.BreakpadID,
		}}}},
		Symbols: &profile.SymbolTable{},
	}
	for addr, file := range map[uint64]string{0x1010: "bytecodes.c", 0x1020: "bytecodes.c", 0x1030: "generated_cases.c.h"} {
		p.Symbols.Add(testKey, addr, []profile.SymbolFrame{{Function: "eval", FuncAddr: 0x1000, FuncSize: 0x100, File: file, Line: int(addr)}})
	}
	s, err := New(Config{Profile: p, Data: []byte(`{"meta":{}}`), Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := do(t, s, "POST", "/"+testToken+"/symbolicate/v5",
		`{"memoryMap":[["app","0123456789ABCDEF0123456789ABCDEF0"]],"stacks":[[[0,4112],[0,4144]]]}`, nil)
	var resp struct {
		Results []v5Result `json:"results"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || len(resp.Results) != 1 {
		t.Fatalf("response %s: %v", w.Body, err)
	}
	st := resp.Results[0].Stacks[0]
	if len(st) != 2 || st[0].File != "bytecodes.c" || st[1].File != "bytecodes.c" || st[1].Line != 0x1030 {
		t.Errorf("frames %+v, want both in bytecodes.c, the second at line %d", st, 0x1030)
	}
}

package cmd

import (
	"bytes"
	"strings"
	"testing"
)

func TestInspectPDB(t *testing.T) {
	var out bytes.Buffer
	if err := inspectPDBFile(&out, "../pdb/testdata/CppCon.pdb", []string{"0x1000", "12ee", "0x99999999"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"0x1000\tmain+0x0\tC:\\PerfViewTestData\\CppCon\\CppCon.cpp:8",
		"12ee\t__security_check_cookie+0x4\t",
		"0x99999999\t??",
	}
	if len(lines) != len(want) {
		t.Fatalf("output:\n%s", out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}
	out.Reset()
	if err := inspectPDBFile(&out, "../pdb/testdata/CppCon.pdb", nil); err != nil || !strings.Contains(out.String(), "breakpad id: 12DC0A4FBD7D4F2AA9BE263BACAEB4675") {
		t.Errorf("identity: %v\n%s", err, out.String())
	}
	if err := inspectPDBFile(&out, "../pdb/testdata/CppCon.pdb", []string{"zz"}); err == nil {
		t.Error("no error for a bad address")
	}
}

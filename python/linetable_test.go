package python

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// lineScript prints a function's line table and, for every instruction,
// the line CPython itself gives it (co_lines from 3.10, line starts before).
const lineScript = `
import sys, dis, json
def f(x):
    y = 0
    for i in range(x):
        if i % 3:
            y += i
        else:
            y -= 1
    try:
        z = 1 / 0
    except ZeroDivisionError:
        z = 2
    return [y + z
            for _ in range(2)]
co = f.__code__
tab = co.co_linetable if sys.version_info >= (3, 10) else co.co_lnotab
out = {"first": co.co_firstlineno, "table": tab.hex(), "lines": []}
if sys.version_info >= (3, 10):
    for s, e, l in co.co_lines():
        for o in range(s, e, 2):
            out["lines"].append([o, l or 0])
else:
    starts = list(dis.findlinestarts(co))
    for o in range(0, len(co.co_code), 2):
        out["lines"].append([o, [ln for so, ln in starts if so <= o][-1]])
print(json.dumps(out))
`

// TestLineTables decodes each pyenv CPython's line table of a function
// and checks every instruction's line against what that CPython says.
func TestLineTables(t *testing.T) {
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		root = "/root/.pyenv"
	}
	ran := 0
	for minor, v := range map[int]string{8: "3.8.18", 9: "3.9.18", 10: "3.10.13", 11: "3.11.7", 12: "3.12.1", 13: "3.13.0"} {
		py := filepath.Join(root, "versions", v, "bin", "python3")
		if _, err := os.Stat(py); err != nil {
			continue
		}
		ran++
		b, err := exec.Command(py, "-c", lineScript).Output()
		if err != nil {
			t.Fatalf("%s: %v", py, err)
		}
		var got struct {
			First int32
			Table string
			Lines [][2]int64
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		tab, _ := hex.DecodeString(got.Table)
		bad := 0
		for _, ol := range got.Lines {
			off, want := ol[0], int32(ol[1])
			if want == 0 {
				continue // no line
			}
			var line int32
			switch {
			case minor < 10:
				line = lineLnotab(tab, got.First, off)
			case minor == 10:
				line = lineTable310(tab, got.First, off)
			default:
				line = lineLocations(tab, got.First, off/2)
			}
			if line != want {
				bad++
				if bad < 5 {
					t.Errorf("3.%d: instruction at %d: line %d, want %d", minor, off, line, want)
				}
			}
		}
		if len(got.Lines) < 20 {
			t.Errorf("3.%d: only %d instructions", minor, len(got.Lines))
		}
	}
	if ran == 0 {
		t.Skip("no pyenv CPython")
	}
}

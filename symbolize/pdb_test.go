package symbolize

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gprof-dev/gprof/pdb"
)

// TestOpenPDB: a PE file whose CodeView record carries a PDB's GUID and
// age gets its names from that PDB, found next to it or in a symbol
// directory's symbol-server layout; one whose age differs does not. The
// PE file is a stripped MinGW build whose RSDS record is rewritten to
// name pdb/testdata/CppCon.pdb.
func TestOpenPDB(t *testing.T) {
	if _, err := exec.LookPath("x86_64-w64-mingw32-gcc"); err != nil {
		t.Skip("x86_64-w64-mingw32-gcc is not installed (./test.sh installs it)")
	}
	p, err := pdb.Open("../pdb/testdata/CppCon.pdb")
	if err != nil {
		t.Fatal(err)
	}
	var fn pdb.Func
	for _, f := range p.Funcs {
		if f.Size > 16 && f.Name != "" {
			fn = f
			break
		}
	}
	if fn.Name == "" {
		t.Fatal("no function in CppCon.pdb")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "t.c")
	os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644)
	exe := filepath.Join(dir, "t.exe")
	if b, err := exec.Command("x86_64-w64-mingw32-gcc", "-s", "-Wl,--build-id", "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("mingw: %v\n%s", err, b)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte("RSDS"))
	if i < 0 {
		t.Fatal("no RSDS record")
	}
	write := func(name string, age uint32) string {
		d := bytes.Clone(data)
		copy(d[i+4:], p.GUID[:])
		binary.LittleEndian.PutUint32(d[i+20:], age)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, d, 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	pdbData, err := os.ReadFile("../pdb/testdata/CppCon.pdb")
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(exe string, dirs ...string) (string, string) {
		o, err := OpenObject(exe, []Option{SymbolDirs(dirs...)})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		fr := o.Lookup(uint64(fn.RVA))
		name := ""
		if len(fr) > 0 {
			name = fr[len(fr)-1].Function
		}
		return name, o.DebugFile()
	}

	// Next to the binary, under the binary's name (MinGW's record names
	// no file).
	good := write("good.exe", p.Age)
	os.WriteFile(filepath.Join(dir, "good.pdb"), pdbData, 0o644)
	if name, dbg := lookup(good); name != fn.Name || dbg != filepath.Join(dir, "good.pdb") {
		t.Errorf("next to the binary: %q from %q, want %q from good.pdb", name, dbg, fn.Name)
	}

	// Another age: the PDB is not used.
	stale := write("stale.exe", p.Age+1)
	os.WriteFile(filepath.Join(dir, "stale.pdb"), pdbData, 0o644)
	if name, dbg := lookup(stale); name == fn.Name || dbg != "" {
		t.Errorf("a PDB of another build was used: %q from %q", name, dbg)
	}

	// In a symbol directory, symbol-server layout.
	sym := t.TempDir()
	other := write("other.exe", p.Age)
	sub := filepath.Join(sym, "other.pdb", p.BreakpadID())
	os.MkdirAll(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "other.pdb"), pdbData, 0o644)
	if name, _ := lookup(other); name == fn.Name {
		t.Errorf("found without the symbol directory")
	}
	if name, dbg := lookup(other, sym); name != fn.Name || dbg != filepath.Join(sub, "other.pdb") {
		t.Errorf("symbol server layout: %q from %q, want %q", name, dbg, fn.Name)
	}
}

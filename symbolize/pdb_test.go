package symbolize

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gprof-dev/gprof/pdb"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/symbolize/remote"
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

// TestSymbolServer: a PE file's PDB, found neither next to it nor in a
// symbol directory, comes from a symbol server (a local HTTP server laid
// out as Microsoft's: NAME.pdb/GUIDAGE/NAME.pdb), is cached, and is taken
// from the cache the next time; a module known only by its PDB's name and
// ID (as an ETL trace names one) gets its names the same way.
func TestSymbolServer(t *testing.T) {
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
	pdbData, err := os.ReadFile("../pdb/testdata/CppCon.pdb")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "t.c")
	os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644)
	exe := filepath.Join(dir, "CppCon.exe")
	if b, err := exec.Command("x86_64-w64-mingw32-gcc", "-s", "-Wl,--build-id", "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("mingw: %v\n%s", err, b)
	}
	data, _ := os.ReadFile(exe)
	i := bytes.Index(data, []byte("RSDS"))
	if i < 0 {
		t.Fatal("no RSDS record")
	}
	copy(data[i+4:], p.GUID[:])
	binary.LittleEndian.PutUint32(data[i+20:], p.Age)
	os.WriteFile(exe, data, 0o755)

	// The server's tree: GUID in upper case, age in hex.
	id := strings.ToUpper(p.BreakpadID())
	served := t.TempDir()
	os.MkdirAll(filepath.Join(served, "CppCon.pdb", id), 0o755)
	os.WriteFile(filepath.Join(served, "CppCon.pdb", id, "CppCon.pdb"), pdbData, 0o644)
	var asked []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		http.StripPrefix("/symbols", http.FileServer(http.Dir(served))).ServeHTTP(w, r)
	}))
	defer srv.Close()
	cache := t.TempDir()
	client := func() *remote.Client {
		return remote.New(remote.Config{SymbolServers: []string{srv.URL + "/symbols"}, SymbolCache: cache})
	}
	lookup := func(rc *remote.Client) (string, string) {
		o, err := OpenObject(exe, []Option{Remote(rc)})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		fr := o.Lookup(uint64(fn.RVA))
		if len(fr) == 0 {
			return "", o.DebugFile()
		}
		return fr[len(fr)-1].Function, o.DebugFile()
	}
	os.Remove(filepath.Join(dir, "CppCon.pdb"))
	if name, _ := lookup(nil); name == fn.Name {
		t.Fatal("named without the server")
	}
	rc := client()
	name, dbg := lookup(rc)
	want := filepath.Join(cache, "CppCon.pdb", id, "CppCon.pdb")
	if name != fn.Name || dbg != want {
		t.Errorf("from the server: %q from %s, want %q from %s", name, dbg, fn.Name, want)
	}
	if len(asked) != 1 || asked[0] != "/symbols/CppCon.pdb/"+id+"/CppCon.pdb" {
		t.Errorf("asked for %v", asked)
	}
	if f := rc.Fetched(); len(f) != 1 || f[0].Bytes != int64(len(pdbData)) {
		t.Errorf("Fetched() = %+v", f)
	}
	// Cached: the next run asks nothing.
	if name, _ := lookup(client()); name != fn.Name || len(asked) != 1 {
		t.Errorf("from the cache: %q, %d requests", name, len(asked))
	}

	// A module known by its PDB alone, as a trace read elsewhere names it.
	prof := &profile.Profile{Processes: []*profile.Process{{Pid: 1, Libs: []profile.Lib{{
		Start: 0x400000, End: 0x500000, Name: "CppCon.exe", Path: `C:\app\CppCon.exe`,
		DebugName: "CppCon.pdb", DebugPath: `C:\app\CppCon.pdb`, BreakpadID: p.BreakpadID(), Arch: "x86",
	}}}}}
	th := &profile.Thread{Tid: 1, Main: true}
	th.Samples.Add(th.InternStack([]profile.Frame{{Address: 0x400000 + uint64(fn.RVA)}}), 0, 0)
	prof.Processes[0].Threads = []*profile.Thread{th}
	if _, err := Profile(prof, Options{Remote: client()}); err != nil {
		t.Fatal(err)
	}
	fr := prof.Symbols.Lookup(prof.Processes[0].Libs[0].Key(), uint64(fn.RVA))
	if len(fr) == 0 || fr[len(fr)-1].Function != fn.Name {
		t.Errorf("a module known by its PDB: %+v, want %s", fr, fn.Name)
	}
}

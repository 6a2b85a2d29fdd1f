package etl

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gprof-dev/gprof/etwevent/etwtest"

	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/symbolize"
	"github.com/gprof-dev/gprof/symbolize/remote"
)

// TestSymbolServerRequests: read on a machine that has none of its
// binaries, the PerfView trace's modules are asked of a symbol server by
// the PDB name and ID (GUID and age) its RSDS events give, in the
// server's layout, each PDB once however many processes loaded it.
func TestSymbolServerRequests(t *testing.T) {
	p, err := Read(bytes.NewReader(etwtest.PerfViewTrace(t)))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	asked := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked[r.URL.Path]++
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer srv.Close()
	rc := remote.New(remote.Config{SymbolServers: []string{srv.URL}, SymbolCache: t.TempDir()})
	p.Symbols = nil
	if _, err := symbolize.Profile(p, symbolize.Options{Remote: rc}); err != nil {
		t.Fatal(err)
	}
	// What the trace says of the test program's ntdll (WOW64: the 32-bit
	// one is wntdll.pdb).
	want := map[string]bool{}
	for _, pr := range p.Processes {
		if pr.Pid != 3644 {
			continue
		}
		// The modules its frames are in.
		for _, th := range pr.Threads {
			for _, f := range th.Frames.Frames {
				l := profile.FindLib(pr.Libs, f.Address)
				if f.Label == "" && l != nil && strings.HasSuffix(strings.ToLower(l.DebugName), ".pdb") && strings.Trim(l.BreakpadID, "0") != "" {
					want["/"+l.DebugName+"/"+strings.ToUpper(l.BreakpadID)+"/"+l.DebugName] = true
				}
			}
		}
	}
	if len(want) < 5 {
		t.Fatalf("Test.x86.exe has %d modules with a PDB identity", len(want))
	}
	for path := range want {
		if asked[path] == 0 {
			t.Errorf("never asked for %s", path)
		}
	}
	for path, n := range asked {
		parts := strings.Split(path, "/")
		if len(parts) != 4 || parts[1] != parts[3] || len(parts[2]) < 33 || strings.ToUpper(parts[2]) != parts[2] {
			t.Errorf("asked for %s, not NAME/ID/NAME", path)
		}
		if n != 1 {
			t.Errorf("asked for %s %d times", path, n)
		}
	}
	t.Logf("%d PDBs asked for, e.g. %v", len(asked), func() string {
		for p := range want {
			if strings.Contains(p, "ntdll") {
				return p
			}
		}
		return ""
	}())
}

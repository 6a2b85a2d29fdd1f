package remote

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var buildID = []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4}

// serve answers /buildid/deadbeef01020304/debuginfo with body and counts
// the requests.
func serve(t *testing.T, body string, hits *atomic.Int32) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/buildid/deadbeef01020304/debuginfo" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s
}

func TestFetchAndCache(t *testing.T) {
	var hits, missHits atomic.Int32
	miss := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		missHits.Add(1)
		http.NotFound(w, r)
	}))
	defer miss.Close()
	s := serve(t, "the debug file", &hits)
	cache := t.TempDir()
	c := New(Config{Debuginfod: []string{miss.URL, s.URL + "/"}, DebuginfodCache: cache})
	p, err := c.DebugInfo(buildID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "deadbeef01020304", "debuginfo"); p != want {
		t.Errorf("cached at %s, want elfutils' layout %s", p, want)
	}
	if b, _ := os.ReadFile(p); string(b) != "the debug file" {
		t.Errorf("cached %q", b)
	}
	f := c.Fetched()
	if len(f) != 1 || f[0].URL != s.URL+"/buildid/deadbeef01020304/debuginfo" || f[0].Bytes != 14 {
		t.Errorf("Fetched() = %+v", f)
	}
	if sum := c.Summary(); !strings.HasPrefix(sum, "fetched 1 debug file (14 bytes): http://") {
		t.Errorf("Summary() = %q", sum)
	}
	// A new run finds it in the cache, asking no server.
	c2 := New(Config{Debuginfod: []string{s.URL}, DebuginfodCache: cache})
	if p2, err := c2.DebugInfo(buildID, nil); err != nil || p2 != p {
		t.Errorf("second run: %s, %v", p2, err)
	}
	if hits.Load() != 1 || missHits.Load() != 1 || len(c2.Fetched()) != 0 {
		t.Errorf("servers asked %d and %d times, want once each", hits.Load(), missHits.Load())
	}
	// No server has another build: not found, and nothing cached.
	if _, err := c.DebugInfo([]byte{1, 2, 3, 4, 5, 6, 7, 8}, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("a build no server has: %v", err)
	}
}

// A file that is not the build asked for (verify says so) is not cached,
// and no temporary file is left.
func TestVerifiedBeforeCached(t *testing.T) {
	var hits atomic.Int32
	s := serve(t, "not an ELF file", &hits)
	cache := t.TempDir()
	c := New(Config{Debuginfod: []string{s.URL}, DebuginfodCache: cache})
	_, err := c.DebugInfo(buildID, func(string) error { return errors.New("wrong build") })
	if err == nil || !strings.Contains(err.Error(), "wrong build") {
		t.Fatalf("err = %v", err)
	}
	var left []string
	filepath.Walk(cache, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if len(left) != 0 {
		t.Errorf("left in the cache: %v", left)
	}
}

// A server that accepts but never answers costs one timeout per run, not
// one per file.
func TestSilentServerOncePerRun(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, conn) // held open, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	const timeout = 300 * time.Millisecond
	c := New(Config{Debuginfod: []string{"http://" + ln.Addr().String()}, DebuginfodCache: t.TempDir(), Timeout: timeout})
	start := time.Now()
	for i := range 5 {
		id := append([]byte(nil), buildID...)
		id[0] = byte(i)
		if _, err := c.DebugInfo(id, nil); err == nil {
			t.Fatal("a silent server sent a file")
		}
	}
	// One timeout, not five; generous for a loaded machine.
	if d := time.Since(start); d > 3*timeout+time.Second {
		t.Errorf("5 lookups took %v with a %v timeout", d, timeout)
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("the silent server was asked %d times, want once", n)
	}
	if d := c.Down(); len(d) != 1 {
		t.Errorf("Down() = %v", d)
	}
}

// A transfer that stalls midway is given up after the timeout.
func TestStalledTransfer(t *testing.T) {
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte("half"))
		w.(http.Flusher).Flush()
		<-release
	}))
	defer s.Close()
	defer close(release)
	c := New(Config{Debuginfod: []string{s.URL}, DebuginfodCache: t.TempDir(), Timeout: 200 * time.Millisecond})
	done := make(chan error, 1)
	go func() { _, err := c.DebugInfo(buildID, nil); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "silent") {
			t.Errorf("err = %v, want a stall", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled transfer was never given up")
	}
}

// The same file asked for at once by several lookups is fetched once.
func TestConcurrentSameFile(t *testing.T) {
	var hits atomic.Int32
	s := serve(t, "x", &hits)
	c := New(Config{Debuginfod: []string{s.URL}, DebuginfodCache: t.TempDir()})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.DebugInfo(buildID, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if hits.Load() != 1 {
		t.Errorf("fetched %d times", hits.Load())
	}
}

func TestPDBLayout(t *testing.T) {
	var got atomic.Value
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.URL.Path)
		w.Write([]byte("pdb"))
	}))
	defer s.Close()
	cache := t.TempDir()
	c := New(Config{SymbolServers: []string{s.URL + "/symbols"}, SymbolCache: cache})
	p, err := c.PDB("ntdll.pdb", "1eb5a3b0a4cc41f1b5b4d6b2a9a3d6c21", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "/symbols/ntdll.pdb/1EB5A3B0A4CC41F1B5B4D6B2A9A3D6C21/ntdll.pdb"; got.Load() != want {
		t.Errorf("asked for %v, want %s", got.Load(), want)
	}
	if want := filepath.Join(cache, "ntdll.pdb", "1EB5A3B0A4CC41F1B5B4D6B2A9A3D6C21", "ntdll.pdb"); p != want {
		t.Errorf("cached at %s, want %s", p, want)
	}
	for _, name := range []string{"../x.pdb", `a\b.pdb`, ".."} {
		if _, err := c.PDB(name, "AB1", nil); err == nil {
			t.Errorf("PDB(%q) was asked for", name)
		}
	}
	if New(Config{}) != nil {
		t.Error("a client with no server")
	}
	var none *Client
	if _, err := none.DebugInfo(buildID, nil); !errors.Is(err, ErrNotFound) || none.Summary() != "" {
		t.Error("a nil client")
	}
}

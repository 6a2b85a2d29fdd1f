//go:build linux

package e2e

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/symbolize"
)

// startDebuginfod runs elfutils' debuginfod on 127.0.0.1 over dir and
// waits until it serves buildID's debuginfo; it returns its URL.
func startDebuginfod(t *testing.T, dir, buildID string) string {
	t.Helper()
	bin, err := exec.LookPath("debuginfod")
	if err != nil {
		t.Skip("debuginfod is not installed (./test.sh installs it)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// -F: index the ELF files under dir; -d: its database, of its own.
	cmd := exec.Command(bin, "-F", "-p", strconv.Itoa(port), "-d", filepath.Join(t.TempDir(), "db.sqlite"), "-t", "0", dir)
	cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS=") // no federation
	log := filepath.Join(t.TempDir(), "debuginfod.log")
	lf, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		lf.Close()
	})
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url + "/buildid/" + buildID + "/debuginfo") // it answers GET only
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	b, _ := os.ReadFile(log)
	t.Fatalf("debuginfod did not serve %s within a minute:\n%s", buildID, b)
	return ""
}

// TestDebuginfod: a stripped binary (no symbols, no DWARF, no debug file
// anywhere gprof looks) is named, with files and lines, through a real
// debuginfod server that holds its debug file, found by build-id; the
// file is cached where elfutils' client caches it, and the summary says
// what was fetched.
func TestDebuginfod(t *testing.T) {
	for _, tool := range []string{"objcopy", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	src := buildC(t, "split")
	served := t.TempDir()
	debug := filepath.Join(served, "split.debug")
	if b, err := exec.Command("objcopy", "--only-keep-debug", src, debug).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, b)
	}
	bin := filepath.Join(t.TempDir(), "split-stripped")
	if b, err := exec.Command("strip", "--strip-all", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v\n%s", err, b)
	}
	b, err := symbolize.Open(bin, symbolize.NoSeparateDebug())
	if err != nil {
		t.Fatal(err)
	}
	id := b.Identity().CodeID
	b.Close()
	if id == "" {
		t.Fatal("the binary has no build-id")
	}
	// The server also has the stripped executable, for a profile read
	// where the binary is not (below).
	copyFile(t, bin, filepath.Join(served, "split-stripped"))
	url := startDebuginfod(t, served, id)
	cache := t.TempDir()
	t.Setenv("DEBUGINFOD_CACHE_PATH", cache)
	t.Setenv("DEBUGINFOD_URLS", "")

	// Without the server: no names.
	raw := filepath.Join(t.TempDir(), "raw.json.gz")
	mustRecord(t, "-q", "--no-symbols", "-o", raw, "--", bin, "1", "0.3")
	if rep := runReport(t, raw); hasFunc(rep, "work_a") {
		t.Fatal("work_a is named with no debug file")
	}
	out := filepath.Join(t.TempDir(), "p.json.gz")

	// Recording with the server (--debuginfod): names, files and lines.
	js := filepath.Join(t.TempDir(), "sum.json")
	r := gprof(t, "record", "--debuginfod", url, "--json-output", js, "-o", out, "--", bin, "1", "0.3")
	if r.code != 0 {
		t.Fatalf("record --debuginfod: exit %d: %s", r.code, r.stderr)
	}
	rep := runReport(t, out)
	f, ok := findFunc(rep.All.TopSelf, "work_a")
	if !ok || !strings.HasSuffix(f.File, "split.c") || f.Line == 0 {
		t.Errorf("work_a: %+v (listed %v), want it with its file and line", f, ok)
	}
	want := url + "/buildid/" + id + "/debuginfo"
	if !strings.Contains(r.stderr, "fetched 1 debug file") || !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not say what was fetched:\n%s", r.stderr)
	}
	var sum struct {
		Fetched []struct {
			URL   string `json:"url"`
			Path  string `json:"path"`
			Bytes int64  `json:"bytes"`
		} `json:"fetched"`
	}
	sumJSON, _ := os.ReadFile(js)
	if err := json.Unmarshal(sumJSON, &sum); err != nil || len(sum.Fetched) != 1 || sum.Fetched[0].URL != want ||
		sum.Fetched[0].Path != filepath.Join(cache, id, "debuginfo") || sum.Fetched[0].Bytes == 0 {
		t.Errorf("summary's fetched: %+v (%v)\n%s", sum.Fetched, err, sumJSON)
	}

	// The profile recorded without names gets them in report, through
	// $DEBUGINFOD_URLS, from the cache that the recording filled:
	// nothing is fetched again.
	t.Setenv("DEBUGINFOD_URLS", url)
	r = gprof(t, "report", raw)
	if r.code != 0 || !strings.Contains(r.stdout, "work_a") || strings.Contains(r.stderr, "fetched") {
		t.Errorf("report via $DEBUGINFOD_URLS, cached: exit %d, stderr %q", r.code, r.stderr)
	}

	// With the cache gone and a server that is down listed first: the
	// run gives up on it, says so, and fetches from the next one.
	os.RemoveAll(cache)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	t.Setenv("DEBUGINFOD_URLS", dead+" "+url)
	r = gprof(t, "report", raw)
	if r.code != 0 || !strings.Contains(r.stdout, "work_a") || !strings.Contains(r.stderr, "gave up on server "+dead) || !strings.Contains(r.stderr, "fetched 1 debug file") {
		t.Errorf("with a dead server first: exit %d, stderr %q", r.code, r.stderr)
	}

	// Where the binary itself is gone (a profile read on another
	// machine): the executable and then its debug file, both by
	// build-id.
	os.RemoveAll(cache)
	os.Remove(bin)
	t.Setenv("DEBUGINFOD_URLS", url)
	r = gprof(t, "report", raw)
	if r.code != 0 || !strings.Contains(r.stdout, "work_a") || !strings.Contains(r.stderr, "fetched 2 debug files") ||
		!strings.Contains(r.stderr, url+"/buildid/"+id+"/executable") {
		t.Errorf("with the binary gone: exit %d, stderr %q", r.code, r.stderr)
	}
}

func hasFunc(rep reportJSON, name string) bool {
	_, ok := findFunc(rep.All.TopTotal, name)
	return ok
}

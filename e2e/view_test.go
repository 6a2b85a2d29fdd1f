//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/analysis/report"
	"github.com/gprof-dev/gprof/format"
	"github.com/gprof-dev/gprof/profile"
)

// TestViewNamesLikeReport records C and Go programs, serves each profile
// with 'gprof view --no-open', names every frame through its
// /symbolicate/v5 API as the Firefox Profiler does (a leaf at its
// address, a caller one byte lower), and checks that the folded stacks
// equal 'gprof report --format collapsed': with the binary on disk, after
// deleting it (stored names), and for a profile recorded without names
// (from the binary).
func TestViewNamesLikeReport(t *testing.T) {
	t.Run("C", func(t *testing.T) {
		dir := t.TempDir()
		bin := filepath.Join(dir, "split")
		copyFile(t, buildC(t, "split"), bin)
		out := filepath.Join(dir, "p.json.gz")
		mustRecord(t, "-q", "-o", out, "--", bin, "2", "0.3")
		bare := filepath.Join(dir, "bare.json.gz")
		mustRecord(t, "-q", "--no-symbols", "-o", bare, "--", bin, "1", "0.3")

		checkViewNames(t, out, "work_a")
		checkViewNames(t, bare, "work_a")
		checkViewPProf(t, out)
		checkSourceAsm(t, out, "work_a", true)
		if err := os.Remove(bin); err != nil {
			t.Fatal(err)
		}
		checkViewNames(t, out, "work_a")
		checkSourceAsm(t, out, "work_a", false)
	})
	t.Run("Go", func(t *testing.T) {
		dir := t.TempDir()
		bin := filepath.Join(dir, "gohot")
		if b, err := rootCommand("go", "build", "-o", bin, "./testdata/gohot").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, b)
		}
		out := filepath.Join(dir, "g.json.gz")
		mustRecord(t, "-q", "-o", out, "--", bin)
		checkViewNames(t, out, "main.hot")
		if err := os.Remove(bin); err != nil {
			t.Fatal(err)
		}
		checkViewNames(t, out, "main.hot")
	})
	t.Run("perl", func(t *testing.T) {
		perl, err := exec.LookPath("perl")
		if err != nil {
			t.Skip("perl is not installed")
		}
		out := filepath.Join(t.TempDir(), "perl.json.gz")
		// Kernel frames too, where the kernel permits them: system
		// calls reading /proc.
		mustRecord(t, "-q", "-k", "-o", out, "--", perl, "-e",
			`for (1 .. 300) { open my $f, "<", "/proc/self/status"; my @l = <$f> } my $s = 0; $s += sqrt($_) for 1 .. 2e6; print "$s\n"`)
		checkViewNames(t, out, "Perl_runops_standard")
		// Without stored names: perl's from the binary, the kernel's
		// from /proc/kallsyms.
		bare := filepath.Join(t.TempDir(), "bare.json.gz")
		mustRecord(t, "-q", "-k", "--no-symbols", "-o", bare, "--", perl, "-e",
			`for (1 .. 300) { open my $f, "<", "/proc/self/status"; my @l = <$f> }`)
		checkViewNames(t, bare, "main")
	})
}

// TestViewRefusals checks what gprof view refuses before serving: a bad
// profile, and an address other machines can reach without
// --allow-remote. Each is one line on stderr and no URL.
func TestViewRefusals(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"meta": {"version": 36}, "threads": 7}`), 0o644); err != nil {
		t.Fatal(err)
	}
	good := repoPath("format", "gecko", "testdata", "firefox-v25.json")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"view", "--no-open", bad}, 1, "cannot read profile"},
		{[]string{"view", "--no-open", filepath.Join(dir, "missing.json")}, 1, "does not exist"},
		{[]string{"view", "--no-open", "--address", "0.0.0.0", good}, 2, "--allow-remote"},
		{[]string{"view", "--no-open", "--port", "70000", good}, 2, "--port"},
		{[]string{"view", "--no-open"}, 2, "give a profile"},
	} {
		r := gprof(t, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || r.stdout != "" {
			t.Errorf("gprof %s: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", strings.Join(c.args, " "), r.code, r.stdout, r.stderr, c.code, c.msg)
		}
	}
}

// checkViewPProf serves a pprof file, which the front-end cannot read: it
// gets the processed format, with the names applied.
func checkViewPProf(t *testing.T, gecko string) {
	t.Helper()
	pb := strings.TrimSuffix(gecko, ".json.gz") + ".pb.gz"
	if r := gprof(t, "convert", gecko, "--to", "pprof", "-o", pb); r.code != 0 {
		t.Fatalf("convert --to pprof: exit %d: %s", r.code, r.stderr)
	}
	resp, err := http.Get(startView(t, pb) + "/profile.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Meta struct {
			PreprocessedProfileVersion int  `json:"preprocessedProfileVersion"`
			Symbolicated               bool `json:"symbolicated"`
		} `json:"meta"`
		Shared struct {
			StringArray []string `json:"stringArray"`
		} `json:"shared"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("profile.json of a pprof file: %v", err)
	}
	if v.Meta.PreprocessedProfileVersion == 0 || !v.Meta.Symbolicated || !slices.Contains(v.Shared.StringArray, "work_a") {
		t.Errorf("a pprof file is not served as a processed profile with names: meta %+v, %d strings", v.Meta, len(v.Shared.StringArray))
	}
}

// checkSourceAsm asks gprof view for the source and the assembly of
// function fn, as the front-end's source and assembly views do: the source
// file its debug info names, and the disassembly while the binary exists.
func checkSourceAsm(t *testing.T, path, fn string, haveBinary bool) {
	t.Helper()
	p, _, err := format.File(path)
	if err != nil {
		t.Fatal(err)
	}
	var key profile.LibKey
	var addr uint64
	var sym profile.SymbolFrame
	for k, ls := range p.Symbols.Libs {
		for a, frames := range ls.Addresses {
			if frames[0].Function == fn && frames[0].FuncSize > 0 {
				key, addr, sym = k, a, frames[0]
			}
		}
	}
	if sym.Function == "" {
		t.Fatalf("no stored name %s with a size", fn)
	}
	base := startView(t, path)
	post := func(api string, req map[string]any) (int, map[string]any) {
		body, _ := json.Marshal(req)
		resp, err := http.Post(base+api, "text/plain;charset=UTF-8", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	hex := func(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }
	code, src := post("/source/v1", map[string]any{"debugName": key.DebugName, "debugId": key.BreakpadID, "moduleOffset": hex(addr), "file": sym.File})
	// A relative path (gcc was given one) counts from the compilation
	// directory, which only the binary knows.
	if text, _ := src["source"].(string); (haveBinary || filepath.IsAbs(sym.File)) && (code != 200 || !strings.Contains(text, fn+"(")) {
		t.Errorf("/source/v1 of %s: status %d, %.200v", sym.File, code, src)
	} else if !haveBinary && !filepath.IsAbs(sym.File) && code != 404 {
		t.Errorf("/source/v1 of relative %s with no binary: status %d, want 404", sym.File, code)
	}
	if code, v := post("/source/v1", map[string]any{"debugName": key.DebugName, "debugId": key.BreakpadID, "moduleOffset": hex(addr), "file": "/etc/passwd"}); code != 404 {
		t.Errorf("/source/v1 of /etc/passwd: status %d, %.200v", code, v)
	}
	code, asm := post("/asm/v1", map[string]any{"debugName": key.DebugName, "debugId": key.BreakpadID, "startAddress": hex(sym.FuncAddr), "size": hex(sym.FuncSize), "continueUntilFunctionEnd": false})
	insts, _ := asm["instructions"].([]any)
	switch {
	case haveBinary && (code != 200 || asm["startAddress"] != hex(sym.FuncAddr) || len(insts) < 3):
		t.Errorf("/asm/v1 of %s: status %d, %.300v", fn, code, asm)
	case !haveBinary && code != 404:
		t.Errorf("/asm/v1 of %s, binary deleted: status %d, want 404", fn, code)
	}
}

// checkViewNames compares the folded stacks of the profile at path as
// named by gprof view's symbol server with report's; want is a function
// that must be among them.
func checkViewNames(t *testing.T, path, want string) {
	t.Helper()
	r := gprof(t, "report", "--format", "collapsed", path)
	if r.code != 0 {
		t.Fatalf("report: exit %d: %s", r.code, r.stderr)
	}
	fromReport := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseInt(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("report line %q", line)
		}
		// Drop the thread name, the root of each line.
		_, stack, _ := strings.Cut(line[:i], ";")
		fromReport[stack] += n
	}

	base := startView(t, path)
	fromView := viewFolded(t, path, base)
	if !strings.Contains(fmt.Sprint(fromView), want) {
		t.Errorf("%s is not among the names from view", want)
	}
	var diff []string
	for k, n := range fromReport {
		if fromView[k] != n {
			diff = append(diff, fmt.Sprintf("report %d, view %d: %s", n, fromView[k], k))
		}
	}
	for k, n := range fromView {
		if _, ok := fromReport[k]; !ok {
			diff = append(diff, fmt.Sprintf("report 0, view %d: %s", n, k))
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		t.Errorf("%s: %d of %d stacks differ:\n%s", filepath.Base(path), len(diff), len(fromReport), strings.Join(diff[:min(len(diff), 20)], "\n"))
	}
}

// startView runs 'gprof view --no-open' on a free port and returns its
// symbol server URL, read from the URL it prints.
func startView(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command(gprofBin, "view", "--no-open", path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		io.Copy(io.Discard, stdout)
	}()
	var open string
	select {
	case open = <-line:
	case <-time.After(30 * time.Second):
		t.Fatalf("gprof view printed no URL: %s", stderr.String())
	}
	u, err := url.Parse(strings.TrimSpace(open))
	if err != nil || u.Query().Get("symbolServer") == "" {
		t.Fatalf("gprof view printed %q, not a front-end URL with a symbolServer (%v; stderr %s)", open, err, stderr.String())
	}
	return u.Query().Get("symbolServer")
}

type addrKey struct {
	lib  profile.LibKey
	addr uint64
}

// viewFolded names every sample's stack through the symbol server at
// base, the way the front-end asks for names, and folds them as report
// does, without the thread at the root.
func viewFolded(t *testing.T, path, base string) map[string]int64 {
	t.Helper()
	p, _, err := format.File(path)
	if err != nil {
		t.Fatal(err)
	}
	// What the front-end asks for: each native frame at its library-
	// relative address, nudged one byte into the call for callers.
	asks := map[profile.LibKey]map[uint64]bool{}
	ask := func(proc *profile.Process, f profile.Frame, caller bool) {
		l := profile.FindLib(proc.Libs, f.Address)
		if f.Label != "" || l == nil {
			return
		}
		a := l.Rel(f.Address)
		if caller {
			a--
		}
		if asks[l.Key()] == nil {
			asks[l.Key()] = map[uint64]bool{}
		}
		asks[l.Key()][a] = true
	}
	walk := func(visit func(proc *profile.Process, th *profile.Thread, sample int, frames []profile.Frame)) {
		for _, proc := range p.Processes {
			for _, th := range proc.Threads {
				for i, s := range th.Samples.Stack {
					var frames []profile.Frame // leaf first
					for ; s >= 0; s = th.Stacks.Prefix[s] {
						frames = append(frames, th.Frames.Frames[th.Stacks.Frame[s]])
					}
					visit(proc, th, i, frames)
				}
			}
		}
	}
	walk(func(proc *profile.Process, _ *profile.Thread, _ int, frames []profile.Frame) {
		for i, f := range frames {
			ask(proc, f, i > 0)
		}
	})

	type job struct {
		MemoryMap [][2]string   `json:"memoryMap"`
		Stacks    [][][2]uint64 `json:"stacks"`
	}
	var jobs []job
	var order [][]addrKey
	for k, set := range asks {
		var keys []addrKey
		var stack [][2]uint64
		for a := range set {
			keys = append(keys, addrKey{k, a})
			stack = append(stack, [2]uint64{0, a})
		}
		jobs = append(jobs, job{MemoryMap: [][2]string{{k.DebugName, k.BreakpadID}}, Stacks: [][][2]uint64{stack}})
		order = append(order, keys)
	}
	body, _ := json.Marshal(map[string]any{"jobs": jobs})
	resp, err := http.Post(base+"/symbolicate/v5", "text/plain;charset=UTF-8", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("/symbolicate/v5: status %s, CORS %q", resp.Status, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	var res struct {
		Results []struct {
			Stacks [][]struct {
				Function       *string `json:"function"`
				FunctionOffset *string `json:"function_offset"`
				Inlines        []struct {
					Function string `json:"function"`
				} `json:"inlines"`
			} `json:"stacks"`
		} `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != len(jobs) {
		t.Fatalf("%d results for %d jobs", len(res.Results), len(jobs))
	}
	names := map[addrKey][]string{} // outer function first
	for j, r := range res.Results {
		if len(r.Stacks) != 1 || len(r.Stacks[0]) != len(order[j]) {
			t.Fatalf("job %d: result has the wrong shape", j)
		}
		for i, f := range r.Stacks[0] {
			if f.Function == nil || f.FunctionOffset == nil {
				continue
			}
			n := []string{*f.Function}
			for k := len(f.Inlines) - 1; k >= 0; k-- {
				n = append(n, f.Inlines[k].Function)
			}
			names[order[j][i]] = n
		}
	}

	folded := map[string]int64{}
	walk(func(proc *profile.Process, th *profile.Thread, sample int, frames []profile.Frame) {
		var parts []string
		for i := len(frames) - 1; i >= 0; i-- {
			f := frames[i]
			l := profile.FindLib(proc.Libs, f.Address)
			switch {
			case f.Label != "":
				parts = append(parts, f.Label)
			case l == nil:
				parts = append(parts, "0x"+strconv.FormatUint(f.Address, 16))
			default:
				nudged := l.Rel(f.Address)
				if i > 0 {
					nudged--
				}
				n := names[addrKey{l.Key(), nudged}]
				if n == nil {
					// What the front-end shows for a frame the server
					// did not name.
					n = []string{"0x" + strconv.FormatUint(f.Address, 16)}
				}
				parts = append(parts, n...)
			}
		}
		for i, s := range parts {
			parts[i] = strings.ReplaceAll(report.Printable(s), ";", ":")
		}
		w := int64(1)
		if th.Samples.Weight != nil {
			w = int64(th.Samples.Weight[sample])
		}
		folded[strings.Join(parts, ";")] += w
	})
	return folded
}

// TestRecordView checks record --view: the profile is written, then
// served until Ctrl-C, and a failed command still exits 4 at the end.
func TestRecordView(t *testing.T) {
	if r := gprof(t, "record", "--view", "-o", "-", "--", "true"); r.code != 2 || !strings.Contains(r.stderr, "--view") {
		t.Errorf("record --view -o -: exit %d, %s; want a usage error", r.code, r.stderr)
	}
	out := filepath.Join(t.TempDir(), "p.json.gz")
	cmd := exec.Command(gprofBin, "record", "--view", "-o", out, "--", "sh", "-c", "exit 3")
	cmd.Env = append(os.Environ(), "DISPLAY=", "WAYLAND_DISPLAY=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Wait()
		skipIfNoPerf(t, result{stderr: stderr.String(), code: 1})
		t.Fatalf("no URL: %v; stderr %s", err, stderr.String())
	}
	u, err := url.Parse(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u.Query().Get("symbolServer") + "/profile.json")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if written, _ := os.ReadFile(out); resp.StatusCode != 200 || !bytes.Equal(served, written) {
		t.Errorf("served %d bytes (status %d), the file has %d", len(served), resp.StatusCode, len(written))
	}
	cmd.Process.Signal(os.Interrupt)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Errorf("record --view of a failed command: %v, want exit 4; stderr %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "ssh -L") {
		t.Errorf("no ssh hint without a display: %s", stderr.String())
	}
}

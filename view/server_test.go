package view

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/symbolize"
)

const testToken = "secrettoken0123456789abcdef"

var testKey = profile.LibKey{DebugName: "app", BreakpadID: "0123456789ABCDEF0123456789ABCDEF0"}

// newTestServer serves a profile of one library whose stored names say
// 0x1010 is in outer (which inlined inner there) and 0x2000 in leaf,
// with src as the source file of both levels at 0x1010.
func newTestServer(t *testing.T, src string) *Server {
	t.Helper()
	p := &profile.Profile{
		Processes: []*profile.Process{{Pid: 1, Libs: []profile.Lib{{
			Start: 0x400000, End: 0x500000, Name: "app", Path: "/nonexistent/app",
			DebugName: testKey.DebugName, BreakpadID: testKey.BreakpadID,
		}}, Threads: []*profile.Thread{{
			// One sample: 0x6000 (no names) called from 0x5000 (none).
			Frames:  profile.FrameTable{Frames: []profile.Frame{{Address: 0x405000}, {Address: 0x406000}}},
			Stacks:  profile.StackTable{Prefix: []int32{-1, 0}, Frame: []int32{0, 1}},
			Samples: profile.SampleTable{Stack: []int32{1}},
		}}}},
		Symbols: &profile.SymbolTable{},
	}
	p.Symbols.Add(testKey, 0x1010, []profile.SymbolFrame{
		{Function: "outer", FuncAddr: 0x1000, FuncSize: 0x40, File: src, Line: 10},
		{Function: "inner", File: src, Line: 3},
	})
	p.Symbols.Add(testKey, 0x2000, []profile.SymbolFrame{{Function: "leaf", FuncAddr: 0x1ff0, File: "/elsewhere/leaf.c", Line: 7}})
	s, err := New(Config{Profile: p, Data: []byte(`{"meta":{}}`), Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func do(t *testing.T, h http.Handler, method, path, body string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestSymbolicateStoredNames(t *testing.T) {
	s := newTestServer(t, "/src/a.c")
	req := `{"jobs":[
		{"memoryMap":[["app","0123456789ABCDEF0123456789ABCDEF0"]],"stacks":[[[0,4112],[0,8191],[0,12288],[1,5],[-1,5],[0,20479],[0,24576]]]},
		{"memoryMap":[["other","00000000000000000000000000000000"]],"stacks":[[[0,16]]]}]}`
	w := do(t, s, "POST", "/"+testToken+"/symbolicate/v5", req, nil)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if got := w.Header().Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("Access-Control-Allow-Origin = %q, want *", got)
	}
	var resp struct {
		Results []v5Result `json:"results"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 2 {
		t.Fatalf("%d results, want 2", len(resp.Results))
	}
	r0 := resp.Results[0]
	if !r0.FoundModules["app/"+testKey.BreakpadID] {
		t.Errorf("found_modules = %v, want app found", r0.FoundModules)
	}
	st := r0.Stacks[0]
	if len(st) != 7 {
		t.Fatalf("%d frames, want 7", len(st))
	}
	want0 := v5Frame{Frame: 0, ModuleOffset: "0x1010", Module: "app", Function: "outer", FunctionOffset: "0x10",
		FunctionSize: "0x40", File: "/src/a.c", Line: 10, Inlines: []v5Inline{{Function: "inner", File: "/src/a.c", Line: 3}}}
	if g, _ := json.Marshal(st[0]); string(g) != mustJSON(want0) {
		t.Errorf("frame 0 = %s\nwant      %s", g, mustJSON(want0))
	}
	// 0x1fff is the front-end's nudge of return address 0x2000.
	if st[1].Function != "leaf" || st[1].FunctionOffset != "0xf" || st[1].ModuleOffset != "0x1fff" {
		t.Errorf("nudged caller frame = %+v, want leaf at offset 0xf", st[1])
	}
	// Addresses nothing names are named as report names them, at the
	// frame's own address: a caller's is one byte above what is asked.
	for i, want := range map[int]string{2: "app+0x3000", 5: "app+0x5000", 6: "app+0x6000"} {
		if st[i].Function != want || st[i].FunctionOffset != "0x0" || st[i].Module != "app" {
			t.Errorf("unnamed address %s = %+v, want %s", st[i].ModuleOffset, st[i], want)
		}
	}
	if st[3].Function != "" || st[4].Function != "" || st[3].Frame != 3 {
		t.Errorf("frames of modules not in the memory map = %+v %+v", st[3], st[4])
	}
	if f, ok := resp.Results[1].FoundModules["other/00000000000000000000000000000000"]; !ok || f {
		t.Errorf("unknown module: found_modules = %v, want it false", resp.Results[1].FoundModules)
	}

	// samply's bare-job form.
	w = do(t, s, "POST", "/"+testToken+"/symbolicate/v5", `{"memoryMap":[["app","0123456789ABCDEF0123456789ABCDEF0"]],"stacks":[[[0,8192]]]}`, nil)
	if !strings.Contains(w.Body.String(), `"function":"leaf"`) {
		t.Errorf("bare job: %s", w.Body)
	}
	w = do(t, s, "POST", "/"+testToken+"/symbolicate/v5", `{"jobs":`, nil)
	if w.Code != 400 {
		t.Errorf("bad JSON: status %d, want 400", w.Code)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Every path is under the token; without it, or with a wrong one, the
// server is a 404 with no CORS header, whatever the method.
func TestTokenRefusals(t *testing.T) {
	s := newTestServer(t, "/src/a.c")
	for _, c := range []struct{ method, path string }{
		{"GET", "/profile.json"},
		{"GET", "/"},
		{"POST", "/symbolicate/v5"},
		{"OPTIONS", "/symbolicate/v5"},
		{"GET", "/wrongtoken/profile.json"},
		{"GET", "/" + testToken[:len(testToken)-1] + "/profile.json"},
		{"GET", "/" + testToken + "x/profile.json"},
		{"POST", "/" + strings.ToUpper(testToken) + "/symbolicate/v5"},
		{"GET", "//" + testToken + "/profile.json"},
	} {
		w := do(t, s, c.method, c.path, `{"jobs":[]}`, map[string]string{"Access-Control-Request-Method": "POST"})
		if w.Code != 404 || w.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s %s: status %d, CORS %q; want 404 and none", c.method, c.path, w.Code, w.Header().Get("Access-Control-Allow-Origin"))
		}
	}
	w := do(t, s, "GET", "/"+testToken+"/profile.json", "", nil)
	if w.Code != 200 || w.Body.String() != `{"meta":{}}` || w.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("with the token: status %d body %q", w.Code, w.Body)
	}
	if w := do(t, s, "GET", "/"+testToken+"/other", "", nil); w.Code != 404 {
		t.Errorf("unknown path under the token: status %d", w.Code)
	}
	if w := do(t, s, "GET", "/"+testToken+"/symbolicate/v5", "", nil); w.Code != 405 {
		t.Errorf("GET of an API: status %d, want 405", w.Code)
	}
	if w := do(t, s, "POST", "/"+testToken+"/profile.json", "", nil); w.Code != 405 {
		t.Errorf("POST of the profile: status %d, want 405", w.Code)
	}
}

func TestPreflight(t *testing.T) {
	s := newTestServer(t, "/src/a.c")
	w := do(t, s, "OPTIONS", "/"+testToken+"/symbolicate/v5", "", map[string]string{
		"Origin":                         "https://profiler.firefox.com",
		"Access-Control-Request-Method":  "POST",
		"Access-Control-Request-Headers": "Content-Type, User-Agent, X-Evil",
	})
	h := w.Header()
	if w.Code != 204 || h.Get("Access-Control-Allow-Origin") != "*" ||
		h.Get("Access-Control-Allow-Methods") != "GET, POST, OPTIONS" ||
		h.Get("Access-Control-Allow-Headers") != "content-type, user-agent" ||
		h.Get("Access-Control-Max-Age") == "" {
		t.Errorf("preflight: status %d, headers %v", w.Code, h)
	}
	if h.Get("Access-Control-Allow-Private-Network") != "" {
		t.Errorf("private network access allowed when not asked for")
	}
	// Chrome asks before a public https page reaches a loopback server.
	w = do(t, s, "OPTIONS", "/"+testToken+"/profile.json", "", map[string]string{
		"Origin":                                 "https://profiler.firefox.com",
		"Access-Control-Request-Method":          "GET",
		"Access-Control-Request-Private-Network": "true",
	})
	if w.Code != 204 || w.Header().Get("Access-Control-Allow-Private-Network") != "true" || w.Header().Get("Access-Control-Allow-Headers") != "" {
		t.Errorf("private network preflight: status %d, headers %v", w.Code, w.Header())
	}
	w = do(t, s, "OPTIONS", "/"+testToken+"/symbolicate/v5", "", nil)
	if w.Code != 204 || w.Header().Get("Allow") == "" || w.Header().Get("Access-Control-Allow-Methods") != "" {
		t.Errorf("plain OPTIONS: status %d, headers %v", w.Code, w.Header())
	}
}

func TestSourceRefusals(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "a.c")
	if err := os.WriteFile(src, []byte("int main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, src)
	req := func(off, file string) *httptest.ResponseRecorder {
		return do(t, s, "POST", "/"+testToken+"/source/v1", mustJSON(map[string]string{
			"debugName": "app", "debugId": testKey.BreakpadID, "moduleOffset": off, "file": file}), nil)
	}
	w := req("0x1010", src)
	var got map[string]any
	json.Unmarshal(w.Body.Bytes(), &got)
	if w.Code != 200 || got["source"] != "int main() {}\n" || got["file"] != src {
		t.Fatalf("a file the debug info names: status %d, %s", w.Code, w.Body)
	}
	for name, c := range map[string][2]string{
		"not in debug info":         {"0x1010", secret},
		"traversal":                 {"0x1010", dir + "/../" + filepath.Base(dir) + "/secret"},
		"dot-dot to a named file":   {"0x1010", dir + "/x/../a.c"},
		"named at another address":  {"0x2000", src},
		"address without names":     {"0x3000", src},
		"system file":               {"0x1010", "/etc/passwd"},
		"named but no longer there": {"0x2000", "/elsewhere/leaf.c"},
	} {
		if w := req(c[0], c[1]); w.Code != 404 || strings.Contains(w.Body.String(), "key") {
			t.Errorf("%s (%s at %s): status %d, %s", name, c[1], c[0], w.Code, w.Body)
		}
	}
	w = do(t, s, "POST", "/"+testToken+"/source/v1", `{"debugName":"app","debugId":"`+testKey.BreakpadID+`","moduleOffset":"4112","file":"`+src+`"}`, nil)
	if w.Code != 400 {
		t.Errorf("moduleOffset without 0x: status %d", w.Code)
	}
	w = do(t, s, "POST", "/source/v1", mustJSON(map[string]string{"debugName": "app", "debugId": testKey.BreakpadID, "moduleOffset": "0x1010", "file": src}), nil)
	if w.Code != 404 {
		t.Errorf("source without the token: status %d", w.Code)
	}
}

func TestListenRefusesRemote(t *testing.T) {
	for _, a := range []string{"0.0.0.0", "::", "192.0.2.1", "example.com"} {
		if l, err := Listen(a, 0, false); err == nil {
			l.Close()
			t.Errorf("Listen(%q) without allowRemote succeeded", a)
		} else if !strings.Contains(err.Error(), "--allow-remote") {
			t.Errorf("Listen(%q): %v; want it to name --allow-remote", a, err)
		}
	}
	for _, a := range []string{"127.0.0.1", "localhost", "127.0.0.2"} {
		if !IsLoopback(a) {
			t.Errorf("IsLoopback(%q) = false", a)
		}
	}
	l, err := Listen("0.0.0.0", 0, true)
	if err != nil {
		t.Fatalf("with allowRemote: %v", err)
	}
	l.Close()
}

func TestMakeURLs(t *testing.T) {
	addr := &fakeAddr{"0.0.0.0:3001"}
	u := MakeURLs(addr, "tok", "https://example.org/")
	if u.SymbolServer != "http://127.0.0.1:3001/tok" || u.Profile != "http://127.0.0.1:3001/tok/profile.json" {
		t.Errorf("urls = %+v", u)
	}
	want := "https://example.org/from-url/http%3A%2F%2F127.0.0.1%3A3001%2Ftok%2Fprofile.json/?symbolServer=http%3A%2F%2F127.0.0.1%3A3001%2Ftok"
	if u.Open != want {
		t.Errorf("Open = %s\nwant   %s", u.Open, want)
	}
}

type fakeAddr struct{ s string }

func (a *fakeAddr) Network() string { return "tcp" }
func (a *fakeAddr) String() string  { return a.s }

// A freshly built program stands for a binary on disk that the profile
// has no stored names for: names and assembly come from it, and only for
// its own build identity.
func TestFromBinary(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("disassembly is for x86-64 and arm64")
	}
	dir := t.TempDir()
	prog := "package main\n\n//go:noinline\nfunc work(n int) int {\n\ts := 0\n\tfor i := range n {\n\t\ts += i * i\n\t}\n\treturn s\n}\n\nfunc main() { println(work(10)) }\n"
	for name, text := range map[string]string{"main.go": prog, "go.mod": "module prog\n\ngo 1.22\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(dir, "prog")
	cmd := exec.Command("go", "build", "-o", exe, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	b, err := symbolize.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	id := b.Identity()
	base := b.Object().Identity().Base
	var fn objfile.Symbol
	syms, err := b.Object().SymbolTable()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == "main.work" {
			fn = s
		}
	}
	// The function laid out next.
	var next objfile.Symbol
	for _, s := range syms {
		if s.Addr > fn.Addr && (next.Addr == 0 || s.Addr < next.Addr) {
			next = s
		}
	}
	b.Close()
	if fn.Addr == 0 {
		t.Fatal("no symbol for main.work")
	}
	rel := fn.Addr - base
	key := profile.LibKey{DebugName: filepath.Base(exe), BreakpadID: id.BreakpadID}
	p := &profile.Profile{Processes: []*profile.Process{{Pid: 1, Libs: []profile.Lib{{
		Start: 0x1000, End: 0x2000, Name: key.DebugName, Path: exe, DebugName: key.DebugName, BreakpadID: key.BreakpadID,
	}}}}}
	s, err := New(Config{Profile: p, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := mustJSON(map[string]any{"jobs": []any{
		map[string]any{"memoryMap": [][2]string{{key.DebugName, key.BreakpadID}}, "stacks": [][][2]uint64{{{0, rel + 4}}}},
		map[string]any{"memoryMap": [][2]string{{key.DebugName, "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF0"}}, "stacks": [][][2]uint64{{{0, rel + 4}}}},
	}})
	w := do(t, s, "POST", "/"+testToken+"/symbolicate/v5", req, nil)
	var resp struct{ Results []v5Result }
	json.Unmarshal(w.Body.Bytes(), &resp)
	if len(resp.Results) != 2 {
		t.Fatalf("response %s", w.Body)
	}
	f := resp.Results[0].Stacks[0][0]
	if f.Function != "main.work" || f.FunctionOffset != "0x4" || !strings.HasSuffix(f.File, "main.go") {
		t.Errorf("from the binary: %+v", f)
	}
	if resp.Results[1].Stacks[0][0].Function != "" || resp.Results[1].FoundModules[key.DebugName+"/FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF0"] {
		t.Errorf("another build of the same name was used: %s", w.Body)
	}

	checkTrapFrame(t, exe, key, next.Addr-base, next.Name)

	w = do(t, s, "POST", "/"+testToken+"/asm/v1", mustJSON(map[string]any{
		"debugName": key.DebugName, "debugId": key.BreakpadID, "startAddress": hex(rel), "size": hex(fn.Size), "continueUntilFunctionEnd": false}), nil)
	var asm struct {
		StartAddress string
		Size         string
		Arch         string
		Instructions [][2]any
	}
	if err := json.Unmarshal(w.Body.Bytes(), &asm); err != nil || w.Code != 200 {
		t.Fatalf("asm: status %d, %s", w.Code, w.Body)
	}
	if asm.StartAddress != hex(rel) || asm.Size != hex(fn.Size) || len(asm.Instructions) < 5 {
		t.Fatalf("asm: %s", w.Body)
	}
	for _, in := range asm.Instructions {
		if txt := in[1].(string); strings.HasPrefix(txt, ".") {
			t.Errorf("undecodable instruction at %v: %s", in[0], txt)
		}
	}
	if in := asm.Instructions[0]; in[0].(float64) != 0 {
		t.Errorf("first instruction at offset %v, want 0", in[0])
	}
	if runtime.GOARCH == "amd64" && !strings.Contains(mustJSON(asm.Instructions), "ret") {
		t.Errorf("no ret in the function: %v", asm.Instructions)
	}
	// The loop's branch goes back into the function, at the lib-relative
	// addresses the listing is numbered in.
	inside := false
	for _, in := range asm.Instructions {
		f := strings.Fields(in[1].(string))
		if len(f) == 2 && (strings.HasPrefix(f[0], "j") || f[0] == "b" || strings.HasPrefix(f[0], "b.")) {
			if a, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64); err == nil && a >= rel && a < rel+fn.Size {
				inside = true
			}
		}
	}
	if !inside {
		t.Errorf("no branch to an address of the function (%#x-%#x): %v", rel, rel+fn.Size, asm.Instructions)
	}

	w = do(t, s, "POST", "/"+testToken+"/asm/v1", mustJSON(map[string]any{
		"debugName": key.DebugName, "debugId": "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF0", "startAddress": hex(rel), "size": "0x10"}), nil)
	if w.Code != 404 {
		t.Errorf("asm of another build: status %d", w.Code)
	}

	body, _ := io.ReadAll(w.Result().Body)
	if !strings.Contains(string(body), "no binary") {
		t.Errorf("asm of another build: %s", body)
	}

	// A profile from another machine: the recorded path does not exist
	// here, but the binary is in a --symbol-dir under its name.
	p.Processes[0].Libs[0].Path = "/nonexistent/" + key.DebugName
	s2, err := New(Config{Profile: p, Token: testToken, SymbolDirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	w = do(t, s2, "POST", "/"+testToken+"/symbolicate/v5", req, nil)
	if !strings.Contains(w.Body.String(), `"function":"main.work"`) {
		t.Errorf("binary in a symbol directory not used: %s", w.Body)
	}
}

// Kernel frames of a profile without stored names are named from
// /proc/kallsyms, as report names them, but only for the kernel that runs.
func TestKernelFromKallsyms(t *testing.T) {
	const bid = "0102030405060708090A0B0C0D0E0F100"
	ks, err := symbolize.ParseKallsyms(strings.NewReader("ffffffff81000000 T _stext\nffffffff81001000 T do_syscall_64\nffffffff81002000 t vfs_read\nffffffffc0000000 t ext4_read [ext4]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		running string
		want    string
	}{
		{bid, "vfs_read"},
		{"FF" + bid[2:], "[kernel.kallsyms]+0x2010"}, // another kernel: no names
	} {
		p := &profile.Profile{Processes: []*profile.Process{{Pid: 1, Libs: []profile.Lib{{
			Start: 0xffffffff81000000, End: 0xffffffffc1000000, Name: "[kernel.kallsyms]", Path: "[kernel.kallsyms]",
			DebugName: "[kernel.kallsyms]", BreakpadID: bid,
		}}}}}
		running := c.running
		s, err := New(Config{Profile: p, Token: testToken,
			Kallsyms:         func() (*symbolize.Kallsyms, error) { return ks, nil },
			KernelBreakpadID: func() (string, error) { return running, nil }})
		if err != nil {
			t.Fatal(err)
		}
		w := do(t, s, "POST", "/"+testToken+"/symbolicate/v5", `{"memoryMap":[["[kernel.kallsyms]","`+bid+`"]],"stacks":[[[0,8208],[0,1056964624]]]}`, nil)
		var resp struct{ Results []v5Result }
		json.Unmarshal(w.Body.Bytes(), &resp)
		if len(resp.Results) != 1 {
			t.Fatalf("response %s", w.Body)
		}
		st := resp.Results[0].Stacks[0]
		if st[0].Function != c.want {
			t.Errorf("running kernel %s: 0x2010 named %q, want %q", c.running, st[0].Function, c.want)
		}
		if c.running == bid && (st[0].FunctionOffset != "0x10" || st[1].Function != "ext4_read [ext4]") {
			t.Errorf("kernel frames: %+v", st)
		}
	}
}

// checkTrapFrame: a user frame under a kernel frame is the instruction
// where the thread trapped (a page fault, a system call), which gprof
// report names at its own address. The front-end asks about it one byte
// lower, as about a return address; at end, the first byte of function
// name (laid out after main.work), that byte is main.work's, and the
// server must answer for end itself, as report does.
func checkTrapFrame(t *testing.T, exe string, key profile.LibKey, end uint64, name string) {
	t.Helper()
	const start = 0x100000
	th := &profile.Thread{Tid: 1, Main: true}
	user := th.Frames.Intern(profile.Frame{Address: start + end, Category: profile.CategoryUser})
	kern := th.Frames.Intern(profile.Frame{Address: 0xffffffff81000000, Category: profile.CategoryKernel})
	th.Samples.Add(th.Stacks.Intern(th.Stacks.Intern(-1, user), kern), 0, -1)
	p := &profile.Profile{Processes: []*profile.Process{{Pid: 1, Threads: []*profile.Thread{th}, Libs: []profile.Lib{{
		Start: start, End: start + end + 0x1000, Name: key.DebugName, Path: exe, DebugName: key.DebugName, BreakpadID: key.BreakpadID,
	}}}}}
	s, err := New(Config{Profile: p, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := mustJSON(map[string]any{"jobs": []any{
		map[string]any{"memoryMap": [][2]string{{key.DebugName, key.BreakpadID}}, "stacks": [][][2]uint64{{{0, end - 1}}}},
	}})
	w := do(t, s, "POST", "/"+testToken+"/symbolicate/v5", req, nil)
	var resp struct{ Results []v5Result }
	json.Unmarshal(w.Body.Bytes(), &resp)
	if len(resp.Results) != 1 || len(resp.Results[0].Stacks) != 1 {
		t.Fatalf("response %s", w.Body)
	}
	if f := resp.Results[0].Stacks[0][0]; f.Function != name {
		t.Errorf("the frame where the thread trapped, at %s's first byte, named %q (the front-end's nudge taken as a return address's)", name, f.Function)
	}
}
